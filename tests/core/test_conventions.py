"""Steps are read the same way whichever attribute convention wrote the span."""

from __future__ import annotations

import json

import pytest

from otel_semloop.builder import build_trace
from otel_semloop.conventions import step_kind
from otel_semloop.messages import flatten_text
from otel_semloop.model import STATUS_ERROR, EventRecord, SpanRecord, StepKind
from tests.support.span_records import span_record

TRACE = "0af7651916cd43dd8448eb211c80319c"
ARGS = '{"pattern": "a"}'


def span(span_id: str, parent: str = "", start: int = 0, name: str = "span", **attributes) -> SpanRecord:
    return span_record(TRACE, span_id, parent, start, name, attributes)


def genai_messages(role: str, *parts: dict) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({"gen_ai.operation.name": "invoke_agent"}, StepKind.AGENT),
        ({"gen_ai.operation.name": "chat"}, StepKind.LLM),
        ({"gen_ai.operation.name": "generate_content"}, StepKind.LLM),
        ({"gen_ai.operation.name": "execute_tool"}, StepKind.TOOL),
        ({"openinference.span.kind": "AGENT"}, StepKind.AGENT),
        ({"openinference.span.kind": "LLM"}, StepKind.LLM),
        ({"openinference.span.kind": "TOOL"}, StepKind.TOOL),
        ({"openinference.span.kind": "RETRIEVER"}, StepKind.TOOL),
        ({"openinference.span.kind": "EMBEDDING"}, StepKind.OTHER),
        ({"traceloop.span.kind": "agent"}, StepKind.AGENT),
        ({"traceloop.span.kind": "tool"}, StepKind.TOOL),
        ({"traceloop.span.kind": "task"}, StepKind.OTHER),
        ({"llm.request.type": "chat"}, StepKind.LLM),
        ({"confident.span.type": "tool"}, StepKind.TOOL),
        ({"http.request.method": "GET"}, StepKind.OTHER),
    ],
)
def test_span_kind_is_read_from_every_convention(attributes, kind):
    assert step_kind(attributes) is kind


def test_openinference_chain_is_the_agent_only_at_the_top():
    assert step_kind({"openinference.span.kind": "CHAIN"}, top_level=True) is StepKind.AGENT
    assert step_kind({"openinference.span.kind": "CHAIN"}, top_level=False) is StepKind.OTHER


def test_genai_message_parts_are_flattened_to_text_and_tool_calls_kept_structured():
    output = genai_messages(
        "assistant",
        {"type": "text", "content": "I will look it up."},
        {"type": "tool_call", "id": "call_1", "name": "search", "arguments": {"q": "x"}},
    )
    trace = build_trace(
        [span("1", name="chat gpt-4o", **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": output})]
    )
    step, requested = trace.steps
    assert step.output_text == "I will look it up."
    assert step.tool_calls[0].name == "search"
    assert step.tool_calls[0].arguments == {"q": "x"}
    assert step.tool_calls[0].call_id == "call_1"
    assert requested.synthetic and requested.tool_arguments == {"q": "x"}


def test_openinference_llm_reads_output_messages_not_the_raw_response_body():
    trace = build_trace(
        [
            span(
                "1",
                **{
                    "openinference.span.kind": "LLM",
                    "output.value": json.dumps(
                        {"id": "chatcmpl-1", "choices": [{"message": {"content": "hi"}}]}
                    ),
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "hello there",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "grep",
                    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": ARGS,
                    "llm.token_count.prompt": 12,
                    "llm.token_count.completion": 5,
                },
            )
        ]
    )
    step, requested = trace.steps
    assert step.output_text == "hello there"
    assert step.tool_calls[0].name == "grep"
    assert step.tool_calls[0].arguments == {"pattern": "a"}
    assert requested.synthetic and requested.name == "grep"
    assert (step.input_tokens, step.output_tokens) == (12, 5)


def test_openllmetry_indexed_completions_and_entity_io():
    trace = build_trace(
        [
            span(
                "1",
                start=0,
                **{
                    "traceloop.span.kind": "workflow",
                    "traceloop.entity.name": "planner",
                    "traceloop.entity.input": json.dumps({"goal": "ship it"}),
                },
            ),
            span(
                "2",
                "1",
                start=1,
                **{
                    "llm.request.type": "chat",
                    "gen_ai.prompt.0.role": "user",
                    "gen_ai.prompt.0.content": "what next?",
                    "gen_ai.completion.0.role": "assistant",
                    "gen_ai.completion.0.content": "run the tests",
                    "gen_ai.usage.prompt_tokens": 7,
                },
            ),
            span(
                "3",
                "1",
                start=2,
                **{
                    "traceloop.span.kind": "tool",
                    "traceloop.entity.name": "pytest",
                    "traceloop.entity.input": '{"path": "tests"}',
                    "traceloop.entity.output": "3 passed",
                },
            ),
        ]
    )
    agent, llm, tool = trace.steps
    assert agent.name == "planner" and agent.kind is StepKind.AGENT
    assert llm.input_text == "what next?" and llm.output_text == "run the tests"
    assert llm.input_tokens == 7
    assert (
        tool.name == "pytest" and tool.tool_arguments == {"path": "tests"} and tool.tool_result == "3 passed"
    )


def test_genai_tool_without_arguments_falls_back_to_the_llm_request():
    request = genai_messages(
        "assistant", {"type": "tool_call", "id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}
    )
    trace = build_trace(
        [
            span("1", start=0, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "coder"}),
            span("2", "1", start=1, **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": request}),
            span(
                "3",
                "1",
                start=2,
                **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file"},
            ),
        ]
    )
    tool = trace.tool_steps[0]
    assert tool.tool_arguments == {"path": "a.py"}
    assert tool.agent == "coder"


def test_errors_come_from_status_error_type_and_exception_events():
    record = span("1", **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch"})
    record.status_code = STATUS_ERROR
    record.events = [
        EventRecord("exception", 5, {"exception.type": "TimeoutError", "exception.message": "slow"})
    ]
    (step,) = build_trace([record]).steps
    assert step.is_error and step.error_type == "TimeoutError" and step.error_message == "slow"
    (ok,) = build_trace([span("2", **{"gen_ai.operation.name": "execute_tool"})]).steps
    assert not ok.is_error


def test_confident_attributes_are_read():
    (step,) = build_trace(
        [
            span(
                "1",
                **{
                    "confident.span.type": "tool",
                    "confident.tool.name": "calc",
                    "confident.span.input": '{"x": 1}',
                    "confident.span.output": "2",
                },
            )
        ]
    ).steps
    assert (step.name, step.tool_arguments, step.tool_result) == ("calc", {"x": 1}, "2")


def test_chat_content_lists_flatten_to_their_text():
    assert (
        flatten_text(
            [
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]},
                {"role": "assistant", "content": "b"},
            ]
        )
        == "a\nb"
    )
    assert flatten_text({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    assert flatten_text(None) == ""


def test_a_content_block_whose_type_is_not_a_string_is_no_text_and_no_error():
    """Found by the flatten_text specification test: ``{"type": []}`` raised TypeError
    (unhashable) and lost the trace's verdict."""
    assert flatten_text([{"role": "assistant", "content": [{"type": [], "text": "x"}, {"text": "y"}]}]) == "y"


def test_tool_calls_or_parts_that_are_not_lists_are_no_calls_and_no_error():
    """Found by the lazy-step hypothesis test: ``"tool_calls": true`` (or ``"parts": 5``)
    raised TypeError and lost the trace's verdict."""
    from otel_semloop.builder import build_trace
    from otel_semloop.model import SpanRecord

    for message in ({"role": "assistant", "tool_calls": True}, {"role": "assistant", "parts": 5}):
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([message])}
        step = build_trace([SpanRecord("0" * 31 + "1", "a" * 16, "", "chat", 1, 2, attributes)]).steps[0]
        assert step.tool_calls == ()


def test_usage_and_cost_come_from_the_first_key_that_has_them():
    llm = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": genai_messages("assistant")}
    (step,) = build_trace([span("a", **llm, **{"llm.token_count.prompt": 7, "llm.cost.total": 0.25})]).steps
    assert (step.input_tokens, step.output_tokens, step.cost) == (7, None, 0.25)
    usage = {"gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 4, "gen_ai.usage.cost": 1}
    (step,) = build_trace([span("a", **llm, **usage, **{"llm.cost.total": 0.25})]).steps
    assert (step.input_tokens, step.output_tokens, step.cost) == (3, 4, 1.0)


def test_an_empty_message_list_attribute_gives_way_to_the_next_input_key():
    # An empty gen_ai.input.messages counts as absent: the input comes from the first of
    # the other input keys that is present, as for a span without it.
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": "",
        "confident.span.input": "what the user asked",
        "gen_ai.output.messages": genai_messages("assistant", {"type": "text", "content": "ok"}),
    }
    (step,) = build_trace([span("a", **attributes)]).steps
    assert step.input_text == "what the user asked" and step.output_text == "ok"
