"""Your own agent loop on the ``openai`` client, traced by OpenInference, scored by semloop.

    pip install 'otel-semloop[otlp]' openai openinference-instrumentation-openai
    export OPENAI_API_KEY=... OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317
    python examples/openai-openinference/agent.py

No agent framework: ``OpenAIInstrumentor`` records each chat completion as an LLM span (with
the tool calls the model asked for), ``OITracer`` records the agent run (AGENT) and each tool
(TOOL). The same code works with any framework OpenInference or OpenLLMetry instruments
(LangChain, LlamaIndex, CrewAI...): semloop reads either convention. ``OPENAI_BASE_URL``
points it at any OpenAI-compatible server.
"""

from __future__ import annotations

import json
import os

from openai import OpenAI
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from otel_semloop import SemloopSpanProcessor

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


def exporter() -> SpanExporter:
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    return ConsoleSpanExporter()


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "openai-openinference-example"}))
    provider.add_span_processor(SemloopSpanProcessor(BatchSpanProcessor(exporter())))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = OITracer(provider.get_tracer("oncall-agent"), config=TraceConfig())

    @tracer.tool(name="search_logs")
    def search_logs(query: str) -> str:
        return f"3 matches for {query!r}: 'upstream timeout after 30000ms' (checkout-api)"

    client = OpenAI(max_retries=0)
    question = "Why are checkout requests failing?"
    messages: list[dict] = [{"role": "user", "content": question}]
    with tracer.start_as_current_span("oncall-agent", openinference_span_kind="agent") as agent:
        agent.set_input(question)
        for _ in range(12):
            reply = client.chat.completions.create(
                model=os.environ.get("MODEL", "gpt-4o-mini"), messages=messages, tools=TOOLS
            )
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                agent.set_output(message.content or "")
                print("final answer:", message.content)
                break
            for call in message.tool_calls:
                result = search_logs(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    provider.shutdown()


if __name__ == "__main__":
    main()
