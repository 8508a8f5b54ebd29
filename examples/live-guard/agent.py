"""The live guard: stop a looping agent while it runs, not after.

    pip install 'otel-semloop[otlp]'
    python examples/live-guard/agent.py

``live_guard="stop"`` feeds each tool and LLM span, as it ends, to incremental detectors for
its trace. The agent calls ``processor.guard.check()`` between steps; once the policy says
stop, that raises ``LoopDetected`` in the agent's own thread, where stopping is safe. Here the
agent would try 50 times; the guard stops it after a handful of identical, fruitless calls,
and the trace still gets its full verdict on export. (``SEMLOOP_LIVE_GUARD=stop`` does the
same for a zero-code setup, with ``otel_semloop.guard.check()``.)
"""

from __future__ import annotations

import json
import os

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from otel_semloop import LoopDetected, SemloopSpanProcessor


def exporter() -> SpanExporter:
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    return ConsoleSpanExporter(out=open(os.devnull, "w"))


def fetch_status(ticket: str) -> str:
    return f"ticket {ticket}: waiting for upstream"  # never changes


def main() -> int:
    warnings: list[str] = []
    processor = SemloopSpanProcessor(
        BatchSpanProcessor(exporter()),
        live_guard="stop",
        on_loop=lambda finding, action: warnings.append(f"{action.value}: {finding.describe()}"),
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "live-guard-example"}))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("live-guard-example")

    steps = 0
    agent_attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ticket-watcher"}
    with tracer.start_as_current_span("invoke_agent ticket-watcher", attributes=agent_attributes):
        try:
            for _ in range(50):
                processor.guard.check()  # raises LoopDetected once the policy says stop
                steps += 1
                arguments = {"ticket": "INC-4821"}
                with tracer.start_as_current_span("execute_tool fetch_status") as tool:
                    tool.set_attributes(
                        {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "fetch_status",
                            "gen_ai.tool.call.arguments": json.dumps(arguments),
                            "gen_ai.tool.call.result": fetch_status(**arguments),
                        }
                    )
        except LoopDetected as stop:
            print(f"stopped by the live guard after {steps} of 50 steps: {stop}")
    for line in warnings:
        print("on_loop:", line)
    provider.shutdown()
    return 0 if steps < 50 else 1


if __name__ == "__main__":
    raise SystemExit(main())
