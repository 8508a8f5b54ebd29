"""Assemble a :class:`~otel_semloop.model.Trace` from the spans of one trace.

The span tree is rebuilt from parent ids; siblings are ordered by start time, then by
arrival. Steps (agent, LLM, tool spans) hang off their nearest step ancestor, skipping
plumbing spans in between, and the flat step list is ordered by start time with ties
broken by tree pre-order (a parent before the child that starts in the same nanosecond).
Everything is iterative: a 100k-span trace or a 10k-deep chain costs O(n log n) and no
recursion.
"""

from __future__ import annotations

from collections.abc import Iterable

from otel_semloop.conventions import read_step, step_kind
from otel_semloop.model import SpanRecord, Step, StepKind, Trace


def build_trace(records: Iterable[SpanRecord], *, partial: bool = False) -> Trace:
    """Build the trace of ``records`` (all of one trace id; duplicates by span id keep the
    first). ``partial`` marks a trace released before it completed."""
    spans: dict[str, SpanRecord] = {}
    arrival: dict[str, int] = {}
    for record in records:
        if record.span_id not in spans:
            arrival[record.span_id] = len(arrival)
            spans[record.span_id] = record
    if not spans:
        return Trace(trace_id="", steps=[], partial=partial)

    children: dict[str, list[SpanRecord]] = {}
    tops: list[SpanRecord] = []
    for record in spans.values():
        parent = record.parent_span_id
        if parent and parent in spans and parent != record.span_id:
            children.setdefault(parent, []).append(record)
        else:
            tops.append(record)

    def order_key(record: SpanRecord) -> tuple[int, int]:
        return (record.start_ns, arrival[record.span_id])

    tops.sort(key=order_key)
    for siblings in children.values():
        siblings.sort(key=order_key)

    steps: list[Step] = []
    roots: list[Step] = []
    other: list[SpanRecord] = []
    preorder: dict[str, int] = {}
    # Stack of (record, nearest step ancestor); pushed in reverse to pop in order.
    stack: list[tuple[SpanRecord, Step | None]] = [(r, None) for r in reversed(tops)]
    while stack:
        record, parent_step = stack.pop()
        if record.span_id in preorder:  # a parent-id cycle in hostile input
            continue
        preorder[record.span_id] = len(preorder)
        kind = step_kind(record.attributes, top_level=parent_step is None)
        attach_to = parent_step
        if kind is StepKind.OTHER:
            other.append(record)
        else:
            step = read_step(record, kind)
            if parent_step is None:
                roots.append(step)
            else:
                step.depth = parent_step.depth + 1
                step.agent = parent_step.name if parent_step.kind is StepKind.AGENT else parent_step.agent
                parent_step.children.append(step)
            steps.append(step)
            attach_to = step
        for child in reversed(children.get(record.span_id, ())):
            stack.append((child, attach_to))

    # Spans caught in a parent-id cycle were never reached from a top: keep them as plumbing.
    other.extend(r for r in spans.values() if r.span_id not in preorder)
    steps.sort(key=lambda s: (s.start_ns or 0, preorder[s.span_id]))
    _fill_tool_calls_from_llm_requests(steps)
    root_record = _root_record(tops)
    return Trace(
        trace_id=root_record.trace_id,
        steps=steps,
        roots=roots,
        other_spans=other,
        spans=spans,
        root_span_id=root_record.span_id,
        partial=partial,
    )


def _root_record(tops: list[SpanRecord]) -> SpanRecord:
    """The span the verdict goes on: the earliest with no parent at all, else the
    earliest local root (its parent is remote or missing from the trace)."""
    for record in tops:
        if not record.parent_span_id:
            return record
    return tops[0]


def _fill_tool_calls_from_llm_requests(steps: list[Step]) -> None:
    """Tool arguments are opt-in in the GenAI conventions: when a tool step lacks them,
    take them from the matching call requested by the latest LLM output before it
    (matched by call id, else by tool name, each request used once)."""
    pending: list = []
    for step in steps:
        if step.kind is StepKind.LLM and step.tool_calls:
            pending = list(step.tool_calls)
        elif step.kind is StepKind.TOOL and step.tool_arguments is None and pending:
            match = next((c for c in pending if c.name == step.name), None)
            if match is not None:
                pending.remove(match)
                step.tool_arguments = match.arguments
                if step.input is None:
                    step.input = match.arguments
