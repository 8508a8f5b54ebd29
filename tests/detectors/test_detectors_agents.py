"""Hand-off cycles between agents, and budgets."""

from __future__ import annotations

from otel_semloop.detectors.agents import HANDOFF_CYCLE
from otel_semloop.detectors.budgets import (
    BUDGET_COST,
    BUDGET_STEPS,
    BUDGET_TOKENS,
    BUDGET_TOOL_CALLS,
    BUDGET_WALL_TIME,
)
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.suite import default_detectors
from otel_semloop.verdict import Action, Label
from tests.support.scenarios import Scenario, found


def ping_pong(rounds: int, *, new_work: bool = False) -> Scenario:
    run = Scenario()
    for i in range(rounds):
        run.agent("planner", "Coder should implement the fix.")
        run.tool("read_file", {"path": f"step_{i}.py" if new_work else "spec.md"}, "contents")
        run.agent("coder", "Planner should clarify the spec.")
    return run


# --- hand-off cycles ---------------------------------------------------------------------------


def test_agents_handing_back_and_forth_with_nothing_new_are_a_handoff_cycle():
    verdict = ping_pong(4).verdict()
    finding = found(verdict, HANDOFF_CYCLE)
    assert finding is not None and finding.conclusive and finding.period == 2
    assert verdict.label is Label.LOOP


def test_two_idle_rounds_only_warn():
    finding = found(ping_pong(3).findings(), HANDOFF_CYCLE)
    assert finding is not None and not finding.conclusive


def test_agents_handing_back_and_forth_while_doing_new_work_are_a_pipeline():
    assert found(ping_pong(6, new_work=True).findings(), HANDOFF_CYCLE) is None


def test_agents_saying_new_things_between_hand_offs_are_not_a_cycle():
    run = Scenario()
    for i in range(5):
        run.agent("writer").think(f"Draft {'abcde'[i]}: a new paragraph about topic {'vwxyz'[i]}.")
        run.agent("critic").think(f"Critique {'fghij'[i]}: tighten section {'klmno'[i]}.")
    assert found(run.findings(), HANDOFF_CYCLE) is None


# --- budgets ---------------------------------------------------------------------------------


def busy_run() -> Scenario:
    run = Scenario(step_seconds=10)
    for i in range(10):
        run.think(f"Thinking about part {'abcdefghij'[i]}.", tokens=1000)
        run.tool("work", {"part": i}, f"done part {'abcdefghij'[i]}", cost=0.05)
    return run


def test_budgets_are_off_by_default():
    assert not any(d.signals[0].startswith("budget") for d in default_detectors())
    assert busy_run().verdict().label is Label.NO_LOOP


def test_each_budget_is_its_own_signal():
    config = DetectorConfig(
        max_steps=20, max_tool_calls=10, max_tokens=10_000, max_cost=0.5, max_wall_seconds=200
    )
    verdict = busy_run().verdict(config)
    for signal in (BUDGET_STEPS, BUDGET_TOOL_CALLS, BUDGET_TOKENS, BUDGET_COST, BUDGET_WALL_TIME):
        finding = found(verdict, signal)
        assert finding is not None and finding.conclusive, signal


def test_a_spent_budget_pauses_and_is_only_suspected():
    verdict = busy_run().verdict(DetectorConfig(max_tool_calls=10))
    assert verdict.action is Action.PAUSE and verdict.label is Label.SUSPECTED


def test_a_half_spent_budget_warns():
    verdict = busy_run().verdict(DetectorConfig(max_tool_calls=20))
    finding = found(verdict, BUDGET_TOOL_CALLS)
    assert finding is not None and finding.severity == 0.5 and verdict.action is Action.WARN
