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

* ``vercel-ai-sdk``: the Vercel AI SDK's own telemetry (``experimental_telemetry``): the run
  is an ``ai.generateText`` span (``ai.prompt``, ``ai.response.text``), each model call an
  ``ai.generateText.doGenerate`` child whose ``ai.prompt.messages`` are the SDK's model
  messages (``tool-call`` / ``tool-result`` content parts, a failed tool's result as
  ``error-text``) and whose ``ai.response.toolCalls`` list the calls it asked for, and each
  tool an ``ai.toolCall`` span with ``ai.toolCall.name`` / ``.args`` / ``.result``. A
  sub-agent is a nested ``ai.generateText`` with its own ``ai.telemetry.functionId``.

* ``pydantic-ai``: Pydantic AI 1.x's own instrumentation (``Agent.instrument_all()``, the
  shape of ``bench/corpus/recordings/pydantic-ai-native-v1``): the run is an ``agent run``
  span (``agent_name``, ``final_result``, ``all_messages_events``), each model call a
  ``chat <model>`` span whose ``events`` attribute is the request's messages as GenAI
  message events (OpenAI-style bodies) followed by a ``gen_ai.choice`` event for the reply,
  and each tool a ``running tool`` span with ``tool_arguments`` / ``tool_response``; a
  failed tool is a ``ToolRetryError`` whose retry prompt ("... Fix the errors and try
  again.") is both its ``tool_response`` and the tool message the model sees next.

Each is made from the ``genai`` / ``openinference`` rendering of the same run, so a
situation means the same in every shape; only where the content lives differs.
"""

from __future__ import annotations

import json
import random
from typing import Any

from bench.corpus.runs import CONVENTIONS, SCOPES, Run, render

SHAPES = ("genai-events", "openinference-langgraph", "openai-content-events", "vercel-ai-sdk", "pydantic-ai")
ALL_CONVENTIONS = CONVENTIONS + SHAPES
SHAPE_SCOPES = {
    **SCOPES,
    "genai-events": "azure.ai.inference",
    "openinference-langgraph": "openinference.instrumentation.langchain",
    "openai-content-events": "opentelemetry.instrumentation.openai_v2",
    "vercel-ai-sdk": "ai",
    "pydantic-ai": "pydantic-ai",
}


def render_any(run: Run, convention: str, trace_id: str, rng: random.Random, start_ns: int) -> list[dict]:
    """The run's spans in any of :data:`ALL_CONVENTIONS`."""
    if convention == "genai-events":
        return as_message_events(render(run, "genai", trace_id, rng, start_ns))
    if convention == "openinference-langgraph":
        return as_langgraph_chains(render(run, "openinference", trace_id, rng, start_ns), rng)
    if convention == "openai-content-events":
        return as_content_events(render(run, "genai", trace_id, rng, start_ns))
    if convention == "vercel-ai-sdk":
        return as_ai_sdk_telemetry(render(run, "genai", trace_id, rng, start_ns))
    if convention == "pydantic-ai":
        return as_pydantic_ai(render(run, "genai", trace_id, rng, start_ns), rng)
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


# --- vercel-ai-sdk ------------------------------------------------------------------------


def _sdk_messages(messages: list[dict], tools: dict[str, tuple[str, bool]]) -> list[dict]:
    """GenAI JSON-parts messages as the AI SDK's model messages: one ``tool`` message holds
    the results of one step, each naming its tool (``tools``: call id -> (name, failed))."""
    out: list[dict] = []
    for message in messages:
        role = message["role"]
        texts = [p["content"] for p in message["parts"] if p["type"] == "text"]
        if role == "system":
            out.append({"role": "system", "content": "\n".join(texts)})
        elif role == "user":
            out.append({"role": "user", "content": [{"type": "text", "text": t} for t in texts]})
        elif role == "assistant":
            content: list[dict] = [{"type": "text", "text": t} for t in texts]
            content += [
                {"type": "tool-call", "toolCallId": p["id"], "toolName": p["name"], "input": p["arguments"]}
                for p in message["parts"]
                if p["type"] == "tool_call"
            ]
            out.append({"role": "assistant", "content": content})
        else:
            results = []
            for part in message["parts"]:
                name, failed = tools.get(part["id"], ("", False))
                value = part["response"] or ""
                output = (
                    {"type": "error-text", "value": value} if failed else {"type": "text", "value": value}
                )
                results.append(
                    {"type": "tool-result", "toolCallId": part["id"], "toolName": name, "output": output}
                )
            if out and out[-1]["role"] == "tool":
                out[-1]["content"].extend(results)
            else:
                out.append({"role": "tool", "content": results})
    return out


def _sdk_common(operation: str, function_id: str) -> list[dict]:
    return [
        _str("operation.name", f"{operation} {function_id}"),
        _str("resource.name", function_id),
        _str("ai.operationId", operation),
        _str("ai.telemetry.functionId", function_id),
    ]


def _int(key: str, value: Any) -> dict:
    return {"key": key, "value": {"intValue": str(value)}}


def as_ai_sdk_telemetry(spans: list[dict]) -> list[dict]:
    """``genai`` spans as the Vercel AI SDK's telemetry records a ``generateText`` run."""
    agents = {
        s["spanId"]: _get(s, "gen_ai.agent.name")
        for s in spans
        if _get(s, "gen_ai.operation.name") == "invoke_agent"
    }
    tools = {
        _get(s, "gen_ai.tool.call.id"): (_get(s, "gen_ai.tool.name"), s.get("status", {}).get("code") == 2)
        for s in spans
        if _get(s, "gen_ai.operation.name") == "execute_tool"
    }
    for span in spans:
        operation = _get(span, "gen_ai.operation.name")
        function_id = agents.get(span["spanId"]) or agents.get(span.get("parentSpanId", ""), "agent")
        model = _get(span, "gen_ai.request.model")
        if operation == "invoke_agent":
            attributes = _sdk_common("ai.generateText", function_id)
            attributes += [_str("ai.model.provider", "openai.chat"), _str("ai.model.id", model)]
            goal = _get(span, "gen_ai.input.messages")
            if goal is not None:
                text = json.loads(goal)[0]["parts"][0]["content"]
                attributes.append(_str("ai.prompt", _dumps({"prompt": text})))
            answer = _get(span, "gen_ai.output.messages")
            if answer is not None:
                attributes.append(_str("ai.response.text", json.loads(answer)[0]["parts"][0]["content"]))
                attributes.append(_str("ai.response.finishReason", "stop"))
            span["name"] = "ai.generateText"
        elif operation == "chat":
            attributes = _sdk_common("ai.generateText.doGenerate", function_id)
            attributes += [
                _str("ai.model.provider", "openai.chat"),
                _str("ai.model.id", model),
                _str(
                    "ai.prompt.messages",
                    _dumps(_sdk_messages(json.loads(_get(span, "gen_ai.input.messages")), tools)),
                ),
                _str("gen_ai.system", "openai.chat"),
                _str("gen_ai.request.model", model),
            ]
            outputs = _get(span, "gen_ai.output.messages")
            if outputs is not None:
                reply = json.loads(outputs)[0]
                texts = [p["content"] for p in reply["parts"] if p["type"] == "text"]
                calls = [
                    {"toolCallId": p["id"], "toolName": p["name"], "input": _dumps(p["arguments"])}
                    for p in reply["parts"]
                    if p["type"] == "tool_call"
                ]
                finish = "tool-calls" if calls else "stop"
                attributes.append(_str("ai.response.finishReason", finish))
                if texts:
                    attributes.append(_str("ai.response.text", "\n".join(texts)))
                if calls:
                    attributes.append(_str("ai.response.toolCalls", _dumps(calls)))
                response_id = _get(span, "gen_ai.response.id")
                attributes += [
                    _str("ai.response.id", response_id),
                    _str("ai.response.model", model),
                    _int("ai.usage.inputTokens", _get(span, "gen_ai.usage.input_tokens")),
                    _int("ai.usage.outputTokens", _get(span, "gen_ai.usage.output_tokens")),
                    {
                        "key": "gen_ai.response.finish_reasons",
                        "value": {"arrayValue": {"values": [{"stringValue": finish}]}},
                    },
                    _str("gen_ai.response.id", response_id),
                    _str("gen_ai.response.model", model),
                    _int("gen_ai.usage.input_tokens", _get(span, "gen_ai.usage.input_tokens")),
                    _int("gen_ai.usage.output_tokens", _get(span, "gen_ai.usage.output_tokens")),
                ]
            span["name"] = "ai.generateText.doGenerate"
        elif operation == "execute_tool":
            attributes = _sdk_common("ai.toolCall", function_id)
            attributes += [
                _str("ai.toolCall.name", _get(span, "gen_ai.tool.name")),
                _str("ai.toolCall.id", _get(span, "gen_ai.tool.call.id")),
                _str("ai.toolCall.args", _get(span, "gen_ai.tool.call.arguments")),
            ]
            result = _get(span, "gen_ai.tool.call.result")
            if result is not None:
                attributes.append(_str("ai.toolCall.result", _dumps(result)))
            span["name"] = "ai.toolCall"
        else:
            continue
        span["attributes"] = attributes
    return spans


# --- pydantic-ai --------------------------------------------------------------------------

_RETRY_SUFFIX = "\n\nFix the errors and try again."


def _pydantic_events(messages: list[dict], tools: dict[str, tuple[str, str | None]]) -> list[dict]:
    """GenAI JSON-parts messages as the message events Pydantic AI records (``tools``: call
    id -> (tool name, retry prompt of a failed call))."""
    events: list[dict] = []
    index = 0
    for message in messages:
        role, body = _openai_message(message)
        event: dict[str, Any] = {"role": role, **body}
        if role == "tool":
            name, retry = tools.get(body.get("id", ""), ("", None))
            event["name"] = name
            if retry is not None:
                event["content"] = retry
        event["gen_ai.system"] = "openai"
        if role != "system":
            event["gen_ai.message.index"] = index
            index += 1
        event["event.name"] = f"gen_ai.{role}.message"
        events.append(event)
    return events


def as_pydantic_ai(spans: list[dict], rng: random.Random) -> list[dict]:
    """``genai`` spans as Pydantic AI 1.x's default instrumentation records an agent run."""
    call_ids = {
        s["spanId"]: f"{rng.getrandbits(128):032x}"
        for s in spans
        if _get(s, "gen_ai.operation.name") == "invoke_agent"
    }
    conversation = f"{rng.getrandbits(128):032x}"
    agents = {s["spanId"]: _get(s, "gen_ai.agent.name") for s in spans if s["spanId"] in call_ids}
    tools = {}
    for s in spans:
        if _get(s, "gen_ai.operation.name") == "execute_tool":
            failed = s.get("status", {}).get("code") == 2
            retry = s["status"]["message"] + _RETRY_SUFFIX if failed else None
            tools[_get(s, "gen_ai.tool.call.id")] = (_get(s, "gen_ai.tool.name"), retry)
    history: dict[str, list[dict]] = {}
    for span in spans:
        operation = _get(span, "gen_ai.operation.name")
        owner = span["spanId"] if span["spanId"] in call_ids else span.get("parentSpanId", "")
        ids = [
            _str("gen_ai.agent.name", agents.get(owner, "agent")),
            _str("gen_ai.agent.call.id", call_ids.get(owner, conversation)),
            _str("gen_ai.conversation.id", conversation),
        ]
        if operation == "chat":
            model = _get(span, "gen_ai.request.model")
            events = _pydantic_events(json.loads(_get(span, "gen_ai.input.messages")), tools)
            outputs = _get(span, "gen_ai.output.messages")
            finish = "stop"
            if outputs:
                reply = json.loads(outputs)[0]
                _, body = _openai_message(reply)
                if "tool_calls" in body:
                    finish = "tool_call"
                events.append(
                    {
                        "index": 0,
                        "message": {"role": "assistant", **body},
                        "gen_ai.system": "openai",
                        "event.name": "gen_ai.choice",
                    }
                )
                history[owner] = [
                    *events[:-1],
                    {**body, "role": "assistant", "event.name": "gen_ai.assistant.message"},
                ]
            attributes = [
                _str("gen_ai.operation.name", "chat"),
                _str("gen_ai.provider.name", "openai"),
                _str("gen_ai.system", "openai"),
                _str("gen_ai.request.model", model),
                *ids,
                _str("events", _dumps(events)),
                _str(
                    "logfire.json_schema",
                    _dumps(
                        {
                            "type": "object",
                            "properties": {
                                "events": {"type": "array"},
                                "model_request_parameters": {"type": "object"},
                            },
                        }
                    ),
                ),
                _int("gen_ai.usage.input_tokens", _get(span, "gen_ai.usage.input_tokens")),
                _int("gen_ai.usage.output_tokens", _get(span, "gen_ai.usage.output_tokens")),
                _str("gen_ai.response.model", model),
                _str("gen_ai.response.id", _get(span, "gen_ai.response.id")),
                {
                    "key": "gen_ai.response.finish_reasons",
                    "value": {"arrayValue": {"values": [{"stringValue": finish}]}},
                },
            ]
            span["name"] = f"chat {model}"
        elif operation == "execute_tool":
            name = _get(span, "gen_ai.tool.name")
            call_id = _get(span, "gen_ai.tool.call.id")
            retry = tools[call_id][1]
            response = retry if retry is not None else _get(span, "gen_ai.tool.call.result")
            attributes = [
                _str("gen_ai.operation.name", "execute_tool"),
                _str("gen_ai.tool.name", name),
                _str("gen_ai.tool.call.id", call_id),
                _str("tool_arguments", _get(span, "gen_ai.tool.call.arguments") or "{}"),
                *ids,
                _str("logfire.msg", f"running tool: {name}"),
                _str(
                    "logfire.json_schema",
                    _dumps(
                        {
                            "type": "object",
                            "properties": {
                                "tool_arguments": {"type": "object"},
                                "tool_response": {"type": "object"},
                                "gen_ai.tool.name": {},
                                "gen_ai.tool.call.id": {},
                            },
                        }
                    ),
                ),
            ]
            if response is not None:
                attributes.append(
                    _str("tool_response", response if isinstance(response, str) else _dumps(response))
                )
            if retry is not None:
                span["status"] = {"code": 2, "message": ""}
                for event in span.get("events", []):
                    for kv in event["attributes"]:
                        if kv["key"] == "exception.type":
                            kv["value"] = {"stringValue": "pydantic_ai.exceptions.ToolRetryError"}
            span["name"] = "running tool"
        elif operation == "invoke_agent":
            agent = agents[span["spanId"]]
            answer = _get(span, "gen_ai.output.messages")
            attributes = [
                _str("model_name", _get(span, "gen_ai.request.model") or ""),
                _str("agent_name", agent),
                *ids,
                _str("gen_ai.operation.name", "invoke_agent"),
                _str("logfire.msg", f"{agent} run"),
            ]
            if answer is not None:
                attributes.append(_str("final_result", json.loads(answer)[0]["parts"][0]["content"]))
            span["name"] = "agent run"
            span["_pending"] = attributes
            continue
        else:
            continue
        span["attributes"] = attributes
    for span in spans:
        pending = span.pop("_pending", None)
        if pending is None:
            continue
        messages = [
            {k: v for k, v in m.items() if k != "gen_ai.system"} for m in history.get(span["spanId"], [])
        ]
        pending.append(_str("all_messages_events", _dumps(messages)))
        pending.append(
            _str(
                "logfire.json_schema",
                _dumps(
                    {
                        "type": "object",
                        "properties": {
                            "all_messages_events": {"type": "array"},
                            "final_result": {"type": "object"},
                        },
                    }
                ),
            )
        )
        span["attributes"] = pending
    return spans
