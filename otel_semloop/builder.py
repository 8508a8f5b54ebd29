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
from otel_semloop.messages import flatten_text
from otel_semloop.model import SpanRecord, Step, StepKind, Trace, peek_input
from otel_semloop.tool_calls import ToolCall, tool_responses


def build_trace(records: Iterable[SpanRecord], *, partial: bool = False) -> Trace:
    """Build the trace of ``records`` (all of one trace id; duplicates by span id keep the
    first). ``partial`` marks a trace released before it completed."""
    spans: dict[str, SpanRecord] = {}  # in arrival order
    for record in records:
        spans.setdefault(record.span_id, record)
    if not spans:
        return Trace(trace_id="", steps=[], partial=partial)
    arrival = {span_id: index for index, span_id in enumerate(spans)}

    def by_start(record: SpanRecord) -> tuple[int, int]:
        return (record.start_ns, arrival[record.span_id])

    children: dict[str, list[SpanRecord]] = {}
    tops: list[SpanRecord] = []
    for record in spans.values():
        parent = record.parent_span_id
        if parent and parent in spans and parent != record.span_id:
            children.setdefault(parent, []).append(record)
        else:
            tops.append(record)
    tops.sort(key=by_start)
    for siblings in children.values():
        siblings.sort(key=by_start)

    steps: list[Step] = []
    roots: list[Step] = []
    other: list[SpanRecord] = []
    preorder: dict[str, int] = {}
    # Depth first, in pre-order: each span with its nearest step ancestor (None at the top).
    stack: list[tuple[SpanRecord, Step | None]] = [(record, None) for record in reversed(tops)]
    while stack:
        record, parent_step = stack.pop()
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
    steps = _link_tool_calls(steps)
    if tops:
        # The span the verdict goes on: the earliest with no parent at all, else the
        # earliest local root (its parent is remote or missing from the trace).
        root_record = next((r for r in tops if not r.parent_span_id), tops[0])
    else:  # every span sits in a parent-id cycle
        root_record = min(spans.values(), key=by_start)
    return Trace(
        trace_id=root_record.trace_id,
        steps=steps,
        roots=roots,
        other_spans=other,
        spans=spans,
        root_span_id=root_record.span_id,
        partial=partial,
    )


def _link_tool_calls(steps: list[Step]) -> list[Step]:
    """The tool calls LLM outputs requested, linked to the tool steps (one pass,
    O(steps + calls)); returns the steps, with a step added for each call no tool span
    recorded.

    Tool arguments and results are opt-in in the GenAI conventions, so a tool step that
    lacks its arguments takes them from the matching call the latest LLM output requested
    (by tool name, each request used once), and one that lacks its result too takes the
    result the next LLM call was given for that call's id (AutoGen records neither).

    An application instrumented only at the LLM client records no tool spans: its actions
    exist only as tool calls in LLM outputs, and a tool loop there would be invisible. A
    call counts as recorded when any tool step runs before the next LLM step; otherwise a
    synthetic step, carrying the LLM span's id (write-back marks that span), sits between
    the two LLM calls. It is not in the deepeval tree view, as deepeval would not see it.
    """
    pending: list[ToolCall] = []  # the latest requested calls not matched to a tool step
    waiting: list[tuple[Step, str]] = []  # tool steps without a result, and their call id
    for step in steps:
        if step.kind is StepKind.LLM:
            if waiting:
                responses = tool_responses(peek_input(step))  # (the history: not kept)
                for tool, call_id in waiting:
                    result = responses.get(call_id)
                    if result is not None:
                        tool.tool_result = tool.output = result
                        tool.output_text = flatten_text(result)
                waiting = []
            if step.tool_calls:
                pending = list(step.tool_calls)
        elif step.kind is StepKind.TOOL and step.tool_arguments is None and pending:
            match = next((c for c in pending if c.name == step.name), None)
            if match is not None:
                pending.remove(match)
                step.tool_arguments = match.arguments
                if step.input is None:
                    step.input = match.arguments
                if step.tool_result is None and not step.is_error and match.call_id:
                    waiting.append((step, match.call_id))

    out: list[Step] = []
    requester: Step | None = None  # the latest LLM step whose calls no tool step has run
    for step in steps:
        if step.kind is StepKind.LLM:
            if requester is not None:
                out.extend(_synthetic_tool_steps(requester, step))
            requester = step if step.tool_calls else None
        elif step.kind is StepKind.TOOL:
            requester = None
        out.append(step)
    if requester is not None:
        out.extend(_synthetic_tool_steps(requester, None))
    return out


def _synthetic_tool_steps(requester: Step, next_llm: Step | None) -> list[Step]:
    results = tool_responses(peek_input(next_llm)) if next_llm is not None else {}
    start = requester.end_ns
    end = next_llm.start_ns if next_llm is not None else requester.end_ns
    steps = []
    for call in requester.tool_calls:
        call_id = call.call_id
        result = results.get(call_id) if call_id else None
        arguments = call.arguments
        steps.append(
            Step(
                kind=StepKind.TOOL,
                name=call.name,
                span_id=requester.span_id,
                trace_id=requester.trace_id,
                parent_span_id=requester.parent_span_id,
                input=arguments,
                output=result,
                input_text=flatten_text(arguments),
                output_text=flatten_text(result),
                tool_arguments=arguments,
                tool_result=result,
                start_ns=start,
                end_ns=end,
                agent=requester.agent,
                depth=requester.depth,
                synthetic=True,
            )
        )
    return steps
