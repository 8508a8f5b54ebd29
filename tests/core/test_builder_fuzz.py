"""Span attributes are untrusted input: whatever they hold, a trace is built, scored and
patched without an exception, and no span is lost."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_semloop.builder import build_trace
from otel_semloop.model import STATUS_ERROR, EventRecord, SpanRecord
from otel_semloop.scoring import Scorer
from otel_semloop.writeback import patches_for

KEYS = [
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.completion.1.tool_calls.x.arguments",
    "gen_ai.usage.input_tokens",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "llm.input_messages.1.message.role",
    "llm.input_messages.1.message.tool_call_id",
    "llm.token_count.prompt",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "confident.span.type",
    "error.type",
    "tool_arguments",
    "tool_response",
    "final_result",
    "events",
    "ai.operationId",
    "ai.prompt.messages",
    "ai.response.text",
    "ai.response.toolCalls",
    "ai.toolCall.args",
    "ai.toolCall.result",
    "ai.usage.inputTokens",
]
KIND_VALUES = [
    "invoke_agent",
    "chat",
    "execute_tool",
    "AGENT",
    "LLM",
    "TOOL",
    "CHAIN",
    "tool",
    "agent",
    "llm",
    "ai.generateText",
    "ai.streamText.doStream",
    "ai.toolCall",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
message_like = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "role": st.sampled_from(["user", "assistant", "tool", 3]),
            "content": json_values,
            "parts": st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["text", "tool_call", "tool_call_response", "x"])},
                    optional={
                        "content": json_values,
                        "name": json_values,
                        "arguments": json_values,
                        "id": json_values,
                        "result": json_values,
                    },
                ),
                max_size=3,
            ),
            "tool_calls": json_values,
            "tool_call_id": json_values,
            # the AI SDK's calls and parts, a listed GenAI event's name
            "toolName": json_values,
            "toolCallId": json_values,
            "input": json_values,
            "output": json_values,
            "type": st.sampled_from(["tool-call", "tool-result", "text", 3]),
            "event.name": st.sampled_from(["gen_ai.choice", "gen_ai.tool.message", "gen_ai.x", 3]),
            "message": json_values,
        },
    ),
    max_size=3,
)
attribute_values = st.one_of(
    st.sampled_from(KIND_VALUES),
    st.text(max_size=30),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.text(max_size=5), max_size=3),
    message_like.map(json.dumps),
    json_values.map(json.dumps),
    st.just("{not json"),
)
span_ids = st.sampled_from([f"{i:016x}" for i in range(1, 9)])


@st.composite
def span_records(draw: st.DrawFn) -> SpanRecord:
    return SpanRecord(
        trace_id="0" * 31 + "1",
        span_id=draw(span_ids),
        parent_span_id=draw(st.one_of(st.just(""), span_ids)),
        name=draw(st.text(max_size=10)),
        start_ns=draw(st.integers(0, 50)),
        end_ns=draw(st.integers(0, 60)),
        attributes=draw(st.dictionaries(st.sampled_from(KEYS), attribute_values, max_size=8)),
        events=draw(
            st.lists(
                st.builds(EventRecord, st.sampled_from(["exception", "x"]), st.integers(0, 9), st.just({})),
                max_size=2,
            )
        ),
        status_code=draw(st.sampled_from([0, 1, STATUS_ERROR])),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(span_records(), min_size=1, max_size=12))
def test_any_attributes_build_score_and_patch_without_error(records: list[SpanRecord]) -> None:
    trace = build_trace(records)
    assert set(trace.spans) == {r.span_id for r in records}
    assert {s.span_id for s in trace.steps} <= set(trace.spans)
    verdict = Scorer().score(trace)
    assert 0.0 <= verdict.score <= 1.0
    patches = patches_for(trace, verdict)
    assert set(patches) <= set(trace.spans)
    trace.tree_view()
    _ = trace.goal


def test_token_counts_that_are_not_finite_numbers_are_no_count() -> None:
    """OTLP JSON may carry ``Infinity``/``NaN`` doubles; a token count that is one is ignored,
    not an OverflowError that would lose the trace's verdict (found by the fuzz above)."""
    for value in (float("inf"), float("-inf"), float("nan")):
        llm = SpanRecord(
            trace_id="0" * 31 + "1",
            span_id="00000000000000a1",
            parent_span_id="",
            name="chat",
            start_ns=1,
            end_ns=2,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": value},
        )
        trace = build_trace([llm])
        assert [s.input_tokens for s in trace.steps] == [None]
        assert 0.0 <= Scorer().score(trace).score <= 1.0
