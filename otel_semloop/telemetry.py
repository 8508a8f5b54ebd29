"""Self-telemetry of the front doors: one declared list of instruments, and one log limiter.

Every counter and gauge this package reports is declared once, in :data:`INSTRUMENTS`,
with the front doors that report it. :class:`SelfTelemetry` registers the declared
instruments of its front door with the ``MeterProvider``; counting a name that is not
declared for it raises ``KeyError`` (so a call site with a typo, or an instrument that
was never registered, fails in the tests instead of counting into nothing).

Counting must cost an application nothing measurable, so counts are plain integers under
a lock, read through observable instruments when a reader collects. Only the scoring
latency is a synchronous histogram (recorded on a scoring thread). With no
``MeterProvider`` configured the API's no-op meter is used and nothing is exported;
``stats()`` of each front door still shows every count.

Instruments (meter ``otel_semloop``); ``P`` = the span processor, ``S`` = the service:

==============================  ========  ==========  ===============================================
name                            kind      front door  attribute (values)
==============================  ========  ==========  ===============================================
``semloop.traces``              counter   P S         ``semloop.label`` (loop, suspected, no_loop,
                                                      unscored, none = no agent steps)
``semloop.releases``            counter   P S         ``semloop.release.reason`` (complete, idle,
                                                      max_age, overflow, span_limit, flush, shutdown)
``semloop.releases.early``      counter   P S         reason, every reason but complete
``semloop.unscored``            counter   P S         ``semloop.unscored.reason`` (budget,
                                                      budget_staged, stuck, error)
``semloop.spans.forwarded``     counter   P S         ``semloop.span.state`` (original, patched, late)
``semloop.scoring.discarded``   counter   P S         ``semloop.discard.reason`` (late: a stuck
                                                      thread's verdict after its trace left)
``semloop.errors``              counter   P S         ``semloop.error.where``
``semloop.forward.catch_up``    counter   P           ``semloop.catch_up`` (flush)
``semloop.spans.received``      counter   S           ``semloop.outcome``
``semloop.spans.refused``       counter   S           ``semloop.refusal.reason`` (before acknowledgement)
``semloop.spans.rejected``      counter   S           ``semloop.rejection.reason`` (invalid)
``semloop.requests.refused``    counter   S           ``semloop.refusal.reason``
``semloop.export.spans``        counter   S           ``semloop.export.outcome``
``semloop.export.retries``      counter   S           ``semloop.retry.kind``
``semloop.export.failures``     counter   S           ``semloop.failure.kind``
``semloop.export.dropped``      counter   S           ``semloop.drop.reason`` (should stay 0)
``semloop.log_records``         counter   S           ``semloop.log_record.state`` (received;
                                                      kept: a GenAI event held for scoring;
                                                      late: its trace had left, forwarded
                                                      only; attached: taken by a release;
                                                      dropped: pushed out of the hold by the cap)
``semloop.export.log_records``  counter   S           ``semloop.export.outcome``
``semloop.export.log_records.dropped``  counter   S   ``semloop.drop.reason`` (should stay 0)
``semloop.spans.held``          gauge     P S
``semloop.traces.held``         gauge     P S
``semloop.scorers.stuck``       gauge     P S
``semloop.export.pending``      gauge     S
``semloop.log_records.held``    gauge     S           (GenAI events held for scoring)
``semloop.export.log_records.pending``  gauge     S
``semloop.export.down``         gauge     S
``semloop.memory.accepted``     gauge     S           (bytes)
``semloop.durable.pending``     gauge     S           (requests)
``semloop.scoring.duration``    histogram P S         (seconds)
==============================  ========  ==========  ===============================================

Size: one declared list of every instrument (a few lines each) and the one class that
reports them; the list is the single place a name is declared, so it is not split.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

__all__ = [
    "INSTRUMENTS",
    "Instrument",
    "LogLimiter",
    "SelfTelemetry",
    "count_forwarded",
    "get_logger",
]

_VERSION = "0.1.0"

FrontDoor = Literal["processor", "service"]
_BOTH: tuple[FrontDoor, ...] = ("processor", "service")


@dataclass(frozen=True, slots=True)
class Instrument:
    name: str
    kind: Literal["counter", "gauge"]
    unit: str
    description: str
    #: The attribute a counter's value is reported under.
    attribute: str = ""
    front_doors: tuple[FrontDoor, ...] = _BOTH


INSTRUMENTS: tuple[Instrument, ...] = (
    Instrument("semloop.traces", "counter", "{trace}", "Traces released, by verdict label.", "semloop.label"),
    Instrument(
        "semloop.judge.traces",
        "counter",
        "{trace}",
        "Traces released with a judge configured, by judge status (judged, cached, skipped, "
        "no_questions, error): skipped and cached ones are the calls saved.",
        "semloop.judge.status",
    ),
    Instrument(
        "semloop.judge.input_tokens",
        "counter",
        "{token}",
        "Input tokens the judge billed, by backend.",
        "semloop.judge.backend",
    ),
    Instrument(
        "semloop.judge.cost",
        "counter",
        "{microdollar}",
        "What the judge cost, in millionths of a US dollar, by backend.",
        "semloop.judge.backend",
    ),
    Instrument(
        "semloop.releases",
        "counter",
        "{release}",
        "Traces (or chunks of a trace) released to scoring, by reason.",
        "semloop.release.reason",
    ),
    Instrument(
        "semloop.releases.early",
        "counter",
        "{release}",
        "Releases before the trace completed (partial verdicts), by reason.",
        "semloop.release.reason",
    ),
    Instrument(
        "semloop.unscored",
        "counter",
        "{trace}",
        "Traces forwarded without a verdict.",
        "semloop.unscored.reason",
    ),
    Instrument(
        "semloop.spans.forwarded", "counter", "{span}", "Spans handed downstream.", "semloop.span.state"
    ),
    Instrument(
        "semloop.scoring.discarded",
        "counter",
        "{trace}",
        "Verdicts discarded because their trace had already left.",
        "semloop.discard.reason",
    ),
    Instrument(
        "semloop.errors",
        "counter",
        "{error}",
        "Errors caught and swallowed, by place.",
        "semloop.error.where",
    ),
    Instrument(
        "semloop.forward.catch_up",
        "counter",
        "{flush}",
        "Downstream flushes forced so a burst does not overflow its queue.",
        "semloop.catch_up",
        ("processor",),
    ),
    Instrument(
        "semloop.spans.received",
        "counter",
        "{span}",
        "Spans accepted from senders.",
        "semloop.outcome",
        ("service",),
    ),
    Instrument(
        "semloop.spans.refused",
        "counter",
        "{span}",
        "Spans refused before acknowledgement (backpressure, limits, auth), by reason.",
        "semloop.refusal.reason",
        ("service",),
    ),
    Instrument(
        "semloop.spans.rejected",
        "counter",
        "{span}",
        "Invalid spans rejected in a request.",
        "semloop.rejection.reason",
        ("service",),
    ),
    Instrument(
        "semloop.requests.refused",
        "counter",
        "{request}",
        "Requests refused (too large, bad, unauthenticated, backpressure), by reason.",
        "semloop.refusal.reason",
        ("service",),
    ),
    Instrument(
        "semloop.export.spans",
        "counter",
        "{span}",
        "Spans the downstream accepted.",
        "semloop.export.outcome",
        ("service",),
    ),
    Instrument(
        "semloop.export.retries",
        "counter",
        "{retry}",
        "Export attempts retried.",
        "semloop.retry.kind",
        ("service",),
    ),
    Instrument(
        "semloop.export.failures",
        "counter",
        "{request}",
        "Export attempts that failed.",
        "semloop.failure.kind",
        ("service",),
    ),
    Instrument(
        "semloop.export.dropped",
        "counter",
        "{span}",
        "Spans dropped before reaching the downstream (should stay 0).",
        "semloop.drop.reason",
        ("service",),
    ),
    Instrument(
        "semloop.log_records",
        "counter",
        "{log_record}",
        "Log records received, and GenAI events held for scoring, late, attached, dropped from the hold.",
        "semloop.log_record.state",
        ("service",),
    ),
    Instrument(
        "semloop.export.log_records",
        "counter",
        "{log_record}",
        "Log records the logs downstream accepted.",
        "semloop.export.outcome",
        ("service",),
    ),
    Instrument(
        "semloop.export.log_records.dropped",
        "counter",
        "{log_record}",
        "Log records dropped before reaching the logs downstream (should stay 0).",
        "semloop.drop.reason",
        ("service",),
    ),
    Instrument("semloop.spans.held", "gauge", "{span}", "Spans held while their trace is grouped."),
    Instrument("semloop.traces.held", "gauge", "{trace}", "Traces being grouped."),
    Instrument("semloop.scorers.stuck", "gauge", "{thread}", "Scoring threads abandoned past their budget."),
    Instrument(
        "semloop.export.pending",
        "gauge",
        "{span}",
        "Spans waiting in the export queue.",
        front_doors=("service",),
    ),
    Instrument(
        "semloop.export.down",
        "gauge",
        "1",
        "1 while the last export attempt failed.",
        front_doors=("service",),
    ),
    Instrument(
        "semloop.log_records.held",
        "gauge",
        "{log_record}",
        "GenAI log events held for their trace's scoring.",
        front_doors=("service",),
    ),
    Instrument(
        "semloop.export.log_records.pending",
        "gauge",
        "{log_record}",
        "Log records waiting in the logs export queue.",
        front_doors=("service",),
    ),
    Instrument(
        "semloop.memory.accepted",
        "gauge",
        "By",
        "Bytes of accepted requests held or queued.",
        front_doors=("service",),
    ),
    Instrument(
        "semloop.durable.pending",
        "gauge",
        "{request}",
        "Requests in the durable queue not yet forwarded.",
        front_doors=("service",),
    ),
)


class SelfTelemetry:
    """Counters keyed by (instrument, attribute value), exported on collection, for the
    instruments :data:`INSTRUMENTS` declares for ``front_door``. ``gauges`` returns the
    current value of each declared gauge."""

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None,
        gauges: Callable[[], dict[str, int]],
        front_door: FrontDoor,
    ) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._gauges = gauges
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter("otel_semloop", _VERSION)
        declared = [i for i in INSTRUMENTS if front_door in i.front_doors]
        self.counters = frozenset(i.name for i in declared if i.kind == "counter")
        self.gauges = frozenset(i.name for i in declared if i.kind == "gauge")
        for instrument in declared:
            if instrument.kind == "counter":
                meter.create_observable_counter(
                    instrument.name,
                    callbacks=[self._counter_callback(instrument.name, instrument.attribute)],
                    unit=instrument.unit,
                    description=instrument.description,
                )
            else:
                meter.create_observable_gauge(
                    instrument.name,
                    callbacks=[self._gauge_callback(instrument.name)],
                    unit=instrument.unit,
                    description=instrument.description,
                )
        self.scoring_duration = meter.create_histogram(
            "semloop.scoring.duration", unit="s", description="Time to score one trace (conversion included)."
        )

    def at_fork_reinit(self) -> None:
        """A forked child gets a fresh lock (the parent's may have been held at fork)."""
        self._lock = threading.Lock()

    def add(self, name: str, value: str, amount: int = 1) -> None:
        """Count ``amount`` under ``name`` and attribute ``value``. Raises ``KeyError``
        for a counter not declared for this front door."""
        if name not in self.counters:
            raise KeyError(f"self-metric {name!r} is not declared in otel_semloop.telemetry.INSTRUMENTS")
        key = (name, value)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def snapshot(self) -> dict[str, int]:
        """``{"instrument.value": count}`` plus the gauges."""
        with self._lock:
            counts = {f"{name}.{value}": count for (name, value), count in self._counts.items()}
        counts.update(self._gauges())
        return counts

    def _counter_callback(self, name: str, key: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            with self._lock:
                items = [(value, count) for (n, value), count in self._counts.items() if n == name]
            return [Observation(count, {key: value}) for value, count in items]

        return callback

    def _gauge_callback(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            value: Any = self._gauges().get(name, 0)
            return [Observation(value)]

        return callback


def count_forwarded(telemetry: SelfTelemetry, total: int, patched: int, state: str = "original") -> None:
    """Count ``total`` spans handed downstream, ``patched`` of them carrying a verdict and
    the rest in ``state`` (original or late)."""
    if patched:
        telemetry.add("semloop.spans.forwarded", "patched", patched)
    if total > patched:
        telemetry.add("semloop.spans.forwarded", state, total - patched)


class LogLimiter(logging.Filter):
    """At most one log record per key every ``interval`` seconds.

    A record opts in with ``extra={"semloop_limit": key}``; others pass untouched. An
    exporter that is down or a buggy detector fails on every trace, and every failure is
    counted in ``semloop.errors`` anyway, so one line a minute per kind is enough. The
    first record that passes after a quiet spell says how many were held back."""

    def __init__(self, interval: float = 60.0) -> None:
        super().__init__()
        self.interval = interval
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = getattr(record, "semloop_limit", None)
        if key is None:
            return True
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            self._last[key] = now
            suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            record.msg = f"{record.msg} ({suppressed} more since the last report)"
        return True

    def reset(self) -> None:
        with self._lock:
            self._last.clear()
            self._suppressed.clear()


#: The one limiter every logger of this package shares.
LOG_LIMITER = LogLimiter()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` with :data:`LOG_LIMITER` attached (a logger's filters
    see only records logged on it, so each module's logger gets the shared one)."""
    logger = logging.getLogger(name)
    if LOG_LIMITER not in logger.filters:
        logger.addFilter(LOG_LIMITER)
    return logger
