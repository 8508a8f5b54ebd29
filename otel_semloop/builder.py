"""Assemble a :class:`~otel_semloop.model.Trace` from the spans of one trace.

The span tree is rebuilt from parent ids; siblings are ordered by start time, then by
arrival. Steps (agent, LLM, tool spans) hang off their nearest step ancestor, skipping
plumbing spans in between, and the flat step list is ordered by start time with ties
broken by tree pre-order (a parent before the child that starts in the same nanosecond).
Everything is iterative: a 100k-span trace or a 10k-deep chain costs O(n log n) and no
recursion.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence

from otel_semloop.conventions import read_step, reading_plan, remembered_plan, step_kind
from otel_semloop.messages import flatten_text
from otel_semloop.model import SpanRecord, Step, StepKind, Trace, peek_input
from otel_semloop.tool_calls import ToolCall, tool_responses

_AGENT = StepKind.AGENT
_LLM = StepKind.LLM
_OTHER = StepKind.OTHER
_TOOL = StepKind.TOOL


def build_trace(records: Iterable[SpanRecord], *, partial: bool = False) -> Trace:
    """Build the trace of ``records`` (all of one trace id; duplicates by span id keep the
    first). ``partial`` marks a trace released before it completed."""
    spans: dict[str, SpanRecord] = {}  # in arrival order
    for record in records:
        if record.span_id not in spans:
            spans[record.span_id] = record
    if not spans:
        return Trace(trace_id="", steps=[], partial=partial)

    children: dict[str, list[SpanRecord]] = {}
    tops: list[SpanRecord] = []
    for record in spans.values():
        parent = record.parent_span_id
        if parent and parent in spans and parent != record.span_id:
            listed = children.get(parent)  # (not setdefault: no empty list made per span)
            if listed is None:
                children[parent] = [record]
            else:
                listed.append(record)
        else:
            tops.append(record)

    # Siblings by start time, then arrival: each list is in arrival order already and the
    # sort is stable, so the start time alone is the key (read in C).
    _sort_by_start(tops, spans)
    for siblings in children.values():
        _sort_by_start(siblings, spans)

    steps: list[Step] = []
    starts: list[int] = []  # each step's sort key (start time, 0 when unknown)
    roots: list[Step] = []
    other: list[SpanRecord] = []
    preorder: dict[str, int] = {}
    visited = 0  # len(preorder)
    # Depth first, in pre-order: a stack of (the siblings left to visit, their nearest step
    # ancestor), one entry per open parent (not per span: a flat trace of 10,000 spans
    # would otherwise hold 10,000 tuples for the garbage collector to scan). Siblings are
    # visited in one loop until one has children, whose entry then goes on top.
    stack: list[tuple[Iterator[SpanRecord], Step | None]] = [(iter(tops), None)]
    while stack:
        siblings, parent_step = stack.pop()
        top_level = parent_step is None
        if parent_step is None:
            attach_here, depth, agent = roots, 0, None
        else:
            attach_here, depth = parent_step.children, parent_step.depth + 1
            agent = parent_step.name if parent_step.kind is _AGENT else parent_step.agent
        for record in siblings:
            span_id = record.span_id
            if span_id in preorder:  # a parent-id cycle in hostile input
                continue
            preorder[span_id] = visited
            visited += 1
            # The reading plan of the span's key tuple (see ReadingPlan), looked up here
            # (no call) when one is remembered.
            attributes = record.attributes
            plan = remembered_plan(tuple(attributes)) if attributes.__class__ is dict else None
            if plan is None:
                plan = reading_plan(attributes)
            kind = step_kind(attributes, top_level, plan)  # (positional: cheaper per call)
            if kind is _OTHER:
                other.append(record)
                attach_to = parent_step
            else:
                step = read_step(record, kind, plan)
                if depth:
                    step.depth = depth
                    step.agent = agent
                attach_here.append(step)
                steps.append(step)
                starts.append(record.start_ns or 0)
                attach_to = step
            below = children.get(span_id)
            if below:
                stack.append((siblings, parent_step))
                stack.append((iter(below), attach_to))
                break

    # Spans caught in a parent-id cycle were never reached from a top: keep them as plumbing.
    if visited < len(spans):
        other.extend(r for r in spans.values() if r.span_id not in preorder)
    # By start time, ties in tree pre-order: the order the steps were appended in, which a
    # stable sort keeps.
    try:
        if any(map(_LT, starts[1:], starts)):  # (none out of order: the usual case)
            steps = [step for _, step in sorted(zip(starts, steps, strict=True), key=_FIRST)]
    except TypeError:  # start times that do not compare (hand-built records): as before
        steps.sort(key=lambda s: (s.start_ns or 0, preorder[s.span_id]))
    steps = _link_tool_calls(steps)
    root_record = _root_record(tops) if tops else _earliest(spans)
    return Trace(
        trace_id=root_record.trace_id,
        steps=steps,
        roots=roots,
        other_spans=other,
        spans=spans,
        root_span_id=root_record.span_id,
        partial=partial,
    )


_START = operator.attrgetter("start_ns")
_FIRST = operator.itemgetter(0)
_LT = operator.lt


def _sort_by_start(records: list[SpanRecord], spans: dict[str, SpanRecord]) -> None:
    """Sort ``records`` (in arrival order) by start time, then arrival (a stable sort);
    ``spans`` is every record by span id, in arrival order."""
    try:
        records.sort(key=_START)
    except TypeError:  # start times that do not compare (hand-built records): as before
        arrival = {span_id: i for i, span_id in enumerate(spans)}
        records.sort(key=lambda r: (r.start_ns, arrival[r.span_id]))


def _earliest(spans: dict[str, SpanRecord]) -> SpanRecord:
    """The span that starts first, the first to arrive among equals (``spans`` is in
    arrival order: ``min`` keeps the first of equal keys)."""
    try:
        return min(spans.values(), key=_START)
    except TypeError:  # start times that do not compare (hand-built records): as before
        arrival = {span_id: i for i, span_id in enumerate(spans)}
        return min(spans.values(), key=lambda r: (r.start_ns, arrival[r.span_id]))


def _root_record(tops: list[SpanRecord]) -> SpanRecord:
    """The span the verdict goes on: the earliest with no parent at all, else the
    earliest local root (its parent is remote or missing from the trace). (When every
    span sits in a parent-id cycle there is no top: the caller takes the earliest span.)"""
    for record in tops:
        if not record.parent_span_id:
            return record
    return tops[0]


def _link_tool_calls(steps: list[Step]) -> list[Step]:
    """The tool calls LLM outputs requested, linked to the tool steps (one pass over the
    ordered steps, O(steps + calls)); returns the steps, with a step added for each call
    no tool span recorded.

    Filled from the requests: tool arguments and results are opt-in in the GenAI
    conventions, so when a tool step lacks its arguments they are taken from the matching
    call requested by the latest LLM output before it (matched by tool name, each request
    used once); when it lacks its result too, from the result the next LLM call was given
    for that call's id (a ``tool`` message or a ``tool_call_response`` part: AutoGen
    records its tool spans with neither).

    Unrecorded calls: an application instrumented only at the LLM client
    (``openinference-instrumentation-openai``, OpenLLMetry's ``openai`` instrumentation)
    records no tool spans: its agent's actions exist only as tool calls inside LLM outputs,
    and their results as tool messages in the next LLM call's input. Without steps for them
    a tool loop there would be invisible. A call counts as recorded when any tool step runs
    before the next LLM step. The synthetic step carries the LLM span's id (write-back
    marks that span) and sits between the two LLM calls; it is not added to the deepeval
    tree view, which deepeval would not see either.

    (The two never read what the other writes: filling changes tool steps, the synthetic
    steps are made from LLM steps and their calls.)
    """
    pending: Sequence[ToolCall] = ()  # the latest requested calls not matched to a tool step
    owned = False  # whether ``pending`` is this pass's own copy (else the step's own calls)
    waiting: list[tuple[Step, str]] = []  # tool steps without a result, and their call id
    requester: Step | None = None  # the latest LLM step whose calls no tool step has run
    out: list[Step] | None = None  # the steps with synthetic ones, from the first inserted
    for index, step in enumerate(steps):
        kind = step.kind
        if kind is _LLM:
            if waiting:
                responses = tool_responses(peek_input(step))  # (the history: not kept)
                for tool, call_id in waiting:
                    result = responses.get(call_id)
                    if result is not None:
                        tool.tool_result = tool.output = result
                        tool.output_text = flatten_text(result)
                waiting = []
            if requester is not None:
                if out is None:
                    out = steps[:index]
                out.extend(_synthetic_tool_steps(requester, step))
            calls = step.tool_calls
            if calls:
                pending = calls  # (copied on its first match only)
                owned = False
                requester = step
            else:
                requester = None
        elif kind is _TOOL:
            requester = None
            if step.tool_arguments is None and pending:
                match = next((c for c in pending if c.name == step.name), None)
                if match is not None:
                    if not owned:
                        pending = list(pending)
                        owned = True
                    pending.remove(match)  # type: ignore[attr-defined]
                    arguments = step.tool_arguments = match.arguments
                    if step.input is None:
                        step.input = arguments
                    call_id = match.call_id
                    if step.tool_result is None and not step.is_error and call_id:
                        waiting.append((step, call_id))
        if out is not None:
            out.append(step)
    if out is None:
        out = steps
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
        arguments = call.arguments  # (read once: the first read of JSON arguments decodes them)
        steps.append(
            Step(
                kind=_TOOL,
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
