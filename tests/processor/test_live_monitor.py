"""LiveMonitor: the live guard's decision, the moment a finding becomes conclusive."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_semloop.detectors.suite import DetectorSuite
from otel_semloop.model import Step, StepKind
from otel_semloop.processor.live import LiveMonitor
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Action, Label
from tests.support.scenarios import Scenario
from tests.support.traces import flat_trace


def feed(monitor: LiveMonitor, run: Scenario) -> list:
    return [monitor.observe(step) for step in run.steps]


def grep_calls(times: int, result: str | None = "no matches") -> Scenario:
    run = Scenario()
    for _ in range(times):
        run.think("Searching again.").tool("grep", {"pattern": "guard"}, result)
    return run


def test_nothing_is_decided_before_a_finding_is_conclusive():
    assert all(decision is None for decision in feed(LiveMonitor(), grep_calls(3)))


def test_the_fourth_identical_call_stops_the_run_when_it_ends():
    decisions = feed(LiveMonitor(), grep_calls(4))
    assert decisions[:-1] == [None] * 7
    decision = decisions[-1]
    assert decision is not None and decision.action is Action.STOP
    assert decision.finding.conclusive and decision.finding.no_progress
    assert decision.describe().startswith("stop: ")


def test_warnings_are_kept_but_not_returned():
    monitor = LiveMonitor()
    feed(monitor, grep_calls(2))
    assert [f.signal for f in monitor.findings()] == ["action_cycle", "repeated_result"]


def test_repetition_alone_warns_first_then_asks_for_a_replan():
    decisions = [d for d in feed(LiveMonitor(), grep_calls(8, result=None)) if d is not None]
    assert [d.action for d in decisions] == [Action.WARN, Action.REPLAN]


def test_the_live_findings_equal_the_offline_findings():
    run = grep_calls(6)
    monitor = LiveMonitor()
    feed(monitor, run)
    offline = Scorer().score(run.trace())
    # The offline trace has a root agent step first, so indices shift by one.
    live = {(f.signal, f.severity, f.span_ids) for f in monitor.findings()}
    assert live == {(f.signal, f.severity, f.span_ids) for f in offline.findings}


def test_a_live_verdict_is_partial():
    monitor = LiveMonitor()
    feed(monitor, grep_calls(4))
    verdict = monitor.verdict()
    assert verdict.partial and verdict.label is Label.LOOP


def test_steps_without_times_are_fine():
    decisions = feed(LiveMonitor(), Scenario(timed=False).tool("a", {}, "x").tool("a", {}, "x"))
    assert decisions == [None, None]


def test_reset_starts_a_new_run():
    monitor = LiveMonitor()
    feed(monitor, grep_calls(3))
    monitor.reset()
    assert monitor.steps_seen == 0 and monitor.findings() == []
    assert all(d is None for d in feed(monitor, grep_calls(3)))


def test_the_monitor_counts_the_steps_it_saw():
    monitor = LiveMonitor()
    feed(monitor, grep_calls(2))
    assert monitor.steps_seen == 4


# --- properties ------------------------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(["x", "./x/", "no matches", "error: boom", "429 Too Many Requests", "50%", "3/10", ""]),
)
_ARGS = st.one_of(
    st.none(),
    st.text(max_size=8),
    st.dictionaries(st.sampled_from(["path", "page", "limit", "q", "request_id"]), _VALUES, max_size=3),
    st.lists(_VALUES, max_size=3),
)


@st.composite
def _steps(draw) -> list[Step]:
    steps = []
    for i in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from([StepKind.TOOL, StepKind.TOOL, StepKind.LLM, StepKind.AGENT]))
        step = Step(kind, draw(st.sampled_from(["a", "b", "grep"])), span_id=f"s{i}")
        if kind is StepKind.TOOL:
            step.tool_arguments = draw(_ARGS)
            step.tool_result = draw(st.one_of(_VALUES, _ARGS))
        else:
            step.output_text = draw(st.sampled_from(["", "Same.", "Other thing.", "line one\n" * 12]))
        step.is_error = draw(st.booleans())
        step.error_message = draw(st.sampled_from(["", "HTTP 401", "timed out", "boom"]))
        if draw(st.booleans()):
            step.start_ns = i * 10**9
            step.end_ns = step.start_ns + draw(st.integers(0, 10**12))
        steps.append(step)
    return steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded CI machine
@given(_steps())
def test_any_sequence_of_steps_is_observed_without_error_and_live_agrees_with_offline(steps):
    monitor = LiveMonitor()
    for step in steps:
        decision = monitor.observe(step)
        assert decision is None or decision.finding.conclusive
    offline = DetectorSuite().detect(flat_trace(steps))
    # The same findings; live numbers steps from 1 (a verdict's step 0 is the run's root,
    # which this rootless trace lacks).
    shifted = [
        dataclasses.replace(
            f,
            started_step=None if f.started_step is None else f.started_step + 1,
            detected_step=None if f.detected_step is None else f.detected_step + 1,
        )
        for f in offline
    ]
    assert sorted(monitor.findings(), key=repr) == sorted(shifted, key=repr)


def test_the_live_guard_numbers_steps_as_the_verdict_does():
    """From 1: in a verdict step 0 is the run's root span, which the guard never sees first."""
    steps = []
    for i in range(6):
        steps.append(
            Step(StepKind.LLM, "chat", output="search again", output_text="search again", span_id=f"l{i}")
        )
        steps.append(
            Step(
                StepKind.TOOL, "search", tool_arguments={"q": "x"}, tool_result="no results", span_id=f"t{i}"
            )
        )
    monitor = LiveMonitor()
    decisions = [d for d in map(monitor.observe, steps) if d is not None]
    root = Step(StepKind.AGENT, "invoke_agent researcher", span_id="root")
    verdict = Scorer().score(flat_trace([root, *steps], trace_id="c" * 32))
    (offline,) = [f for f in verdict.findings if f.signal == decisions[0].finding.signal]
    assert decisions[0].finding.started_step == offline.started_step == 2  # the first search call
