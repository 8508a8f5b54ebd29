"""The promises every front door makes, written once and run against each (test ids
``[processor]``, ``[service]``, and ``[rescore]`` where buffering plays no part).

A looping agent trace gets the whole verdict contract on its root, with every attribute's
type and value; a healthy one gets ``no_loop``; a trace without agent steps is forwarded
untouched; a late span is marked once; a scorer past its budget, stuck, or raising leaves
the trace unscored with the reason; a shutdown drains what is held; and every span the
application ended arrives exactly once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from opentelemetry import trace as trace_api

from otel_semloop.builder import build_trace
from otel_semloop.cli import main as cli_main
from otel_semloop.loop_cost import loop_cost
from otel_semloop.model import Trace
from otel_semloop.processor.sdk import span_to_record
from otel_semloop.scoring import DetectorScorer
from otel_semloop.verdict import Label, Verdict
from tests.e2e.otlp_receiver import ReceivedSpan
from tests.shared.conftest import WAIT, Door, DoorFactory, received_from_json
from tests.support.agent_spans import search_agent
from tests.support.log_record_agent import SPANS, chat_agent_with_log_records

HANG = 60.0  # a hanging scorer waits this long unless released


def looping(door: Door, rounds: int = 8) -> str:
    return search_agent(door.tracer, ["no results"] * rounds)


def healthy(door: Door, rounds: int = 3) -> str:
    return search_agent(door.tracer, [f"found {i} papers on topic {i}" for i in range(rounds)])


def plain_request(door: Door) -> str:
    tracer = door.tracer
    with (
        tracer.start_as_current_span("GET /orders", attributes={"http.request.method": "GET"}) as root,
        tracer.start_as_current_span("SELECT orders", attributes={"db.system": "postgresql"}),
    ):
        pass
    return f"{root.get_span_context().trace_id:032x}"


def spans_of(door: Door, trace_id: str) -> list[ReceivedSpan]:
    return [s for s in door.received() if s.trace_id == trace_id]


def root_of(spans: list[ReceivedSpan]) -> ReceivedSpan:
    (root,) = [s for s in spans if not s.parent_span_id]
    return root


def expected_verdict(door: Door, trace_id: str) -> tuple[Trace, Verdict]:
    """The verdict the default scorer gives the trace the application produced."""
    records = [span_to_record(s) for s in door.produced() if f"{s.context.trace_id:032x}" == trace_id]
    trace = build_trace(records)
    return trace, DetectorScorer().score(trace)


def contract(verdict: Verdict, trace: Trace) -> dict[str, Any]:
    """The root's attributes, restated from the contract (docs/architecture.md) rather than
    taken from the write-back code, so a write-back that drops or renames one fails. What
    the loop cost comes from its one computation (:mod:`otel_semloop.loop_cost`, checked to
    the token in tests/core/test_loop_cost.py); its names and types are restated here."""
    expected: dict[str, Any] = {
        "semloop.loop.detected": verdict.label is Label.LOOP,
        "semloop.score": float(verdict.score),
        "semloop.label": verdict.label.value,
        "semloop.action": verdict.action.value,
        "semloop.partial": False,
        "semloop.reason": verdict.reason,
    }
    fired = [f.signal for f in verdict.findings if f.severity >= 0.5]
    if fired:
        expected["semloop.signals"] = list(dict.fromkeys(fired))
    for finding in verdict.findings:
        key = f"semloop.signal.{finding.signal}.severity"
        expected[key] = max(float(finding.severity), expected.get(key, 0.0))
    assert verdict.lexical is not None
    expected["semloop.deepeval.score"] = float(verdict.lexical.score)
    expected["semloop.deepeval.loop"] = verdict.lexical.score < verdict.lexical.threshold
    for name, value in verdict.lexical.breakdown.items():
        expected[f"semloop.deepeval.{name}"] = float(value)
    cost = loop_cost(trace, verdict)
    if verdict.label in (Label.LOOP, Label.SUSPECTED):
        assert cost is not None
        expected.update(cost.attributes())
        assert type(expected["semloop.loop.onset_step"]) is int
        for name in ("steps", "model_calls", "input_tokens", "output_tokens"):
            assert type(expected[f"semloop.loop.{name}"]) is int
            assert type(expected[f"semloop.trace.{name}"]) is int
        assert type(expected["semloop.loop.duration_s"]) is float
    else:
        assert cost is None
    return expected


def assert_contract_on_root(spans: list[ReceivedSpan], verdict: Verdict, trace: Trace) -> None:
    root = root_of(spans)
    expected = contract(verdict, trace)
    got = {k: v for k, v in root.attributes.items() if k.startswith("semloop.")}
    assert got == expected
    for key, value in expected.items():
        assert type(got[key]) is type(value), (key, got[key])  # a double stays a double
    (event,) = root.events_named("gen_ai.evaluation.result")
    assert event.attributes == {
        "gen_ai.evaluation.name": "semloop.loop",
        "gen_ai.evaluation.score.value": float(verdict.score),
        "gen_ai.evaluation.score.label": verdict.label.value,
        "gen_ai.evaluation.explanation": verdict.reason,
    }
    assert type(event.attributes["gen_ai.evaluation.score.value"]) is float
    in_loop = {s.span_id for s in spans if s.attributes.get("semloop.in_loop") is True}
    assert in_loop == set(verdict.in_loop_span_ids)


def fixed_verdict(root: ReceivedSpan) -> tuple[str, list[str]]:
    """The label and signals a door wrote, to compare with values fixed in the test (the
    contract above restates the scorer's own verdict: it proves transport, not the verdict)."""
    return root.attributes["semloop.label"], list(root.attributes.get("semloop.signals", []))


#: The recorded sample export (examples/make_samples.py) and the verdict of each trace.
RECORDED = Path(__file__).resolve().parents[2] / "examples" / "agent_traces.otlp.jsonl"
RECORDED_VERDICTS = {
    "45e8a22ab994ca3a85c49a61c07ae5be": ("loop", ["action_cycle", "repeated_result"]),
    "d858ea6c75ed0333ae60f53cbbb6b48c": (
        "loop",
        ["action_cycle", "repeated_result", "stale_steps", "stale_window"],
    ),
    "5b01139f69bfe3cf5e8aadc2662f3bc3": ("no_loop", []),
    "61bea19bba6e4531c9cd7f8140947d0d": ("no_loop", []),
}


def test_recorded_traces_get_their_fixed_verdicts(tmp_path: Path) -> None:
    scored = tmp_path / "scored.otlp.jsonl"
    assert cli_main(["rescore", str(RECORDED), "-o", str(scored), "-q"]) == 0
    roots = [
        span
        for line in scored.read_bytes().splitlines()
        for span in received_from_json(orjson.loads(line))
        if "semloop.label" in span.attributes and span.trace_id in RECORDED_VERDICTS
    ]
    assert {root.trace_id: fixed_verdict(root) for root in roots} == RECORDED_VERDICTS


# -- the verdict -------------------------------------------------------------------------------


def test_a_looping_trace_gets_the_whole_contract_on_its_root(open_any_door: DoorFactory) -> None:
    with open_any_door() as door:
        trace_id = looping(door)
        spans = door.wait_received(17)
        trace, verdict = expected_verdict(door, trace_id)
        assert verdict.label is Label.LOOP and verdict.findings and verdict.in_loop_span_ids
        assert_contract_on_root(spans, verdict, trace)
        assert fixed_verdict(root_of(spans)) == (
            "loop",
            ["action_cycle", "repeated_result", "stale_steps", "stale_window"],
        )
        tool_spans = [s for s in spans if s.name == "execute_tool search"]
        assert len(tool_spans) == 8 and any(s.attributes.get("semloop.in_loop") is True for s in tool_spans)
        door.assert_each_span_forwarded_once()


def test_a_healthy_trace_gets_no_loop_with_the_whole_contract(open_any_door: DoorFactory) -> None:
    with open_any_door() as door:
        trace_id = healthy(door)
        spans = door.wait_received(7)
        trace, verdict = expected_verdict(door, trace_id)
        assert verdict.label is Label.NO_LOOP
        assert_contract_on_root(spans, verdict, trace)
        assert fixed_verdict(root_of(spans)) == ("no_loop", [])
        assert root_of(spans).attributes["semloop.loop.detected"] is False
        assert not any("semloop.in_loop" in s.attributes for s in spans)
        door.assert_each_span_forwarded_once()


def test_a_trace_without_agent_steps_is_forwarded_untouched(open_any_door: DoorFactory) -> None:
    with open_any_door() as door:
        trace_id = plain_request(door)
        spans = door.wait_received(2)
        assert len(spans_of(door, trace_id)) == 2
        for span in spans:
            assert not [k for k in span.attributes if k.startswith("semloop.")]
            assert span.events == ()
        door.assert_each_span_forwarded_once()


def test_traces_of_one_batch_get_their_own_verdicts(open_any_door: DoorFactory) -> None:
    with open_any_door() as door:
        loop_id, healthy_id, plain_id = looping(door), healthy(door), plain_request(door)
        door.wait_received(17 + 7 + 2)
        assert root_of(spans_of(door, loop_id)).attributes["semloop.label"] == "loop"
        assert root_of(spans_of(door, healthy_id)).attributes["semloop.label"] == "no_loop"
        assert "semloop.label" not in root_of(spans_of(door, plain_id)).attributes
        door.assert_each_span_forwarded_once()


# -- buffering -----------------------------------------------------------------------------


def test_a_span_ending_after_its_trace_left_is_forwarded_once_marked_late(open_door: DoorFactory) -> None:
    with open_door(idle_seconds=0.3) as door:
        tracer = door.tracer
        root = tracer.start_span("invoke_agent slow", attributes={"gen_ai.operation.name": "invoke_agent"})
        straggler = tracer.start_span("background", context=trace_api.set_span_in_context(root))
        root.end()
        door.wait_received(1)  # the trace left without the open span (complete, or idle)
        straggler.end()
        spans = door.wait_received(2)
        (late,) = [s for s in spans if s.name == "background"]
        assert late.attributes["semloop.late"] is True
        assert "semloop.late" not in root_of(spans).attributes
        time.sleep(0.3)  # nothing else arrives later
        door.assert_each_span_forwarded_once()


#: The budget of the hanging-scorer tests: long enough that a trace a fresh replacement
#: thread scores is done within it on a loaded CI machine (load ~10 on 2 cores).
BUDGET = 1.0


class Hanging:
    """Hangs on traces whose agent is named "stuck" (all traces when ``always``) until
    released; scores the others."""

    def __init__(self, always: bool = False) -> None:
        self.release = threading.Event()
        self.always = always
        self.inner = DetectorScorer()

    def score(self, trace: Trace) -> Verdict:
        if self.always or any(step.name == "stuck" for step in trace.steps):
            self.release.wait(HANG)
        return self.inner.score(trace)


def _hanging(always: bool = False) -> Iterator[Hanging]:
    scorer = Hanging(always)
    try:
        yield scorer
    finally:
        scorer.release.set()


def test_a_trace_scored_past_its_budget_leaves_unscored_and_later_ones_are_scored(
    open_door: DoorFactory,
) -> None:
    for scorer in _hanging():
        with open_door(scorer=scorer, scoring_budget_seconds=BUDGET) as door:
            started = time.monotonic()
            stuck = search_agent(door.tracer, ["no results"] * 4, name="stuck")
            root = root_of(door.wait_received(9))
            assert root.attributes["semloop.label"] == "unscored"
            assert root.attributes["semloop.unscored.reason"] == "scoring budget exceeded"
            assert time.monotonic() - started < HANG / 2  # cut at the budget, not the hang
            # A replacement thread scores the next trace while the first still hangs.
            fine = looping(door)
            door.wait_received(9 + 17)
            assert root_of(spans_of(door, fine)).attributes["semloop.label"] == "loop"
            assert root_of(spans_of(door, stuck)).attributes["semloop.label"] == "unscored"
            assert door.stats()["unscored.budget"] == 1
            door.assert_each_span_forwarded_once()


def test_while_every_scorer_is_stuck_traces_leave_unscored_at_once(open_door: DoorFactory) -> None:
    for scorer in _hanging(always=True):
        with open_door(
            scorer=scorer, scoring_budget_seconds=BUDGET, scoring_threads=1, max_stuck_scorers=0
        ) as door:
            looping(door, rounds=3)
            door.wait_received(7)  # past its budget: the only thread is stuck
            second = looping(door, rounds=3)
            door.wait_received(14)
            root = root_of(spans_of(door, second))
            assert (
                root.attributes["semloop.unscored.reason"]
                == "scoring unavailable: scorers stuck past their budget"
            )
            assert door.stats()["unscored.stuck"] == 1
            door.assert_each_span_forwarded_once()


class Raising:
    def score(self, trace: Trace) -> Verdict:
        raise ZeroDivisionError("detector bug")


def test_a_raising_scorer_leaves_the_trace_unscored_with_the_error_type(open_door: DoorFactory) -> None:
    with open_door(scorer=Raising()) as door:
        looping(door, rounds=4)
        root = root_of(door.wait_received(9))
        assert root.attributes["semloop.label"] == "unscored"
        assert root.attributes["semloop.unscored.reason"] == "scoring failed: ZeroDivisionError"
        assert door.stats()["errors.scorer"] == 1
        door.assert_each_span_forwarded_once()


def test_shutdown_forwards_everything_held_unscored_when_scoring_cannot_finish(
    open_door: DoorFactory,
) -> None:
    for scorer in _hanging(always=True):
        with open_door(
            scorer=scorer, every_span_once=False, scoring_budget_seconds=HANG, shutdown_timeout_seconds=1.0
        ) as door:
            trace_id = looping(door, rounds=3)
            door.send()
            waiting_root = door.tracer.start_span(
                "invoke_agent waiting", attributes={"gen_ai.operation.name": "invoke_agent"}
            )
            door.tracer.start_span("child", context=trace_api.set_span_in_context(waiting_root)).end()
            door.send()
            time.sleep(0.5)  # both arrived and are held (one scoring, one open)
            started = time.monotonic()
            door.close()
            assert time.monotonic() - started < WAIT  # bounded by the shutdown timeout, not the hang
            root = root_of(spans_of(door, trace_id))
            assert root.attributes["semloop.unscored.reason"] == "scoring budget exceeded"
            waiting_root.end()  # after shutdown: the processor passes it through; the app is down
            produced = {
                f"{s.context.span_id:016x}" for s in door.produced() if s.name != "invoke_agent waiting"
            }
            received = [s.span_id for s in door.received()]
            assert sorted(received) == sorted(produced)


# -- GenAI log records: message content emitted as logs ----------------------------------------


def test_a_loop_whose_content_is_in_log_records_is_scored_with_them(open_any_door: DoorFactory) -> None:
    with open_any_door(idle_seconds=30) as door:
        chat_agent_with_log_records(door.tracer, door.logger)
        root = root_of(door.wait_received(SPANS))
    assert root.attributes["semloop.label"] == "loop", root.attributes
    assert "search_logs" in root.attributes["semloop.reason"]


def test_every_log_record_is_forwarded_once_unchanged(open_door: DoorFactory) -> None:
    with open_door(idle_seconds=30) as door:
        emitted = chat_agent_with_log_records(door.tracer, door.logger)
        door.wait_received(SPANS)
        deadline = time.monotonic() + WAIT
        while sum(door.received_log_records().values()) < emitted:
            assert time.monotonic() < deadline, "log records missing"
            time.sleep(0.01)
    # Closed: nothing more can arrive, so a duplicate would show here.
    assert door.received_log_records() == door.produced_log_records()
    assert sum(door.produced_log_records().values()) == emitted
