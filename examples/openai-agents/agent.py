"""The OpenAI Agents SDK, traced by OpenInference, scored by semloop.

    pip install 'otel-semloop[otlp]' openai-agents openinference-instrumentation-openai-agents
    export OPENAI_API_KEY=... OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317
    python examples/openai-agents/agent.py

``OpenAIAgentsInstrumentor`` turns the SDK's own traces into OpenTelemetry spans (workflow
and agent AGENT spans, ``generation`` LLM spans, function TOOL spans) on our provider, whose
export pipeline is wrapped in ``SemloopSpanProcessor``. The agent's one tool gives the same
answer for the same query, so a model that keeps asking it the same thing is in a loop; the
workflow's root span gets the verdict. ``OPENAI_BASE_URL`` points it at any OpenAI-compatible
server (the example test uses a scripted one on loopback).
"""

from __future__ import annotations

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from otel_semloop import SemloopSpanProcessor


def exporter() -> SpanExporter:
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    return ConsoleSpanExporter()


@function_tool
def search_logs(query: str) -> str:
    """Search the service logs for a query."""
    return f"3 matches for {query!r}: 'upstream timeout after 30000ms' (checkout-api)"


async def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "openai-agents-example"}))
    provider.add_span_processor(SemloopSpanProcessor(BatchSpanProcessor(exporter())))
    # exclusive_processor: the SDK's traces go to this provider only, not also to OpenAI's
    # trace backend (drop it to keep both).
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=True)

    async with AsyncOpenAI(max_retries=0) as client:
        agent = Agent(
            name="oncall-triage",
            instructions="Find the root cause of the checkout failures with the tools, then answer.",
            tools=[search_logs],
            model=OpenAIChatCompletionsModel(
                model=os.environ.get("MODEL", "gpt-4o-mini"), openai_client=client
            ),
        )
        result = await Runner.run(
            agent,
            "Why are checkout requests failing?",
            max_turns=12,
            run_config=RunConfig(workflow_name="checkout-incident"),
        )
        print("final answer:", result.final_output)
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
