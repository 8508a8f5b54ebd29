"""The live guard: a looping agent is stopped, in its own thread, at the step the policy
names; warn mode only warns; healthy agents are never interrupted."""

from __future__ import annotations

from typing import Any

import pytest

import otel_semloop.processor.guard as guard_module
from otel_semloop.conventions import read_step, step_kind
from otel_semloop.errors import LoopDetected
from otel_semloop.model import StepKind
from otel_semloop.processor.live import LiveMonitor
from otel_semloop.processor.sdk import span_to_record
from otel_semloop.verdict import Action
from tests.support.processor_support import Pipeline, healthy, looping, pipeline, wait_for


def offline_stop(line: Pipeline) -> tuple[int, Any]:
    """Replay the LLM and tool spans the app ended through a fresh LiveMonitor: the index
    of the step where the policy first says stop, and its decision."""
    monitor = LiveMonitor()
    index = 0
    for span in line.produced_spans():
        kind = step_kind(span.attributes)
        if kind not in (StepKind.LLM, StepKind.TOOL):
            continue
        decision = monitor.observe(read_step(span_to_record(span), kind))
        if decision is not None and decision.action is Action.STOP:
            return index, decision
        index += 1
    raise AssertionError("the policy never said stop")


def test_stop_mode_stops_a_looping_agent_right_after_the_step_the_policy_names() -> None:
    with pipeline(live_guard="stop") as line:
        guard = line.processor.guard
        with pytest.raises(LoopDetected) as raised:
            looping(line, iterations=20, before_step=guard.check)
        step, decision = offline_stop(line)
        # Steps alternate chat, search: the stop came with a search, and the agent was
        # stopped before its next step, not later.
        completed = len([s for s in line.produced_spans() if s.name == "execute_tool search"])
        assert step == 2 * completed - 1
        assert raised.value.finding == decision.finding
        assert raised.value.action is Action.STOP
        assert completed < 20
        assert guard.stats()["stops_raised"] == 1


def test_the_agent_can_stop_itself_between_any_two_steps() -> None:
    with pipeline(live_guard="stop") as line:
        calls: list[int] = []

        def check() -> None:
            calls.append(1)
            line.processor.guard.check()

        with pytest.raises(LoopDetected):
            looping(line, iterations=20, before_step=check)
        # check() is a dict lookup until the decision exists; it raised on the first call after.
        assert len(calls) == len([s for s in line.produced_spans() if s.name == "execute_tool search"]) + 1


def test_on_loop_gets_the_finding_and_action_the_moment_the_step_ends() -> None:
    seen: list[tuple[Any, Any, int]] = []
    lines: list[Pipeline] = []

    def on_loop(finding: Any, action: Any) -> None:
        # Runs inside span.end() of the concluding step: count the spans ended so far.
        seen.append((finding, action, len(lines[0].produced_spans())))

    with pipeline(live_guard="stop", on_loop=on_loop) as line:
        lines.append(line)
        with pytest.raises(LoopDetected):
            looping(line, iterations=20, before_step=line.processor.guard.check)
        step, decision = offline_stop(line)
        finding, action, ended = seen[-1]
        assert (finding, action) == (decision.finding, Action.STOP)
        # Every span ended so far is an LLM or tool step: the callback came with step `step`.
        assert ended == step + 1


def test_an_on_loop_taking_spend_gets_what_the_loop_spent_so_far() -> None:
    # Round k of the run is a chat recording 100 * k input and 20 output tokens, then a search
    # (tests/support/agent_spans.py); the loop's first step is the first search (live step 2:
    # steps count from 1, as in a verdict, and the first round's chat is step 1).
    seen: list[tuple[Any, Any, Any]] = []

    def on_loop(finding: Any, action: Any, *, spend: Any) -> None:
        seen.append((finding, action, spend))

    with pipeline(live_guard="stop", on_loop=on_loop) as line:
        with pytest.raises(LoopDetected):
            looping(line, iterations=20, before_step=line.processor.guard.check)
        searches = len([s for s in line.produced_spans() if s.name == "execute_tool search"])
    finding, action, spend = seen[-1]
    assert action is Action.STOP and finding.started_step == 2
    chats_after_onset = range(2, searches + 1)  # rounds 2..n: their chats came after the first search
    assert spend.steps == 2 * searches - 1
    assert spend.model_calls == len(chats_after_onset)
    assert spend.input_tokens == sum(100 * k for k in chats_after_onset)
    assert spend.output_tokens == 20 * len(chats_after_onset)
    assert spend.cost is None  # no span records a cost
    assert spend.duration_s > 0


def test_spend_goes_to_a_callback_taking_keywords_and_never_to_a_two_parameter_one() -> None:
    seen: list[tuple[Any, ...]] = []
    with pipeline(live_guard="warn", on_loop=lambda *args, **kwargs: seen.append((args, kwargs))) as line:
        looping(line, iterations=8)
    assert seen and all(len(args) == 2 and set(kwargs) == {"spend"} for args, kwargs in seen)
    with pipeline(live_guard="warn", on_loop=lambda finding, action: seen.append((finding, action))) as line:
        looping(line, iterations=8)
        assert line.processor.stats()["guard.callback_errors"] == 0


def test_warn_mode_calls_on_loop_and_never_stops_the_agent() -> None:
    seen: list[Any] = []
    with pipeline(live_guard="warn", on_loop=lambda finding, action: seen.append(action)) as line:
        assert looping(line, iterations=10, before_step=lambda: line.processor.guard.check()) == 10
        assert Action.STOP in seen
        root = next(s for s in line.wait_exported(21) if s.parent is None)
        assert root.attributes["semloop.label"] == "loop"  # the offline verdict still lands


def test_a_healthy_agent_is_never_stopped() -> None:
    seen: list[Any] = []
    with pipeline(live_guard="stop", on_loop=lambda finding, action: seen.append(action)) as line:
        assert healthy(line, iterations=8, before_step=lambda: line.processor.guard.check()) == 8
        assert Action.STOP not in seen


def test_an_on_loop_callback_that_raises_is_swallowed_and_counted() -> None:
    def broken(finding: Any, action: Any) -> None:
        raise RuntimeError("callback bug")

    with pipeline(live_guard="warn", on_loop=broken) as line:
        assert looping(line, iterations=10) == 10
        stats = line.processor.stats()
        assert stats["guard.callback_errors"] >= 1
        assert stats["errors.on_loop"] == stats["guard.callback_errors"]


def test_the_guard_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEMLOOP_LIVE_GUARD", raising=False)
    with pipeline() as line:
        assert line.processor.guard is None
        assert looping(line, iterations=10) == 10


def test_the_guard_is_turned_on_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMLOOP_LIVE_GUARD", "stop")
    with pipeline() as line:
        assert line.processor.guard is not None
        with pytest.raises(LoopDetected):
            looping(line, iterations=20, before_step=guard_module.check)


def test_check_outside_any_trace_does_nothing() -> None:
    with pipeline(live_guard="stop") as line:
        line.processor.guard.check()
        guard_module.check()


def test_a_loop_in_one_trace_does_not_stop_another() -> None:
    with pipeline(live_guard="stop") as line:
        with pytest.raises(LoopDetected):
            looping(line, iterations=20, before_step=line.processor.guard.check)
        assert healthy(line, iterations=4, before_step=line.processor.guard.check) == 4


def test_the_guard_forgets_a_trace_once_it_is_released() -> None:
    with pipeline(live_guard="warn") as line:
        looping(line, iterations=6)
        assert line.processor.guard.stats()["traces"] == 1
        assert wait_for(lambda: line.processor.guard.stats()["traces"] == 0)


def _agent_attributes(agent: str, text: str) -> dict[str, str]:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.output.messages": (
            f'[{{"role": "assistant", "parts": [{{"type": "text", "content": "{text}"}}]}}]'
        ),
    }


def test_the_guard_sees_agents_handing_work_back_and_forth() -> None:
    """Agent spans are watched too: two agents handing the same question back and forth,
    each run an ``invoke_agent`` span that ends after its (unchanging) answer, are stopped."""
    with pipeline(live_guard="stop") as line:
        tracer = line.tracer
        with pytest.raises(LoopDetected) as raised, tracer.start_as_current_span("invoke_agent desk"):
            for _ in range(10):
                for agent, other in (("billing", "triage"), ("triage", "billing")):
                    line.processor.guard.check()
                    attributes = _agent_attributes(agent, f"This is a question for {other}.")
                    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes):
                        pass
        assert raised.value.finding.signal == "handoff_cycle"


def test_the_guard_lets_agents_that_hand_off_while_working_go_on() -> None:
    with pipeline(live_guard="stop") as line:
        tracer = line.tracer
        with tracer.start_as_current_span("invoke_agent desk"):
            for i in range(10):
                for agent in ("billing", "triage"):
                    line.processor.guard.check()
                    tool = {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "lookup",
                        "gen_ai.tool.call.arguments": f'{{"refund": {i}, "agent": "{agent}"}}',
                        "gen_ai.tool.call.result": f"refund {i} {agent} record",
                    }
                    attributes = _agent_attributes(agent, f"Refund {i} handled by {agent}.")
                    with (
                        tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes),
                        tracer.start_as_current_span("execute_tool lookup", attributes=tool),
                    ):
                        pass
            assert line.processor.guard.stop_decision() is None
            assert line.processor.guard.decisions() == []
