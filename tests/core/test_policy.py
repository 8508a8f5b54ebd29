"""Policy: findings become an action, a label, a score, a reason and in-loop spans."""

from __future__ import annotations

import pytest

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.errors import ConfigError
from otel_semloop.policy import Policy
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Action, Finding, Label
from otel_semloop.writeback import patches_for
from tests.support.repo_data import BENCH, read_jsonl
from tests.support.scenarios import Scenario


def finding(
    severity: float, *, no_progress: bool = False, permanent: bool = False, signal: str = "s"
) -> Finding:
    return Finding(
        signal,
        severity,
        "test pattern",
        span_ids=(f"{signal}-{severity}",),
        started_step=1,
        detected_step=2,
        no_progress=no_progress,
        permanent=permanent,
    )


POLICY = Policy()

# --- actions -----------------------------------------------------------------------------------


def test_below_half_the_threshold_the_agent_continues():
    assert POLICY.action_for(finding(0.49, no_progress=True)) is Action.CONTINUE


def test_from_half_the_threshold_a_forming_pattern_warns():
    assert POLICY.action_for(finding(0.5, no_progress=True)) is Action.WARN


def test_repetition_alone_warns():
    assert POLICY.action_for(finding(1.0)) is Action.WARN


def test_repetition_alone_that_keeps_going_asks_for_a_replan():
    assert POLICY.action_for(finding(1.99)) is Action.WARN
    assert POLICY.action_for(finding(2.0)) is Action.REPLAN


def test_repetition_with_no_progress_stops():
    assert POLICY.action_for(finding(1.0, no_progress=True)) is Action.STOP


def test_a_repeated_permanent_error_stops():
    assert POLICY.action_for(finding(1.0, permanent=True)) is Action.STOP


def test_a_per_signal_action_overrides_the_default():
    assert POLICY.action_for(finding(1.0, signal="budget_steps")) is Action.PAUSE
    custom = Policy(signal_actions={"chanting": Action.REPLAN})
    assert custom.action_for(finding(1.0, no_progress=True, signal="chanting")) is Action.REPLAN


def test_the_trace_takes_the_strongest_action():
    verdict = POLICY.verdict([finding(1.0), finding(1.0, no_progress=True, signal="t")])
    assert verdict.action is Action.STOP


# --- labels and scores -----------------------------------------------------------------------


def test_conclusive_repetition_with_no_progress_is_a_loop_below_half():
    verdict = POLICY.verdict([finding(1.0, no_progress=True)])
    assert verdict.label is Label.LOOP and verdict.loop_detected and verdict.score < 0.5


def test_conclusive_repetition_alone_is_suspected_above_half():
    verdict = POLICY.verdict([finding(1.0)])
    assert verdict.label is Label.SUSPECTED and 0.5 < verdict.score <= 0.7


def test_warnings_alone_are_no_loop():
    verdict = POLICY.verdict([finding(0.75, no_progress=True)])
    assert verdict.label is Label.NO_LOOP and verdict.action is Action.WARN and 0.75 <= verdict.score < 1.0


@pytest.mark.parametrize(("severity", "score"), [(0.5, 0.875), (0.75, 0.8125), (0.99, 0.7525)])
def test_a_warning_lowers_the_score_by_a_quarter_of_its_severity(severity, score):
    assert POLICY.verdict([finding(severity)]).score == score


def test_a_clean_trace_scores_one():
    verdict = POLICY.verdict([])
    assert (verdict.label, verdict.score, verdict.action) == (Label.NO_LOOP, 1.0, Action.CONTINUE)
    assert verdict.reason == "No loop patterns detected."


def test_the_score_falls_as_the_loop_grows():
    scores = [POLICY.verdict([finding(s, no_progress=True)]).score for s in (1.0, 1.5, 3.0)]
    assert scores == sorted(scores, reverse=True) and scores[0] == 0.45


def test_the_label_follows_the_evidence_not_the_configured_action():
    gentle = Policy(on_no_progress=Action.PAUSE)
    verdict = gentle.verdict([finding(1.0, no_progress=True)])
    assert verdict.action is Action.PAUSE and verdict.label is Label.LOOP


def test_findings_below_a_warning_are_not_kept():
    assert POLICY.verdict([finding(0.3)]).findings == ()


# --- reason, in-loop spans, write-back -----------------------------------------------------------


def test_in_loop_spans_are_those_of_the_deciding_findings():
    loop, warning = finding(1.0, no_progress=True, signal="a"), finding(0.6, signal="b")
    verdict = POLICY.verdict([loop, warning])
    assert verdict.in_loop_span_ids == frozenset(loop.span_ids)


def test_no_loop_marks_no_spans():
    assert POLICY.verdict([finding(0.9, no_progress=True)]).in_loop_span_ids == frozenset()


def test_the_reason_names_the_signal_and_where():
    verdict = POLICY.verdict([finding(1.0, no_progress=True, signal="action_cycle")])
    assert verdict.reason.startswith("Loop: action_cycle: test pattern (steps 1-2)")


def test_the_reason_quotes_three_findings_and_counts_the_rest():
    verdict = POLICY.verdict([finding(1.0 + i / 10, no_progress=True, signal=f"s{i}") for i in range(5)])
    assert verdict.reason.endswith("and 2 more findings.")


def test_a_threshold_that_cannot_work_is_refused_at_construction():
    with pytest.raises(ConfigError, match="identical_repeats"):
        DetectorConfig(identical_repeats=0)
    with pytest.raises(ConfigError, match="max_cost"):
        DetectorConfig(max_cost=-1.0)


def test_calibration_figures_are_recorded_only_when_asked():
    run = Scenario().tool("grep", {"q": "x"}, "none").tool("grep", {"q": "x"}, "none")
    assert run.verdict().calibration == {}
    calibrated = run.verdict(DetectorConfig(calibration=True)).calibration
    assert calibrated["action_cycle"] == 0.5 and calibrated["chanting"] == 0.0


def test_a_loop_verdict_is_written_on_the_root_and_the_looping_step_spans():
    from bench.deepeval_tree import trace_from_bench_row

    row = next(row for row in read_jsonl(BENCH) if row["trace_id"] == "identical_tool_loop-00")
    trace = trace_from_bench_row(row)
    verdict = Scorer().score(trace)
    patches = patches_for(trace, verdict)
    root = patches[trace.root_span_id].attributes
    assert root["semloop.loop.detected"] is True and root["semloop.label"] == "loop"
    assert root["semloop.score"] < 0.5 and root["semloop.action"] == "stop"
    assert "action_cycle" in root["semloop.signals"] and "semloop.deepeval.score" in root
    marked = {span for span, patch in patches.items() if patch.attributes.get("semloop.in_loop")}
    assert marked == {s.span_id for s in trace.tool_steps}
