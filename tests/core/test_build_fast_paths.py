"""The fast paths of span -> step reading give what the plain algorithms give.

Each fast path (in :mod:`otel_semloop.builder`, :mod:`otel_semloop.messages` and
:mod:`otel_semloop.tool_calls`) is held to the algorithm it replaced, kept here as the
reference, on generated input: the step order of a trace (start time, then tree pre-order;
siblings by start time, then arrival) with each step's depth and enclosing agent, an LLM
output's text and requested tool calls read in one pass, a requested call's arguments
decoded on first read, indexed messages, and requested calls linked
to tool steps in one pass."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import re
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_semloop.builder import _link_tool_calls, _synthetic_tool_steps, build_trace
from otel_semloop.conventions import read_step, step_kind
from otel_semloop.envelopes import decode_json
from otel_semloop.messages import (
    EventMessages,
    event_messages,
    first_indexed,
    flatten_text,
    indexed_messages,
    llm_event_messages,
    llm_indexed_messages,
    text_and_tool_calls,
)
from otel_semloop.model import EventRecord, SpanRecord, Step, StepKind
from otel_semloop.tool_calls import (
    ARGUMENTS_SLOT,
    UNDECODED,
    ToolCall,
    requested_call,
    requested_tool_calls,
    tool_responses,
)
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
    placed: dict[str, tuple[int, str | None]] = {}  # step span id: (depth, enclosing agent)
    named: dict[str, tuple[StepKind, str]] = {}  # step span id: (kind, step name)
    stack: list[tuple[SpanRecord, str | None]] = [(r, None) for r in reversed(tops)]
    while stack:
        record, parent_step = stack.pop()
        if record.span_id in preorder:
            continue
        preorder[record.span_id] = len(preorder)
        attach_to = parent_step
        kind = step_kind(record.attributes, top_level=parent_step is None)
        if kind is StepKind.OTHER:
            other.append(record.span_id)
        else:
            (roots if parent_step is None else kids.setdefault(parent_step, [])).append(record.span_id)
            steps.append(record)
            named[record.span_id] = (kind, read_step(record, kind).name)
            if parent_step is None:
                placed[record.span_id] = (0, None)
            else:
                depth, agent = placed[parent_step]
                parent_kind, parent_name = named[parent_step]
                placed[record.span_id] = (depth + 1, parent_name if parent_kind is StepKind.AGENT else agent)
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
        "placed": placed,
    }


def _order(records: list[SpanRecord]) -> dict[str, Any]:
    trace = build_trace(records)
    return {
        "steps": [s.span_id for s in trace.steps if not s.synthetic],
        "roots": [s.span_id for s in trace.roots],
        "children": {s.span_id: [c.span_id for c in s.children] for s in trace.steps if s.children},
        "other": [r.span_id for r in trace.other_spans],
        "root": trace.root_span_id,
        "placed": {s.span_id: (s.depth, s.agent) for s in trace.steps if not s.synthetic},
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
    assert (text, calls) == (flatten_text(output), tuple(requested_tool_calls(output)))


def test_a_tool_result_is_decoded_once_but_as_the_result_not_as_the_enveloped_output() -> None:
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


# -- a requested call's arguments, decoded on first read --------------------------------------


def _decoded(call: ToolCall) -> bool:
    """Whether ``call.arguments`` holds its value (its slot) without reading it."""
    return ARGUMENTS_SLOT.__get__(call) is not UNDECODED


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=3) | st.none() | st.integers(),
    json_values.map(json.dumps)
    | st.sampled_from(['{"a": ', "[1, 2", "{}", "[]", "{not json}", "plain", ""])
    | json_values,
    st.text(max_size=3) | st.none(),
)
def test_a_requested_call_reads_its_arguments_as_an_eager_decode_does(
    name: Any, arguments: Any, call_id: Any
) -> None:
    def eager() -> ToolCall:
        return ToolCall(str(name or ""), decode_json(arguments), str(call_id) if call_id else None)

    call = requested_call(name, arguments, call_id)
    undecoded = isinstance(arguments, str) and arguments[:1] in ("{", "[")
    assert _decoded(call) is not undecoded
    assert call.name == eager().name and call.call_id == eager().call_id
    assert _decoded(call) is not undecoded  # (reading the others decodes nothing)
    for read in (
        lambda c: c.arguments,
        repr,
        lambda c: (c == eager(), eager() == c, c != eager()),
        lambda c: pickle.loads(pickle.dumps(c)),
        copy.copy,
        copy.deepcopy,
        lambda c: dataclasses.replace(c, name="x"),
        dataclasses.asdict,
    ):
        got, want = read(requested_call(name, arguments, call_id)), read(eager())
        assert got == want and repr(got) == repr(want)
    assert call.arguments == eager().arguments and _decoded(call)


def test_a_call_built_by_hand_keeps_its_arguments_and_unknown_attributes_raise() -> None:
    text = '{"q": 1}'
    assert ToolCall("search", text).arguments is text  # only calls read from an output decode
    call = requested_call("search", text, None)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        call.nothing  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'arguments'"):
        ToolCall.__new__(ToolCall).arguments  # noqa: B018


def test_no_tool_call_attribute_read_goes_through_getattr() -> None:
    # A class with __getattr__ has every attribute read of its instances take CPython's
    # generic path (name and call_id included): the lazy arguments have a descriptor.
    assert not any("__getattr__" in vars(cls) for cls in ToolCall.__mro__[:-1])
    call = requested_call("search", '{"q": 1}', "c1")
    assert not _decoded(call)
    assert (call.name, call.call_id) == ("search", "c1") and not _decoded(call)
    assert call.arguments == {"q": 1} and _decoded(call)
    assert call.arguments is call.arguments  # decoded once, then the slot
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.arguments = None  # type: ignore[misc]


def test_a_requested_call_is_a_frozen_tool_call_once_made() -> None:
    """requested_call fills a slot-writable subclass, then makes it a ToolCall: what it
    returns is a ToolCall in every respect (type, equality, hash, frozen fields)."""
    for arguments in ('{"q": 1}', "plain", ["a"], None):
        call = requested_call("search", arguments, "c1")
        assert type(call) is ToolCall and call.__class__ is ToolCall
        assert call == ToolCall("search", decode_json(arguments), "c1")
        for field in ("name", "arguments", "call_id"):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(call, field, "x")
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(call, field)
    hashable = requested_call("search", "plain", None)
    assert hash(hashable) == hash(ToolCall("search", "plain", None))


# -- indexed messages of remembered key sets ------------------------------------------------

INDEXED_KEYS = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.output.messages",
        "gen_ai.prompt.0.content",
        "gen_ai.prompt.0.role",
        "gen_ai.completion.1.tool_calls.0.name",
        "gen_ai.completion.x.content",  # the prefix, but no index: not a message
        "llm.output_messages.0.message.content",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments",
        "gen_ai.prompt",
        "llm.input_messages.0.message.role",
        "llm.input_messages.x.role",  # an input prefix, but not a message
        "gen_ai.prompt.1.tool_calls.0.arguments",
        "gen_ai.prompt.1.tool_calls.y.name",  # a message, but no call
        "gen_ai.completion.0.content",
    ]
)


REFERENCE_PATTERN = r"^(gen_ai\.(?:prompt|completion)|llm\.(?:input|output)_messages)\.(\d+)\.(.+)$"


def _reference_indexed(attrs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """indexed_messages as it was written first: one setdefault chain per key."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attrs.items():
        match = re.match(REFERENCE_PATTERN, key)
        if match is None:
            continue
        prefix, index, rest = match.group(1), int(match.group(2)), match.group(3)
        rest = rest.removeprefix("message.")
        message = found.setdefault(prefix, {}).setdefault(index, {})
        if rest.startswith("tool_calls."):
            call = re.match(r"^tool_calls\.(\d+)\.(.+)$", rest)
            if call is None:
                continue
            calls = message.setdefault("tool_calls", {})
            field = call.group(2).removeprefix("tool_call.").removeprefix("function.")
            calls.setdefault(int(call.group(1)), {})[field] = value
        else:
            message[rest] = value
    result = {}
    for prefix, by_index in found.items():
        messages = []
        for _, message in sorted(by_index.items()):
            if isinstance(message.get("tool_calls"), dict):
                message["tool_calls"] = [c for _, c in sorted(message["tool_calls"].items())]
            messages.append(message)
        result[prefix] = messages
    return result


COLLECTED_KEYS = st.sampled_from(
    [
        "gen_ai.completion.0.role",
        "gen_ai.completion.0.content",
        "gen_ai.completion.0.tool_calls",  # the calls key itself: an attribute's value
        "gen_ai.completion.0.tool_calls.0.name",
        "gen_ai.completion.0.tool_calls.1.arguments",
        "gen_ai.completion.0.tool_calls.z.id",
        "gen_ai.completion.1.content",
        "gen_ai.completion.٣.content",  # a digit \d matches, int() reads
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id",
        "llm.input_messages.3.message.content",
        "gen_ai.prompt.0.content",
        "gen_ai.prompt.x",
        "other.key",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(
        COLLECTED_KEYS,
        st.none() | st.text(max_size=2) | st.integers() | st.dictionaries(st.integers(0, 2), st.none()),
        max_size=8,
    )
)
def test_indexed_messages_are_collected_as_the_first_written_collection(attrs: dict[str, Any]) -> None:
    # (the same messages, or the same error on values the chains cannot take)
    def outcome(read: Any) -> Any:
        try:
            return repr(read(copy.deepcopy(attrs)))
        except Exception as exc:
            return type(exc)

    assert outcome(indexed_messages) == outcome(_reference_indexed)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.dictionaries(INDEXED_KEYS, st.text(max_size=2) | st.integers(), max_size=7), max_size=6),
    st.booleans(),
)
def test_an_llm_span_s_indexed_messages_are_what_the_full_collection_gives(
    spans: list[dict[str, Any]], proxy: bool
) -> None:
    # llm_indexed_messages sets the input keys aside (made into messages on first read) and
    # sorts the keys out in C: it must give what first_indexed finds in indexed_messages.
    for attrs in spans + spans:  # (the second time, a key set may be remembered)
        indexed = indexed_messages(dict(attrs))
        want_in = first_indexed(indexed, "llm.input_messages", "gen_ai.prompt")
        want_out = first_indexed(indexed, "llm.output_messages", "gen_ai.completion")
        got_in, got_out = llm_indexed_messages(MappingProxyType(attrs) if proxy else attrs)
        assert got_out == want_out
        assert (got_in.messages() if got_in is not None else None) == want_in
        if got_in is not None:
            assert got_in.messages() == want_in  # (made again: the same messages)


EVENT_ATTRIBUTES = st.dictionaries(
    st.sampled_from(
        [
            "content",
            "body",
            "message",
            "role",
            "id",
            "tool_calls",
            "event.name",
            "gen_ai.prompt",
            "gen_ai.completion",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.event.content",
        ]
    ),
    st.none()
    | st.text(max_size=3)
    | json_values.map(json.dumps)
    | st.sampled_from(["gen_ai.user.message", ""]),
    max_size=4,
)
EVENTS = st.lists(
    st.builds(
        EventRecord,
        st.sampled_from(
            [
                "",
                "exception",
                "gen_ai.system.message",
                "gen_ai.user.message",
                "gen_ai.tool.message",
                "gen_ai.choice",
                "gen_ai.content.prompt",
                "gen_ai.content.completion",
                "gen_ai.client.inference.operation.details",
            ]
        ),
        st.integers(0, 3),
        EVENT_ATTRIBUTES,
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(EVENTS)
def test_an_llm_span_s_event_messages_are_what_the_full_reading_gives(events: list[EventRecord]) -> None:
    # llm_event_messages notes the input events (made into messages on first read): it must
    # give what event_messages gives.
    want_in, want_out = event_messages(events)
    got_in, got_out = llm_event_messages(events)
    assert repr(got_out) == repr(want_out)
    if isinstance(got_in, EventMessages):
        got_in = got_in.messages()
    assert repr(got_in) == repr(want_in)


# -- requested calls linked to tool steps -----------------------------------------------------


def _reference_link(steps: list[Step]) -> list[Step]:
    """The two passes the builder made before one did both (as at 64b123c)."""
    pending: list = []
    waiting: list[tuple[Step, str]] = []
    for step in steps:
        if step.kind is StepKind.LLM:
            if waiting:
                responses = tool_responses(step.input)
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
    if not any(s.kind is StepKind.LLM and s.tool_calls for s in steps):
        return steps
    out: list[Step] = []
    requester: Step | None = None
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


TOOL_NAMES = st.sampled_from(["search", "read"])
CALL_IDS = st.sampled_from(["c1", "c2", "c3"]) | st.none()
CALLS = st.lists(
    st.builds(
        lambda n, a, i: (n, a, i), TOOL_NAMES, st.none() | st.just({"q": 1}) | st.just('{"q": 2}'), CALL_IDS
    ),
    max_size=3,
)
GIVEN_BACK = st.lists(
    st.builds(
        lambda i, r: {"role": "tool", "tool_call_id": i, "content": r},
        CALL_IDS,
        st.just("r") | st.just('{"n": 1}'),
    )
    | st.builds(
        lambda i, r: {"parts": [{"type": "tool_call_response", "id": i, "response": r}]},
        CALL_IDS,
        st.just("p"),
    ),
    max_size=3,
)
STEP_SPECS = st.lists(
    st.one_of(
        st.tuples(st.just("llm"), CALLS, st.none() | GIVEN_BACK),
        st.tuples(
            st.just("tool"),
            TOOL_NAMES,
            st.none() | st.just({"q": 9}),
            st.none() | st.just("done"),
            st.booleans(),
            st.none() | st.just("in"),
        ),
        st.tuples(st.just("agent")),
    ),
    max_size=10,
)


def _steps(specs: list[tuple[Any, ...]]) -> list[Step]:
    steps = []
    for i, spec in enumerate(specs):
        times = {"span_id": f"s{i}", "start_ns": 10 * i, "end_ns": 10 * i + 5, "agent": "a", "depth": 1}
        if spec[0] == "llm":
            calls = tuple(requested_call(*call) for call in spec[1])
            steps.append(Step(StepKind.LLM, "chat", input=spec[2], tool_calls=calls, **times))
        elif spec[0] == "tool":
            _, name, arguments, result, failed, given_input = spec
            steps.append(
                Step(
                    StepKind.TOOL,
                    name,
                    tool_arguments=arguments,
                    tool_result=result,
                    output=result,
                    is_error=failed,
                    input=given_input,
                    **times,
                )
            )
        else:
            steps.append(Step(StepKind.AGENT, "a", **times))
    return steps


@settings(max_examples=400, deadline=None)
@given(STEP_SPECS)
def test_requested_calls_are_linked_to_tool_steps_as_the_two_reference_passes_link_them(
    specs: list[Any],
) -> None:
    got, want = _link_tool_calls(_steps(specs)), _reference_link(_steps(specs))
    assert [repr(s) for s in got] == [repr(s) for s in want]
    # The tool calls a step was given are not changed by matching them.
    assert [s.tool_calls for s in got] == [s.tool_calls for s in want]


def test_an_output_s_text_from_str_subclasses_is_a_plain_str_as_the_readers_give_it() -> None:
    class Text(str):
        pass

    one = [{"role": "assistant", "parts": [{"type": "text", "content": Text("a")}]}]
    two = [{"parts": [{"type": "text", "content": Text("a")}]}, {"parts": [{"type": "text", "content": "b"}]}]
    for output in (one, two):
        text, calls = text_and_tool_calls(output)
        assert text == flatten_text(output) and text.__class__ is str and calls == ()
