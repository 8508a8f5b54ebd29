"""Steps read from spans decode their input (and an LLM's messages) on first read.

An agent resends its whole message history on every LLM call: decoding and flattening
it for every step is O(history) per step, O(n^2) per trace. These tests pin down that a
step's input is not decoded until something reads it, and that what a read returns is
exactly what reading everything at once returned (the eager reference below is the
plain algorithm :func:`read_step` followed before it was made lazy)."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.detector_speed import genai_records
from otel_semloop import conventions as cv
from otel_semloop import envelopes as env
from otel_semloop import messages as msg
from otel_semloop import tool_calls as tc
from otel_semloop.builder import build_trace
from otel_semloop.conventions import read_step, step_kind
from otel_semloop.handoffs import handoff_target
from otel_semloop.model import EventRecord, SpanRecord, Step, StepKind, peek_input
from tests.core.test_build_fast_paths import first_indexed, indexed_messages
from tests.core.test_builder_fuzz import KEYS, attribute_values, json_values, message_like

TRACE = "0" * 31 + "1"


def _first_present(attrs: Any, *keys: str) -> Any:
    """The first of ``keys`` whose value is not None (the eager reference's key probing)."""
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def _llm(messages: Any, output: Any = None, **extra: Any) -> SpanRecord:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": messages, **extra}
    if output is not None:
        attributes["gen_ai.output.messages"] = output
    return SpanRecord(TRACE, "00000000000000a1", "", "chat", 1, 2, attributes)


HISTORY = json.dumps(
    [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Fix the build."}]},
    ]
)
OUTPUT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Reading the log."}]}])


def test_a_built_trace_decodes_no_llm_input_and_keeps_no_decoded_messages():
    trace = build_trace(genai_records(40))
    llm = [s for s in trace.steps if s.kind is StepKind.LLM]
    assert llm
    for step in llm:
        assert not step.is_decoded("input") and not step.is_decoded("input_text")
        assert not step.is_decoded("output")  # the text and tool calls were read, the messages dropped
        assert step.output_text and step.tool_calls


def test_tool_results_looked_up_in_the_next_input_leave_it_undecoded():
    # An LLM-only trace (no tool spans): each requested call becomes a synthetic tool step
    # whose result is read from the next LLM call's input; that input (the history) is
    # read once, not kept on the step, and the results are what a stored read gives.
    records = [r for r in genai_records(40) if r.attributes["gen_ai.operation.name"] != "execute_tool"]
    trace = build_trace(records)
    llm = [s for s in trace.steps if s.kind is StepKind.LLM]
    synthetic = [s for s in trace.steps if s.synthetic]
    assert len(synthetic) == len(llm) and all(not s.is_decoded("input") for s in llm)
    results = [tc.tool_responses(nxt.input) for nxt in llm[1:]]  # (stored reads, after the fact)
    got = [s.tool_result for s in synthetic[:-1]]
    assert got == [r[s.tool_calls[0].call_id] for r, s in zip(results, llm, strict=False)]
    assert all(got) and synthetic[-1].tool_result is None


def test_reading_the_input_decodes_it_once_and_gives_what_an_eager_read_gives():
    step = read_step(_llm(HISTORY, OUTPUT), StepKind.LLM)
    assert step.input_text == "Be brief.\nFix the build."
    assert step.is_decoded("input_text")
    assert step.input == json.loads(HISTORY)
    assert step.input is step.input  # stored on first read
    assert step.output == json.loads(OUTPUT)
    assert step.output_text == "Reading the log."


def test_assigning_input_or_input_text_works_before_and_after_a_read():
    step = read_step(_llm(HISTORY, OUTPUT), StepKind.LLM)
    step.input_text = "replaced"
    assert step.input_text == "replaced"
    assert step.input == json.loads(HISTORY)  # the other field still decodes from the span
    step.input = "new input"
    assert step.input == "new input" and step.input_text == "replaced"

    assigned = read_step(_llm(HISTORY, OUTPUT), StepKind.LLM)
    assigned.input = "assigned"  # the text is still the span's, as when read at once
    assert (assigned.input, assigned.input_text) == ("assigned", "Be brief.\nFix the build.")

    other = read_step(_llm(HISTORY, OUTPUT), StepKind.LLM)
    assert other.input_text == "Be brief.\nFix the build."
    other.input_text = "after a read"
    other.output = None
    assert (other.input_text, other.output) == ("after a read", None)


def test_no_step_attribute_read_goes_through_getattr():
    # A class with __getattr__ has every attribute read of its instances take CPython's
    # generic path (not the specialised slot read): the deferred fields have descriptors.
    assert not any("__getattr__" in vars(cls) for cls in Step.__mro__[:-1])
    step = read_step(_llm(HISTORY, OUTPUT), StepKind.LLM)
    with pytest.raises(AttributeError, match="no attribute 'input'"):
        del step._deferred
        _ = step.input


def test_a_step_built_by_hand_is_plain_and_unknown_attributes_still_raise():
    step = Step(StepKind.LLM, "chat", input=[{"role": "user", "content": "hi"}], input_text="hi")
    assert step.is_decoded("input") and step.input_text == "hi"
    try:
        _ = step.no_such_field  # type: ignore[attr-defined]
    except AttributeError as e:
        assert "no_such_field" in str(e)
    else:
        raise AssertionError("an unknown attribute must raise AttributeError")


def test_repr_replace_copy_and_pickle_see_the_decoded_values():
    def fresh() -> Step:
        return read_step(_llm(HISTORY, OUTPUT), StepKind.LLM)

    assert "Fix the build." in repr(fresh())
    as_dict = dataclasses.asdict(fresh())
    assert as_dict["input"] == json.loads(HISTORY) and as_dict["input_text"] == "Be brief.\nFix the build."
    assert as_dict["output"] == json.loads(OUTPUT)
    assert not any(name.startswith("_") for name in as_dict)  # no private bookkeeping among the fields
    replaced = dataclasses.replace(fresh(), name="other")
    assert replaced.input == json.loads(HISTORY) and replaced.input_text == "Be brief.\nFix the build."
    for clone in (copy.copy(fresh()), copy.deepcopy(fresh()), pickle.loads(pickle.dumps(fresh()))):
        assert clone.input == json.loads(HISTORY)
        assert clone.input_text == "Be brief.\nFix the build."
        assert clone.output == json.loads(OUTPUT)


def test_indexed_input_messages_are_made_on_first_read_and_copy_and_pickle_as_made():
    attributes = {
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": "Fix the build.",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "Reading the log.",
    }
    want = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Fix the build."}]

    def fresh() -> Step:
        record = SpanRecord(TRACE, "00000000000000a1", "", "chat", 1, 2, dict(attributes))
        return read_step(record, StepKind.LLM)

    step = fresh()
    assert not step.is_decoded("input") and step.output_text == "Reading the log."
    assert step.input_text == "Be brief.\nFix the build." and step.input == want
    for clone in (copy.copy(fresh()), copy.deepcopy(fresh()), pickle.loads(pickle.dumps(fresh()))):
        assert clone.input == want and clone.input_text == "Be brief.\nFix the build."
    assert dataclasses.replace(fresh(), name="x").input == want


def test_event_input_messages_are_made_on_first_read_and_copy_and_pickle_as_made():
    events = [
        EventRecord("gen_ai.system.message", 1, {"content": "Be brief."}),
        EventRecord("gen_ai.user.message", 1, {"content": "Fix the build."}),
        EventRecord("gen_ai.choice", 2, {"body": json.dumps({"message": {"content": "Reading the log."}})}),
    ]
    want = [{"content": "Be brief.", "role": "system"}, {"content": "Fix the build.", "role": "user"}]

    def fresh() -> Step:
        record = SpanRecord(TRACE, "00000000000000a1", "", "chat", 1, 2, {"llm.request.type": "chat"}, events)
        return read_step(record, StepKind.LLM)

    step = fresh()
    assert not step.is_decoded("input") and step.output_text == "Reading the log."
    assert step.input == want and step.input_text == "Be brief.\nFix the build."
    for clone in (copy.copy(fresh()), copy.deepcopy(fresh()), pickle.loads(pickle.dumps(fresh()))):
        assert clone.input == want and clone.input_text == "Be brief.\nFix the build."


@pytest.mark.parametrize("kind", list(StepKind))
def test_message_events_read_as_the_eager_reference_on_every_kind(kind: StepKind) -> None:
    events = [
        EventRecord("gen_ai.user.message", 1, {"content": "{not json"}),
        EventRecord("gen_ai.choice", 2, {"body": json.dumps({"message": {"content": "Done."}})}),
    ]
    record = SpanRecord(TRACE, "00000000000000a1", "", "span", 1, 2, {}, events)
    step, expected = read_step(record, kind), _eager(record, kind)
    for field in ("input", "input_text", "output", "output_text"):
        assert _same(getattr(step, field), expected[field]), field


@pytest.mark.parametrize("messages", [HISTORY, "", None])
@pytest.mark.parametrize("output", [OUTPUT, "", None])
def test_a_message_list_attribute_comes_before_the_indexed_messages(messages: Any, output: Any) -> None:
    attributes = {
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "Indexed question.",
        "llm.output_messages.0.message.content": "Indexed answer.",
        "gen_ai.input.messages": messages,
        "gen_ai.output.messages": output,
    }
    record = SpanRecord(TRACE, "00000000000000a1", "", "chat", 1, 2, attributes)
    step, expected = read_step(record, StepKind.LLM), _eager(record, StepKind.LLM)
    for field in ("input", "input_text", "output", "output_text"):
        assert _same(getattr(step, field), expected[field]), field
    assert ("Fix the build." in step.input_text) is bool(messages)


# -- the eager reference ------------------------------------------------------------------


def _eager(record: SpanRecord, kind: StepKind) -> dict[str, Any]:
    """What read_step computed before it was lazy: every field at once, step by step."""
    attrs = record.attributes
    name = record.name
    keys = {
        StepKind.TOOL: (
            "confident.tool.name",
            "gen_ai.tool.name",
            "tool.name",
            "traceloop.entity.name",
            "ai.toolCall.name",
        ),
        StepKind.AGENT: (
            "confident.agent.name",
            "gen_ai.agent.name",
            "agent.name",
            "traceloop.entity.name",
            "ai.telemetry.functionId",
        ),
    }.get(kind, ("confident.span.name",))
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            name = value
            break
    step_in = step_out = None
    if kind is StepKind.LLM:
        step_in = attrs.get("gen_ai.input.messages")
        step_out = attrs.get("gen_ai.output.messages")
        if not step_in or not step_out:
            indexed = indexed_messages(attrs)
            step_in = step_in or first_indexed(indexed, "llm.input_messages", "gen_ai.prompt")
            step_out = step_out or first_indexed(indexed, "llm.output_messages", "gen_ai.completion")
    if step_in is None:
        step_in = _first_present(attrs, *cv._INPUT_KEYS)
    if step_out is None:
        step_out = _first_present(attrs, *cv._OUTPUT_KEYS)
    events = list(record.events)
    if kind is StepKind.LLM and "events" in attrs and (step_in is None or step_out is None):
        listed = env.decode_json(attrs["events"])
        for entry in listed if isinstance(listed, list) else []:
            name_of = entry.get("event.name") if isinstance(entry, dict) else None
            if isinstance(name_of, str) and name_of.startswith("gen_ai."):
                events.append(EventRecord(name_of, 0, {"body": entry}))
    if events and kind is not StepKind.AGENT and (step_in is None or step_out is None):
        events_in, events_out = msg.event_messages(events)
        if kind is StepKind.TOOL:
            events_in, events_out = msg.message_content(events_in), msg.message_content(events_out)
        step_in = events_in if step_in is None else step_in
        step_out = events_out if step_out is None else step_out
    step_in, step_out = env.decode_json(step_in), env.decode_json(step_out)
    if "traceloop.entity.input" in attrs or "traceloop.entity.output" in attrs:
        step_in, step_out = env.unwrap_envelope(step_in), env.decode_json_string(step_out)
    elif kind is StepKind.TOOL and "ai.toolCall.result" in attrs:
        step_out = env.decode_json_string(step_out)
    tool_calls = tuple(tc.requested_tool_calls(step_out)) if kind is StepKind.LLM else ()
    if kind is StepKind.LLM and attrs.get("ai.response.toolCalls") is not None:
        tool_calls += tuple(tc.requested_tool_calls(env.decode_json(attrs["ai.response.toolCalls"])))
    out: dict[str, Any] = {
        "name": name,
        "input": step_in,
        "output": step_out,
        "input_text": msg.flatten_text(step_in),
        "output_text": msg.flatten_text(step_out),
        "tool_calls": tool_calls,
        "tool_arguments": None,
        "tool_result": None,
        "handoff_to": None,
    }
    if kind is StepKind.TOOL:
        arguments = _first_present(attrs, "gen_ai.tool.call.arguments", "tool_arguments", "ai.toolCall.args")
        tool_arguments = env.decode_json(arguments) if arguments is not None else step_in
        result = _first_present(attrs, "gen_ai.tool.call.result", "tool_response", "ai.toolCall.result")
        tool_result = env.decode_json(result) if result is not None else step_out
        envelope = "traceloop.entity.input" in attrs or "traceloop.entity.output" in attrs
        if result is not None and result is _first_present(attrs, *cv._OUTPUT_KEYS) and not envelope:
            tool_result = step_out  # (the output itself: an AI SDK result unquoted)
        if isinstance(tool_arguments, dict) and "input_str" in tool_arguments:
            tool_arguments = env.unwrap_callback_input(tool_arguments)
        if isinstance(tool_result, dict):
            tool_result = env.unwrap_tool_result(tool_result)
        out["tool_arguments"], out["tool_result"] = tool_arguments, tool_result
        out["handoff_to"] = handoff_target(attrs, name, tool_arguments)
    error_type = attrs.get("error.type")
    message = record.status_message
    for event in record.events:
        if event.name == "exception":
            error_type = error_type or event.attributes.get("exception.type")
            message = message or str(event.attributes.get("exception.message", ""))
            break
    out["is_error"] = record.status_code == 2 or error_type is not None
    out["error_type"] = str(error_type or "") if out["is_error"] else ""
    out["error_message"] = (message or "") if out["is_error"] else ""
    out["input_tokens"] = cv._as_int(
        _first_present(
            attrs,
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "confident.llm.input_token_count",
            "ai.usage.inputTokens",
            "ai.usage.promptTokens",
        )
    )
    out["output_tokens"] = cv._as_int(
        _first_present(
            attrs,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "confident.llm.output_token_count",
            "ai.usage.outputTokens",
            "ai.usage.completionTokens",
        )
    )
    cost = _first_present(attrs, "gen_ai.usage.cost", "llm.cost.total")
    out["cost"] = float(cost) if isinstance(cost, (int, float)) else None
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN included (a float attribute may be NaN)."""
    return (
        orjson.dumps(a, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        == orjson.dumps(b, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        if _dumpable(a) and _dumpable(b)
        else repr(a) == repr(b)
    )


def _dumpable(value: Any) -> bool:
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return False
    return True


ENVELOPES = st.one_of(
    message_like.map(json.dumps),
    st.builds(
        lambda a, k: json.dumps({"args": a, "kwargs": k}),
        st.lists(json_values, max_size=2),
        st.dictionaries(st.text(max_size=4), json_values, max_size=2),
    ),
    json_values.map(json.dumps),
    st.text(max_size=12),
)
EXTRA_KEYS = [
    *KEYS,
    "traceloop.entity.output",
    "confident.span.input",
    "confident.span.output",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cost",
    "tool.name",
    "gen_ai.transfer.target.name",
    "gen_ai.prompt.0.content",
    "gen_ai.prompt.1.role",
    "gen_ai.prompt.x.content",
    "llm.input_messages.0.message.content",
    "gen_ai.completion.0.content",
    "ai.toolCall.name",
    "ai.telemetry.functionId",
    "ai.usage.outputTokens",
]


@st.composite
def records(draw: st.DrawFn) -> SpanRecord:
    attributes = draw(st.dictionaries(st.sampled_from(EXTRA_KEYS), attribute_values, max_size=8))
    for key in (
        "gen_ai.input.messages",
        "input.value",
        "traceloop.entity.input",
        "gen_ai.tool.call.arguments",
        "tool_arguments",
        "ai.prompt.messages",
        "ai.toolCall.args",
    ):
        if draw(st.booleans()):
            attributes[key] = draw(ENVELOPES)
    for key in (
        "gen_ai.output.messages",
        "output.value",
        "traceloop.entity.output",
        "gen_ai.tool.call.result",
        "tool_response",
        "final_result",
        "ai.toolCall.result",
    ):
        if draw(st.booleans()):
            attributes[key] = draw(ENVELOPES | st.text(max_size=8).map(json.dumps))
    events = draw(
        st.lists(
            st.builds(
                EventRecord,
                st.sampled_from(
                    ["exception", "gen_ai.user.message", "gen_ai.choice", "gen_ai.content.prompt"]
                ),
                st.integers(0, 9),
                st.dictionaries(
                    st.sampled_from(["content", "body", "gen_ai.prompt", "exception.type"]),
                    attribute_values,
                    max_size=2,
                ),
            ),
            max_size=2,
        )
    )
    return SpanRecord(
        TRACE,
        "00000000000000a1",
        "",
        draw(st.text(max_size=6)),
        1,
        2,
        attributes,
        events,
        status_code=draw(st.sampled_from([0, 2])),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.sampled_from(list(StepKind)), st.permutations(["input", "input_text", "output", "x"]))
def test_lazy_and_eager_reads_give_the_same_step(
    record: SpanRecord, kind: StepKind, order: list[str]
) -> None:
    if kind is StepKind.OTHER:
        kind = step_kind(record.attributes)
    expected = _eager(record, kind)
    step = read_step(record, kind)
    assert type(step) is Step
    decoded = step.is_decoded("input")
    assert _same(peek_input(step), expected["input"]) and step.is_decoded("input") is decoded
    for field in dataclasses.fields(Step):  # every other field is stored by read_step itself
        if field.name not in ("input", "input_text", "output"):
            getattr(step, field.name)  # (an unset slot raises AttributeError)
    assert not step.children and step.depth == 0 and step.agent is None and not step.synthetic
    for field in order:  # whatever is read first, each field is what the eager read gave
        if field != "x":
            assert _same(getattr(step, field), expected[field]), field
    for field, value in expected.items():
        assert _same(getattr(step, field), value), field
