"""Steps read right from what the real OpenInference instrumentations emit.

The attribute dicts below were captured from ``openinference-instrumentation-openai``
0.1.66 (with ``OITracer``'s ``@tracer.tool`` for the app's tools) and
``openinference-instrumentation-openai-agents`` 2.6.0 on ``openai-agents`` 0.24.0, run
against the scripted server in ``tests/e2e/fake_openai.py`` (long values shortened).
"""

from __future__ import annotations

from otel_semloop.builder import build_trace
from otel_semloop.model import SpanRecord, StepKind, ToolCall
from tests.support.span_records import span_record

TRACE = "5b8efff798038103d269b633813fc60c"

#: ``tool.parameters`` is the tool's JSON schema (the same on every call), not the call's
#: arguments; ``input.value`` holds the arguments.
OI_TOOL_SCHEMA = (
    '{"type": "object", "title": "search_logs", "properties": {"query": {"type": "string"}}, '
    '"required": ["query"]}'
)
AGENTS_TOOL_SCHEMA = (
    '{"properties": {"query": {"title": "Query", "type": "string"}}, "required": ["query"], '
    '"title": "search_logs_args", "type": "object", "additionalProperties": false}'
)


def record(span_id: str, parent: str, start: int, name: str, attributes: dict) -> SpanRecord:
    return span_record(TRACE, span_id, parent, start, name, attributes)


def oitracer_tool(query: str, result: str) -> dict:
    """A span from ``@tracer.tool`` around ``def search_logs(query: str) -> str``."""
    return {
        "input.value": f'{{"query": "{query}"}}',
        "input.mime_type": "application/json",
        "tool.name": "search_logs",
        "tool.parameters": OI_TOOL_SCHEMA,
        "output.value": result,
        "output.mime_type": "text/plain",
        "openinference.span.kind": "TOOL",
    }


def agents_function_span(query: str, result: str) -> dict:
    """A function span of an ``@function_tool`` from the openai-agents instrumentor."""
    return {
        "tool.name": "search_logs",
        "input.value": f'{{"query": "{query}"}}',
        "input.mime_type": "application/json",
        "output.value": result,
        "tool.description": "Search the service logs.",
        "tool.parameters": AGENTS_TOOL_SCHEMA,
        "openinference.span.kind": "TOOL",
    }


OPENAI_CHAT_COMPLETION = {
    "llm.system": "openai",
    "input.value": '{"model": "gpt-x", "messages": [{"role": "user", "content": "why?"}]}',
    "input.mime_type": "application/json",
    "output.value": '{"id":"chatcmpl-healthy-1","choices":[{"finish_reason":"tool_calls"}]}',
    "output.mime_type": "application/json",
    "llm.invocation_parameters": '{"model": "gpt-x"}',
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "why?",
    "llm.model_name": "gpt-x",
    "llm.token_count.total": 72,
    "llm.token_count.prompt": 9,
    "llm.token_count.completion": 63,
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "First I will look for timeout errors in the logs.",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1_0",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search_logs",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"query": "timeout"}',
    "llm.finish_reason": "tool_calls",
    "openinference.span.kind": "LLM",
}

#: The agents instrumentor numbers tool calls across the whole input (``tool_calls.1`` on
#: the second assistant message), so indices inside a message can start above 0.
AGENTS_GENERATION = {
    "llm.system": "openai",
    "llm.model_name": "gpt-x",
    "input.value": '[{"content": "Find root causes.", "role": "system"}]',
    "input.mime_type": "application/json",
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "Find root causes.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.content": "why does checkout fail?",
    "llm.input_messages.2.message.role": "assistant",
    "llm.input_messages.2.message.content": "First I will look for timeout errors.",
    "llm.input_messages.2.message.tool_calls.0.tool_call.id": "call_1_0",
    "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "search_logs",
    "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments": '{"query": "timeout"}',
    "llm.input_messages.3.message.role": "tool",
    "llm.input_messages.3.message.content": "3 matches",
    "llm.input_messages.3.message.tool_call_id": "call_1_0",
    "llm.input_messages.4.message.role": "assistant",
    "llm.input_messages.4.message.content": "The timeouts point at payments-db.",
    "llm.input_messages.4.message.tool_calls.1.tool_call.id": "call_2_0",
    "llm.input_messages.4.message.tool_calls.1.tool_call.function.name": "get_metrics",
    "llm.input_messages.4.message.tool_calls.1.tool_call.function.arguments": '{"service": "payments-db"}',
    "llm.input_messages.5.message.role": "tool",
    "llm.input_messages.5.message.content": "p99 900ms",
    "llm.input_messages.5.message.tool_call_id": "call_2_0",
    "output.value": '[{"content": "Latency spiked; I will read the pool config.", "role": "assistant"}]',
    "output.mime_type": "application/json",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "Latency spiked; I will read the pool config.",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_3_0",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "read_config",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"path": "pool.yaml"}',
    "llm.token_count.prompt": 191,
    "llm.token_count.completion": 67,
    "openinference.span.kind": "LLM",
}


def test_oitracer_tool_calls_with_different_arguments_are_different_calls():
    trace = build_trace(
        [
            record("1", "", 0, "agent", {"openinference.span.kind": "AGENT", "input.value": "why?"}),
            record("2", "1", 1, "search_logs", oitracer_tool("timeout", "3 matches")),
            record("3", "1", 2, "search_logs", oitracer_tool("deadlock", "0 matches")),
        ]
    )
    first, second = trace.tool_steps
    assert first.tool_arguments == {"query": "timeout"}
    assert second.tool_arguments == {"query": "deadlock"}
    assert (first.tool_result, second.tool_result) == ("3 matches", "0 matches")


def test_agents_function_span_arguments_come_from_input_value_not_the_tool_schema():
    trace = build_trace([record("1", "", 0, "search_logs", agents_function_span("timeout", "3 matches"))])
    (tool,) = trace.tool_steps
    assert tool.name == "search_logs"
    assert tool.tool_arguments == {"query": "timeout"}
    assert tool.tool_result == "3 matches"
    assert tool.tree_view()["input"] == {"query": "timeout"}


def test_openai_chat_completion_span_reads_the_message_text_and_requested_tool_calls():
    trace = build_trace([record("1", "", 0, "ChatCompletion", OPENAI_CHAT_COMPLETION)])
    (llm,) = [s for s in trace.steps if s.kind is StepKind.LLM]
    assert llm.output_text == "First I will look for timeout errors in the logs."
    assert llm.input_text == "why?"
    assert llm.tool_calls == (ToolCall("search_logs", {"query": "timeout"}, "call_1_0"),)
    assert (llm.input_tokens, llm.output_tokens) == (9, 63)


def test_agents_generation_span_with_tool_call_indices_above_zero_reads_every_message():
    trace = build_trace([record("1", "", 0, "generation", AGENTS_GENERATION)])
    (llm,) = [s for s in trace.steps if s.kind is StepKind.LLM]
    assert [m["role"] for m in llm.input] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert llm.input[4]["tool_calls"] == [
        {"id": "call_2_0", "name": "get_metrics", "arguments": '{"service": "payments-db"}'}
    ]
    assert llm.output_text == "Latency spiked; I will read the pool config."
    assert llm.tool_calls == (ToolCall("read_config", {"path": "pool.yaml"}, "call_3_0"),)


def test_agents_run_tree_keeps_agents_llm_and_tools_and_skips_chain_plumbing():
    """Workflow AGENT > workflow CHAIN > agent AGENT > ``turn`` CHAIN > generation, tool."""
    trace = build_trace(
        [
            record("a", "", 0, "triage", {"openinference.span.kind": "AGENT"}),
            record("b", "a", 1, "triage", {"openinference.span.kind": "CHAIN"}),
            record(
                "c",
                "b",
                2,
                "oncall",
                {"graph.node.id": "oncall", "agent.name": "oncall", "openinference.span.kind": "AGENT"},
            ),
            record("d", "c", 3, "turn", {"openinference.span.kind": "CHAIN"}),
            record("e", "d", 4, "generation", AGENTS_GENERATION),
            record("f", "d", 5, "search_logs", agents_function_span("timeout", "3 matches")),
        ]
    )
    assert [(s.kind, s.name) for s in trace.steps] == [
        (StepKind.AGENT, "triage"),
        (StepKind.AGENT, "oncall"),
        (StepKind.LLM, "generation"),
        (StepKind.TOOL, "search_logs"),
    ]
    assert trace.root_span_id == "a".rjust(16, "0")
    assert [s.agent for s in trace.steps[2:]] == ["oncall", "oncall"]
    assert {s.name for s in trace.other_spans} == {"triage", "turn"}
