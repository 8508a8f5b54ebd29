"""The fast paths of span -> step reading give what the plain algorithms give.

Each fast path (in :mod:`otel_semloop.builder` and :mod:`otel_semloop.messages`) is held
to the algorithm it replaced, kept here as the reference, on generated input: the step
order of a trace (start time, then tree pre-order; siblings by start time, then arrival)
and an LLM output's text and requested tool calls read in one pass."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_semloop.builder import build_trace
from otel_semloop.conventions import step_kind
from otel_semloop.messages import flatten_text, requested_tool_calls, text_and_tool_calls
from otel_semloop.model import SpanRecord, StepKind
from tests.core.test_builder_fuzz import json_values, span_records

# -- the step order ------------------------------------------------------------------------


def _reference_order(records: list[SpanRecord]) -> dict[str, Any]:
    """What build_trace ordered before its sorts read the start time alone: span ids of
    the steps (before synthetic ones), the roots, each step's children, the plumbing spans
    and the root span, with explicit (start, arrival) and (start, pre-order) keys."""
    spans: dict[str, SpanRecord] = {}
    arrival: dict[str, int] = {}
    for record in records:
        if record.span_id not in spans:
            arrival[record.span_id] = len(arrival)
            spans[record.span_id] = record
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
    steps: list[SpanRecord] = []
    roots: list[str] = []
    kids: dict[str, list[str]] = {}
    other: list[str] = []
    preorder: dict[str, int] = {}
    stack: list[tuple[SpanRecord, str | None]] = [(r, None) for r in reversed(tops)]
    while stack:
        record, parent_step = stack.pop()
        if record.span_id in preorder:
            continue
        preorder[record.span_id] = len(preorder)
        attach_to = parent_step
        if step_kind(record.attributes, top_level=parent_step is None) is StepKind.OTHER:
            other.append(record.span_id)
        else:
            (roots if parent_step is None else kids.setdefault(parent_step, [])).append(record.span_id)
            steps.append(record)
            attach_to = record.span_id
        for child in reversed(children.get(record.span_id, ())):
            stack.append((child, attach_to))
    other.extend(r.span_id for r in spans.values() if r.span_id not in preorder)
    steps.sort(key=lambda r: (r.start_ns or 0, preorder[r.span_id]))
    if tops:
        root = next((r for r in tops if not r.parent_span_id), tops[0])
    else:
        root = min(spans.values(), key=order_key)
    return {
        "steps": [r.span_id for r in steps],
        "roots": roots,
        "children": kids,
        "other": other,
        "root": root.span_id,
    }


def _order(records: list[SpanRecord]) -> dict[str, Any]:
    trace = build_trace(records)
    return {
        "steps": [s.span_id for s in trace.steps if not s.synthetic],
        "roots": [s.span_id for s in trace.roots],
        "children": {s.span_id: [c.span_id for c in s.children] for s in trace.steps if s.children},
        "other": [r.span_id for r in trace.other_spans],
        "root": trace.root_span_id,
    }


SPAN_IDS = st.sampled_from([f"{i:016x}" for i in range(1, 10)])
KINDS = st.sampled_from(
    [
        {"gen_ai.operation.name": "chat"},
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
        {"openinference.span.kind": "CHAIN"},  # an agent at the top, plumbing below
        {},  # plumbing
    ]
)
SPANS = st.builds(
    SpanRecord,
    trace_id=st.just("0" * 31 + "1"),
    span_id=SPAN_IDS,
    parent_span_id=st.just("") | SPAN_IDS,
    name=st.just("span"),
    start_ns=st.integers(0, 6),  # many ties
    end_ns=st.just(9),
    attributes=KINDS,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SPANS, min_size=1, max_size=14) | st.lists(span_records(), min_size=1, max_size=14))
def test_steps_spans_and_root_come_in_the_reference_order(records: list[SpanRecord]) -> None:
    # Up to 14 spans over 9 ids: start-time ties, duplicates, parent cycles, remote parents.
    assert _order(records) == _reference_order(records)


def test_start_times_that_do_not_compare_order_as_the_reference_does() -> None:
    # Hand-built records without times: equal None starts tie-break by arrival and pre-order.
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    parents = {1: "", 2: "1", 3: "1", 4: "1"}
    records = [SpanRecord("t", str(i), parents[i], f"s{i}", None, None, tool) for i in (1, 4, 2, 3)]  # type: ignore[arg-type]
    assert _order(records) == _reference_order(records)
    cycle = [SpanRecord("t", "a", "b", "a", None, None), SpanRecord("t", "b", "a", "b", None, None)]  # type: ignore[arg-type]
    assert _order(cycle) == _reference_order(cycle)


# -- an LLM output's text and tool calls ----------------------------------------------------

PART = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["text", "reasoning", "tool_call", "tool_call_response", "x"])
        | st.lists(st.integers(), max_size=1)
        | st.none(),
        "content": st.none() | st.text(max_size=4) | st.integers(),
        "text": st.none() | st.text(max_size=4),
        "name": st.none() | st.text(max_size=4) | st.integers(),
        "arguments": json_values | st.just('{"a": 1}'),
        "id": st.none() | st.text(max_size=3) | st.integers(),
    },
)
NAMES = st.text(max_size=3)
MESSAGE = st.fixed_dictionaries(
    {"parts": st.lists(PART | json_values, max_size=4)},
    optional={
        "role": st.sampled_from(["assistant", "user"]),
        "content": json_values,
        "tool_calls": st.lists(st.fixed_dictionaries({"function": st.fixed_dictionaries({"name": NAMES})})),
        "finish_reason": st.text(max_size=3),
    },
)


GENAI_PART = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["text", "reasoning", "tool_call", "x"]),
        "content": st.text(max_size=3) | st.none(),
        "name": st.sampled_from(["search", "read"]),
        "arguments": st.just({"q": "a"}) | st.just('{"q": 1}'),
        "id": st.sampled_from(["c1", "c2"]),
    }
)
GENAI_OUTPUT = st.lists(
    st.fixed_dictionaries({"role": st.just("assistant"), "parts": st.lists(GENAI_PART, max_size=4)}),
    min_size=1,
    max_size=3,
)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        GENAI_OUTPUT,  # the shape read in one pass
        st.lists(MESSAGE, max_size=3),
        st.lists(MESSAGE | json_values, max_size=3),
        json_values,
    )
)
def test_an_output_s_text_and_calls_in_one_pass_are_the_two_readers(output: Any) -> None:
    text, calls = text_and_tool_calls(output)
    assert (text, calls) == (flatten_text(output), requested_tool_calls(output))


def test_a_tool_result_is_decoded_once_but_as_the_result_not_as_the_enveloped_output() -> None:
    from otel_semloop.conventions import read_step

    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "traceloop.entity.input": '{"args": [], "kwargs": {"q": "a"}}',
        "gen_ai.tool.call.result": '"no matches"',  # also the output: an envelope's JSON string
    }
    step = read_step(SpanRecord("t", "s", "", "search", 1, 2, attributes), StepKind.TOOL)
    assert step.output == "no matches" and step.tool_result == '"no matches"'
    plain = {**attributes, "gen_ai.tool.call.result": '{"hits": 2}'}
    plain.pop("traceloop.entity.input")
    step = read_step(SpanRecord("t", "s", "", "search", 1, 2, plain), StepKind.TOOL)
    assert step.tool_result == step.output == {"hits": 2}
