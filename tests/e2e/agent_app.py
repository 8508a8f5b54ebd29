"""The applications under test: an on-call triage agent, written twice.

* :func:`run_chat_agent` is a hand-written agent loop on the plain ``openai`` client: it
  calls ``chat.completions.create``, runs each requested tool inside an OpenInference TOOL
  span (``OITracer``'s ``@tracer.tool``), feeds results back, and stops at a final answer;
  the whole run is one OpenInference AGENT span. LLM spans come from
  ``openinference-instrumentation-openai``.
* :func:`build_agents_sdk_agent` is the same agent on the ``openai-agents`` SDK: a real
  ``Agent`` with ``@function_tool`` tools on ``OpenAIChatCompletionsModel``.

Both use the same deterministic tools, so a model that repeats a call gets the same
result back (no progress) and a model that moves on learns something new.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI, OpenAI
from openinference.instrumentation import OITracer

from .fake_openai import LOOP_RESULT

AGENT_NAME = "oncall-triage"
INSTRUCTIONS = "You are an on-call assistant. Use the tools to find the root cause, then answer."
QUESTION = "Why are checkout requests failing since 09:00?"
MODEL = "fake-gpt"


# -- the tools (pure functions: same arguments, same result) -----------------------------------


def search_logs(query: str) -> str:
    """Search the service logs for a query."""
    if query == "timeout":
        return LOOP_RESULT
    return f"0 matches for {query!r}"


def get_metrics(service: str, metric: str) -> str:
    """Read a service metric for the last hour."""
    return f"{service} {metric}: 40ms until 09:00, 30000ms after (connection wait)"


def read_config(path: str) -> str:
    """Read a deployed configuration file."""
    return f"{path}: max_connections: 10, acquire_timeout: 30s"


TOOLS: dict[str, Callable[..., str]] = {f.__name__: f for f in (search_logs, get_metrics, read_config)}

#: ``tools=`` for chat completions.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_logs",
            "description": search_logs.__doc__,
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_metrics",
            "description": get_metrics.__doc__,
            "parameters": {
                "type": "object",
                "properties": {"service": {"type": "string"}, "metric": {"type": "string"}},
                "required": ["service", "metric"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_config",
            "description": read_config.__doc__,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
]


# -- the plain openai client agent ---------------------------------------------------------------


def traced_tools(tracer: OITracer) -> dict[str, Callable[..., str]]:
    """The tools wrapped by OpenInference's ``@tracer.tool``: each call is a TOOL span with
    ``tool.name``, ``input.value`` (the arguments) and ``output.value`` (the result)."""
    return {name: tracer.tool(name=name)(function) for name, function in TOOLS.items()}


def run_chat_agent(client: OpenAI, tracer: OITracer, question: str = QUESTION, max_turns: int = 12) -> str:
    """Run the agent loop to a final answer (or ``max_turns``) under one AGENT span."""
    tools = traced_tools(tracer)
    with tracer.start_as_current_span(AGENT_NAME, openinference_span_kind="agent") as span:
        span.set_attribute("agent.name", AGENT_NAME)
        span.set_input(question)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": question},
        ]
        answer = ""
        for _ in range(max_turns):
            completion = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS)
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                answer = message.content or ""
                break
            for call in message.tool_calls:
                result = tools[call.function.name](**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        span.set_output(answer)
        return answer


def run_untraced_tools_agent(
    client: OpenAI, tracer: OITracer, question: str = QUESTION, max_turns: int = 12
) -> str:
    """The same loop with only the LLM client instrumented: the tools run without spans and
    the run sits under a plain (non-agent) request span, as in an app that installed
    ``openinference-instrumentation-openai`` and nothing else."""
    with tracer.start_as_current_span("POST /triage"):
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": question},
        ]
        for _ in range(max_turns):
            completion = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS)
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content or ""
            for call in message.tool_calls:
                result = TOOLS[call.function.name](**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return ""


# -- the openai-agents SDK agent -----------------------------------------------------------------


def build_agents_sdk_agent(client: AsyncOpenAI) -> Agent[Any]:
    """A real ``Agent`` with ``@function_tool`` tools on the chat completions model."""
    return Agent(
        name=AGENT_NAME,
        instructions=INSTRUCTIONS,
        tools=[function_tool(f) for f in TOOLS.values()],
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
    )
