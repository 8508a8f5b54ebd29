"""Two more trace shapes for corpus runs, beside the three conventions of :mod:`bench.corpus.runs`.

* ``genai-events``: the GenAI conventions as instrumentations wrote them before message
  lists became span attributes: a ``chat`` span carries one span event per message
  (``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``,
  ``gen_ai.choice``) whose ``gen_ai.event.content`` attribute is the message as JSON (the
  form Azure AI Inference tracing records), and the ``execute_tool`` spans carry the tool's
  name, call id and status but not its arguments or result (content capture is opt-in
  there): what a tool was asked and what it answered is read from the model's messages.
* ``openinference-langgraph``: a LangGraph ReAct graph as OpenInference's LangChain
  instrumentation records it when the tools are plain functions (no tool spans): a
  top-level ``LangGraph`` chain, an ``agent`` chain around each ``ChatOpenAI`` LLM span, and
  a ``tools`` chain per tool-executing step whose input is the model's message with its
  tool calls and whose output is the tool messages (a failed tool answers with the
  ToolNode's ``Error: ...`` message, the chain itself does not fail). What the tools
  returned reaches the next model call as its input.

* ``openai-content-events``: a bare OpenAI client instrumented the way the first GenAI
  instrumentation released did it: each ``chat`` span carries a ``gen_ai.content.prompt``
  event (``gen_ai.prompt``: the request's messages as JSON) and a
  ``gen_ai.content.completion`` event (``gen_ai.completion``: the reply's messages), there
  are no tool spans at all, and the run's own spans are plain application spans (an HTTP
  route, a step per agent) with no GenAI attributes: the tool calls exist only in the
  completions, their results only in the next prompt.

Each is made from the ``genai`` / ``openinference`` rendering of the same run, so a
situation means the same in every shape; only where the content lives differs.
"""

from __future__ import annotations

import json
import random
from typing import Any

from bench.corpus.runs import CONVENTIONS, SCOPES, Run, render

SHAPES = ("genai-events", "openinference-langgraph", "openai-content-events")
ALL_CONVENTIONS = CONVENTIONS + SHAPES
SHAPE_SCOPES = {
    **SCOPES,
    "genai-events": "azure.ai.inference",
    "openinference-langgraph": "openinference.instrumentation.langchain",
    "openai-content-events": "opentelemetry.instrumentation.openai_v2",
}


def render_any(run: Run, convention: str, trace_id: str, rng: random.Random, start_ns: int) -> list[dict]:
    """The run's spans in any of :data:`ALL_CONVENTIONS`."""
    if convention == "genai-events":
        return as_message_events(render(run, "genai", trace_id, rng, start_ns))
    if convention == "openinference-langgraph":
        return as_langgraph_chains(render(run, "openinference", trace_id, rng, start_ns), rng)
    if convention == "openai-content-events":
        return as_content_events(render(run, "genai", trace_id, rng, start_ns))
    return render(run, convention, trace_id, rng, start_ns)


# --- OTLP JSON attribute helpers ----------------------------------------------------------


def _get(span: dict, key: str) -> Any:
    for kv in span["attributes"]:
        if kv["key"] == key:
            value = kv["value"]
            return next(iter(value.values()))
    return None


def _drop(span: dict, *keys: str) -> None:
    span["attributes"] = [kv for kv in span["attributes"] if kv["key"] not in keys]


def _str(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- genai-events -------------------------------------------------------------------------


def _openai_message(message: dict) -> tuple[str, dict]:
    """(role, OpenAI-style message body) of a GenAI JSON-parts message."""
    body: dict[str, Any] = {}
    texts = [p["content"] for p in message["parts"] if p["type"] == "text"]
    calls = [p for p in message["parts"] if p["type"] == "tool_call"]
    answers = [p for p in message["parts"] if p["type"] == "tool_call_response"]
    if answers:
        body["content"] = answers[0]["response"]
        body["id"] = answers[0]["id"]
    elif texts:
        body["content"] = "\n".join(texts)
    if calls:
        body["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": _dumps(c["arguments"])},
            }
            for c in calls
        ]
    return message["role"], body


def _event(name: str, time_ns: str, content: dict) -> dict:
    return {
        "timeUnixNano": time_ns,
        "name": name,
        "attributes": [
            _str("gen_ai.system", "az.ai.inference"),
            _str("gen_ai.event.content", _dumps(content)),
        ],
    }


def as_message_events(spans: list[dict]) -> list[dict]:
    """``genai`` spans with each chat span's messages moved into per-message events and the
    tool spans' arguments and results left out."""
    for span in spans:
        operation = _get(span, "gen_ai.operation.name")
        if operation == "execute_tool":
            _drop(span, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
            continue
        if operation != "chat":
            continue
        events: list[dict] = []
        for message in json.loads(_get(span, "gen_ai.input.messages")):
            role, body = _openai_message(message)
            events.append(_event(f"gen_ai.{role}.message", span["startTimeUnixNano"], body))
        outputs = _get(span, "gen_ai.output.messages")
        for index, message in enumerate(json.loads(outputs) if outputs else []):
            _, body = _openai_message(message)
            choice = {"finish_reason": message.get("finish_reason", "stop"), "index": index, "message": body}
            events.append(_event("gen_ai.choice", span["endTimeUnixNano"], choice))
        _drop(span, "gen_ai.input.messages", "gen_ai.output.messages")
        span["events"] = events + span.get("events", [])
    return spans


# --- openinference-langgraph --------------------------------------------------------------


def _chain(span_id: str, parent: str, name: str, first: dict, last: dict, attributes: list[dict]) -> dict:
    return {
        "traceId": first["traceId"],
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": first["startTimeUnixNano"],
        "endTimeUnixNano": last["endTimeUnixNano"],
        "attributes": [_str("openinference.span.kind", "CHAIN"), *attributes],
    }


def _metadata(step: int, node: str) -> dict:
    return _str(
        "metadata", _dumps({"langgraph_step": step, "langgraph_node": node, "langgraph_triggers": [node]})
    )


def _tool_message(tool: dict) -> dict:
    failed = tool.get("status", {}).get("code") == 2
    content = (
        f"Error: {tool['status']['message']}\n Please fix your mistakes."
        if failed
        else _get(tool, "output.value") or ""
    )
    return {
        "type": "tool",
        "name": _get(tool, "tool.name"),
        "tool_call_id": _get(tool, "tool_call.id"),
        "content": content,
        "status": "error" if failed else "success",
    }


def as_langgraph_chains(spans: list[dict], rng: random.Random) -> list[dict]:
    """``openinference`` spans regrouped as a LangGraph graph run without tool spans."""
    out: list[dict] = []
    step = 0
    pending_tools: list[dict] = []
    last_ai: dict | None = None

    def flush_tools() -> None:
        nonlocal step
        if not pending_tools:
            return
        step += 1
        first, last = pending_tools[0], pending_tools[-1]
        messages = [_tool_message(t) for t in pending_tools]
        out.append(
            _chain(
                f"{rng.getrandbits(64):016x}",
                first["parentSpanId"],
                "tools",
                first,
                last,
                [
                    _str("input.value", _dumps({"messages": [last_ai] if last_ai else []})),
                    _str("input.mime_type", "application/json"),
                    _str("output.value", _dumps({"messages": messages})),
                    _str("output.mime_type", "application/json"),
                    _metadata(step, "tools"),
                ],
            )
        )
        pending_tools.clear()

    for span in spans:
        kind = _get(span, "openinference.span.kind")
        if kind == "TOOL":
            pending_tools.append(span)
            continue
        flush_tools()
        if kind == "AGENT":
            top = "parentSpanId" not in span
            _drop(span, "openinference.span.kind", "agent.name")
            span["attributes"].insert(0, _str("openinference.span.kind", "CHAIN"))
            if top:
                span["name"] = "LangGraph"
                goal = _get(span, "input.value")
                final = _get(span, "output.value")
                _drop(span, "input.value", "input.mime_type", "output.value", "output.mime_type")
                span["attributes"].append(
                    _str("input.value", _dumps({"messages": [{"type": "human", "content": goal}]}))
                )
                span["attributes"].append(_str("input.mime_type", "application/json"))
                if final is not None:
                    span["attributes"].append(
                        _str("output.value", _dumps({"messages": [{"type": "ai", "content": final}]}))
                    )
                    span["attributes"].append(_str("output.mime_type", "application/json"))
            out.append(span)
        elif kind == "LLM":
            step += 1
            wrapper = _chain(
                f"{rng.getrandbits(64):016x}",
                span["parentSpanId"],
                "agent",
                span,
                span,
                [_metadata(step, "agent")],
            )
            span["parentSpanId"] = wrapper["spanId"]
            span["name"] = "ChatOpenAI"
            choice = json.loads(_get(span, "output.value") or "null")
            if choice:
                message = choice["choices"][0]["message"]
                last_ai = {
                    "type": "ai",
                    "content": message.get("content") or "",
                    "tool_calls": [
                        {
                            "name": c["function"]["name"],
                            "args": json.loads(c["function"]["arguments"]),
                            "id": c["id"],
                        }
                        for c in message.get("tool_calls", [])
                    ],
                }
            out.extend((wrapper, span))
        else:
            out.append(span)
    flush_tools()
    return out


# --- openai-content-events ----------------------------------------------------------------


def _prompt_message(message: dict) -> dict:
    role, body = _openai_message(message)
    if role == "tool":
        body["tool_call_id"] = body.pop("id")
    return {"role": role, **body}


def as_content_events(spans: list[dict]) -> list[dict]:
    """``genai`` spans as a bare instrumented OpenAI client records them: content events on
    the chat spans, no tool spans, plain application spans for the run and its agents."""
    out: list[dict] = []
    for span in spans:
        operation = _get(span, "gen_ai.operation.name")
        if operation == "execute_tool":
            continue
        if operation == "invoke_agent":
            top = "parentSpanId" not in span
            agent = _get(span, "gen_ai.agent.name")
            span["name"] = "POST /agent/run" if top else f"step {agent}"
            span["attributes"] = (
                [_str("http.request.method", "POST"), _str("http.route", "/agent/run")]
                if top
                else [_str("app.agent", agent)]
            )
        elif operation == "chat":
            prompt = [_prompt_message(m) for m in json.loads(_get(span, "gen_ai.input.messages"))]
            events = [
                {
                    "timeUnixNano": span["startTimeUnixNano"],
                    "name": "gen_ai.content.prompt",
                    "attributes": [_str("gen_ai.prompt", _dumps(prompt))],
                }
            ]
            outputs = _get(span, "gen_ai.output.messages")
            if outputs:
                completion = [_prompt_message(m) for m in json.loads(outputs)]
                events.append(
                    {
                        "timeUnixNano": span["endTimeUnixNano"],
                        "name": "gen_ai.content.completion",
                        "attributes": [_str("gen_ai.completion", _dumps(completion))],
                    }
                )
            _drop(span, "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.provider.name")
            span["attributes"].append(_str("gen_ai.system", "openai"))
            span["events"] = events + span.get("events", [])
        out.append(span)
    return out
