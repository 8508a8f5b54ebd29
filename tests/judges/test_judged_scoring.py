"""How answers count: the undecided band, the more severe verdict wins, escalation, the cache,
and the scripted and local backends."""

from __future__ import annotations

import pytest

from otel_semloop.judges import Escalation, Judge, JudgedScorer, build_question_set
from otel_semloop.judges.backends.local import LocalBackend, same_action
from otel_semloop.judges.backends.scripted import ScriptedBackend
from otel_semloop.judges.base import JudgeRequest
from otel_semloop.judges.cache import AnswerCache
from otel_semloop.judges.escalation import is_undecided
from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label
from otel_semloop.writeback import verdict_attributes
from tests.judges.judge_support import HashEmbedder, healthy_run, paraphrased_loop
from tests.support.traces import flat_trace

STUCK = {"progress": 0.05, "revisit": 0.9, "tool_repeat": 0.9, "stagnation": 3}
FINE = {"progress": 0.95, "revisit": 0.05, "tool_repeat": 0.05, "stagnation": 0}


def scorer(script, escalate="always", **kwargs) -> JudgedScorer:
    return JudgedScorer(Judge(ScriptedBackend(script), **kwargs), escalate=escalate)


def reworded_loop() -> Trace:
    """A loop no fingerprint sees: each step searches with different words, finds nothing new."""
    steps = []
    for i, (plan, query) in enumerate(
        [
            ("Look for the checkout code by searching the repository for it.", "checkout"),
            ("Maybe the handler is named differently; search for the order route instead.", "order route"),
            ("Try the guest path; search for the guest session middleware.", "guest session"),
            ("Search the repository for the code that builds the checkout response.", "checkout response"),
        ]
    ):
        steps.append(Step(StepKind.LLM, "chat", output=plan, output_text=plan, span_id=f"l{i}"))
        steps.append(
            Step(
                StepKind.TOOL,
                "grep",
                tool_arguments={"pattern": query},
                tool_result=f"{i} hits in docs",
                span_id=f"t{i}",
            )
        )
    return flat_trace(steps, trace_id="9" * 32, goal="fix checkout")


def test_a_judge_adds_a_loop_the_detectors_cannot_see():
    trace = reworded_loop()
    assert Scorer().score(trace).label is Label.NO_LOOP
    verdict = scorer(STUCK).score(trace)
    assert verdict.label is Label.LOOP and "judge_loop" in verdict.fired_signals
    assert verdict.in_loop_span_ids >= {"l0", "l1", "t0", "t1"}
    assert "the judge found no progress" in verdict.reason


def test_a_judge_never_hides_a_detected_loop():
    trace = paraphrased_loop()
    deterministic = Scorer().score(trace)
    verdict = scorer(FINE).score(trace)
    assert verdict.label is deterministic.label is Label.LOOP
    assert verdict.score == deterministic.score
    assert verdict_attributes(verdict)["semloop.judge.score"] < 1.0  # lexical tool repetition stays


def test_one_judged_signal_alone_is_a_warning_not_a_loop():
    trace = reworded_loop()
    verdict = scorer({"progress": 0.05, "revisit": 0.05, "tool_repeat": 0.05}).score(trace)
    assert verdict.label is Label.NO_LOOP
    assert "judge_stagnation" in verdict.fired_signals


@pytest.mark.parametrize(
    ("p_progress", "undecided"),
    [(0.45, True), (0.55, True), (0.6, True), (0.65, False), (0.35, False), (0.4, False)],
)
def test_answers_in_the_undecided_band_fall_back_to_deterministic_evidence(p_progress, undecided):
    trace = reworded_loop()
    verdict = scorer({"progress": p_progress, "revisit": 0.1}).score(trace)
    attrs = verdict_attributes(verdict)
    assert attrs["semloop.judge.undecided"] is undecided
    if undecided:  # the lexical stagnation of this trace is 1.0: nothing judged
        assert attrs["semloop.judge.reasoning_stagnation"] == 1.0


def template_run() -> Trace:
    """Five files read, each described in the same sentence: lexical stagnation fires."""
    steps = []
    for i, name in enumerate(["orders.py", "session.py", "cart.py", "totals.py", "webhook.py"]):
        text = (
            f"Now checking {name} for the deprecated call, reading through its imports and every function "
            "it exports one by one, then carefully noting whether anything in this particular file needs "
            "migrating before moving on to the next file waiting in the list."
        )
        steps.append(Step(StepKind.LLM, "chat", output=text, output_text=text, span_id=f"l{i}"))
        steps.append(
            Step(StepKind.TOOL, "read_file", tool_arguments={"path": name}, tool_result="ok", span_id=f"t{i}")
        )
    return flat_trace(steps, trace_id="6" * 32, goal="migrate the deprecated call")


def test_escalation_sends_only_undecided_traces_and_counts_the_calls_saved():
    loop, healthy, clean, template = paraphrased_loop(), healthy_run(), reworded_loop(), template_run()
    assert [is_undecided(Scorer().score(t)) for t in (loop, healthy, clean, template)] == [
        False,
        False,
        False,
        True,
    ]
    judged = scorer(FINE, escalate="undecided")
    verdicts = [judged.score(t) for t in (loop, healthy, clean, template)]
    statuses = [verdict_attributes(v)["semloop.judge.status"] for v in verdicts]
    assert statuses == ["skipped", "skipped", "skipped", "judged"]
    assert judged.judge.stats.saved_by_escalation == 3 and len(judged.judge.backend.requests) == 1
    assert verdicts[3].label is Label.NO_LOOP
    always = scorer(STUCK, escalate="always")
    assert [verdict_attributes(always.score(t))["semloop.judge.status"] for t in (loop, healthy, clean)] == [
        "judged"
    ] * 3
    never = scorer(STUCK, escalate="never")
    assert verdict_attributes(never.score(clean))["semloop.judge.status"] == "skipped"


def test_a_sample_rate_picks_the_same_traces_every_time():
    rate = Escalation.parse("0.5")
    verdict = Scorer().score(reworded_loop())
    picks = [rate.should_judge(f"{i:032x}", verdict) for i in range(400)]
    assert picks == [rate.should_judge(f"{i:032x}", verdict) for i in range(400)]
    assert 150 < sum(picks) < 250
    with pytest.raises(ValueError):
        Escalation.parse("sometimes")


def test_a_cached_answer_is_not_reused_for_another_model():
    cache = AnswerCache()
    first = JudgedScorer(Judge(ScriptedBackend(STUCK, model="model-a"), cache=cache), escalate="always")
    first.score(reworded_loop())
    other = JudgedScorer(Judge(ScriptedBackend(FINE, model="model-b"), cache=cache), escalate="always")
    verdict = other.score(reworded_loop())
    assert len(other.judge.backend.requests) == 1 and other.judge.stats.cache_hits == 0
    assert verdict_attributes(verdict)["semloop.judge.status"] != "cached"
    first.judge.close()
    other.judge.close()


def test_rescoring_the_same_trace_is_answered_from_the_cache(tmp_path):
    path = tmp_path / "answers.sqlite3"
    first = JudgedScorer(Judge(ScriptedBackend(STUCK), cache=AnswerCache(path)), escalate="always")
    a = verdict_attributes(first.score(reworded_loop()))
    first.judge.close()
    again = JudgedScorer(Judge(ScriptedBackend(STUCK), cache=AnswerCache(path)), escalate="always")
    b = verdict_attributes(again.score(reworded_loop()))
    assert again.judge.backend.requests == [] and again.judge.stats.cache_hits == 1
    assert b["semloop.judge.status"] == "cached" and b["semloop.judge.cost_usd"] == 0.0
    assert {k: v for k, v in a.items() if k not in ("semloop.judge.status", "semloop.judge.latency_ms")} == {
        k: v for k, v in b.items() if k not in ("semloop.judge.status", "semloop.judge.latency_ms")
    }
    again.judge.close()


def test_staged_scoring_yields_the_deterministic_verdict_first_marked_as_waiting_for_the_judge():
    stages = list(scorer(STUCK).score_stages(reworded_loop()))
    assert len(stages) == 2
    first, last = (verdict_attributes(v) for v in stages)
    assert first["semloop.judge.error"] == "timeout" and first["semloop.label"] == "no_loop"
    assert last["semloop.judge.status"] == "judged" and "semloop.judge.error" not in last
    assert last["semloop.label"] == "loop"


def test_a_slow_judge_past_the_budget_leaves_the_deterministic_verdict():
    judged = JudgedScorer(Judge(ScriptedBackend(STUCK, delay=2.0)), escalate="always", budget_seconds=0.3)
    verdict = judged.score(reworded_loop())
    attrs = verdict_attributes(verdict)
    assert attrs["semloop.judge.error"] == "timeout" and verdict.label is Label.NO_LOOP


# -- the local backend, with a stand-in embedder (the real model: test_local_model.py) ----------


def local_scorer() -> JudgedScorer:
    return JudgedScorer(Judge(LocalBackend(HashEmbedder())), escalate="always")


def test_cosmetic_argument_changes_are_the_same_action_and_new_targets_are_not():
    grep = {"tool": "grep", "result": "no matches"}
    assert same_action(
        {**grep, "arguments": '{"pattern": "x", "path": "."}'},
        {**grep, "arguments": '{"pattern": "x", "path": "./", "case_sensitive": false}'},
    )
    assert not same_action(
        {**grep, "arguments": '{"path": "orders_controller.py"}'},
        {**grep, "arguments": '{"path": "guest_session.py"}'},
    )
    assert not same_action({**grep, "arguments": "{}"}, {"tool": "read_file", "arguments": "{}"})


def test_the_local_judge_reads_a_repeated_search_as_stuck_and_real_work_as_progress():
    judged = local_scorer()
    loop = verdict_attributes(judged.score(paraphrased_loop()))
    fine = verdict_attributes(judged.score(healthy_run()))
    judged.judge.close()
    assert loop["semloop.judge.reasoning_stagnation"] == 0.0 and loop["semloop.judge.tool_repetition"] == 0.5
    assert fine["semloop.judge.reasoning_stagnation"] == 1.0 and fine["semloop.judge.score"] == 1.0
    assert fine["semloop.label"] == "no_loop" and fine["semloop.judge.backend"] == "local"


def test_the_local_judge_compares_only_what_differs_under_a_shared_preamble():
    preamble = "Having reviewed everything so far and weighing every option carefully, my next step is:"
    ends = ["open the invoice module", "the middleware runs too late", "add a guard in the session code"]
    steps = [
        Step(StepKind.LLM, "chat", output=f"{preamble} {end}", output_text=f"{preamble} {end}")
        for end in ends
    ]
    attrs = verdict_attributes(local_scorer().score(flat_trace(steps, trace_id="8" * 32)))
    assert attrs["semloop.judge.reasoning_stagnation"] == 1.0
    same = [
        Step(StepKind.LLM, "chat", output=f"{preamble} {ends[0]}", output_text=f"{preamble} {ends[0]}")
    ] * 3
    attrs = verdict_attributes(local_scorer().score(flat_trace(same, trace_id="7" * 32)))
    assert attrs["semloop.judge.reasoning_stagnation"] == 0.0


def test_the_local_judge_answers_every_question_it_is_asked():
    qs = build_question_set(paraphrased_loop())
    answers = LocalBackend(HashEmbedder()).answer(JudgeRequest(qs.state, qs.questions))
    assert set(answers) == set(qs.questions)


def test_lexical_evidence_alone_never_becomes_a_judge_finding():
    from otel_semloop.judges.assess import assess
    from otel_semloop.judges.base import Answer
    from otel_semloop.verdict import LexicalResult

    qs = build_question_set(reworded_loop())
    lexical = LexicalResult(
        score=0.25,
        breakdown={"tool_repetition": 0.0, "reasoning_stagnation": 1.0, "call_graph_cycles": 0.0},
        reason="",
    )
    healthy = {q: Answer.yes_probability(0.95 if q.startswith("progress") else 0.05) for q in qs.questions}
    assessment = assess(qs, healthy, lexical)
    assert assessment.score < 0.5  # deepeval's reading of the trace stays a loop...
    assert assessment.findings == ()  # ...but the judge said progress: it adds nothing


def _model_only(texts: list[str], trace_id: str) -> Trace:
    steps = [Step(StepKind.LLM, "chat", output=t, output_text=t) for t in texts]
    return flat_trace(steps, trace_id=trace_id)


def _answers(qs, stagnant_pairs):  # type: ignore[no-untyped-def]
    """Answers saying each pair in ``stagnant_pairs`` got nowhere, every other pair progressed."""
    from otel_semloop.judges.base import Answer
    from otel_semloop.judges.questions import parse_question_id

    out = {}
    for q in qs.questions:
        parsed = parse_question_id(q)
        if parsed is None:
            continue
        kind, i, j = parsed
        stuck = (i, j) in stagnant_pairs
        p_yes = (0.05 if stuck else 0.95) if kind == "progress" else (0.95 if stuck else 0.05)
        out[q] = Answer.yes_probability(p_yes)
    return out


def _pairs(qs):  # type: ignore[no-untyped-def]
    from otel_semloop.judges.questions import parse_question_id

    return sorted({(p[1], p[2]) for p in map(parse_question_id, qs.questions) if p is not None})


def test_model_turns_only_restating_each_other_in_a_chain_are_a_judge_loop():
    from otel_semloop.judges.assess import assess
    from otel_semloop.verdict import LexicalResult

    trace = _model_only(
        ["Thanks all.", "Thank you, glad to help!", "Great teamwork, thanks.", "Thanks again!"], "6" * 32
    )
    qs = build_question_set(trace)
    assessment = assess(qs, _answers(qs, set(_pairs(qs))), LexicalResult(score=1.0, breakdown={}, reason=""))
    assert [f.signal for f in assessment.findings if f.conclusive and f.no_progress] == ["judge_loop"]


def test_one_duplicated_step_the_run_moves_on_from_is_a_judge_warning_not_a_loop():
    from otel_semloop.judges.assess import assess
    from otel_semloop.verdict import LexicalResult

    trace = _model_only(["Plan: a.", "Plan: a.", "Step b done.", "Step c done."], "5" * 32)
    qs = build_question_set(trace)
    first = _pairs(qs)[0]
    assessment = assess(qs, _answers(qs, {first}), LexicalResult(score=1.0, breakdown={}, reason=""))
    assert assessment.findings and not any(f.conclusive for f in assessment.findings)


def _with_tools(calls: list[tuple[str, dict, str]], trace_id: str) -> Trace:
    """Model turns each followed by the tool call it asked for and its result."""
    steps: list[Step] = []
    for name, args, result in calls:
        steps.append(Step(StepKind.LLM, "chat", output=f"Calling {name}.", output_text=f"Calling {name}."))
        steps.append(Step(StepKind.TOOL, name, tool_arguments=args, tool_result=result))
    return flat_trace(steps, trace_id=trace_id)


def _returns_to(qs):  # type: ignore[no-untyped-def]
    """The revisit pairs between judged steps whose calls had the same arguments."""
    from otel_semloop.judges.questions import parse_question_id

    args_of = {s.index: repr(s.actions[0].tool_arguments) for s in qs.steps if s.actions}
    return {
        (p[1], p[2])
        for p in map(parse_question_id, qs.questions)
        if p is not None and p[0] == "revisit" and args_of.get(p[1]) == args_of.get(p[2])
    }


#: deepeval's lexical reading of a run repeating its calls (both runs below): the judge's
#: own evidence is what decides between them.
_REPEATING = {"tool_repetition": 0.0, "reasoning_stagnation": 1.0, "call_graph_cycles": 0.0}


def test_a_check_run_again_after_each_new_edit_is_not_a_judge_loop():
    """Lint, edit, lint, edit, lint: each lint returns to the earlier one, but a call with
    an outcome never seen before (the next edit) lies between."""
    from otel_semloop.judges.assess import assess
    from otel_semloop.verdict import LexicalResult

    lint = ("bash", {"command": "ruff check ."}, "All checks passed!")
    calls = [lint] + [
        c for n in range(1, 5) for c in (("edit_file", {"path": f"f{n}.py"}, f"edited f{n}.py"), lint)
    ]
    qs = build_question_set(_with_tools(calls, "7" * 32))
    lexical = LexicalResult(score=0.4, breakdown=_REPEATING, reason="")
    assessment = assess(qs, _answers(qs, _returns_to(qs)), lexical)
    assert not any(f.conclusive for f in assessment.findings)


def test_an_a_b_cycle_of_calls_where_both_halves_return_is_a_judge_loop():
    from otel_semloop.judges.assess import assess
    from otel_semloop.verdict import LexicalResult

    calls = [
        ("navigate", {"url": "https://x.io/a"}, "page A"),
        ("navigate", {"url": "https://x.io/b"}, "page B"),
    ] * 4
    qs = build_question_set(_with_tools(calls, "8" * 32))
    lexical = LexicalResult(score=0.4, breakdown=_REPEATING, reason="")
    assessment = assess(qs, _answers(qs, _returns_to(qs)), lexical)
    assert [f.signal for f in assessment.findings if f.conclusive and f.no_progress] == ["judge_loop"]
