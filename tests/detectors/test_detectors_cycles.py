"""Action cycles: a (tool, arguments, result) pattern repeated at the tail."""

from __future__ import annotations

from otel_semloop.detectors.cycles import ACTION_CYCLE, ActionCycleDetector, CycleTracker
from otel_semloop.detectors.suite import DetectorSuite
from tests.support.scenarios import Scenario, found


def grep_loop(times: int) -> Scenario:
    run = Scenario()
    for _ in range(times):
        run.think("Searching again.").tool("grep", {"pattern": "session guard", "path": "."}, "no matches")
    return run


def alternation(rounds: int) -> Scenario:
    run = Scenario()
    for _ in range(rounds):
        run.tool("read_file", {"path": "orders.py"}, "120 lines")
        run.tool("run_tests", {"suite": "billing"}, "1 failed")
    return run


def test_the_fourth_identical_call_with_the_same_result_is_a_conclusive_cycle():
    finding = found(grep_loop(4).findings(), ACTION_CYCLE)
    assert finding is not None and finding.conclusive
    assert (finding.period, finding.repeats, finding.no_progress) == (1, 4, True)


def test_three_identical_calls_only_warn():
    finding = found(grep_loop(3).findings(), ACTION_CYCLE)
    assert finding is not None and not finding.conclusive and finding.severity == 0.75


def test_an_a_b_alternation_three_times_is_conclusive():
    finding = found(alternation(3).findings(), ACTION_CYCLE)
    assert finding is not None and finding.conclusive and finding.period == 2


def test_an_a_b_alternation_twice_is_a_warning():
    finding = found(alternation(2).findings(), ACTION_CYCLE)
    assert finding is not None and not finding.conclusive


def test_a_period_five_cycle_three_times_is_conclusive():
    run = Scenario()
    for _ in range(3):
        for name in "abcde":
            run.tool(name, {"x": 1}, "same")
    finding = found(run.findings(), ACTION_CYCLE)
    assert finding is not None and finding.conclusive and finding.period == 5


def test_a_period_six_cycle_is_beyond_the_tracker():
    run = Scenario()
    for _ in range(3):
        for name in "abcdef":
            run.tool(name, {"x": 1}, "same")
    assert found(run.findings(), ACTION_CYCLE) is None


def test_the_reported_period_is_the_primitive_one():
    finding = found(grep_loop(8).findings(), ACTION_CYCLE)
    assert finding is not None and (finding.period, finding.repeats) == (1, 8)


def test_a_changed_result_breaks_the_cycle():
    run = grep_loop(3).tool("grep", {"pattern": "session guard", "path": "."}, "guard.py:12")
    finding = found(run.findings(), ACTION_CYCLE)
    assert finding is None or not finding.conclusive


def test_transient_failures_neither_break_nor_extend_a_cycle():
    run = Scenario()
    for i in range(4):
        run.tool("grep", {"pattern": "x"}, "no matches")
        if i == 1:
            run.fail("grep", {"pattern": "x"}, "HTTP 503 Service Unavailable")
    finding = found(run.findings(), ACTION_CYCLE)
    assert finding is not None and finding.repeats == 4


def test_a_cycle_without_recorded_results_is_repetition_alone():
    run = Scenario()
    for _ in range(4):
        run.tool("grep", {"pattern": "x"}, None)
    finding = found(run.findings(), ACTION_CYCLE)
    assert finding is not None and finding.conclusive and not finding.no_progress


def test_steps_with_neither_arguments_nor_results_never_cycle():
    run = Scenario()
    for _ in range(6):
        run.tool("opaque_tool")
    assert found(run.findings(), ACTION_CYCLE) is None


def test_the_evidence_is_the_repeated_tool_steps_and_where_they_are():
    run = grep_loop(4)
    finding = found(run.findings(), ACTION_CYCLE)
    tool_spans = tuple(s.span_id for s in run.steps if s.name == "grep")
    assert finding is not None and finding.span_ids == tool_spans
    assert finding.started_step == 2 and finding.detected_step == 8
    assert finding.started_ns == run.steps[1].start_ns


def test_the_description_names_the_tools_and_the_period():
    finding = found(alternation(3).findings(), ACTION_CYCLE)
    assert finding is not None
    assert "read_file -> run_tests" in finding.describe() and "3 times" in finding.describe()


def test_observing_step_by_step_reports_the_cycle_the_moment_it_becomes_conclusive():
    detector = ActionCycleDetector()
    trace = grep_loop(5).trace()
    conclusive_at = [
        index for index, step in enumerate(trace.steps) for f in detector.observe(step, index) if f.conclusive
    ]
    assert conclusive_at == [8]  # the 4th grep; the 5th is below the next level (2.0)


def test_a_detector_alone_and_inside_the_suite_agree():
    trace = alternation(4).trace()
    alone = ActionCycleDetector().detect(trace)
    in_suite = [f for f in DetectorSuite().detect(trace) if f.signal == ACTION_CYCLE]
    assert alone == in_suite


def test_the_tracker_reports_period_and_tail_length():
    tracker = CycleTracker(3)
    results = [tracker.push(x) for x in [1, 2, 1, 2, 1]]
    assert results[:3] == [[], [], []]
    assert results[3] == [(2, 4)] and results[4] == [(2, 5)]
