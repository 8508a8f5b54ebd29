"""The processor's own counters, readable directly (:meth:`stats`) and as OTel metrics.

Counting must cost the application nothing measurable, so counts are plain integers
(updated under the processor's lock or by its worker) and the metrics API reads them
through observable instruments when a reader collects. Only the scoring latency is a
synchronous histogram, recorded on the worker. With no ``MeterProvider`` configured the
API's no-op meter is used and nothing is recorded.

Instruments (meter ``otel_semloop``):

=================================  =======================  ===============================
name                               kind                     attributes
=================================  =======================  ===============================
``semloop.traces``                 counter ``{trace}``      ``semloop.label`` (loop,
                                                            suspected, no_loop, unscored,
                                                            none = no agent steps)
``semloop.releases``               counter ``{release}``    ``semloop.release.reason``
                                                            (complete, idle, max_age,
                                                            overflow, span_limit, flush,
                                                            shutdown)
``semloop.releases.early``         counter ``{release}``    reason, every reason but complete
``semloop.unscored``               counter ``{trace}``      ``semloop.unscored.reason``
                                                            (budget, stuck, error)
``semloop.spans.forwarded``        counter ``{span}``       ``semloop.span.state``
                                                            (original, patched, late);
                                                            unsampled spans not counted
``semloop.errors``                 counter ``{error}``      ``semloop.error.where``
``semloop.spans.held``             gauge ``{span}``
``semloop.traces.held``            gauge ``{trace}``
``semloop.scorers.stuck``          gauge ``{thread}``
``semloop.scoring.duration``       histogram ``s``
=================================  =======================  ===============================
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

_VERSION = "0.1.0"


class SelfTelemetry:
    """Counters keyed by (instrument, attribute value), exported on collection."""

    def __init__(
        self,
        meter_provider: metrics.MeterProvider | None,
        gauges: Callable[[], dict[str, int]],
    ) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._gauges = gauges
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter("otel_semloop", _VERSION)
        counters = {
            "semloop.traces": ("{trace}", "semloop.label", "Traces released, by verdict label."),
            "semloop.releases": (
                "{release}",
                "semloop.release.reason",
                "Traces (or chunks of a trace) released to scoring, by reason.",
            ),
            "semloop.releases.early": (
                "{release}",
                "semloop.release.reason",
                "Releases before the trace completed (partial verdicts), by reason.",
            ),
            "semloop.unscored": ("{trace}", "semloop.unscored.reason", "Traces forwarded without a verdict."),
            "semloop.spans.forwarded": (
                "{span}",
                "semloop.span.state",
                "Spans handed to the downstream processor.",
            ),
            "semloop.errors": ("{error}", "semloop.error.where", "Errors caught and swallowed, by place."),
        }
        for name, (unit, key, description) in counters.items():
            meter.create_observable_counter(
                name, callbacks=[self._counter_callback(name, key)], unit=unit, description=description
            )
        for name, unit, description in (
            ("semloop.spans.held", "{span}", "Spans held while their trace is grouped."),
            ("semloop.traces.held", "{trace}", "Traces being grouped."),
            (
                "semloop.scorers.stuck",
                "{thread}",
                "Scoring threads abandoned past their budget, still alive.",
            ),
        ):
            meter.create_observable_gauge(
                name, callbacks=[self._gauge_callback(name)], unit=unit, description=description
            )
        self.scoring_duration = meter.create_histogram(
            "semloop.scoring.duration", unit="s", description="Time to score one trace (conversion included)."
        )

    def at_fork_reinit(self) -> None:
        """A forked child gets a fresh lock (the parent's may have been held at fork)."""
        self._lock = threading.Lock()

    def add(self, name: str, value: str, amount: int = 1) -> None:
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
