"""Budgets: steps, tool calls, tokens, cost and wall time, each its own signal.

All are off by default (``None`` in :class:`~otel_semloop.detectors.config.DetectorConfig`):
spending is a product decision, not loop evidence. When set, severity is the amount used
over the budget, so a budget warns from half spent and is conclusive when spent. Budget
findings are repetition alone (not ``no_progress``): the default policy pauses on them
and labels the trace ``suspected``, never ``loop``.

Signals and what they count
    ``budget_steps``: LLM and tool steps (agent invocations are containers, not steps).
    ``budget_tool_calls``: tool steps, failed ones included.
    ``budget_tokens``: input plus output tokens reported on LLM steps.
    ``budget_cost``: the ``cost`` reported on steps.
    ``budget_wall_time``: seconds from the earliest step start to the latest step end seen.

Kept
    Five running totals and the earliest start / latest end. Cost: O(1) per step.
"""

from __future__ import annotations

from otel_semloop.detectors.base import Episode, IncrementalDetector
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = [
    "BUDGET_COST",
    "BUDGET_STEPS",
    "BUDGET_TOKENS",
    "BUDGET_TOOL_CALLS",
    "BUDGET_WALL_TIME",
    "BudgetDetector",
]

BUDGET_STEPS = "budget_steps"
BUDGET_TOOL_CALLS = "budget_tool_calls"
BUDGET_TOKENS = "budget_tokens"
BUDGET_COST = "budget_cost"
BUDGET_WALL_TIME = "budget_wall_time"

_LLM, _TOOL = StepKind.LLM, StepKind.TOOL

_DESCRIPTIONS = {
    BUDGET_STEPS: "{count} LLM and tool steps used of the step budget",
    BUDGET_TOOL_CALLS: "{count} tool calls used of the tool-call budget",
    BUDGET_TOKENS: "{count} tokens used of the token budget",
    BUDGET_COST: "{count} spent of the cost budget",
    BUDGET_WALL_TIME: "{count} s of wall time used of the time budget",
}


class BudgetDetector(IncrementalDetector):
    """The five budget signals; a budget left at ``None`` is never reported."""

    signals = (BUDGET_STEPS, BUDGET_TOOL_CALLS, BUDGET_TOKENS, BUDGET_COST, BUDGET_WALL_TIME)

    def reset(self) -> None:
        super().reset()
        self._used: dict[str, float] = dict.fromkeys(self.signals, 0.0)
        self._episodes_by_signal: dict[str, Episode] = {}
        self._first_ns: int | None = None
        self._last_ns: int | None = None

    @property
    def enabled(self) -> bool:
        return any(limit is not None for limit in self._limits().values())

    def _limits(self) -> dict[str, float | None]:
        config = self.config
        return {
            BUDGET_STEPS: config.max_steps,
            BUDGET_TOOL_CALLS: config.max_tool_calls,
            BUDGET_TOKENS: config.max_tokens,
            BUDGET_COST: config.max_cost,
            BUDGET_WALL_TIME: config.max_wall_seconds,
        }

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        used = self._used
        kind = facts.kind
        if kind is _LLM or kind is _TOOL:
            used[BUDGET_STEPS] += 1
        if kind is _TOOL:
            used[BUDGET_TOOL_CALLS] += 1
        used[BUDGET_TOKENS] += (step.input_tokens or 0) + (step.output_tokens or 0)
        used[BUDGET_COST] += step.cost or 0.0
        if facts.start_ns is not None and (self._first_ns is None or facts.start_ns < self._first_ns):
            self._first_ns = facts.start_ns
        end = facts.time_ns
        if end is not None and (self._last_ns is None or end > self._last_ns):
            self._last_ns = end
        if self._first_ns is not None and self._last_ns is not None:
            used[BUDGET_WALL_TIME] = (self._last_ns - self._first_ns) / 1e9
        out: list[Finding] = []
        for signal, limit in self._limits().items():
            if limit is None or limit <= 0:
                continue
            episode = self._episodes_by_signal.get(signal)
            if episode is None:
                episode = self._episodes_by_signal[signal] = Episode(
                    signal,
                    limit,
                    facts,
                    description=_DESCRIPTIONS[signal] + f" ({limit:g})",
                    config=self.config,
                    started_step=0,
                    started_ns=self._first_ns,
                )
            self._track(episode, used[signal], facts, out, repeats=int(used[BUDGET_STEPS]))
        return out
