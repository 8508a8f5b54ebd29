"""Traces built from steps already in order, for tests that need no spans."""

from __future__ import annotations

from collections.abc import Iterable

from otel_semloop.model import Step, StepKind, Trace


def flat_trace(steps: Iterable[Step], trace_id: str = "", goal: str | None = None) -> Trace:
    """A flat trace of ``steps``; with a ``goal`` they become children of a root agent step."""
    ordered = list(steps)
    if goal is None:
        return Trace(trace_id=trace_id, steps=ordered, roots=list(ordered))
    root = Step(StepKind.AGENT, "agent", input=goal, input_text=goal, span_id="root")
    root.children = list(ordered)
    for step in ordered:
        step.depth = max(step.depth, 1)
        step.agent = step.agent or root.name
    return Trace(trace_id=trace_id, steps=[root, *ordered], roots=[root], root_span_id="root")
