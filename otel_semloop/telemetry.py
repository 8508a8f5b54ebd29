"""Self-telemetry of the front doors: one declared list of instruments, and one log limiter.

Every instrument (meter ``otel_semloop``) is declared once in :data:`INSTRUMENTS`: unit,
description, attributes, the front doors that report it, a histogram's bucket boundaries.
:class:`SelfTelemetry` registers its front door's instruments; counting a name not
declared for it raises ``KeyError``, so a typo fails in the tests.

Counts are plain numbers under a lock, read by observable instruments when a reader
collects; histograms are recorded on a scoring thread. Without a ``MeterProvider``
nothing is exported and each front door's ``stats()`` still shows every count. The loop
metrics count each loop under its agent and signal, with what it burned from its onset
(:mod:`otel_semloop.loop_cost`); past ``metric_agent_names`` agents, names count as ``other``.

Size: most of the module is the declared list, one entry per instrument, so each name has
one home; the counting around it and the log limiter are small.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
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


#: The attributes of the loop metrics (``semloop.loop.steps``, ``semloop.loop.tokens``...).
LOOP_ATTRIBUTES = ("gen_ai.agent.name", "semloop.signal")
#: ``gen_ai.agent.name`` of the loops past the first ``metric_agent_names`` agents.
OTHER_AGENT = "other"


@dataclass(frozen=True, slots=True)
class Instrument:
    name: str
    kind: Literal["counter", "gauge", "histogram"]
    unit: str
    description: str
    #: The attribute a counter's value is reported under, or several (the value is then a
    #: tuple of as many strings).
    attribute: str | tuple[str, ...] = ""
    front_doors: tuple[FrontDoor, ...] = _BOTH
    #: A histogram's bucket boundaries, in its unit.
    boundaries: tuple[float, ...] = ()


#: 100 tokens to 5 M: a loop of a few short calls up to a long run resending its history.
_TOKEN_BOUNDARIES = tuple(m * 10**e for e in range(2, 7) for m in (1, 2.5, 5))


def _service_only(*instruments: Instrument) -> tuple[Instrument, ...]:
    """``instruments`` as reported by the service alone."""
    return tuple(replace(instrument, front_doors=("service",)) for instrument in instruments)


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
        "Downstream flushes forced so a burst does not overflow its queue (timed_out: not waited for).",
        "semloop.catch_up",
        ("processor",),
    ),
    *_service_only(
        Instrument(
            "semloop.spans.received", "counter", "{span}", "Spans accepted from senders.", "semloop.outcome"
        ),
        Instrument(
            "semloop.spans.rejected",
            "counter",
            "{span}",
            "Invalid spans rejected in a request.",
            "semloop.rejection.reason",
        ),
        Instrument(
            "semloop.requests.refused",
            "counter",
            "{request}",
            "Requests refused (too large, bad, unauthenticated, backpressure), by reason.",
            "semloop.refusal.reason",
        ),
        Instrument(
            "semloop.export.spans",
            "counter",
            "{span}",
            "Spans the downstream accepted.",
            "semloop.export.outcome",
        ),
        Instrument(
            "semloop.export.retries", "counter", "{retry}", "Export attempts retried.", "semloop.retry.kind"
        ),
        Instrument(
            "semloop.export.failures",
            "counter",
            "{request}",
            "Export attempts that failed.",
            "semloop.failure.kind",
        ),
        Instrument(
            "semloop.export.dropped",
            "counter",
            "{span}",
            "Spans dropped before reaching the downstream (should stay 0).",
            "semloop.drop.reason",
        ),
        Instrument(
            "semloop.log_records",
            "counter",
            "{log_record}",
            "Log records received, and GenAI events held for scoring, late, attached, dropped from the hold.",
            "semloop.log_record.state",
        ),
        Instrument(
            "semloop.export.log_records",
            "counter",
            "{log_record}",
            "Log records the logs downstream accepted.",
            "semloop.export.outcome",
        ),
        Instrument(
            "semloop.export.log_records.dropped",
            "counter",
            "{log_record}",
            "Log records dropped before reaching the logs downstream (should stay 0).",
            "semloop.drop.reason",
        ),
    ),
    Instrument(
        "semloop.loops",
        "counter",
        "{trace}",
        "Traces the verdict calls a loop (loop, suspected), by agent, deciding signal and label.",
        (*LOOP_ATTRIBUTES, "semloop.label"),
    ),
    Instrument(
        "semloop.loop.tokens.burned",
        "counter",
        "{token}",
        "Tokens spent from each loop's onset to the end of its trace, by agent, signal and token type.",
        (*LOOP_ATTRIBUTES, "gen_ai.token.type"),
    ),
    Instrument(
        "semloop.loop.cost.burned",
        "counter",
        "{USD}",
        "US dollars spent from each loop's onset to the end of its trace (where spans record a cost).",
        LOOP_ATTRIBUTES,
    ),
    Instrument(
        "semloop.scoring.duration",
        "histogram",
        "s",
        "Time to score one trace (conversion included).",
        boundaries=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    ),
    Instrument(
        "semloop.loop.steps",
        "histogram",
        "{step}",
        "Steps from a loop's onset to the end of its trace, by agent and signal.",
        LOOP_ATTRIBUTES,
        boundaries=(1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000),
    ),
    Instrument(
        "semloop.loop.tokens",
        "histogram",
        "{token}",
        "Tokens (input and output) from a loop's onset to the end of its trace, by agent and signal.",
        LOOP_ATTRIBUTES,
        boundaries=_TOKEN_BOUNDARIES,
    ),
    Instrument("semloop.spans.held", "gauge", "{span}", "Spans held while their trace is grouped."),
    Instrument("semloop.traces.held", "gauge", "{trace}", "Traces being grouped."),
    Instrument("semloop.scorers.stuck", "gauge", "{thread}", "Scoring threads abandoned past their budget."),
    *_service_only(
        Instrument("semloop.export.pending", "gauge", "{span}", "Spans waiting in the export queue."),
        Instrument("semloop.export.down", "gauge", "1", "1 while the last export attempt failed."),
        Instrument(
            "semloop.log_records.held",
            "gauge",
            "{log_record}",
            "GenAI log events held for their trace's scoring.",
        ),
        Instrument(
            "semloop.export.log_records.pending",
            "gauge",
            "{log_record}",
            "Log records waiting in the logs export queue.",
        ),
        Instrument("semloop.memory.accepted", "gauge", "By", "Bytes of accepted requests held or queued."),
        Instrument(
            "semloop.durable.pending",
            "gauge",
            "{request}",
            "Requests in the durable queue not yet forwarded.",
        ),
    ),
)


class SelfTelemetry:
    """Counters keyed by (instrument, attribute value), exported on collection, and
    histograms, for the instruments :data:`INSTRUMENTS` declares for ``front_door``.
    ``gauges`` returns the current value of each declared gauge; ``max_agent_names`` bounds
    the agent names the loop metrics keep apart (:meth:`agent_name`)."""

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None,
        gauges: Callable[[], dict[str, int]],
        front_door: FrontDoor,
        max_agent_names: int = 20,
    ) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str | tuple[str, ...]], float] = {}
        self._gauges = gauges
        self.max_agent_names = max_agent_names
        self._agent_names: set[str] = set()
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter("otel_semloop", _VERSION)
        declared = [i for i in INSTRUMENTS if front_door in i.front_doors]
        self.counters = frozenset(i.name for i in declared if i.kind == "counter")
        self.gauges = frozenset(i.name for i in declared if i.kind == "gauge")
        self._histograms: dict[str, metrics.Histogram] = {}
        for instrument in declared:
            if instrument.kind == "histogram":
                self._histograms[instrument.name] = meter.create_histogram(
                    instrument.name,
                    unit=instrument.unit,
                    description=instrument.description,
                    explicit_bucket_boundaries_advisory=[float(b) for b in instrument.boundaries],
                )
            elif instrument.kind == "counter":
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
        self._histogram_attributes = {i.name: i.attribute for i in declared if i.kind == "histogram"}

    def at_fork_reinit(self) -> None:
        """A forked child gets a fresh lock (the parent's may have been held at fork)."""
        self._lock = threading.Lock()

    def add(self, name: str, value: str | tuple[str, ...], amount: float = 1) -> None:
        """Count ``amount`` under ``name`` and attribute ``value`` (a tuple for a counter
        with several attributes). Raises ``KeyError`` for a counter not declared for this
        front door."""
        if name not in self.counters:
            raise KeyError(f"self-metric {name!r} is not declared in otel_semloop.telemetry.INSTRUMENTS")
        key = (name, value)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def record(self, name: str, amount: float, value: str | tuple[str, ...] = ()) -> None:
        """Record ``amount`` in histogram ``name``, under attribute ``value`` (as for
        :meth:`add`; none for a histogram without attributes). Raises ``KeyError`` for a
        histogram not declared for this front door."""
        histogram = self._histograms.get(name)
        if histogram is None:
            raise KeyError(f"self-metric {name!r} is not declared in otel_semloop.telemetry.INSTRUMENTS")
        histogram.record(amount, _attributes(self._histogram_attributes[name], value))

    def agent_name(self, name: str) -> str:
        """``name`` as the loop metrics report it: itself for the first ``max_agent_names``
        names seen, :data:`OTHER_AGENT` after, so the series stay bounded."""
        name = name or "unnamed"
        with self._lock:
            if name in self._agent_names:
                return name
            if len(self._agent_names) < self.max_agent_names:
                self._agent_names.add(name)
                return name
        return OTHER_AGENT

    def snapshot(self) -> dict[str, float]:
        """``{"instrument.value": count}`` plus the gauges (a tuple value joined by dots)."""
        with self._lock:
            counts = {
                f"{name}.{value if isinstance(value, str) else '.'.join(value)}": count
                for (name, value), count in self._counts.items()
            }
        counts.update(self._gauges())
        return counts

    def _counter_callback(
        self, name: str, key: str | tuple[str, ...]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            with self._lock:
                items = [(value, count) for (n, value), count in self._counts.items() if n == name]
            return [Observation(count, _attributes(key, value)) for value, count in items]

        return callback

    def _gauge_callback(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            value: Any = self._gauges().get(name, 0)
            return [Observation(value)]

        return callback


def _attributes(key: str | tuple[str, ...], value: str | tuple[str, ...]) -> dict[str, str]:
    """A metric point's attributes: ``{key: value}``, or key by key for several."""
    if isinstance(key, str):
        return {key: value} if key and isinstance(value, str) else {}
    return dict(zip(key, value, strict=True))


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
