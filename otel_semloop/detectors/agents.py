"""Agents: hand-off cycles between agent spans with nothing new.

Signal ``handoff_cycle``
    Each agent step (an agent invocation span) is fingerprinted as (agent name, digest of
    its normalised output) *if nothing new happened since the previous agent step*: no
    novel tool (action, result) pair and no assistant text not said before. When
    something new did happen the step gets a fingerprint of its own, which breaks any
    cycle: two agents handing work back and forth while doing real work are a pipeline,
    not a loop. The agent's input is left out on purpose: hand-off inputs usually carry the
    growing conversation, which would hide every cycle.

    Hand-offs come in several forms, all read as agent items: agent invocation spans
    (sibling or nested ``invoke_agent``, OpenInference ``AGENT``, OpenLLMetry ``agent``)
    and hand-off tool calls (:attr:`~otel_semloop.model.Step.handoff_to`: the GenAI
    ``gen_ai.transfer.target.name`` attribute on ``execute_tool``, ``transfer_to_<agent>``
    tools, ``transfer_to_agent(agent_name=...)``, the openai-agents ``handoff to <agent>``
    span). A hand-off tool call is fingerprinted by its target.

    The fingerprints go through the same tail-cycle tracker as tool actions: a cycle of
    period 2..``handoff_max_period`` (A-B, A-B-C, ...) repeated ``handoff_repeats`` (3)
    times is conclusive; period 1 (one agent re-invoked with nothing new) needs
    ``identical_repeats`` (4). ``no_progress`` by construction.

    Order matters and is the caller's: offline, agent steps come in start order (an
    agent's work follows it); live, a span processor may feed them as they end (an agent's
    work precedes it). Either way "something new since the previous agent step" covers
    the work between two consecutive agent steps.

Kept
    The novelty epochs seen at the previous agent step and the cycle tracker's digests.

Cost
    O(handoff_max_period) per agent step, O(1) per other step.
"""

from __future__ import annotations

from typing import ClassVar

from otel_semloop.detectors.base import IncrementalDetector
from otel_semloop.detectors.cycles import renewed_tail_cycles
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.detectors.normalize import digest
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = ["HANDOFF_CYCLE", "HandoffCycleDetector"]

HANDOFF_CYCLE = "handoff_cycle"

_TOOL, _AGENT = StepKind.TOOL, StepKind.AGENT


def _describe(names: list[str], no_progress: bool) -> str:
    shown = " -> ".join(names) if names else "the same agents"
    return f"hand-offs {shown} repeated {{count}} times with nothing new (period {{period}})"


class HandoffCycleDetector(IncrementalDetector):
    """``handoff_cycle``: agents handing work back and forth with nothing new (see module doc)."""

    signals = (HANDOFF_CYCLE,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): agent steps and
    #: hand-off tool calls (no other tool step).
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.AGENT, StepKind.TOOL})
    plain_tool_steps: ClassVar[bool] = False

    def reset(self) -> None:
        super().reset()
        config = self.config
        self._cycles = renewed_tail_cycles(
            getattr(self, "_cycles", None),
            HANDOFF_CYCLE,
            config,
            config.handoff_max_period,
            config.identical_repeats,
            config.handoff_repeats,
            _describe,
        )
        self._marker: tuple[int, int] | None = None
        self._unique = 0

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        kind = facts.kind
        if kind is _AGENT:
            name = facts.name
        elif kind is _TOOL and step.handoff_to:
            name = f"-> {step.handoff_to}"
        else:
            return []
        # A hand-off call's own novelty (its first occurrence is a new action) is not
        # new work: compare the epochs as they were before it.
        marker = (facts.epoch - (facts.novel and kind is _TOOL), facts.text_epoch)
        fresh = marker != self._marker
        self._marker = marker
        if fresh:
            self._unique += 1
            fingerprint = digest(f"<fresh>{self._unique}")
        else:
            fingerprint = digest(f"{name}\0{facts.text}")
        out: list[Finding] = []
        self._cycles.push(fingerprint, facts, True, self, out)
        return out
