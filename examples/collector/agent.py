"""An application that knows nothing of semloop: it exports OTLP to the pipeline, where
``otel-semloop serve`` scores its traces on the way to the backend.

    pip install 'otel-semloop[collector,otlp]'
    otel-semloop serve --grpc 127.0.0.1:4317 --http 127.0.0.1:4318 \\
        --export-endpoint http://127.0.0.1:14317 &            # your backend's OTLP/gRPC port
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317 python examples/collector/agent.py

Two runs, one trace each: a support bot that searches for the same thing eight times and
gets the same answer (a loop), and one that pages through results and finishes (healthy).
The service groups spans by trace, scores each finished agent trace off the receive path,
and forwards every span exactly once; the looping run's root arrives with
``semloop.loop.detected=true``. The Jaeger example (``examples/jaeger/``) runs this same
script as its demo agent.
"""

from __future__ import annotations

import json
import os

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer


def run(tracer: Tracer, agent: str, calls: list[tuple[dict, str]]) -> str:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes) as root:
        for arguments, result in calls:
            with tracer.start_as_current_span("execute_tool search_docs") as tool:
                tool.set_attributes(
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search_docs",
                        "gen_ai.tool.call.arguments": json.dumps(arguments),
                        "gen_ai.tool.call.result": result,
                    }
                )
        return f"{root.get_span_context().trace_id:032x}"


def main() -> None:
    service = os.environ.get("OTEL_SERVICE_NAME", "collector-example")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("collector-example")
    looping = run(tracer, "support-bot", [({"query": "refund window"}, "No page mentions it.")] * 8)
    healthy = run(
        tracer,
        "pager-bot",
        [({"query": "refund", "page": n}, f"results {10 * n + 1}-{10 * n + 10} of 40") for n in range(4)],
    )
    provider.shutdown()
    print(f"looping trace {looping}\nhealthy trace {healthy}")


if __name__ == "__main__":
    main()
