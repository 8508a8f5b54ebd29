"""Loop metrics to alert on, read through a real SDK ``MeterProvider`` and ``InMemoryMetricReader``
from the span processor: a loop counted once under its agent and signal, the tokens it burned
from its onset (hand sums of the recorded runs, see ``tests/support/agent_spans.py``: round ``k``
spends ``100 * k`` input and 20 output tokens, the loop begins at round 2's call), the steps
and tokens it took in histogram buckets that fit their unit, the agent names bounded (the
first ``metric_agent_names``, then ``other``), and the scoring latency in seconds spread over
buckets from half a millisecond up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_semloop.telemetry import INSTRUMENTS, SelfTelemetry
from tests.support.processor_support import looping, pipeline

DECLARED = {instrument.name: instrument for instrument in INSTRUMENTS}


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for resource_metrics in reader.get_metrics_data().resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                out[metric.name] = list(metric.data.data_points)
    return out


def bucket_of(point: Any, value: float) -> tuple[float, float]:
    """The (lower, upper] bounds of the one bucket holding ``value``, checked by its count."""
    bounds = [float("-inf"), *point.explicit_bounds, float("inf")]
    filled = [i for i, count in enumerate(point.bucket_counts) if count]
    assert len(filled) == 1, point
    lower, upper = bounds[filled[0]], bounds[filled[0] + 1]
    assert lower < value <= upper
    return lower, upper


@pytest.fixture
def loops_of() -> Iterator[Any]:
    """Run looping agents (name, searches) through the processor; the metric points after."""
    providers: list[MeterProvider] = []

    def run(agents: list[tuple[str, int]], **options: Any) -> dict[str, list[Any]]:
        reader = InMemoryMetricReader()
        meters = MeterProvider(metric_readers=[reader])
        providers.append(meters)
        with pipeline(meter_provider=meters, **options) as line:
            spans = 0
            for name, searches in agents:
                looping(line, iterations=searches, name=name)
                spans += 1 + 2 * searches
            line.wait_exported(spans)
            assert line.processor.force_flush()
        return points(reader)

    yield run
    for meters in providers:
        meters.shutdown()


def test_a_loop_is_counted_once_under_its_agent_signal_and_label(loops_of) -> None:
    got = loops_of([("researcher", 8)])
    (point,) = got["semloop.loops"]
    assert point.value == 1
    assert point.attributes == {
        "gen_ai.agent.name": "researcher",
        "semloop.signal": "action_cycle",
        "semloop.label": "loop",
    }


def test_tokens_burned_from_the_onset_are_the_hand_sum(loops_of) -> None:
    got = loops_of([("researcher", 8)])
    burned = {p.attributes["gen_ai.token.type"]: p.value for p in got["semloop.loop.tokens.burned"]}
    assert burned == {"input": 100 * (2 + 3 + 4 + 5 + 6 + 7 + 8), "output": 20 * 7}
    assert "semloop.loop.cost.burned" not in got  # no span records a cost


def test_the_steps_a_loop_took_land_in_their_bucket(loops_of) -> None:
    got = loops_of([("researcher", 8)])
    (point,) = got["semloop.loop.steps"]
    # 17 steps (agent, then chat and search 8 times): the loop is steps 3 to 17, 15 of them.
    assert point.sum == 15
    assert bucket_of(point, 15) == (10, 15)
    assert tuple(point.explicit_bounds) == DECLARED["semloop.loop.steps"].boundaries


def test_the_tokens_a_loop_took_land_in_their_bucket(loops_of) -> None:
    got = loops_of([("researcher", 8)])
    (point,) = got["semloop.loop.tokens"]
    assert point.sum == 3500 + 140
    assert bucket_of(point, 3640) == (2500, 5000)


def test_agents_past_the_limit_are_counted_as_other(loops_of) -> None:
    got = loops_of([("a", 6), ("b", 6), ("c", 6)], metric_agent_names=2)
    by_agent = {p.attributes["gen_ai.agent.name"]: p.value for p in got["semloop.loops"]}
    assert by_agent == {"a": 1, "b": 1, "other": 1}


def test_agents_up_to_the_limit_keep_their_names(loops_of) -> None:
    got = loops_of([("a", 6), ("b", 6), ("a", 6)], metric_agent_names=2)
    by_agent = {p.attributes["gen_ai.agent.name"]: p.value for p in got["semloop.loops"]}
    assert by_agent == {"a": 2, "b": 1}


@pytest.mark.parametrize(("seconds", "bucket"), [(0.0004, (float("-inf"), 0.0005)), (0.03, (0.025, 0.05))])
def test_a_scoring_latency_in_seconds_lands_in_a_bucket_of_its_size(seconds: float, bucket: tuple) -> None:
    reader = InMemoryMetricReader()
    telemetry = SelfTelemetry(MeterProvider(metric_readers=[reader]), dict, "service")
    telemetry.record("semloop.scoring.duration", seconds)
    (point,) = points(reader)["semloop.scoring.duration"]
    assert bucket_of(point, seconds) == bucket


def test_every_histogram_declares_boundaries_in_its_unit() -> None:
    histograms = [i for i in INSTRUMENTS if i.kind == "histogram"]
    assert {i.name for i in histograms} >= {
        "semloop.scoring.duration",
        "semloop.loop.steps",
        "semloop.loop.tokens",
    }
    for instrument in histograms:
        bounds = instrument.boundaries
        assert len(bounds) >= 8 and list(bounds) == sorted(set(bounds)), instrument.name
    assert DECLARED["semloop.scoring.duration"].boundaries[-1] >= 5.0  # the default scoring budget


def test_the_readme_lists_every_loop_metric_and_histogram() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Get alerted", 1)[1].split("\n## ", 1)[0]
    listed = {name for name in DECLARED if f"`{name}`" in section}
    wanted = {i.name for i in INSTRUMENTS if i.kind == "histogram" or i.name.startswith("semloop.loop")}
    assert wanted - listed == set()
