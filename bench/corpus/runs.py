"""Agent runs as plain data, and their rendering as OTLP JSON spans in three conventions.

The evaluation corpus describes each situation once, as a :class:`Run` (a goal, the
model turns with the tool calls they asked for and what each call returned), and renders
it three ways, the way the instrumentations in the wild emit it:

* ``genai``: the OpenTelemetry GenAI conventions as they are now: ``invoke_agent`` /
  ``chat`` / ``execute_tool`` spans, messages as ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` JSON parts, tool arguments and results on the tool span.
* ``openinference``: ``openinference.span.kind`` AGENT / LLM / TOOL, flattened
  ``llm.input_messages.<i>...`` / ``llm.output_messages.<i>...`` attributes, tool
  ``input.value`` / ``output.value``.
* ``openllmetry``: Traceloop's ``traceloop.span.kind`` workflow / agent / tool with
  ``traceloop.entity.input`` wrapped as ``{"args": [...], "kwargs": {...}}`` (what its
  ``@tool`` decorator records) and indexed ``gen_ai.prompt.<i>`` / ``gen_ai.completion.<i>``.

Rendering is written here, independent of the package's own codecs, so a corpus file is
evidence about the package rather than a copy of its assumptions.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

CONVENTIONS = ("genai", "openinference", "openllmetry")

# OTLP span kinds
INTERNAL, SERVER, CLIENT = 1, 2, 3


@dataclass
class ToolUse:
    """One tool call the model asked for, and what executing it gave."""

    name: str
    args: dict[str, Any]
    result: str | None = None
    error: str | None = None
    error_type: str = "ToolError"
    duration_ms: int = 40
    #: False: no tool span was recorded for the call (LangGraph's ToolNode answering a call
    #: to a tool that does not exist): the model span holds the call, a ``tools`` chain
    #: span and the next model input hold what came back.
    span: bool = True


@dataclass
class Turn:
    """One model call: its text, the tool calls it asked for, or its failure.

    ``gap_ms`` is idle time before the call (an agent waiting between polls).
    ``agent`` is the agent speaking (hand-offs change it).
    """

    text: str | None = None
    calls: list[ToolUse] = field(default_factory=list)
    error: str | None = None
    error_type: str = "APIError"
    agent: str | None = None
    gap_ms: int = 0
    duration_ms: int = 0


@dataclass
class Run:
    goal: str
    agent: str
    model: str
    turns: list[Turn]
    final: str | None = None
    #: The run ended in failure (recursion limit, max turns, aborted): root span status.
    failure: str | None = None
    system: str | None = None


# --- OTLP JSON helpers -------------------------------------------------------------------


def _any(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": str(value)}


def _attrs(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any(v)} for k, v in attributes.items() if v is not None]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Clock:
    def __init__(self, start_ns: int, rng: random.Random) -> None:
        self.now = start_ns
        self.rng = rng

    def advance(self, ms: float) -> int:
        self.now += int(ms * 1_000_000)
        return self.now


@dataclass
class _Span:
    span_id: str
    parent: str
    name: str
    kind: int
    start: int
    end: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    status: tuple[int, str] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self, trace_id: str) -> dict[str, Any]:
        span: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(self.end),
            "attributes": _attrs(self.attributes),
        }
        if self.parent:
            span["parentSpanId"] = self.parent
        if self.events:
            span["events"] = self.events
        if self.status is not None:
            span["status"] = {"code": self.status[0], "message": self.status[1]}
        return span


def _exception_event(time_ns: int, etype: str, message: str) -> dict[str, Any]:
    return {
        "timeUnixNano": str(time_ns),
        "name": "exception",
        "attributes": _attrs({"exception.type": etype, "exception.message": message}),
    }


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --- rendering ---------------------------------------------------------------------------


@dataclass
class _Msg:
    role: str
    content: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def render(run: Run, convention: str, trace_id: str, rng: random.Random, start_ns: int) -> list[dict]:
    """The run's spans as OTLP JSON span dicts, in start order."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}")
    r = _Renderer(run, convention, trace_id, rng, start_ns)
    return r.spans()


class _Renderer:
    def __init__(self, run: Run, convention: str, trace_id: str, rng: random.Random, start_ns: int):
        self.run = run
        self.conv = convention
        self.trace_id = trace_id
        self.rng = rng
        self.clock = _Clock(start_ns, rng)
        self.out: list[_Span] = []
        self.call_no = 0

    def sid(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    def call_id(self) -> str:
        self.call_no += 1
        alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        return "call_" + "".join(self.rng.choice(alphabet) for _ in range(24))

    # root and agent spans ---------------------------------------------------------------
    def agent_span(self, name: str, parent: str, goal: str | None, root: bool) -> _Span:
        span = _Span(self.sid(), parent, "", INTERNAL, self.clock.now)
        if self.conv == "genai":
            span.name = f"invoke_agent {name}"
            span.attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": self.run.model,
            }
            if goal is not None:
                span.attributes["gen_ai.input.messages"] = _dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": goal}]}]
                )
        elif self.conv == "openinference":
            span.name = name
            span.attributes = {"openinference.span.kind": "AGENT", "agent.name": name}
            if goal is not None:
                span.attributes["input.value"] = goal
                span.attributes["input.mime_type"] = "text/plain"
        else:
            kind = "workflow" if root else "agent"
            span.name = f"{name}.{kind}"
            span.attributes = {
                "traceloop.span.kind": kind,
                "traceloop.entity.name": name,
                "traceloop.workflow.name": self.run.agent,
            }
            if goal is not None:
                span.attributes["traceloop.entity.input"] = _dumps({"args": [goal], "kwargs": {}})
        self.out.append(span)
        return span

    def close_agent(self, span: _Span, output: str | None, failure: str | None) -> None:
        span.end = self.clock.advance(self.rng.uniform(0.2, 3))
        if output is not None:
            if self.conv == "genai":
                span.attributes["gen_ai.output.messages"] = _dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": output}],
                            "finish_reason": "stop",
                        }
                    ]
                )
            elif self.conv == "openinference":
                span.attributes["output.value"] = output
                span.attributes["output.mime_type"] = "text/plain"
            else:
                span.attributes["traceloop.entity.output"] = _dumps(output)
        if failure:
            span.status = (2, failure)
            etype = failure.split(":", 1)[0] if ":" in failure else "AgentError"
            span.events.append(_exception_event(span.end, etype, failure))

    # llm spans ----------------------------------------------------------------------------
    def llm_span(self, parent: str, turn: Turn, history: list[_Msg], ids: list[str]) -> _Span:
        self.clock.advance(turn.gap_ms + self.rng.uniform(1, 15))
        span = _Span(self.sid(), parent, "", CLIENT, self.clock.now)
        duration = turn.duration_ms or self.rng.randint(350, 2600)
        span.end = self.clock.advance(duration)
        model = self.run.model
        out_msg = _Msg("assistant", turn.text)
        for call, cid in zip(turn.calls, ids, strict=True):
            out_msg.tool_calls.append((cid, call.name, call.args))
        out_text = (turn.text or "") + "".join(_dumps(c.args) for c in turn.calls)
        in_tokens = sum(_tokens(m.content or "") for m in history) + self.rng.randint(200, 900)
        out_tokens = _tokens(out_text) if turn.error is None else 0
        finish = "tool_calls" if turn.calls else "stop"
        resp_id = "chatcmpl-" + "".join(
            self.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789") for _ in range(22)
        )
        if self.conv == "genai":
            span.name = f"chat {model}"
            a = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": model,
                "gen_ai.input.messages": _dumps([self._genai_msg(m) for m in history]),
            }
            if turn.error is None:
                a.update(
                    {
                        "gen_ai.response.model": model,
                        "gen_ai.response.id": resp_id,
                        "gen_ai.response.finish_reasons": [finish],
                        "gen_ai.usage.input_tokens": in_tokens,
                        "gen_ai.usage.output_tokens": out_tokens,
                        "gen_ai.output.messages": _dumps([self._genai_msg(out_msg, finish)]),
                    }
                )
            else:
                a["error.type"] = turn.error_type
            span.attributes = a
        elif self.conv == "openinference":
            span.name = "ChatCompletion"
            a = {
                "openinference.span.kind": "LLM",
                "llm.model_name": model,
                "llm.provider": "openai",
                "llm.system": "openai",
                "input.mime_type": "application/json",
                "input.value": _dumps({"model": model, "messages": [self._oa_msg(m) for m in history]}),
            }
            for i, m in enumerate(history):
                p = f"llm.input_messages.{i}.message"
                a[f"{p}.role"] = m.role
                if m.content is not None:
                    a[f"{p}.content"] = m.content
                if m.tool_call_id:
                    a[f"{p}.tool_call_id"] = m.tool_call_id
                for j, (cid, name, args) in enumerate(m.tool_calls):
                    a[f"{p}.tool_calls.{j}.tool_call.id"] = cid
                    a[f"{p}.tool_calls.{j}.tool_call.function.name"] = name
                    a[f"{p}.tool_calls.{j}.tool_call.function.arguments"] = _dumps(args)
            if turn.error is None:
                p = "llm.output_messages.0.message"
                a[f"{p}.role"] = "assistant"
                if turn.text is not None:
                    a[f"{p}.content"] = turn.text
                for j, (cid, name, args) in enumerate(out_msg.tool_calls):
                    a[f"{p}.tool_calls.{j}.tool_call.id"] = cid
                    a[f"{p}.tool_calls.{j}.tool_call.function.name"] = name
                    a[f"{p}.tool_calls.{j}.tool_call.function.arguments"] = _dumps(args)
                a["llm.token_count.prompt"] = in_tokens
                a["llm.token_count.completion"] = out_tokens
                a["llm.token_count.total"] = in_tokens + out_tokens
                a["output.mime_type"] = "application/json"
                a["output.value"] = _dumps(
                    {
                        "id": resp_id,
                        "choices": [{"message": self._oa_msg(out_msg), "finish_reason": finish}],
                    }
                )
            span.attributes = a
        else:
            span.name = "openai.chat"
            a = {
                "llm.request.type": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": model,
            }
            for i, m in enumerate(history):
                a[f"gen_ai.prompt.{i}.role"] = m.role
                if m.content is not None:
                    a[f"gen_ai.prompt.{i}.content"] = m.content
                if m.tool_call_id:
                    a[f"gen_ai.prompt.{i}.tool_call_id"] = m.tool_call_id
                for j, (cid, name, args) in enumerate(m.tool_calls):
                    a[f"gen_ai.prompt.{i}.tool_calls.{j}.id"] = cid
                    a[f"gen_ai.prompt.{i}.tool_calls.{j}.name"] = name
                    a[f"gen_ai.prompt.{i}.tool_calls.{j}.arguments"] = _dumps(args)
            if turn.error is None:
                a["gen_ai.response.model"] = model
                a["gen_ai.response.id"] = resp_id
                a["gen_ai.completion.0.role"] = "assistant"
                a["gen_ai.completion.0.finish_reason"] = finish
                if turn.text is not None:
                    a["gen_ai.completion.0.content"] = turn.text
                for j, (cid, name, args) in enumerate(out_msg.tool_calls):
                    a[f"gen_ai.completion.0.tool_calls.{j}.id"] = cid
                    a[f"gen_ai.completion.0.tool_calls.{j}.name"] = name
                    a[f"gen_ai.completion.0.tool_calls.{j}.arguments"] = _dumps(args)
                a["gen_ai.usage.prompt_tokens"] = in_tokens
                a["gen_ai.usage.completion_tokens"] = out_tokens
                a["llm.usage.total_tokens"] = in_tokens + out_tokens
            span.attributes = a
        if turn.error is not None:
            span.status = (2, turn.error)
            span.events.append(_exception_event(span.end, turn.error_type, turn.error))
        self.out.append(span)
        return span

    def _genai_msg(self, m: _Msg, finish: str | None = None) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if m.role == "tool":
            parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.content})
        elif m.content is not None:
            parts.append({"type": "text", "content": m.content})
        for cid, name, args in m.tool_calls:
            parts.append({"type": "tool_call", "id": cid, "name": name, "arguments": args})
        msg: dict[str, Any] = {"role": m.role, "parts": parts}
        if finish:
            msg["finish_reason"] = finish
        return msg

    def _oa_msg(self, m: _Msg) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_call_id:
            msg["tool_call_id"] = m.tool_call_id
        if m.tool_calls:
            msg["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": _dumps(args)}}
                for cid, name, args in m.tool_calls
            ]
        return msg

    # tool spans ---------------------------------------------------------------------------
    def tool_span(self, parent: str, call: ToolUse, cid: str) -> _Span:
        self.clock.advance(self.rng.uniform(0.5, 8))
        span = _Span(self.sid(), parent, "", INTERNAL, self.clock.now)
        span.end = self.clock.advance(max(1, call.duration_ms * self.rng.uniform(0.7, 1.4)))
        args = _dumps(call.args)
        if self.conv == "genai":
            span.name = f"execute_tool {call.name}"
            span.attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": cid,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.arguments": args,
            }
            if call.error is None:
                span.attributes["gen_ai.tool.call.result"] = call.result or ""
            else:
                span.attributes["error.type"] = call.error_type
        elif self.conv == "openinference":
            span.name = call.name
            span.attributes = {
                "openinference.span.kind": "TOOL",
                "tool.name": call.name,
                "tool_call.id": cid,
                "input.value": args,
                "input.mime_type": "application/json",
            }
            if call.error is None:
                span.attributes["output.value"] = call.result or ""
                span.attributes["output.mime_type"] = "text/plain"
        else:
            span.name = f"{call.name}.tool"
            span.attributes = {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": call.name,
                "traceloop.workflow.name": self.run.agent,
                "traceloop.entity.input": _dumps({"args": [], "kwargs": call.args}),
            }
            if call.error is None:
                span.attributes["traceloop.entity.output"] = _dumps(call.result or "")
        if call.error is not None:
            span.status = (2, call.error)
            span.events.append(_exception_event(span.end, call.error_type, call.error))
        self.out.append(span)
        return span

    def chain_span(self, parent: str, name: str, output: str) -> _Span:
        """A framework's own step span that is no tool call (LangGraph's ``tools`` node)."""
        self.clock.advance(self.rng.uniform(0.5, 3))
        span = _Span(self.sid(), parent, name, INTERNAL, self.clock.now)
        span.end = self.clock.advance(self.rng.uniform(1, 5))
        if self.conv == "openinference":
            span.attributes = {
                "openinference.span.kind": "CHAIN",
                "output.value": _dumps({"messages": [{"type": "tool", "content": output}]}),
                "output.mime_type": "application/json",
            }
        elif self.conv == "openllmetry":
            span.name = f"{name}.task"
            span.attributes = {
                "traceloop.span.kind": "task",
                "traceloop.entity.name": name,
                "traceloop.entity.output": _dumps({"outputs": {"messages": [output]}}),
            }
        else:
            span.attributes = {"langgraph.node": name}
        self.out.append(span)
        return span

    # the run ------------------------------------------------------------------------------
    def spans(self) -> list[dict]:
        run = self.run
        root = self.agent_span(run.agent, "", run.goal, root=True)
        # OpenLLMetry runs nest an agent span under the workflow; others speak from the root.
        speaking_parent = root.span_id
        current_agent = run.agent
        agent_span: _Span | None = None
        if self.conv == "openllmetry":
            agent_span = self.agent_span(run.agent, root.span_id, None, root=False)
            speaking_parent = agent_span.span_id
        history: list[_Msg] = []
        if run.system:
            history.append(_Msg("system", run.system))
        history.append(_Msg("user", run.goal))
        for turn in run.turns:
            agent = turn.agent or run.agent
            if agent != current_agent:
                if agent_span is not None:
                    self.close_agent(agent_span, None, None)
                    agent_span = None
                current_agent = agent
                if agent == run.agent and self.conv != "openllmetry":
                    speaking_parent = root.span_id
                else:
                    agent_span = self.agent_span(agent, root.span_id, None, root=False)
                    speaking_parent = agent_span.span_id
            ids = [self.call_id() for _ in turn.calls]
            self.llm_span(speaking_parent, turn, history, ids)
            # What the next model call sees: this turn and the results (compact history:
            # the goal and the latest exchange, as instrumentations that truncate keep it).
            new: list[_Msg] = []
            if turn.error is None:
                msg = _Msg("assistant", turn.text)
                for call, cid in zip(turn.calls, ids, strict=True):
                    msg.tool_calls.append((cid, call.name, call.args))
                new.append(msg)
            for call, cid in zip(turn.calls, ids, strict=True):
                text = call.result if call.error is None else f"Error: {call.error}"
                if call.span:
                    self.tool_span(speaking_parent, call, cid)
                else:
                    self.chain_span(speaking_parent, "tools", text or "")
                new.append(_Msg("tool", text, tool_call_id=cid))
            base = history[:2] if run.system else history[:1]
            history = base + new
        if agent_span is not None:
            self.close_agent(agent_span, run.final if self.conv == "openllmetry" else None, None)
        self.close_agent(root, run.final, run.failure)
        return [s.to_json(self.trace_id) for s in self.out]


def traces_data(spans: list[dict], service: str, scope: str) -> dict[str, Any]:
    """One OTLP JSON ``TracesData`` (one export batch) holding ``spans``."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs({"service.name": service})},
                "scopeSpans": [{"scope": {"name": scope}, "spans": spans}],
            }
        ]
    }


SCOPES = {
    "genai": "opentelemetry.instrumentation.genai",
    "openinference": "openinference.instrumentation.openai",
    "openllmetry": "opentelemetry.instrumentation.openai.v1",
}
