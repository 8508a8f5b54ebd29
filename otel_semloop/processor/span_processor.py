"""``SemloopSpanProcessor``: score agent traces in-process and write the verdict onto the spans.

Wrap the application's export pipeline::

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from otel_semloop import SemloopSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SemloopSpanProcessor(BatchSpanProcessor(OTLPSpanExporter())))

Every span reaches the downstream processor exactly once: a scored trace's spans after
its verdict (the root and the looping steps as ``ReadableSpan`` copies carrying
``semloop.*`` attributes and a ``gen_ai.evaluation.result`` event, every other span as the
original object). Do not also add the downstream processor to the provider.

Threads
    ``on_start``/``on_end`` run on the application's thread: they forward ``on_start``
    downstream and queue one event without a lock
    (:class:`~otel_semloop.processor.worker.SpanEvents`); they never convert, score,
    export, wake anything or raise. A daemon worker thread hands the events to the trace
    buffer (:mod:`otel_semloop.grouping`) every ``tick_seconds``, releases finished traces
    to the scoring threads and forwards spans downstream, paced so a
    ``BatchSpanProcessor``'s queue does not overflow. Unsampled spans go straight through.

Scoring budget
    Each trace gets ``scoring_budget_seconds`` from release to verdict
    (:class:`~otel_semloop.pool.ScoringPool`); past it the trace leaves with a staged
    scorer's latest verdict (``semloop.budget_exceeded=true``) or unscored, as it does when
    a scorer raises. Spans are held at most ``grace + budget`` (plus a tick) after their
    trace completes.

GenAI log records, live guard
    :attr:`SemloopSpanProcessor.log_record_processor` puts GenAI log records on their spans
    before scoring (:mod:`otel_semloop.processor.logs`); ``live_guard="warn"|"stop"`` runs
    the incremental detectors as each LLM or tool span ends
    (:mod:`otel_semloop.processor.guard`).

force_flush / shutdown
    ``force_flush(timeout_millis)`` releases every held trace (as partial if unfinished),
    scores what fits in most of the timeout, forwards everything and flushes the
    downstream; False if the timeout ran out. ``shutdown()`` does the same within
    ``shutdown_timeout_seconds``, stops the threads and shuts the downstream down.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import metrics
from opentelemetry._logs import LoggerProvider
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_semloop.conventions import LogEvent
from otel_semloop.evaluation import EvaluationPublisher
from otel_semloop.grouping import ReleaseReason, TraceBuffer
from otel_semloop.processor.config import Config, GuardMode
from otel_semloop.processor.logs import HeldLogs, SemloopLogProcessor
from otel_semloop.processor.worker import SpanEvents, Worker
from otel_semloop.scoring import Scorer
from otel_semloop.telemetry import SelfTelemetry, get_logger

__all__ = ["SemloopSpanProcessor"]

_logger = get_logger(__name__)


class SemloopSpanProcessor(SpanProcessor):
    """Holds each trace's spans, scores the trace for loops off the application's thread,
    and forwards every span once to ``downstream`` with the verdict written back.

    ``downstream`` is the processor that exports (typically
    ``BatchSpanProcessor(OTLPSpanExporter())``); it must not also be registered with the
    provider. ``options`` are the :class:`~otel_semloop.processor.config.Config` fields
    (``grace_seconds=...``, ``max_traces=...``, ...), overriding ``SEMLOOP_*``
    environment variables; ``config`` gives them all at once (``options`` still win).
    ``scorer`` replaces the default :class:`~otel_semloop.scoring.Scorer` (anything with
    ``score(trace) -> Verdict``). ``judge`` adds the semantic judge on top of it
    (:func:`otel_semloop.judges.settings.scorer_with_judge`: ``"local"``, ``"system-one"``,
    ``"openai"``, a ``JudgeSettings``, a ``Judge`` or a backend; default ``SEMLOOP_JUDGE*``,
    none): the deterministic verdict is the first stage, so a judge still out when the budget
    ends costs nothing but its answer. ``on_loop(finding, action)`` (with ``spend=``, what
    the loop spent so far, when it takes that keyword: :mod:`otel_semloop.processor.guard`)
    is called by the live guard, on the application thread, the moment a loop becomes
    conclusive.
    ``meter_provider`` receives the self-telemetry (default: the global one).
    Each verdict's ``gen_ai.evaluation.result`` record also goes out as a log record
    through ``logger_provider`` (default: the global one, when one is configured; see
    :class:`~otel_semloop.evaluation.EvaluationPublisher`) and, with ``SEMLOOP_PHOENIX_URL``
    set, as a Phoenix span annotation.

    Raises :class:`~otel_semloop.errors.ConfigError` for a bad option; after
    construction no method raises.
    """

    def __init__(
        self,
        downstream: SpanProcessor,
        *,
        config: Config | None = None,
        scorer: Scorer | None = None,
        judge: Any = None,
        on_loop: Callable[..., None] | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        **options: Any,
    ) -> None:
        if config is None:
            config = Config.from_env(**options)
        elif options:
            config = Config.from_env(environ={}, **{**dataclasses.asdict(config), **options})
        self.config = config
        self._downstream = downstream
        self._scorer: Scorer = scorer if scorer is not None else Scorer()
        named = os.environ.get("SEMLOOP_JUDGE", "").strip().lower() not in ("", "none", "off")
        if judge is not None or named:
            # The semantic judge (otel_semloop.judges): a name, JudgeSettings, a Judge or a
            # backend; None reads SEMLOOP_JUDGE*. It stops waiting just before the budget ends.
            from otel_semloop.judges.settings import scorer_with_judge

            budget = config.scoring_budget_seconds
            self._scorer = scorer_with_judge(judge, self._scorer, budget_seconds=budget)
        self._active = config.enabled
        self._shutdown = False
        self._lock = threading.Lock()
        self._buffer: TraceBuffer[ReadableSpan] = TraceBuffer(config.buffer_limits())
        # What the hooks report, queued without a lock for the worker to hand the buffer.
        self._events = SpanEvents(config.max_spans)
        # GenAI log records by trace, fed by the log record processor, taken at release.
        self._logs = HeldLogs(config.max_log_events)
        self._log_processor: SemloopLogProcessor | None = None
        self._downstream_on_start = downstream.on_start
        self._downstream_on_end = downstream.on_end
        self._app_errors: dict[str, int] = {}
        self._unheld_said = False
        self._telemetry = SelfTelemetry(
            meter_provider, _gauges_of(weakref.ref(self)), "processor", config.metric_agent_names
        )
        # The evaluation record beyond the span event: a log record, a Phoenix annotation.
        self._evaluations = EvaluationPublisher.from_env(logger_provider=logger_provider)
        self._guard: Any = None
        if config.live_guard is not GuardMode.OFF and self._active:
            from otel_semloop.processor.guard import LoopGuard

            telemetry = self._telemetry
            self._guard = LoopGuard(
                config.live_guard,
                on_loop=on_loop,
                max_traces=config.max_traces,
                on_error=lambda where: telemetry.add("semloop.errors", where),
            )
        elif on_loop is not None:
            _logger.warning("otel-semloop: on_loop is only called when live_guard is warn or stop")
        self._worker = Worker(self) if self._active else None
        if self._worker is not None:
            self._worker.start()
            if hasattr(os, "register_at_fork"):
                ref = weakref.WeakMethod(self._at_fork_reinit)
                os.register_at_fork(after_in_child=lambda: (m := ref()) is not None and m())

    # -- public ------------------------------------------------------------------------

    @property
    def guard(self) -> Any:
        """The :class:`~otel_semloop.processor.guard.LoopGuard` when ``live_guard`` is warn or stop,
        else None. Agent code calls ``processor.guard.check()`` between steps."""
        return self._guard

    @property
    def log_record_processor(self) -> SemloopLogProcessor:
        """The SDK ``LogRecordProcessor`` that feeds this processor the GenAI log records
        (message content emitted as log records, as ``opentelemetry-instrumentation-openai-v2``
        does). Add it to the application's ``LoggerProvider`` beside its own exporting
        processor: ``logger_provider.add_log_record_processor(processor.log_record_processor)``.
        It only observes; see :mod:`otel_semloop.processor.logs`."""
        if self._log_processor is None:
            self._log_processor = SemloopLogProcessor(self)
        return self._log_processor

    def stats(self) -> dict[str, int]:
        """Counters and gauges as a flat dict (the same numbers as the metrics), e.g.
        ``traces.loop``, ``releases.early.idle``, ``errors.downstream``, ``spans.held``."""
        snapshot = self._telemetry.snapshot()
        with self._lock:
            self._events.apply(self._buffer, self._logs)
            errors = dict(self._app_errors)
            counts = dict(self._buffer.counts)
            logs_held, logs_dropped = self._logs.held, self._logs.dropped + self._events.logs_dropped
        for where, count in errors.items():
            key = f"semloop.errors.{where}"
            snapshot[key] = snapshot.get(key, 0) + count
        snapshot["semloop.spans.late"] = counts.get("late", 0)
        snapshot["semloop.buffer.grace_cut"] = counts.get("grace_cut", 0)
        snapshot["semloop.buffer.segments"] = counts.get("segments", 0)
        snapshot["semloop.logs.held"] = logs_held
        snapshot["semloop.logs.dropped"] = logs_dropped
        if self._guard is not None:
            for key, value in self._guard.stats().items():
                snapshot[f"semloop.guard.{key}"] = value
        return {key.removeprefix("semloop."): value for key, value in snapshot.items()}

    # -- SpanProcessor hooks (application threads) -------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            self._downstream_on_start(span, parent_context)
        except Exception:
            self._app_error("downstream")
        if not self._active or self._shutdown:
            return
        try:
            context = span.context
            if context.trace_flags.sampled and not self._events.full():  # full: its end passes
                self._events.append((context.trace_id, _is_local_root(span), None, time.monotonic()))
        except Exception:
            self._app_error("on_start")

    def _hold_log_event(self, trace_id: int, event: LogEvent) -> None:
        """A GenAI log record of ``trace_id``, kept until the trace is released (called by
        :class:`~otel_semloop.processor.logs.SemloopLogProcessor` on the application's
        thread: queued without a lock, as the span hooks do)."""
        if self._active and not self._shutdown:
            self._events.add_log(trace_id, event)

    def _on_ending(self, span: Span) -> None:
        try:
            on_ending = getattr(self._downstream, "_on_ending", None)
            if on_ending is not None:
                on_ending(span)
        except Exception:
            self._app_error("downstream")

    def on_end(self, span: ReadableSpan) -> None:
        handed = False
        try:
            context = span.context
            if not self._active or self._shutdown or not context.trace_flags.sampled:
                handed = True
                self._passthrough(span)
                return
            events = self._events
            if events.full():
                handed = True
                self._pass_unheld(span)
                return
            events.append((context.trace_id, _is_local_root(span), span, time.monotonic()))
            handed = True
        except Exception:
            self._app_error("on_end")
            if not handed:
                self._passthrough(span)  # never lose a span to our own bug
            return
        guard = self._guard
        if guard is not None:
            try:
                guard.observe_span(span)
            except Exception:
                self._app_error("guard")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Score and forward everything held, then flush the downstream processor.
        Returns False if ``timeout_millis`` ran out first."""
        try:
            deadline = time.monotonic() + max(0, timeout_millis) / 1000
            ok = True
            worker = self._worker
            if worker is not None and not self._shutdown and threading.current_thread() is not worker.thread:
                ok = worker.drain(ReleaseReason.FLUSH, deadline)
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            if worker is not None:  # returns by the deadline even if the downstream does not
                ok = worker.flush_downstream(remaining) and ok
            else:
                ok = self._downstream.force_flush(remaining) is not False and ok
            return self._evaluations.flush(max(0.0, deadline - time.monotonic())) and ok
        except Exception:
            self._app_error("force_flush")
            return False

    def shutdown(self) -> None:
        """Score and forward everything held (within ``shutdown_timeout_seconds``), stop
        the threads, then shut the downstream processor down. Idempotent."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
        try:
            worker = self._worker
            if worker is not None:
                deadline = time.monotonic() + self.config.shutdown_timeout_seconds
                worker.drain(ReleaseReason.SHUTDOWN, deadline)
                worker.stop(deadline)
                for span in self._events.take_spans():  # ended while the worker stopped
                    self._passthrough(span)
            if self._guard is not None:
                self._guard.close()
            judge = getattr(self._scorer, "judge", None)
            if judge is not None:
                judge.close()
        except Exception:
            self._app_error("shutdown")
        try:
            self._downstream.shutdown()
        except Exception:
            self._app_error("downstream")
        try:
            self._evaluations.shutdown(timeout=min(10.0, self.config.shutdown_timeout_seconds))
        except Exception:
            self._app_error("evaluations")

    # -- internals ---------------------------------------------------------------------

    def _pass_unheld(self, span: ReadableSpan) -> None:
        """The event queue is full (the worker is not draining it): the span goes straight
        downstream, unscored, counted in ``semloop.spans.forwarded{state=unheld}`` and said
        once, so the processor never holds more than its bounds."""
        self._passthrough(span)
        self._telemetry.add("semloop.spans.forwarded", "unheld")
        if not self._unheld_said:
            self._unheld_said = True
            _logger.warning(
                "otel-semloop: %d span events queued and the worker is not taking them; spans "
                "are forwarded unscored until it does (counted in semloop.spans.forwarded)",
                self._events.limit,
            )

    def _passthrough(self, span: ReadableSpan) -> None:
        try:
            self._downstream_on_end(span)
        except Exception:
            self._app_error("downstream")

    def _app_error(self, where: str) -> None:
        """Count an error on an application thread; log it once per place."""
        try:
            with self._lock:
                count = self._app_errors.get(where, 0) + 1
                self._app_errors[where] = count
            if count == 1:
                _logger.exception("otel-semloop: error in %s (counted, further ones not logged)", where)
        except Exception:  # pragma: no cover - never let accounting raise into user code
            pass

    def _at_fork_reinit(self) -> None:
        """In a forked child: the parent owns and exports what it held, so forget it and
        start fresh threads (threads do not survive fork)."""
        self._lock = threading.Lock()
        self._events.clear()
        self._buffer.clear()
        self._logs.clear()
        self._telemetry.at_fork_reinit()
        if self._guard is not None:
            self._guard.at_fork_reinit()
        if self._worker is not None and not self._shutdown:
            self._worker = Worker(self)
            self._worker.start()


def _is_local_root(span: Span | ReadableSpan) -> bool:
    """A span without a parent, or whose parent is in another process."""
    parent = span.parent
    return parent is None or parent.is_remote


def _gauges_of(ref: weakref.ref[SemloopSpanProcessor]) -> Callable[[], dict[str, int]]:
    # A weak reference: the global meter provider keeps instrument callbacks forever and
    # must not keep a discarded processor (and the spans it holds) alive.
    def gauges() -> dict[str, int]:
        processor = ref()
        if processor is None:
            return {}
        worker = processor._worker
        return {
            "semloop.spans.held": processor._buffer.held_spans,
            "semloop.traces.held": processor._buffer.held_traces,
            "semloop.scorers.stuck": worker.stuck_count if worker is not None else 0,
        }

    return gauges
