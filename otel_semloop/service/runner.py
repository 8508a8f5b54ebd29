"""Running the service: as the whole process until a signal (:func:`serve`, ``otel-semloop
serve``), or on a background thread (:class:`ServiceThread`: tests, embedding).

SIGINT/SIGTERM handlers are plain ``signal.signal`` handlers that set a flag and wake the
loop, and a watcher polls the flag too: asyncio's wakeup pipe can be full under load, and
the first SIGTERM must always start the drain. A process that is the service also raises
its file-descriptor soft limit to the hard one, so the exporter can open its sockets.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from typing import Any

from otel_semloop.errors import StartupError
from otel_semloop.service.config import ServiceConfig
from otel_semloop.service.server import SemloopService

__all__ = ["ServiceThread", "run_until_signal", "serve"]

_logger = logging.getLogger("otel_semloop.service")


async def run_until_signal(service: SemloopService) -> bool:
    """Run ``service`` until SIGINT or SIGTERM, then stop it (drain). Main thread only."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if received.is_set():
            _logger.warning("otel-semloop: signal %d again; already draining", signum)
        received.set()
        # Wakes a loop blocked in select(); if the loop's self-pipe is full the loop is
        # awake anyway and the watcher below sees the flag.
        loop.call_soon_threadsafe(stop.set)

    async def watch() -> None:
        while not received.is_set():
            await asyncio.sleep(0.1)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    watcher = loop.create_task(watch())
    try:
        await service.start()
        await stop.wait()
        _logger.info(
            "otel-semloop: signal received; draining (up to %.0f s)", service.config.shutdown_timeout_seconds
        )
    finally:
        watcher.cancel()
        clean = await service.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return clean


def _raise_fd_limit() -> None:
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard)
            )
    except (ImportError, ValueError, OSError):  # pragma: no cover - not Unix, or not allowed
        pass


def serve(config: ServiceConfig, scorer: Any = None) -> int:
    """Run the service in this (main) thread until SIGINT/SIGTERM. Exit status: 0 after a
    clean drain, 1 if spans were dropped or left unscored at shutdown, 2 if a receiver
    could not start. ``scorer`` as for :class:`SemloopService` (the CLI's judge)."""
    _raise_fd_limit()

    async def main() -> int:
        service = SemloopService(config, scorer=scorer)
        try:
            clean = await run_until_signal(service)
        except (OSError, StartupError) as error:
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
