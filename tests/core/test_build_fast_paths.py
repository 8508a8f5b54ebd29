"""The fast paths of span -> step reading give what the plain algorithms give.

Each fast path in :mod:`otel_semloop.messages` is held to the algorithm it replaced, kept
here as the reference, on generated input: indexed messages, and an LLM span's input
messages (indexed or in events) made on first read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.conventions import read_step
from otel_semloop.messages import (
    EventMessages,
    _collect,
    _in_order,
    event_messages,
    llm_event_messages,
    llm_indexed_messages,
)
from otel_semloop.model import EventRecord, SpanRecord, StepKind
from tests.core.test_builder_fuzz import json_values

# -- the plain readings the fast paths are held to ----------------------------------------------


def indexed_messages(attrs: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every prefix's indexed message attributes as message dicts, in index order."""
    return {prefix: _in_order(by_index) for prefix, by_index in _collect(attrs.items()).items()}


def first_indexed(indexed: Mapping[str, list[dict[str, Any]]], *prefixes: str) -> Any:
    """The messages of the first of ``prefixes`` that has any."""
    return next((indexed[prefix] for prefix in prefixes if indexed.get(prefix)), None)


# -- a tool step's result --------------------------------------------------------------------


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
