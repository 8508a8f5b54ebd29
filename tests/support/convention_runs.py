"""One agent run, written once, recorded as spans in each attribute convention.

    run = Scenario("find the flaky test")
    run.think("Searching.", calls=[("search", {"q": "flaky"})]).tool("search", {"q": "flaky"}, "[]")
    verdict = score_in(run, "openllmetry")

:func:`spans_in` renders a :class:`~scenarios.Scenario`'s steps as the span records an
instrumentation in that convention writes (under a root agent span), and :func:`score_in`
builds the trace from them and scores it, so a detector test runs on what the convention
layer reads, not on hand-made steps:

* ``genai``: OTel GenAI (``invoke_agent`` / ``chat`` / ``execute_tool``, JSON message parts);
* ``openinference``: ``openinference.span.kind``, ``input.value``/``output.value``, indexed
  ``llm.output_messages``;
* ``openllmetry``: ``traceloop.span.kind``, the decorators' ``{"args", "kwargs"}`` input
  envelope and ``json.dumps`` output, indexed ``gen_ai.completion``.
"""

from __future__ import annotations

import json
from typing import Any

from otel_semloop.builder import build_trace
from otel_semloop.model import STATUS_ERROR, SpanRecord, Step, StepKind, Trace
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Verdict
from tests.support.scenarios import Scenario

CONVENTIONS = ("genai", "openinference", "openllmetry")
TRACE_ID = "ab" * 16


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _root(convention: str, goal: str) -> dict[str, Any]:
    if convention == "genai":
        return {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "agent",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": goal}]}]
            ),
        }
    if convention == "openinference":
        return {"openinference.span.kind": "AGENT", "input.value": goal}
    return {
        "traceloop.span.kind": "workflow",
        "traceloop.entity.name": "agent",
        "traceloop.entity.input": json.dumps({"args": [goal], "kwargs": {}}),
    }


def _llm(convention: str, step: Step) -> dict[str, Any]:
    calls = [(c.name, c.arguments) for c in step.tool_calls]
    if convention == "genai":
        parts: list[dict[str, Any]] = (
            [{"type": "text", "content": step.output_text}] if step.output_text else []
        )
        parts += [
            {"type": "tool_call", "id": f"call_{i}", "name": name, "arguments": args}
            for i, (name, args) in enumerate(calls)
        ]
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        if parts:
            attrs["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": parts}])
        if step.input_text:
            attrs["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": step.input_text}]}]
            )
        return attrs
    if convention == "openinference":
        prefix = "llm.output_messages.0.message"
        attrs = {"openinference.span.kind": "LLM", "llm.model_name": "m", f"{prefix}.role": "assistant"}
        if step.output_text:
            attrs[f"{prefix}.content"] = step.output_text
        if step.input_text:
            attrs["llm.input_messages.0.message.role"] = "user"
            attrs["llm.input_messages.0.message.content"] = step.input_text
        for i, (name, args) in enumerate(calls):
            attrs[f"{prefix}.tool_calls.{i}.tool_call.function.name"] = name
            attrs[f"{prefix}.tool_calls.{i}.tool_call.function.arguments"] = _json(args)
        return attrs
    attrs = {"llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.completion.0.role": "assistant"}
    if step.output_text:
        attrs["gen_ai.completion.0.content"] = step.output_text
    if step.input_text:
        attrs["gen_ai.prompt.0.role"] = "user"
        attrs["gen_ai.prompt.0.content"] = step.input_text
    for i, (name, args) in enumerate(calls):
        attrs[f"gen_ai.completion.0.tool_calls.{i}.name"] = name
        attrs[f"gen_ai.completion.0.tool_calls.{i}.arguments"] = _json(args)
    return attrs


def _handoff(convention: str, step: Step) -> dict[str, Any]:
    """A hand-off as each convention's frameworks record it: GenAI transfer attributes on
    ``execute_tool``, the openai-agents instrumentor's ``handoff to X`` TOOL span,
    a ``transfer_to_X`` tool (LangGraph swarm / OpenLLMetry-decorated)."""
    target = step.handoff_to
    if convention == "genai":
        return {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "transfer",
            "gen_ai.transfer.mode": "handoff",
            "gen_ai.transfer.target.name": target,
        }
    if convention == "openinference":
        return {"openinference.span.kind": "TOOL", "input.value": step.agent or "", "output.value": target}
    return {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": f"transfer_to_{target}",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {}}),
        "traceloop.entity.output": json.dumps(f"Transferred to {target}"),
    }


def handoff(run: Scenario, target: str) -> Scenario:
    """A hand-off of the work to ``target`` (rendered per convention by :func:`spans_in`)."""
    run.tool("handoff", None, None)
    run.steps[-1].handoff_to = target
    return run


def _tool(convention: str, step: Step) -> dict[str, Any]:
    if step.handoff_to:
        return _handoff(convention, step)
    args, result = step.tool_arguments, step.tool_result
    if convention == "genai":
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step.name}
        if args is not None:
            attrs["gen_ai.tool.call.arguments"] = _json(args)
        if result is not None:
            attrs["gen_ai.tool.call.result"] = _json(result)
        return attrs
    if convention == "openinference":
        attrs = {"openinference.span.kind": "TOOL", "tool.name": step.name}
        if args is not None:
            attrs["input.value"] = _json(args)
        if result is not None:
            attrs["output.value"] = _json(result)
        return attrs
    attrs = {"traceloop.span.kind": "tool", "traceloop.entity.name": step.name}
    if args is not None:
        envelope = {"args": [], "kwargs": args} if isinstance(args, dict) else {"args": [args], "kwargs": {}}
        attrs["traceloop.entity.input"] = json.dumps(envelope)
    if result is not None:
        attrs["traceloop.entity.output"] = json.dumps(result)
    return attrs


def _agent(convention: str, step: Step) -> dict[str, Any]:
    if convention == "genai":
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": step.name}
        if step.output_text:
            attrs["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": step.output_text}]}]
            )
        return attrs
    if convention == "openinference":
        attrs = {"openinference.span.kind": "AGENT", "agent.name": step.name}
        if step.output_text:
            attrs["output.value"] = step.output_text
        return attrs
    attrs = {"traceloop.span.kind": "agent", "traceloop.entity.name": step.name}
    if step.output_text:
        attrs["traceloop.entity.output"] = json.dumps(step.output_text)
    return attrs


_RENDER = {StepKind.LLM: _llm, StepKind.TOOL: _tool, StepKind.AGENT: _agent}


def spans_in(run: Scenario, convention: str, *, nest: bool = False) -> list[SpanRecord]:
    """The run's steps as span records in ``convention``, children of one root agent span;
    with ``nest``, the steps after an agent step are that agent span's children (nested
    ``invoke_agent``) instead of its siblings."""
    assert convention in CONVENTIONS, convention
    steps = run.steps
    start = steps[0].start_ns if steps and steps[0].start_ns else 1
    end = steps[-1].end_ns if steps and steps[-1].end_ns else start + 1
    root_id = "f" * 16
    records = [
        SpanRecord(TRACE_ID, root_id, "", "agent run", start - 1, end + 1, _root(convention, run.goal))
    ]
    parent = root_id
    for index, step in enumerate(steps):
        attrs = _RENDER[step.kind](convention, step)
        span_id = f"{index + 1:016x}"
        record = SpanRecord(
            TRACE_ID,
            span_id,
            root_id if step.kind is StepKind.AGENT else parent,
            f"{step.kind.value} {step.name}",
            step.start_ns or start + index,
            step.end_ns or start + index + 1,
            attrs,
        )
        if step.kind is StepKind.AGENT:
            if nest:
                parent = span_id
                record.end_ns = end  # encloses the steps that follow it
        elif step.handoff_to and convention == "openinference":
            record.name = f"handoff to {step.handoff_to}"
        if step.is_error:
            record.status_code = STATUS_ERROR
            record.status_message = step.error_message
            if step.error_type:
                attrs["error.type"] = step.error_type
        records.append(record)
    return records


def trace_in(run: Scenario, convention: str, *, nest: bool = False) -> Trace:
    return build_trace(spans_in(run, convention, nest=nest))


def score_in(run: Scenario, convention: str, *, nest: bool = False) -> Verdict:
    """The default verdict on the run as recorded in ``convention``."""
    return Scorer().score(trace_in(run, convention, nest=nest))
