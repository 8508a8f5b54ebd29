"""The span processor's background thread: release, score (through the pool), forward.

:class:`Worker` wakes every ``tick_seconds`` (or sooner, for a flush or a budget ending),
releases finished traces from the processor's :class:`~otel_semloop.grouping.TraceBuffer`,
hands them to the :class:`~otel_semloop.pool.ScoringPool` and forwards late spans.
:class:`_Forwarder` hands spans to the downstream processor, pacing bursts. The
application's threads never run any of this (see :mod:`otel_semloop.processor.span_processor`).

Size: the thread's loop, its flush handshake and the lock-free hand-off of span events
(:class:`SpanEvents`) are one protocol between the application's threads and this one;
kept in one file so its ordering rules can be read together.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from otel_semloop.conventions import LogEvent
from otel_semloop.grouping import HeldLogs, Release, ReleaseReason, TraceBuffer
from otel_semloop.pool import ScoringPool
from otel_semloop.processor.sdk import SDK_SPANS, with_attributes
from otel_semloop.release import SLICE, Outcome, yield_gil
from otel_semloop.telemetry import SelfTelemetry, count_forwarded, get_logger
from otel_semloop.writeback import UNSCORED_SCORERS_STUCK

if TYPE_CHECKING:
    from otel_semloop.processor.span_processor import SemloopSpanProcessor

__all__ = ["SpanEvents", "Worker"]

_logger = get_logger(__name__)

#: Share of a flush timeout given to scoring; the rest is left for the downstream flush.
_FLUSH_SCORING_SHARE = 0.8
#: How long one backpressure flush of the downstream may block a background thread.
_CATCH_UP_TIMEOUT_MILLIS = 5000


class SpanEvents:
    """What the application's threads report (span starts and ends, GenAI log records),
    queued without a lock and handed to the trace buffer and the held logs by whoever
    holds the processor's lock next (the worker every tick, a flush,
    :meth:`~otel_semloop.processor.SemloopSpanProcessor.stats`).

    Why a queue and not the buffer itself: ``deque.append`` is atomic, so the hooks never
    wait for one another nor for the worker. An event is a tuple of ``(trace id, local
    root, item, time)``, the item being the ended span, None for a start, or a
    :class:`~otel_semloop.conventions.LogEvent`.
    """

    def __init__(self, limit: int) -> None:
        self._queue: deque[tuple[Hashable, bool, ReadableSpan | LogEvent | None, float]] = deque()
        #: Events past which an ending span is not held but passed straight downstream
        #: (the worker is not draining: the processor's bounds still hold).
        self.limit = limit
        #: GenAI log records not queued because the queue was full (counted, not locked:
        #: a figure for ``stats()``).
        self.logs_dropped = 0
        self.append = self._queue.append

    def __len__(self) -> int:
        return len(self._queue)

    def full(self) -> bool:
        return len(self._queue) >= self.limit

    def add_log(self, trace_key: Hashable, event: LogEvent) -> None:
        """Queue a GenAI log record of ``trace_key``. Not when full: the trace's spans then
        pass unheld, so nothing would read it (counted in :attr:`logs_dropped`)."""
        if len(self._queue) < self.limit:
            self.append((trace_key, False, event, 0.0))
        else:
            self.logs_dropped += 1

    def apply(self, buffer: TraceBuffer[ReadableSpan], logs: HeldLogs[LogEvent]) -> None:
        """Hand the buffer and the held logs the events queued so far, in order (the caller
        holds the lock; events queued meanwhile wait for the next call)."""
        for _ in range(len(self._queue)):
            try:
                trace_key, local_root, item, now = self._queue.popleft()
            except IndexError:  # taken by shutdown meanwhile
                return
            if item is None:
                buffer.start(trace_key, local_root, now)
            elif isinstance(item, LogEvent):
                logs.add(trace_key, item)
            else:
                buffer.end(trace_key, local_root, item, now)

    def take_spans(self) -> list[ReadableSpan]:
        """Empty the queue; the ended spans in it (after shutdown: to pass them through)."""
        spans = []
        while True:
            try:
                item = self._queue.popleft()[2]
            except IndexError:
                return spans
            if item is not None and not isinstance(item, LogEvent):
                spans.append(item)

    def clear(self) -> None:
        self._queue.clear()


class BoundedFlush:
    """``downstream.force_flush`` that returns by its deadline whatever the downstream does.

    A ``BatchSpanProcessor`` whose exporter hangs does not return from ``force_flush``
    within its timeout, and every span released meanwhile would stay alive behind the
    waiting thread. So the call runs on a thread of its own, the caller waits at most the
    timeout, and while a call still runs the next one is not made (the downstream's queue
    then drops what it cannot take, as it does without this processor). Said once in the
    log; counted in ``semloop.forward.catch_up{kind=timed_out}``."""

    def __init__(self, force_flush: Any, telemetry: SelfTelemetry) -> None:
        self._force_flush = force_flush
        self._telemetry = telemetry
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None
        self._warned = False

    def __call__(self, timeout_millis: int) -> bool:
        """True if the downstream flushed within ``timeout_millis``."""
        done = threading.Event()
        outcome: list[Any] = [False]

        def call() -> None:
            try:
                outcome[0] = self._force_flush(timeout_millis) is not False
            except Exception as exc:
                outcome[0] = exc
            finally:
                done.set()

        with self._lock:
            if self._running is not None and self._running.is_alive():
                self._timed_out(timeout_millis)
                return False
            self._running = threading.Thread(target=call, name="semloop-downstream-flush", daemon=True)
            self._running.start()
        if not done.wait(max(0, timeout_millis) / 1000):
            self._timed_out(timeout_millis)
            return False
        if isinstance(outcome[0], Exception):
            self._telemetry.add("semloop.errors", "downstream")
            _logger.warning(
                "otel-semloop: downstream force_flush failed: %r (counted in semloop.errors)",
                outcome[0],
                extra={"semloop_limit": "downstream"},
            )
            return False
        return bool(outcome[0])

    def _timed_out(self, timeout_millis: int) -> None:
        self._telemetry.add("semloop.forward.catch_up", "timed_out")
        if not self._warned:
            self._warned = True
            _logger.warning(
                "otel-semloop: the downstream processor's force_flush did not return within %d ms; "
                "not waiting for it (what its queue cannot take it drops; counted in "
                "semloop.forward.catch_up, not logged again)",
                timeout_millis,
            )


class _Forwarder:
    """Hands spans to the downstream ``on_end``; one failure never stops the rest.

    A flush, a big trace or a burst of completions hands a ``BatchSpanProcessor`` many
    spans at once, and a full batch queue drops spans (``OTEL_BSP_MAX_QUEUE_SIZE``). So
    after every half queue of spans forwarded in under a second, the forwarder calls the
    downstream's ``force_flush`` (a :class:`BoundedFlush`, on this background thread) to
    let the exporter catch up; at an ordinary pace it never does.
    """

    def __init__(self, downstream: SpanProcessor, telemetry: SelfTelemetry, flush: BoundedFlush) -> None:
        self._on_end = downstream.on_end
        self._force_flush = flush
        self._telemetry = telemetry
        self._burst = max(1, _queue_size_of(downstream) // 2)
        self._count = 0
        self._window = time.monotonic()

    def __call__(self, spans: list[ReadableSpan], patched: int = 0, state: str = "original") -> None:
        on_end = self._on_end
        errors = 0
        first: Exception | None = None
        for span in spans:
            try:
                on_end(span)
            except Exception as exc:
                errors += 1
                first = first or exc
            # Unlocked: a lost increment from a concurrent forwarder only delays a catch-up.
            self._count += 1
            if self._count >= self._burst:
                self._catch_up()
            elif self._count % SLICE == 0:
                yield_gil()
        telemetry = self._telemetry
        if errors:
            telemetry.add("semloop.errors", "downstream", errors)
            _logger.warning(
                "otel-semloop: downstream on_end failed for %d span(s): %r (counted in semloop.errors)",
                errors,
                first,
                extra={"semloop_limit": "downstream"},
            )
        count_forwarded(telemetry, len(spans), patched, state)

    def _catch_up(self) -> None:
        now = time.monotonic()
        fast = now - self._window < 1.0
        self._count = 0
        self._window = now
        if fast:
            self._force_flush(_CATCH_UP_TIMEOUT_MILLIS)
            self._telemetry.add("semloop.forward.catch_up", "flush")


def _queue_size_of(downstream: SpanProcessor) -> int:
    # The SDK keeps a BatchSpanProcessor's queue size private; peek, best effort.
    size = getattr(getattr(downstream, "_batch_processor", None), "_max_queue_size", None)
    if isinstance(size, int) and size > 0:
        return size
    try:
        return int(os.environ.get("OTEL_BSP_MAX_QUEUE_SIZE", "2048"))
    except ValueError:
        return 2048


#: A judged trace holds its scoring thread while the judge answers (up to the budget):
#: with one thread, the traces queued behind it spend their budgets waiting.
_JUDGED_SCORING_THREADS = 2


def _scoring_threads(configured: int, scorer: object) -> int:
    """``scoring_threads``, raised to two when a semantic judge is configured (its waits are
    network I/O, so the second thread costs the application almost no CPU)."""
    if getattr(scorer, "judge", None) is not None:
        return max(configured, _JUDGED_SCORING_THREADS)
    return configured


@dataclass(slots=True, eq=False)
class _FlushRequest:
    reason: ReleaseReason
    deadline: float
    done: threading.Event = field(default_factory=threading.Event)
    drained: bool = False
    seq: int = -1


class Worker:
    """The processor's background thread: it releases traces from the buffer, hands them
    to the :class:`~otel_semloop.pool.ScoringPool`, enforces budgets through it and
    forwards late spans. Only :meth:`drain` and :meth:`stop` are called from other
    threads (flush, shutdown)."""

    def __init__(self, processor: SemloopSpanProcessor) -> None:
        config = processor.config
        self._processor = weakref.ref(processor)
        self._lock = processor._lock
        self._buffer = processor._buffer
        self._events = processor._events
        self._logs = processor._logs
        self._telemetry = processor._telemetry
        self._guard = processor._guard
        self._tick = config.tick_seconds
        self._wake = threading.Event()
        #: The one way this processor flushes the downstream (see :class:`BoundedFlush`).
        self.flush_downstream = BoundedFlush(processor._downstream.force_flush, processor._telemetry)
        self._forward = _Forwarder(processor._downstream, processor._telemetry, self.flush_downstream)
        self._evaluations = processor._evaluations
        self._pool: ScoringPool[ReadableSpan] = ScoringPool(
            processor._scorer,
            SDK_SPANS,
            self._deliver,
            processor._telemetry,
            threads=_scoring_threads(config.scoring_threads, processor._scorer),
            max_stuck=config.max_stuck_scorers,
            budget=config.scoring_budget_seconds,
            notify=self._wake.set,
        )
        self._flushes: list[_FlushRequest] = []
        self._stopping = False
        self.thread = threading.Thread(target=self._run, name="semloop-worker", daemon=True)

    @property
    def stuck_count(self) -> int:
        return self._pool.stuck

    def start(self) -> None:
        self.thread.start()

    # -- called from other threads -------------------------------------------------------

    def drain(self, reason: ReleaseReason, deadline: float) -> bool:
        """Ask the worker to release, score and forward everything held; wait until done
        or ``deadline``. Scoring gets :data:`_FLUSH_SCORING_SHARE` of the time, the rest
        is left for the downstream flush."""
        now = time.monotonic()
        request = _FlushRequest(reason, now + max(0.0, deadline - now) * _FLUSH_SCORING_SHARE)
        with self._lock:
            self._flushes.append(request)
        self._pool.waiting = True
        self._wake.set()
        if not self.thread.is_alive():
            # Never started or gone (it should not die): drain from the caller's thread,
            # unscored, rather than hold spans forever.
            self._drain_inline(reason)
            return True
        return request.done.wait(max(0.0, deadline - time.monotonic()))

    def _drain_inline(self, reason: ReleaseReason) -> None:
        with self._lock:
            self._events.apply(self._buffer, self._logs)
            self._buffer.release_all(reason)
            releases, late = self._buffer.take()
            self._flushes.clear()
            self._take_logs(releases)
        for release in releases:
            self._pool.deliver_unscored(release, UNSCORED_SCORERS_STUCK, "stuck")
        if late:
            self._forward_late(late)

    def stop(self, deadline: float) -> None:
        self._stopping = True
        self._wake.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(max(0.0, deadline - time.monotonic()))

    # -- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self._timeout())
            self._wake.clear()
            if self._processor() is None:
                # Garbage-collected without shutdown: forward what is held and exit.
                self._stopping = True
                with self._lock:
                    self._events.apply(self._buffer, self._logs)
                    self._buffer.release_all(ReleaseReason.SHUTDOWN)
            try:
                self._cycle()
            except Exception:
                self._error("worker")
            if self._stopping:
                try:
                    self._cycle()
                    # Whatever is still being scored after drain's deadline leaves unscored.
                    self._pool.take_back_all()
                except Exception:
                    self._error("worker")
                self._pool.stop()
                return

    def _timeout(self) -> float:
        timeout = self._tick
        if self._flushes:
            timeout = min(timeout, 0.01)
        deadline = self._pool.next_deadline()
        if deadline is not None:
            timeout = min(timeout, max(0.0, deadline - time.monotonic()) + 0.001)
        return timeout

    def _cycle(self) -> None:
        now = time.monotonic()
        with self._lock:
            self._events.apply(self._buffer, self._logs)
            self._buffer.expire(now)
            new_flushes = [f for f in self._flushes if not f.drained]
            if new_flushes:
                self._buffer.release_all(new_flushes[0].reason)
            releases, late = self._buffer.take()
            self._take_logs(releases)
        pool = self._pool
        for release in releases:
            if release.final and self._guard is not None:
                self._guard.forget(release.trace_key)
            pool.submit(release, now)
        for request in new_flushes:
            request.drained = True
            request.seq = pool.cap_deadlines(request.deadline)
        if late:
            self._forward_late(late)
        pool.expire(time.monotonic())
        if self._flushes:
            self._finish_flushes()

    def _take_logs(self, releases: list[Release[ReadableSpan]]) -> None:
        """Hand each release its trace's GenAI log records (under the lock; a final
        release takes them away). O(1) per release when none were recorded."""
        logs = self._logs
        if logs.held:
            for release in releases:
                release.logs = logs.take(release.trace_key, release.final)

    def _deliver(self, outcome: Outcome[ReadableSpan]) -> None:
        self._forward(outcome.spans, outcome.patched)
        evaluation = outcome.evaluation
        if evaluation is not None:  # after the spans: a backend then knows the span annotated
            self._evaluations.publish_verdict(evaluation.trace, evaluation.verdict)

    def _finish_flushes(self) -> None:
        pool = self._pool
        with self._lock:
            keep = []
            for request in self._flushes:
                if request.drained and pool.settled_through(request.seq):
                    request.done.set()
                else:
                    keep.append(request)
            self._flushes = keep
            pool.waiting = bool(keep)

    def _forward_late(self, spans: list[ReadableSpan]) -> None:
        marked = []
        for span in spans:
            try:
                marked.append(with_attributes(span, {"semloop.late": True}))
            except Exception as exc:
                self._error("writeback", exc)
                marked.append(span)
        self._forward(marked, 0, "late")

    def _error(self, where: str, exc: BaseException | None = None) -> None:
        self._telemetry.add("semloop.errors", where)
        _logger.warning(
            "otel-semloop: error in %s: %r (counted in semloop.errors)",
            where,
            exc,
            exc_info=exc is None,
            extra={"semloop_limit": where},
        )
