"""An agent with no OpenTelemetry setup at all: ``opentelemetry-instrument`` adds it.

    pip install 'otel-semloop[zero-code,otlp]' openinference-instrumentation-openai
    OTEL_PYTHON_CONFIGURATOR=semloop OTEL_SERVICE_NAME=zero-code-example \\
    OTEL_TRACES_EXPORTER=otlp OTEL_METRICS_EXPORTER=none OTEL_LOGS_EXPORTER=none \\
    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 \\
        opentelemetry-instrument python examples/zero-code/app.py

``opentelemetry-instrument`` (from ``opentelemetry-distro``) loads the configurator named by
``OTEL_PYTHON_CONFIGURATOR``: semloop's is the SDK's own with every exporter wrapped as
``SemloopSpanProcessor(BatchSpanProcessor(exporter))``; options come from ``SEMLOOP_*``.
Installed instrumentors (here OpenInference's for ``openai``) record each chat completion,
with the tool calls the model asked for. The only OpenTelemetry line in this file uses the
API to group the run under one agent span, so the whole run is one trace; the tools run
without spans of their own and semloop still sees the repeated calls in the LLM output.
"""

from __future__ import annotations

import json
import os

from openai import OpenAI
from opentelemetry import trace

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_logs",
            "description": "Search the service logs for a query.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
]


def search_logs(query: str) -> str:
    return f"3 matches for {query!r}: 'upstream timeout after 30000ms' (checkout-api)"


def main() -> None:
    client = OpenAI(max_retries=0)
    messages: list[dict] = [{"role": "user", "content": "Why are checkout requests failing?"}]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "oncall-triage"}
    with trace.get_tracer("zero-code-example").start_as_current_span("invoke_agent oncall", attributes=agent):
        for _ in range(12):
            reply = client.chat.completions.create(
                model=os.environ.get("MODEL", "gpt-4o-mini"), messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                print("final answer:", message.content)
                break
            for call in message.tool_calls:
                result = search_logs(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


if __name__ == "__main__":
    main()
