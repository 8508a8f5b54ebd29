"""The local judge's action evidence, each rule from both sides: retries that got past a
transient failure and polls that ended are not stuck (the same repetition that never ends
is); an unrecorded result is no evidence (a recorded one is); a result seen before does not
end a wait (a new one does); and the judge never hides what the detectors found."""

from __future__ import annotations

import random
import uuid

import pytest

from otel_semloop.judges import Judge, JudgedScorer, build_question_set
from otel_semloop.judges.backends.actions import ended_waits
from otel_semloop.judges.backends.local import LocalBackend
from otel_semloop.judges.base import JudgeRequest
from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label
from otel_semloop.writeback import verdict_attributes
from tests.judges.judge_support import HashEmbedder
from tests.support.traces import flat_trace

UNRECORDED = object()


def run(*turns: tuple, trace_id: str = "d" * 32) -> Trace:
    """One LLM step per turn ``(plan, tool, args, result)``; ``result`` an exception class
    name in ``<...>`` is a failed call, ``UNRECORDED`` a call traced without content."""
    steps: list[Step] = []
    for n, (plan, tool, args, result) in enumerate(turns):
        steps.append(Step(StepKind.LLM, "chat", output=plan, output_text=plan, span_id=f"l{n:02d}"))
        if tool is None:
            continue
        if result is UNRECORDED:
            steps.append(Step(StepKind.TOOL, tool, tool_arguments=args, span_id=f"t{n:02d}"))
        elif result.startswith("<"):
            steps.append(
                Step(
                    StepKind.TOOL,
                    tool,
                    tool_arguments=args,
                    is_error=True,
                    error_type=result[1:-1],
                    span_id=f"t{n:02d}",
                )
            )
        else:
            steps.append(
                Step(
                    StepKind.TOOL,
                    tool,
                    tool_arguments=args,
                    tool_result=result,
                    output_text=result,
                    span_id=f"t{n:02d}",
                )
            )
    return flat_trace(steps, trace_id=trace_id, goal="finish the task")


def judged(trace: Trace) -> tuple:
    scorer = JudgedScorer(Judge(LocalBackend(HashEmbedder())), escalate="always")
    try:
        verdict = scorer.score(trace)
    finally:
        scorer.judge.close()
    judge_signals = [s for s in verdict.fired_signals if s.startswith("judge")]
    return verdict, verdict_attributes(verdict), judge_signals


def answers(trace: Trace) -> dict[str, float]:
    qs = build_question_set(trace)
    got = LocalBackend(HashEmbedder()).answer(JudgeRequest(qs.state, qs.questions))
    return {q: float(a.value) for q, a in got.items()}


READ = ("read_file", {"path": "payments-db/pool.yaml"})
METRICS = ("get_metrics", {"metric": "p99_latency_ms"})


def retries(final: str) -> Trace:
    return run(
        ("Reading the pool config.", *READ, "<TimeoutError>"),
        ("Reading the pool config.", *READ, "<TimeoutError>"),
        ("Reading the pool config.", *READ, "<TimeoutError>"),
        ("Reading the pool config.", *READ, final),
        ("Now the latency.", *METRICS, "p99 30012 ms"),
        ("Root cause: the pool is capped at 10 connections.", None, None, None),
    )


def test_retries_that_get_past_a_transient_failure_are_not_stuck():
    verdict, attrs, judge_signals = judged(retries("pool:\n  max_connections: 10"))
    assert judge_signals == [] and verdict.label is Label.NO_LOOP
    assert attrs["semloop.judge.reasoning_stagnation"] == 1.0


def test_the_same_failures_that_never_get_past_are_stuck_and_the_judge_warns():
    """The judge reads the retries as stuck; the detectors weighed the same tool calls and
    found them short of a loop (the run moved on), so the judge warns rather than decides."""
    verdict, attrs, judge_signals = judged(retries("<TimeoutError>"))
    assert attrs["semloop.judge.reasoning_stagnation"] == 0.0
    assert judge_signals and verdict.label is Label.NO_LOOP


def polling(final: str) -> Trace:
    turns: list[tuple] = [("Starting the job.", "trigger_build", {"name": "nightly"}, "started job-7")]
    for _ in range(4):
        turns.append(("Waiting for the job.", "sleep", {"seconds": 300}, ""))
        turns.append(("Checking the job.", "get_job_status", {"job_id": "job-7"}, "PENDING"))
    turns.append(("Checking the job.", "get_job_status", {"job_id": "job-7"}, final))
    turns.append(("The job is done.", None, None, None))
    return run(*turns)


def test_a_poll_whose_final_result_is_new_ended_its_wait():
    verdict, attrs, judge_signals = judged(polling('{"state": "SUCCEEDED"}'))
    assert judge_signals == [] and verdict.label is Label.NO_LOOP
    assert attrs["semloop.judge.reasoning_stagnation"] == 1.0
    tool_answers = {
        q: p for q, p in answers(polling('{"state": "SUCCEEDED"}')).items() if q.startswith("tool_")
    }
    assert tool_answers and all(p < 0.5 for p in tool_answers.values())  # the polls were the wait


def test_a_poll_that_never_ends_is_stuck():
    _, attrs, judge_signals = judged(polling("PENDING"))
    assert attrs["semloop.judge.reasoning_stagnation"] == 0.0 and judge_signals
    assert answers(polling("PENDING"))["tool_repeat_get_job_status"] > 0.5


@pytest.mark.parametrize(
    ("results", "waits"),
    [
        (["B", "B", "C"], [(0, 2)]),  # a new answer after a run: the wait ended
        (["A", "B", "B", "A"], []),  # an answer seen before is no news (a flapping result)
        (["B", "C"], []),  # one call then another answer: no run to resolve
        (["<E>", "<E>", "<F>"], []),  # a different failure is not a success
    ],
)
def test_only_a_new_successful_outcome_after_a_run_ends_a_wait(results, waits):
    steps = {}
    for n, result in enumerate(results):
        action = {
            "tool": "status",
            "arguments": '{"id": 1}',
            "result": None if result.startswith("<") else result,
        }
        if result.startswith("<"):
            action["error"] = result
        steps[n] = {"index": n, "type": "llm", "name": "chat", "actions": [action]}
    assert ended_waits(steps, tool_mode=False) == waits


def test_a_wait_covers_the_calls_interleaved_with_it_but_not_the_work_before():
    qs = build_question_set(polling('{"state": "SUCCEEDED"}'))
    steps = {s["index"]: s for s in qs.state["steps"]}
    assert ended_waits(steps, tool_mode=False) == [(1, 9)]  # the first sleep .. the new answer


def test_an_unrecorded_result_is_null_in_the_state_and_an_empty_one_is_not():
    trace = run(("Check.", "status", {"id": 1}, UNRECORDED), ("Check.", "status", {"id": 1}, ""))
    actions = [s["actions"][0]["result"] for s in build_question_set(trace).state["steps"]]
    assert actions == [None, ""]


def repeated_status(result) -> Trace:
    return run(*[("Checking the job.", "get_job_status", {"job_id": "reindex-7"}, result)] * 6)


def test_repeats_whose_results_were_not_recorded_leave_the_judge_undecided():
    got = answers(repeated_status(UNRECORDED))
    assert {p for q, p in got.items() if q.startswith(("progress", "revisit", "tool_"))} == {0.5}
    _, attrs, judge_signals = judged(repeated_status(UNRECORDED))
    assert judge_signals == [] and attrs["semloop.judge.undecided"] is True


def test_repeats_with_the_same_recorded_result_are_stuck():
    got = answers(repeated_status("running"))
    assert got["progress_0_1"] < 0.1 and got["tool_repeat_get_job_status"] > 0.9
    _, attrs, judge_signals = judged(repeated_status("running"))
    assert judge_signals and attrs["semloop.judge.reasoning_stagnation"] == 0.0


def failed_model_calls(answered: bool) -> Trace:
    ask = "Count the lines of the main modules."
    steps = [
        Step(StepKind.LLM, "chat", input_text=ask, is_error=True, error_type="APIError") for _ in range(4)
    ]
    if answered:
        steps.append(Step(StepKind.LLM, "chat", input_text=ask, output="Counting.", output_text="Counting."))
    return flat_trace(steps, trace_id="e" * 32)


def test_a_failed_model_call_answered_later_resolves_its_failures_and_one_never_answered_does_not():
    assert answers(failed_model_calls(answered=True))["progress_0_1"] > 0.5
    assert answers(failed_model_calls(answered=False))["progress_0_1"] < 0.5


def test_the_judge_never_hides_what_the_detectors_found():
    # New message ids each time: the local judge reads new results (progress); the detectors
    # mask the ids and see one call repeated. The detectors' loop stands.
    # Fixed ids: with random ones the detectors see the repetition broken into short runs
    # about 1 run in 9 (noted for the detectors' owner), which is not this test's subject.
    ids = random.Random(0)
    turns = []
    for _ in range(6):
        sent = f"sent id={uuid.UUID(int=ids.getrandbits(128), version=4)}"
        turns.append(("Sending the reminder.", "send_message", {"to": "team"}, sent))
    trace = run(*turns)
    deterministic = Scorer().score(trace)
    verdict, attrs, judge_signals = judged(trace)
    assert deterministic.label is Label.LOOP and judge_signals == []
    assert verdict.label is Label.LOOP and verdict.score == deterministic.score
    assert attrs["semloop.judge.status"] == "judged"
