"""Steps read right from shapes real framework recordings emit (``bench/corpus/recordings``,
values shortened), and loops found there on both sides: the same call repeated is a loop
whatever fresh ids the framework wraps around it; different calls with new results are not.

* LangGraph + OpenLLMetry's LangChain instrumentation: arguments in a callback payload
  (``input_str`` / ``inputs`` with ``tags`` and a ``metadata`` checkpoint id new every
  step), results as a serialized ``ToolMessage`` with a fresh ``tool_call_id``;
* LangGraph + OpenInference: results as a ``ToolMessage`` dict dump; LlamaIndex +
  OpenInference: results as a ``ToolOutput``;
* Strands' default telemetry: messages, tool arguments and results only in span events,
  as Bedrock Converse content blocks (``{"text"}``, ``{"toolUse"}``);
* AutoGen: ``execute_tool`` spans with neither arguments nor result; the result is in the
  next chat call's ``tool_call_response`` part;
* smolagents: the final answer given through the ``final_answer`` tool.
"""

from __future__ import annotations

import json

import pytest

from otel_semloop.builder import build_trace
from otel_semloop.envelopes import unwrap_callback_input, unwrap_tool_result
from otel_semloop.model import EventRecord, SpanRecord, StepKind
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label
from tests.support.span_records import span_record

TRACE = "0af7651916cd43dd8448eb211c80319c"
QUERIES_SAME = ["timeout"] * 6
QUERIES_NEW = ["timeout", "oom", "disk full", "tls handshake", "dns", "rate limit"]


def result_for(query: str, same: bool) -> str:
    return "3 matches: 'upstream request timeout after 30s'" if same else f"2 matches for {query}: new lines"


def tools(spans: list[SpanRecord]):
    return [s for s in build_trace(spans).steps if s.kind is StepKind.TOOL]


def label(spans: list[SpanRecord]) -> Label:
    return Scorer().score(build_trace(spans)).label


# --- LangGraph + OpenLLMetry -------------------------------------------------------------------


def langgraph_openllmetry(queries: list[str]) -> list[SpanRecord]:
    same = len(set(queries)) == 1
    spans = [span_record(TRACE, "1", "", 1, "oncall_agent.workflow", {"traceloop.span.kind": "workflow"})]
    for i, query in enumerate(queries):
        checkpoint = f"tools:{i:08x}-ba4f-04b2-4e53-b8c07a414a71"
        arguments = {
            "input_str": str({"query": query}),
            "tags": ["seq:step:1"],
            "metadata": {"langgraph_step": 2 * i + 2, "langgraph_checkpoint_ns": checkpoint},
            "inputs": {"query": query},
            "kwargs": {"color": "green", "name": None, "tool_call_id": f"call_{i}_0"},
        }
        message = {"content": result_for(query, same), "type": "tool", "tool_call_id": f"call_{i}_0"}
        result = {
            "output": {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "ToolMessage"],
                "kwargs": message,
            },
            "kwargs": {"tags": ["seq:step:1"], "name": "search_logs"},
        }
        attributes = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "search_logs",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_logs",
            "traceloop.entity.input": json.dumps(arguments),
            "gen_ai.tool.call.arguments": json.dumps(arguments),
            "traceloop.entity.output": json.dumps(result),
            "gen_ai.tool.call.result": json.dumps(result),
        }
        spans.append(span_record(TRACE, f"{i + 2:x}", "1", 10 + i, "search_logs.tool", attributes))
    return spans


def test_langchain_callback_payloads_are_unwrapped_to_the_call_and_its_result():
    step = tools(langgraph_openllmetry(["timeout"]))[0]
    assert step.tool_arguments == {"query": "timeout"}
    assert step.tool_result == "3 matches: 'upstream request timeout after 30s'"


def test_a_callback_payload_without_inputs_reads_the_python_literal_input_str():
    assert unwrap_callback_input({"input_str": "{'query': 'a b', 'n': 2}", "tags": []}) == {
        "query": "a b",
        "n": 2,
    }
    assert unwrap_callback_input({"input_str": "plain text", "metadata": {}}) == "plain text"
    assert unwrap_callback_input({"input_str": "{'x': __import__('os')}"}) == "{'x': __import__('os')}"
    assert unwrap_callback_input({"query": "x", "metadata": {}}) == {
        "query": "x",
        "metadata": {},
    }  # a tool's own


@pytest.mark.parametrize(("queries", "expected"), [(QUERIES_SAME, Label.LOOP), (QUERIES_NEW, Label.NO_LOOP)])
def test_langgraph_openllmetry_loops_are_found_and_new_work_is_not(queries, expected):
    assert label(langgraph_openllmetry(queries)) is expected


# --- LangGraph / LlamaIndex + OpenInference results ----------------------------------------------


def openinference_tools(queries: list[str], wrap) -> list[SpanRecord]:
    same = len(set(queries)) == 1
    spans = [span_record(TRACE, "1", "", 1, "agent", {"openinference.span.kind": "AGENT"})]
    for i, query in enumerate(queries):
        attributes = {
            "openinference.span.kind": "TOOL",
            "tool.name": "search_logs",
            "input.value": json.dumps({"query": query}),
            "output.value": json.dumps(wrap(result_for(query, same), i, query)),
        }
        spans.append(span_record(TRACE, f"{i + 2:x}", "1", 10 + i, "search_logs", attributes))
    return spans


def langchain_dump(content: str, i: int, query: str) -> dict:
    return {
        "type": "tool",
        "data": {
            "content": content,
            "type": "tool",
            "id": None,
            "tool_call_id": f"call_{i}_0",
            "artifact": None,
            "status": "success",
        },
    }


def llamaindex_output(content: str, i: int, query: str) -> dict:
    return {
        "blocks": [{"text": content}],
        "tool_name": "search_logs",
        "is_error": False,
        "raw_input": {"args": [], "kwargs": {"query": query}, "call": i},
        "raw_output": content,
    }


@pytest.mark.parametrize("wrap", [langchain_dump, llamaindex_output], ids=["langchain", "llamaindex"])
def test_framework_result_objects_are_read_as_their_content(wrap):
    assert tools(openinference_tools(["timeout"], wrap))[0].tool_result == result_for("timeout", True)


@pytest.mark.parametrize("wrap", [langchain_dump, llamaindex_output], ids=["langchain", "llamaindex"])
@pytest.mark.parametrize(("queries", "expected"), [(QUERIES_SAME, Label.LOOP), (QUERIES_NEW, Label.NO_LOOP)])
def test_loops_behind_framework_result_objects_are_found(wrap, queries, expected):
    assert label(openinference_tools(queries, wrap)) is expected


def test_unwrap_tool_result_leaves_other_objects_alone():
    for value in (
        {"type": "tool", "data": {"rows": 3}},
        {"output": 1, "extra": 2},
        {"lc": 2, "kwargs": {}},
        "text",
    ):
        assert unwrap_tool_result(value) == value


# --- Strands (default telemetry: span events, Converse content blocks) ----------------------------


def strands(queries: list[str]) -> list[SpanRecord]:
    same = len(set(queries)) == 1
    spans = [span_record(TRACE, "1", "", 1, "invoke_agent oncall", {"gen_ai.operation.name": "invoke_agent"})]
    for i, query in enumerate(queries):
        call_id = f"call_{i}_0"
        chat = span_record(
            TRACE, f"{2 * i + 2:x}", "1", 10 + 2 * i, "chat", {"gen_ai.operation.name": "chat"}
        )
        blocks = [
            {"text": "Searching the logs."},
            {"toolUse": {"toolUseId": call_id, "name": "search_logs", "input": {"query": query}}},
        ]
        chat.events = [
            EventRecord(
                "gen_ai.user.message", 0, {"content": json.dumps([{"text": "Why is checkout failing?"}])}
            ),
            EventRecord("gen_ai.choice", 0, {"finish_reason": "tool_use", "message": json.dumps(blocks)}),
        ]
        tool = span_record(
            TRACE,
            f"{2 * i + 3:x}",
            "1",
            11 + 2 * i,
            "execute_tool search_logs",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search_logs",
                "gen_ai.tool.call.id": call_id,
            },
        )
        tool.events = [
            EventRecord(
                "gen_ai.tool.message",
                0,
                {"role": "tool", "content": json.dumps({"query": query}), "id": call_id},
            ),
            EventRecord(
                "gen_ai.choice",
                0,
                {"message": json.dumps([{"text": result_for(query, same)}]), "id": call_id},
            ),
        ]
        spans += [chat, tool]
    return spans


def test_strands_events_give_the_tool_call_its_arguments_and_result_and_the_model_its_calls():
    steps = build_trace(strands(["timeout"])).steps
    llm = next(s for s in steps if s.kind is StepKind.LLM)
    tool = next(s for s in steps if s.kind is StepKind.TOOL)
    assert llm.output_text == "Searching the logs."
    assert [(c.name, c.arguments, c.call_id) for c in llm.tool_calls] == [
        ("search_logs", {"query": "timeout"}, "call_0_0")
    ]
    assert (tool.tool_arguments, tool.tool_result) == ({"query": "timeout"}, result_for("timeout", True))


@pytest.mark.parametrize(("queries", "expected"), [(QUERIES_SAME, Label.LOOP), (QUERIES_NEW, Label.NO_LOOP)])
def test_strands_loops_are_found_and_new_work_is_not(queries, expected):
    assert label(strands(queries)) is expected


# --- AutoGen: results only in the next chat call ----------------------------------------------


def autogen(queries: list[str]) -> list[SpanRecord]:
    same = len(set(queries)) == 1
    spans = [span_record(TRACE, "1", "", 1, "invoke_agent oncall", {"gen_ai.operation.name": "invoke_agent"})]
    history: list[dict] = [
        {"role": "user", "parts": [{"type": "text", "content": "Why is checkout failing?"}]}
    ]
    for i, query in enumerate([*queries, None]):
        output = [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Checked." if query is None else "Searching."}],
            }
        ]
        if query is not None:
            output[0]["parts"].append(
                {
                    "type": "tool_call",
                    "name": "search_logs",
                    "id": f"call_{i}_0",
                    "arguments": {"query": query},
                }
            )
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(output),
        }
        spans.append(span_record(TRACE, f"{2 * i + 2:x}", "1", 10 + 2 * i, "chat", attributes))
        if query is None:
            break
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search_logs",
            "gen_ai.tool.call.id": f"call_{i}_0",
        }
        spans.append(span_record(TRACE, f"{2 * i + 3:x}", "1", 11 + 2 * i, "execute_tool search_logs", tool))
        response = {"type": "tool_call_response", "id": f"call_{i}_0", "response": result_for(query, same)}
        history = [*history, *output, {"role": "tool", "parts": [response]}]
    return spans


def test_autogen_tool_steps_take_their_result_from_the_next_chat_call():
    step = tools(autogen(["timeout"]))[0]
    assert (step.tool_arguments, step.tool_result) == ({"query": "timeout"}, result_for("timeout", True))


@pytest.mark.parametrize(("queries", "expected"), [(QUERIES_SAME, Label.LOOP), (QUERIES_NEW, Label.NO_LOOP)])
def test_autogen_loops_are_proven_and_new_work_is_not(queries, expected):
    assert label(autogen(queries)) is expected


# --- smolagents: the answer given through final_answer ---------------------------------------


def final_answer(answer: str) -> list[SpanRecord]:
    attributes = {
        "openinference.span.kind": "TOOL",
        "tool.name": "final_answer",
        "input.value": json.dumps(
            {"args": [], "kwargs": {"answer": answer}, "sanitize_inputs_outputs": True}
        ),
        "output.value": answer,
    }
    return [
        span_record(TRACE, "1", "", 1, "agent.run", {"openinference.span.kind": "AGENT"}),
        span_record(TRACE, "2", "1", 2, "FinalAnswerTool", attributes),
    ]


def test_a_final_answer_that_chants_is_a_loop():
    assert label(final_answer("I will now check the logs again.\n" * 20)) is Label.LOOP


def test_a_final_answer_with_a_long_table_is_healthy():
    rows = "\n".join(f"| svc-{i} | {i * 7} ms | ok |" for i in range(20))
    assert label(final_answer("| service | p99 | state |\n|---|---|---|\n" + rows)) is Label.NO_LOOP
