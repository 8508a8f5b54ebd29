"""The collector service: receivers, pipeline and exporters on one asyncio loop.

:class:`SemloopService` is the whole thing as an object (``await start()``, ``await
stop()``); :mod:`.runner` runs it until SIGINT/SIGTERM or on a background thread. The
receivers, the buffer's tick and the exporters share the loop's thread, so the
:class:`~otel_semloop.grouping.TraceBuffer` needs no lock; scoring and large decodes run
off it. Admission (refuse retryably before anything is acknowledged) and the shutdown
order (stop accepting, release every held trace, score within 80% of
``shutdown_timeout_seconds``, send what is queued in the rest, count what is left) are
described in ``docs/service.md``.

Size: start and stop live together because shutdown undoes start in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import grpc
from opentelemetry import metrics

from otel_semloop.evaluation import EvaluationPublisher
from otel_semloop.scoring import Scorer
from otel_semloop.service.config import ServiceConfig, Signal
from otel_semloop.service.exporter import ExportQueue, make_sender
from otel_semloop.service.held import WIRE, Accepted, Held, Prepared, count_items, prepare
from otel_semloop.service.listeners import HttpListener, start_grpc, start_http
from otel_semloop.service.logs import LogRecords, PreparedLogs, prepare_logs
from otel_semloop.service.observability import AdminServer, Health, build_meter_provider
from otel_semloop.service.pipeline import Pipeline
from otel_semloop.service.processes import WORKER_DEPTH, ScoringProcesses, WorkerDied, runs_in_workers
from otel_semloop.service.receiver import Refusal
from otel_semloop.telemetry import SelfTelemetry

__all__ = ["SemloopService"]

_logger = logging.getLogger("otel_semloop.service")
#: Requests with more items than this are checked and copied on a thread.
_INLINE_ITEMS = 2000
_PREPARE = {"traces": prepare, "logs": prepare_logs}
_SCORING_SHARE = 0.8
#: Receivers push back once the oldest trace waiting for its verdict has used this share of
#: its scoring budget (scoring fell behind).
_SLACK_SHARE = 0.5
#: ... or once a trace accepted now is predicted to wait this share of its budget for a
#: scorer: the rest is margin for the scorers slowing down (a busy host) after the ack.
_WAIT_SHARE = 0.4


class SemloopService:
    """The OTLP in / score / OTLP out service. Use on one event loop: ``await start()``,
    then ``await stop()``. ``scorer`` replaces the default
    :class:`~otel_semloop.scoring.Scorer` (anything with ``score(trace) -> Verdict``,
    called on a scoring thread). ``meter_provider`` receives the counters (default: one
    built from ``metrics_exporter``, else the global one); :meth:`stats` gives the same
    numbers as a dict."""

    def __init__(
        self,
        config: ServiceConfig,
        *,
        scorer: Scorer | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self.config = config
        self._scorer: Scorer = scorer if scorer is not None else Scorer()
        self._own_meter_provider: Any = None
        self._prometheus_registry: Any = None
        if meter_provider is None:
            self._own_meter_provider, self._prometheus_registry = build_meter_provider(config)
            meter_provider = self._own_meter_provider
        self._telemetry = SelfTelemetry(meter_provider, self._gauges, "service", config.metric_agent_names)
        self.health = Health(stall_after=max(10.0, config.tick_seconds * 100))
        self._admin: list[AdminServer] = []
        self._pipeline: Pipeline | None = None
        self._evaluations: EvaluationPublisher | None = None
        #: Each signal's export queue (with its sender).
        self._exports: dict[Signal, ExportQueue] = {}
        #: The GenAI log events held for their traces.
        self.logs: LogRecords | None = None
        self._durable: Any = None
        self._processes: ScoringProcesses | None = None
        self._grpc_server: grpc.aio.Server | None = None
        self._http: HttpListener | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self.grpc_port: int | None = None
        self.http_port: int | None = None
        self.health_port: int | None = None
        self.prometheus_port: int | None = None
        self._stopped = False
        self._draining = False
        #: Bytes of accepted requests not yet forwarded (see the module docstring).
        self.accepted_bytes = 0

    # -- Ingest (what the receivers call) ----------------------------------------------------

    def admit(self, size: int, signal: Signal = "traces") -> None:
        """Raise :class:`Refusal` if a request of ``size`` bytes must wait (see the module
        docstring); nothing is held yet."""
        reason = None
        exports = self._exports.get(signal)
        if self._draining or self._pipeline is None or exports is None:
            reason, message = "draining", "otel-semloop: shutting down; send to another replica or retry"
        elif exports.full:
            reason, message = "export_queue_full", "otel-semloop: export queue full (downstream slow or down)"
        elif self.accepted_bytes and self.accepted_bytes + size > self.config.memory_limit_bytes:
            reason, message = "memory", "otel-semloop: memory limit reached; retry later"
        elif self._scoring_behind():
            reason, message = "scoring_behind", "otel-semloop: scoring is behind; retry later"
        elif self._durable is not None and self._durable.full(size):
            reason, message = "durable_queue_full", "otel-semloop: durable queue full; retry later"
        if reason is not None:
            self.refused(reason)
            # Scoring catches up within its budget share: come back soon; an outage lasts.
            delay = {"scoring_behind": 0.5, "export_queue_full": 5.0}.get(reason, 1.0)
            raise Refusal(reason, message, delay)

    def _scoring_behind(self) -> bool:
        """Scoring fell behind: a trace accepted now would wait for a scorer past a share
        of its budget (:mod:`otel_semloop.service.admission`), or the oldest trace waiting
        for a verdict has used half its budget. Take no more work until scoring catches
        up (backpressure rather than unscored traces)."""
        assert self._pipeline is not None
        now = time.monotonic()
        budget = self.config.scoring_budget_seconds
        if self._pipeline.load.wait(now) > budget * _WAIT_SHARE:
            return True
        slack = self._pipeline.scoring_slack(now)
        return slack is not None and slack < budget * _SLACK_SHARE

    def refused(self, reason: str) -> None:
        self._telemetry.add("semloop.requests.refused", reason)

    async def accept(
        self, request: Any, size: int, raw: bytes | None = None, signal: Signal = "traces"
    ) -> Accepted:
        """Hold a decoded request of ``signal`` (after :meth:`admit`). With a durable queue
        the request is on disk before this returns (and so before the sender's ack)."""
        self.admit(size, signal)
        ticket = 0
        if self._durable is not None:
            ticket = await self._durable.append(
                raw if raw is not None else request.SerializeToString(), signal
            )
        prepare = _PREPARE[signal]
        if count_items(request) > _INLINE_ITEMS:
            # Copying a large request's items takes a while: on a thread, so that the loop
            # keeps serving the other requests meanwhile.
            prepared = await asyncio.to_thread(prepare, request, size, ticket)
        else:
            prepared = prepare(request, size, ticket)
        result = self._hold(prepared)
        if self._durable is not None:
            self._durable.track(ticket, result.accepted)
        return result

    def receive(
        self, request: Any, size: int = 0, ticket: int = 0, skip: Any = None, signal: Signal = "traces"
    ) -> Accepted:
        """Hold a request without admission or the durable queue (a durable replay); ``skip``
        names the items already delivered."""
        return self._hold(_PREPARE[signal](request, size, ticket, skip))

    def _hold(self, prepared: Prepared | PreparedLogs) -> Accepted:
        assert self._pipeline is not None and self.logs is not None
        if isinstance(prepared, PreparedLogs):
            result = self.logs.hold(prepared)
        else:
            result = self._pipeline.hold(prepared)
            self._telemetry.add("semloop.spans.received", "accepted", result.accepted)
        self.accepted_bytes += prepared.cost
        return result

    def _settle(self, batch: list[Held]) -> Any:
        """Spans that left for good: release their bytes and their durable records (the
        returned future, if any, is done once that is on disk)."""
        self.accepted_bytes = max(0, self.accepted_bytes - sum(h.cost for h in batch))
        if self._durable is not None:
            return self._durable.settle(batch)
        return None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the receivers and start the pipeline. Raises ``OSError`` when an address
        cannot be bound (nothing is left running then)."""
        config = self.config
        loop = asyncio.get_running_loop()
        self._evaluations = EvaluationPublisher.for_exporter(
            config.export_endpoint,
            config.export_protocol,
            config.export_headers,
            config.export_timeout,
        )
        for signal in WIRE:
            sender = make_sender(config, signal)
            self._exports[signal] = ExportQueue(config, sender, self._telemetry, self._settle, signal)
        try:
            if config.scoring_processes and runs_in_workers(self._scorer):
                # Warm workers before ready: the first traces must not wait for a boot.
                self._processes = ScoringProcesses(
                    config.scoring_processes,
                    Held.serialized,
                    mode=getattr(self._scorer, "mode", "default"),
                    kill_after=max(10.0, 3 * config.scoring_budget_seconds),
                    depth=WORKER_DEPTH,
                )
                try:
                    await asyncio.to_thread(self._processes.start)
                except (WorkerDied, OSError, RuntimeError) as error:
                    # E.g. a program embedding the service whose main module cannot be
                    # imported again without running (no ``if __name__ == "__main__"``).
                    _logger.warning("otel-semloop: scoring on threads: %s", error)
                    self._processes = None
            self._pipeline = Pipeline(
                config,
                self._exports["traces"].put,
                self._scorer,
                self._telemetry,
                self._evaluations,
                self._processes,
            )
            self.logs = LogRecords(
                self._pipeline, self._exports["logs"], self._telemetry, config.max_log_events
            )
            self._start_admin()
            if config.durable_queue:
                from otel_semloop.service.durable import DurableQueue

                self._durable = DurableQueue(config.durable_queue, config.durable_queue_bytes)
                replayed = self._durable.replay(self)
                if replayed:
                    self._pipeline.release_held()  # nothing else is held yet
                    _logger.info(
                        "otel-semloop: durable queue %s: %d unfinished requests replayed",
                        config.durable_queue,
                        replayed,
                    )
            if config.grpc:
                self._grpc_server, self.grpc_port = await start_grpc(self, config)
            if config.http:
                self._http = await start_http(self, config)
                self.http_port = self._http.port
        except BaseException:
            await self._close_receivers()
            await self._close_rest()
            raise
        self._tasks.append(loop.create_task(self._pipeline.run()))
        self._tasks.extend(loop.create_task(exports.run()) for exports in self._exports.values())
        self._tasks.append(loop.create_task(self._heartbeat()))
        self.health.state = "ready"
        _logger.info(
            "otel-semloop: serving OTLP on grpc %s, http %s; exporting traces to %s, logs to %s",
            f"{config.grpc} (port {self.grpc_port})" if config.grpc else "-",
            f"{config.http} (port {self.http_port})" if config.http else "-",
            self._exports["traces"].sender.describe(),
            self._exports["logs"].sender.describe(),
        )
        _logger.info("otel-semloop: options: %s", config.describe() or "defaults")

    def _start_admin(self) -> None:
        """The health and Prometheus endpoints, on one listener when they share an address."""
        config, registry = self.config, self._prometheus_registry
        shared = config.health is not None and config.health == config.prometheus
        if config.health:
            server = AdminServer(config.health, "health", self.health, registry if shared else None).start()
            self._admin.append(server)
            self.health_port = server.port
            if shared:
                self.prometheus_port = server.port
        if config.prometheus and registry is not None and not shared:
            server = AdminServer(config.prometheus, "prometheus", None, registry).start()
            self._admin.append(server)
            self.prometheus_port = server.port

    async def stop(self, timeout: float | None = None) -> bool:
        """Stop receiving, score and forward everything held within ``timeout`` (default
        ``shutdown_timeout_seconds``), close. True if nothing was dropped or left unscored for lack of
        time. Idempotent."""
        if self._stopped:
            return True
        self._stopped = True
        self._draining = True
        self.health.state = "draining"
        timeout = self.config.shutdown_timeout_seconds if timeout is None else timeout
        deadline = time.monotonic() + timeout
        await self._close_receivers()
        clean = True
        if self._pipeline is not None and self._exports:
            scoring_deadline = time.monotonic() + max(0.0, deadline - time.monotonic()) * _SCORING_SHARE
            clean = await self._pipeline.drain(scoring_deadline)
            queues = list(self._exports.values())
            left = await asyncio.gather(*(exports.drain(deadline) for exports in queues))
            for exports, items in zip(queues, left, strict=True):
                if items:
                    clean = False
                    self._left_at_shutdown(exports, items, timeout)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self._close_rest()
        self.health.state = "stopped"
        return clean

    def _left_at_shutdown(self, exports: ExportQueue, items: int, timeout: float) -> None:
        where = f"{items} {exports.items} not delivered to {exports.sender.describe()} within {timeout:.1f} s"
        if self._durable is not None:
            _logger.warning(
                "otel-semloop: shutdown: %s; they stay in the durable queue and go out after the restart",
                where,
            )
            return
        exports.count_dropped("shutdown", items)
        _logger.error(
            "otel-semloop: shutdown: %s; dropped (acknowledged data survives a slow or down downstream "
            "with --durable-queue FILE; or give the drain more time: --shutdown-timeout-seconds)",
            where,
        )

    def stats(self) -> dict[str, int]:
        """Counters and gauges as a flat dict without the ``semloop.`` prefix, e.g.
        ``traces.loop``, ``spans.forwarded.patched``, ``export.retries.retryable``,
        ``requests.refused.memory``, ``export.pending``."""
        snapshot = self._telemetry.snapshot()
        if self._pipeline is not None:
            for key, value in self._pipeline.buffer.counts.items():
                snapshot[f"semloop.buffer.{key}"] = value
        return {key.removeprefix("semloop."): value for key, value in snapshot.items()}

    # -- internals -------------------------------------------------------------------------

    async def _heartbeat(self) -> None:
        """Proof of a turning loop for the liveness probe."""
        while True:
            self.health.beat()
            await asyncio.sleep(min(1.0, self.config.tick_seconds * 10))

    def _gauges(self) -> dict[str, int]:
        pipeline, exports, logs = self._pipeline, self._exports, self._exports.get("logs")
        return {
            "semloop.spans.held": pipeline.buffer.held_spans if pipeline is not None else 0,
            "semloop.traces.held": pipeline.buffer.held_traces if pipeline is not None else 0,
            "semloop.export.pending": exports["traces"].pending if exports else 0,
            "semloop.export.log_records.pending": logs.pending if logs is not None else 0,
            "semloop.log_records.held": self.logs.held.held if self.logs is not None else 0,
            "semloop.export.down": int(exports["traces"].down) if exports else 0,
            "semloop.scorers.stuck": pipeline.stuck if pipeline is not None else 0,
            "semloop.memory.accepted": self.accepted_bytes,
            "semloop.durable.pending": self._durable.pending if self._durable is not None else 0,
        }

    async def _close_receivers(self) -> None:
        if self._grpc_server is not None:
            await self._grpc_server.stop(grace=2.0)
            self._grpc_server = None
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def _close_rest(self) -> None:
        if self._processes is not None:
            await asyncio.to_thread(self._processes.close)
            self._processes = None
        for exports in self._exports.values():
            with contextlib.suppress(Exception):
                await exports.sender.close()
        if self._durable is not None:
            with contextlib.suppress(Exception):
                await self._durable.close()
        for server in self._admin:
            with contextlib.suppress(Exception):
                server.close()
        self._admin.clear()
        if self._evaluations is not None:
            with contextlib.suppress(Exception):
                await asyncio.get_running_loop().run_in_executor(None, self._evaluations.shutdown, 10.0)
        if self._own_meter_provider is not None:
            with contextlib.suppress(Exception):
                self._own_meter_provider.shutdown(timeout_millis=5000)
