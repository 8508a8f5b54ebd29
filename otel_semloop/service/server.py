"""The collector service: receivers, pipeline and exporter on one asyncio loop.

:class:`SemloopService` is the whole thing as an object (``await start()``,
``await stop()``); :func:`serve` runs it until SIGINT/SIGTERM (``otel-semloop serve``);
:class:`ServiceThread` runs it on a background thread (tests, embedding in a program that
has its own main loop).

Why one loop: ``grpc.aio`` and uvicorn both run on asyncio, so the gRPC receiver, the
HTTP receiver, the buffer's tick and the exporter share one thread and the
:class:`~otel_semloop.grouping.TraceBuffer` is used without a lock, as it requires.
Only scoring (CPU-bound, and bounded by a budget) runs on ``scoring_threads`` threads.
uvicorn is the HTTP server: a maintained ASGI server (HTTP/1.1 keep-alive, flow control,
graceful shutdown) that runs on the same loop; the OTLP endpoint is one small ASGI app,
with no web framework.

Shutdown (``stop``/signal): stop accepting (the gRPC server and uvicorn finish the
requests in flight), release every held trace, score what fits in 80% of
``shutdown_timeout_seconds`` (the rest leaves unscored), send everything queued in the remaining
time, then close. Spans still unsent at the deadline (the downstream is down) are
counted and logged as dropped, with their number.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import uvicorn
from opentelemetry import metrics
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from otel_semloop.scoring import Scorer
from otel_semloop.service.config import ServiceConfig, parse_address
from otel_semloop.service.exporter import ExportQueue, make_sender
from otel_semloop.service.pipeline import Accepted, Pipeline
from otel_semloop.service.receiver import GrpcTraceService, http_app
from otel_semloop.telemetry import SelfTelemetry

__all__ = ["SemloopService", "ServiceThread", "serve"]

_logger = logging.getLogger("otel_semloop.service")
_SCORING_SHARE = 0.8


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: the service owns SIGINT/SIGTERM (uvicorn
    would re-raise the signal after its shutdown, before we have drained)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class SemloopService:
    """The OTLP in / score / OTLP out service. Use on one event loop: ``await start()``,
    then ``await stop()``. ``scorer`` replaces the default
    :class:`~otel_semloop.scoring.Scorer` (anything with ``score(trace) -> Verdict``,
    called on a scoring thread). ``meter_provider`` receives the counters (default: the
    global one); :meth:`stats` gives the same numbers as a dict."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        scorer: Scorer | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self.config = config
        self._scorer: Scorer = scorer if scorer is not None else Scorer()
        self._telemetry = SelfTelemetry(meter_provider, self._gauges, "service")
        self._pipeline: Pipeline | None = None
        self._exports: ExportQueue | None = None
        self._sender: Any = None
        self._grpc_server: grpc.aio.Server | None = None
        self._http_server: _Uvicorn | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._http_task: asyncio.Task[Any] | None = None
        self.grpc_port: int | None = None
        self.http_port: int | None = None
        self._stopped = False

    # -- Ingest (what the receivers call) ----------------------------------------------------

    @property
    def full(self) -> bool:
        """True while receivers must refuse retryably (export queue at its watermark)."""
        return self._exports is not None and self._exports.full

    def accept(self, request: Any) -> Accepted:
        assert self._pipeline is not None
        result = self._pipeline.accept(request)
        self._telemetry.add("semloop.spans.received", "accepted", result.accepted)
        return result

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the receivers and start the pipeline. Raises ``OSError`` when an address
        cannot be bound (nothing is left running then)."""
        config = self.config
        loop = asyncio.get_running_loop()
        self._sender = make_sender(config)
        self._pipeline = Pipeline(config, self._forward, self._scorer, self._telemetry)
        self._exports = ExportQueue(config, self._sender, self._telemetry)
        try:
            if config.grpc:
                host, port = parse_address(config.grpc, "grpc")
                server = grpc.aio.server(
                    options=[
                        ("grpc.max_receive_message_length", config.max_request_bytes),
                        ("grpc.so_reuseport", 0),
                    ]
                )
                trace_service_pb2_grpc.add_TraceServiceServicer_to_server(GrpcTraceService(self), server)
                bound = server.add_insecure_port(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
                if not bound:
                    raise OSError(f"cannot bind the gRPC receiver to {config.grpc}")
                await server.start()
                self._grpc_server = server
                self.grpc_port = bound
            if config.http:
                host, port = parse_address(config.http, "http")
                sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((host, port))
                except OSError:
                    sock.close()
                    raise
                self.http_port = sock.getsockname()[1]
                uv_config = uvicorn.Config(
                    http_app(self, config.max_request_bytes),
                    lifespan="off",
                    log_level="warning",
                    access_log=False,
                    timeout_graceful_shutdown=5,
                )
                self._http_server = _Uvicorn(uv_config)
                task = loop.create_task(self._http_server.serve(sockets=[sock]))
                self._http_task = task
                while not self._http_server.started:
                    if task.done():
                        task.result()  # raises what uvicorn raised
                        raise OSError(f"the HTTP receiver on {config.http} stopped at startup")
                    await asyncio.sleep(0.005)
        except BaseException:
            await self._close_receivers()
            await self._close_rest()
            raise
        self._tasks.append(loop.create_task(self._pipeline.run()))
        self._tasks.append(loop.create_task(self._exports.run()))
        _logger.info(
            "otel-semloop: serving OTLP on grpc %s, http %s; exporting to %s",
            f"{config.grpc} (port {self.grpc_port})" if config.grpc else "-",
            f"{config.http} (port {self.http_port})" if config.http else "-",
            self._sender.describe(),
        )

    async def stop(self, timeout: float | None = None) -> bool:
        """Stop receiving, score and forward everything held within ``timeout`` (default
        ``shutdown_timeout_seconds``), close. True if nothing was dropped or left unscored for lack of
        time. Idempotent."""
        if self._stopped:
            return True
        self._stopped = True
        timeout = self.config.shutdown_timeout_seconds if timeout is None else timeout
        started = time.monotonic()
        deadline = started + timeout
        await self._close_receivers()
        clean = True
        if self._pipeline is not None and self._exports is not None:
            scoring_deadline = time.monotonic() + max(0.0, deadline - time.monotonic()) * _SCORING_SHARE
            clean = await self._pipeline.drain(scoring_deadline)
            left = await self._exports.drain(deadline)
            if left:
                clean = False
                self._telemetry.add("semloop.export.dropped", "shutdown", left)
                _logger.error(
                    "otel-semloop: shutdown: %d spans not delivered to %s within %.1f s; dropped",
                    left,
                    self._sender.describe(),
                    timeout,
                )
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self._close_rest()
        return clean

    def stats(self) -> dict[str, int]:
        """Counters and gauges as a flat dict without the ``semloop.`` prefix, e.g.
        ``traces.loop``, ``spans.forwarded.patched``, ``export.retries.retryable``,
        ``export.dropped.queue_full``, ``export.pending``."""
        snapshot = self._telemetry.snapshot()
        if self._pipeline is not None:
            for key, value in self._pipeline.buffer.counts.items():
                snapshot[f"semloop.buffer.{key}"] = value
        return {key.removeprefix("semloop."): value for key, value in snapshot.items()}

    async def serve_until_signal(self) -> bool:
        """Run until SIGINT or SIGTERM, then :meth:`stop`. Main thread only."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await self.start()
        try:
            await stop.wait()
            _logger.info(
                "otel-semloop: signal received; draining (up to %.0f s)", self.config.shutdown_timeout_seconds
            )
        finally:
            clean = await self.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        return clean

    # -- internals -------------------------------------------------------------------------

    def _forward(self, spans: list[Any]) -> None:
        assert self._exports is not None
        self._exports.put(spans)

    def _gauges(self) -> dict[str, int]:
        pipeline, exports = self._pipeline, self._exports
        return {
            "semloop.spans.held": pipeline.buffer.held_spans if pipeline is not None else 0,
            "semloop.traces.held": pipeline.buffer.held_traces if pipeline is not None else 0,
            "semloop.export.pending": exports.pending if exports is not None else 0,
            "semloop.export.down": int(exports.down) if exports is not None else 0,
            "semloop.scorers.stuck": pipeline.stuck if pipeline is not None else 0,
        }

    async def _close_receivers(self) -> None:
        if self._grpc_server is not None:
            await self._grpc_server.stop(grace=2.0)
            self._grpc_server = None
        if self._http_server is not None:
            self._http_server.should_exit = True
            if self._http_task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._http_task, 10)
            self._http_server = None
            self._http_task = None

    async def _close_rest(self) -> None:
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await self._sender.close()


def serve(config: ServiceConfig) -> int:
    """Run the service in this (main) thread until SIGINT/SIGTERM. Exit status: 0 after a
    clean drain, 1 if spans were dropped or left unscored at shutdown, 2 if a receiver
    could not start."""

    async def main() -> int:
        service = SemloopService(config)
        try:
            clean = await service.serve_until_signal()
        except OSError as error:
            _logger.error("otel-semloop: %s", error)
            return 2
        return 0 if clean else 1

    return asyncio.run(main())


class ServiceThread:
    """A :class:`SemloopService` on its own thread and event loop.

    ``start()`` returns once the receivers listen (ports in :attr:`grpc_port` and
    :attr:`http_port`) or raises what startup raised; ``stop()`` drains like a signal
    would and joins the thread. Usable as a context manager."""

    def __init__(self, config: ServiceConfig, **options: Any) -> None:
        self.service = SemloopService(config, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="semloop-service", daemon=True)

    @property
    def grpc_port(self) -> int | None:
        return self.service.grpc_port

    @property
    def http_port(self) -> int | None:
        return self.service.http_port

    def start(self) -> ServiceThread:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.service.start(), self._loop).result(30)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            raise
        return self

    def stop(self, timeout: float | None = None) -> bool:
        """Drain (``timeout`` default: ``shutdown_timeout_seconds``) and stop the thread."""
        if not self._thread.is_alive():
            return True
        wait = (self.service.config.shutdown_timeout_seconds if timeout is None else timeout) + 15
        try:
            return asyncio.run_coroutine_threadsafe(self.service.stop(timeout), self._loop).result(wait)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()

    def stats(self) -> dict[str, int]:
        return self.service.stats()

    def __enter__(self) -> ServiceThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
