"""Plain SDK registration: wrap your export pipeline in ``SemloopSpanProcessor``.

    pip install 'otel-semloop[otlp]'
    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 python examples/sdk/agent.py   # to a backend
    python examples/sdk/agent.py                                                     # to the console

A hand-instrumented agent (OpenTelemetry GenAI conventions, no model, no network) searches
the docs for the same thing eight times and gets the same answer each time. Its spans go
through ``SemloopSpanProcessor``, which holds the trace until it ends, scores it, and
forwards every span once: the root and the looping tool spans carry the verdict
(``semloop.loop.detected=true``, ``semloop.label=loop``, a ``gen_ai.evaluation.result`` event).
"""

from __future__ import annotations

import json
import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from otel_semloop import SemloopSpanProcessor


def exporter() -> SpanExporter:
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    return ConsoleSpanExporter()


def search_docs(query: str) -> str:
    return "No page mentions 'refund window'."  # the same answer, whatever the attempt


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-example"}))
    # The one line that matters: the semloop processor wraps the batch processor.
    provider.add_span_processor(SemloopSpanProcessor(BatchSpanProcessor(exporter())))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("sdk-example")

    agent_attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support-bot"}
    with tracer.start_as_current_span("invoke_agent support-bot", attributes=agent_attributes) as agent:
        for _ in range(8):
            arguments = {"query": "refund window"}
            with tracer.start_as_current_span("execute_tool search_docs") as tool:
                result = search_docs(**arguments)
                tool.set_attributes(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search_docs",
                        "gen_ai.tool.call.arguments": json.dumps(arguments),
                        "gen_ai.tool.call.result": result,
                    }
                )
        print(f"agent trace {agent.get_span_context().trace_id:032x} done; exporting")
    provider.shutdown()  # scores what is still held and flushes the exporter


if __name__ == "__main__":
    main()
