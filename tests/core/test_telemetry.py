"""Self-metrics: every name a call site uses is declared once and reaches a real metric
reader, for the front door that uses it; the one log limiter lets one line per kind through."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_semloop.telemetry import INSTRUMENTS, LogLimiter, SelfTelemetry

PACKAGE = Path(__file__).resolve().parents[2] / "otel_semloop"
#: ``telemetry.add("semloop.x", ...)`` and the like, wherever the call is split.
COUNTER_CALL = re.compile(r"\.add\(\s*\"(semloop\.[a-z_.]+)\"")
#: ``telemetry.record("semloop.x", ...)``.
HISTOGRAM_CALL = re.compile(r"\.record\(\s*\"(semloop\.[a-z_.]+)\"")
DECLARED = {instrument.name: instrument for instrument in INSTRUMENTS}


def probe(name: str) -> str | tuple[str, ...]:
    """An attribute value for counter ``name``: one string per attribute it declares."""
    attribute = DECLARED[name].attribute
    return "probe" if isinstance(attribute, str) else ("probe",) * len(attribute)


def front_doors_of(path: Path) -> tuple[str, ...]:
    parts = path.relative_to(PACKAGE).parts
    if parts[0] == "processor":
        return ("processor",)
    if parts[0] == "service":
        return ("service",)
    return ("processor", "service")  # the core (pool, release...) counts for both


def gauge_keys(source: str) -> set[str]:
    """The keys of the dicts a front door's ``gauges`` callback returns."""
    keys = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name in ("gauges", "_gauges"):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Dict):
                    keys |= {k.value for k in inner.keys if isinstance(k, ast.Constant)}
    return {key for key in keys if isinstance(key, str) and key.startswith("semloop.")}


def used_names() -> dict[str, set[tuple[str, str]]]:
    """{front door: {(kind, name)}} for every name used at a call site in the package."""
    used: dict[str, set[tuple[str, str]]] = {"processor": set(), "service": set()}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "telemetry.py":
            continue
        text = path.read_text()
        names = {("counter", n) for n in COUNTER_CALL.findall(text)}
        names |= {("histogram", n) for n in HISTOGRAM_CALL.findall(text)}
        if "count_forwarded(" in text:
            names.add(("counter", "semloop.spans.forwarded"))
        names |= {("gauge", n) for n in gauge_keys(text)}
        for door in front_doors_of(path):
            used[door] |= names
    return used


def test_call_sites_were_found() -> None:
    used = used_names()
    assert ("counter", "semloop.errors") in used["processor"]
    assert ("counter", "semloop.export.dropped") in used["service"]
    assert ("gauge", "semloop.export.pending") in used["service"]


@pytest.mark.parametrize("front_door", ["processor", "service"])
def test_every_self_metric_used_at_a_call_site_reaches_a_metric_reader(front_door: str) -> None:
    used = used_names()[front_door]
    gauges = {name for kind, name in used if kind == "gauge"}
    reader = InMemoryMetricReader()
    telemetry = SelfTelemetry(
        MeterProvider(metric_readers=[reader]),
        lambda: dict.fromkeys(gauges, 7),
        front_door,  # type: ignore[arg-type]
    )
    for kind, name in used:
        if kind == "counter":
            telemetry.add(name, probe(name), 3)
        elif kind == "histogram":
            telemetry.record(name, 3, () if isinstance(DECLARED[name].attribute, str) else probe(name))
    data = reader.get_metrics_data()
    exported: dict[str, list[object]] = {}
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                exported[metric.name] = list(metric.data.data_points)
    missing = sorted(name for _, name in used if name not in exported)
    assert missing == []
    for kind, name in used:
        if kind == "histogram":
            assert [point.sum for point in exported[name]] == [3], name
            continue
        values = [getattr(point, "value", None) for point in exported[name]]
        assert values == [3 if kind == "counter" else 7], (name, values)
    assert "semloop.scoring.duration" in exported


def test_every_declared_instrument_is_used_somewhere() -> None:
    used = used_names()
    for instrument in INSTRUMENTS:
        for door in instrument.front_doors:
            assert (instrument.kind, instrument.name) in used[door], (door, instrument.name)


def test_counting_an_undeclared_name_fails() -> None:
    telemetry = SelfTelemetry(MeterProvider(), dict, "processor")
    with pytest.raises(KeyError, match=r"semloop\.export\.dropped"):
        telemetry.add("semloop.export.dropped", "queue_full")  # a service-only counter
    with pytest.raises(KeyError):
        telemetry.add("semloop.no_such_thing", "x")


def _record(key: str | None, message: str = "failed") -> logging.LogRecord:
    record = logging.LogRecord("otel_semloop.test", logging.WARNING, __file__, 1, message, (), None)
    if key is not None:
        record.semloop_limit = key
    return record


def test_the_log_limiter_lets_one_line_per_kind_through_per_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("otel_semloop.telemetry.time.monotonic", lambda: clock[0])
    limiter = LogLimiter(interval=60.0)
    assert limiter.filter(_record("scorer"))
    assert not limiter.filter(_record("scorer"))
    assert not limiter.filter(_record("scorer"))
    assert limiter.filter(_record("downstream"))  # another kind has its own allowance
    assert limiter.filter(_record(None))  # records that do not opt in always pass
    clock[0] += 59.9
    assert not limiter.filter(_record("scorer"))
    clock[0] += 0.1
    passed = _record("scorer")
    assert limiter.filter(passed)
    assert passed.getMessage() == "failed (3 more since the last report)"
