"""A :class:`Judge`: one backend, its answer cache, its statistics and its event loop.

Front doors are synchronous (a scoring thread, a batch loop); backends are async (one
``httpx.AsyncClient`` with connection reuse and a concurrency limit). A judge owns one
background event loop thread where every request runs, so connections are reused across
traces and threads, and any thread can :meth:`Judge.submit` a request and wait on the
returned future as long as its own budget allows. Nothing is sent unless a judge was
configured: the default scorer never builds one.

Statistics (:class:`JudgeStats`) count calls, cache hits, traces the escalation policy
did not send (calls saved), errors by kind, tokens, cost and latency; the CLI prints them
and self-telemetry reads them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.judges.base import JudgeBackend, JudgeError, JudgeRequest, JudgeResponse, JudgeTimeout
from otel_semloop.judges.cache import AnswerCache, cache_key

__all__ = ["Judge", "JudgeStats"]


@dataclass(slots=True)
class JudgeStats:
    traces: int = 0
    calls: int = 0
    cache_hits: int = 0
    saved_by_escalation: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms_total: float = 0.0
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def calls_saved(self) -> int:
        return self.cache_hits + self.saved_by_escalation

    @property
    def mean_latency_ms(self) -> float:
        return self.latency_ms_total / self.calls if self.calls else 0.0

    def summary(self, name: str, model: str) -> str:
        errors = sum(self.errors.values())
        text = (
            f"judge {name} ({model}): {self.calls} calls for {self.traces} traces, "
            f"{self.calls_saved} saved ({self.saved_by_escalation} by escalation, {self.cache_hits} cached), "
            f"{self.input_tokens} input tokens, {self.cost_usd:.6f} USD, "
            f"mean latency {self.mean_latency_ms:.0f} ms, {errors} errors"
        )
        if errors:
            text += " (" + ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) + ")"
        return text


class Judge:
    """A backend with a cache, statistics and a background event loop (see module doc)."""

    def __init__(
        self,
        backend: JudgeBackend,
        *,
        cache: AnswerCache | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.backend = backend
        self.cache = cache if cache is not None else AnswerCache()
        self.timeout = timeout
        self.stats = JudgeStats()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._slots: asyncio.Semaphore | None = None
        self.max_concurrency = int(getattr(backend, "max_concurrency", 8) or 8)

    @property
    def name(self) -> str:
        return str(getattr(self.backend, "name", type(self.backend).__name__))

    @property
    def model(self) -> str:
        return str(getattr(self.backend, "model", ""))

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, name="semloop-judge", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def submit(
        self, request: JudgeRequest, deadline: float | None = None
    ) -> concurrent.futures.Future[JudgeResponse]:
        """Ask in the background; the future holds the response or a :class:`JudgeError`.
        ``deadline`` is a ``time.monotonic()`` value no retry may pass; without one, the
        judge's ``timeout`` counts from when the request gets one of ``max_concurrency``
        slots (the backend's, default 8)."""
        with self._lock:
            self.stats.traces += 1
        key = cache_key(self.name, self.model, request)
        cached = self.cache.get(key)
        if cached is not None:
            with self._lock:
                self.stats.cache_hits += 1
            done: concurrent.futures.Future[JudgeResponse] = concurrent.futures.Future()
            done.set_result(cached)
            return done
        return asyncio.run_coroutine_threadsafe(self._ask(request, key, deadline), self._ensure_loop())

    async def _ask(self, request: JudgeRequest, key: str, deadline: float | None) -> JudgeResponse:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrency)
        async with self._slots:
            # Without a caller's deadline (batch rescoring) the timeout starts once a slot is free.
            if deadline is None:
                deadline = time.monotonic() + self.timeout
            try:
                response = await asyncio.wait_for(
                    self.backend.ask(request, deadline=deadline),  # type: ignore[call-arg]
                    timeout=max(0.001, deadline - time.monotonic()),
                )
            except asyncio.TimeoutError:
                self._count_error("timeout")
                raise JudgeTimeout("no answer within the scoring budget") from None
            except JudgeError as exc:
                self._count_error(exc.kind)
                raise
            except Exception as exc:  # a backend bug must not escape as anything but a judge error
                self._count_error("internal")
                raise JudgeError(f"judge backend failed: {type(exc).__name__}", kind="internal") from exc
            with self._lock:
                self.stats.calls += 1
                self.stats.input_tokens += response.input_tokens
                self.stats.output_tokens += response.output_tokens
                self.stats.cost_usd += response.cost_usd
                self.stats.latency_ms_total += response.latency_ms
            self.cache.put(key, response)
            return response

    def _count_error(self, kind: str) -> None:
        with self._lock:
            self.stats.calls += 1
            self.stats.errors[kind] += 1

    def count_saved(self) -> None:
        with self._lock:
            self.stats.traces += 1
            self.stats.saved_by_escalation += 1

    def close(self) -> None:
        """Close the backend's connections and stop the loop (idempotent)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None and thread.is_alive():
            closer: Any = getattr(self.backend, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):  # closing is best effort
                    asyncio.run_coroutine_threadsafe(closer(), loop).result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not thread.is_alive():
                loop.close()
        self.cache.close()
