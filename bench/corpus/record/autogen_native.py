"""Record an AutoGen ``AssistantAgent`` through AutoGen's own tracing plus OpenLLMetry's
OpenAI instrumentation for the model calls.

    python bench/corpus/record/autogen_native.py

Needs ``autogen-agentchat``, ``autogen-ext[openai]`` and
``opentelemetry-instrumentation-openai`` (a venv of their own:
bench/corpus/record/README.md). AutoGen traces agents and tools through the global tracer
provider (set here to an SDK provider with the real OTLP/HTTP exporter); its model client
makes no spans of its own, so the OpenAI client is instrumented as an app would.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.corpus.record.harness import (
    SCENARIOS,
    FakeModel,
    OtlpJsonLinesReceiver,
    Recorder,
    Tools,
    otlp_provider,
    out_dir,
)


def main() -> int:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    framework = "autogen-native"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        trace.set_tracer_provider(provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        recorder = Recorder(framework, "genai-native", out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()

            async def run_once(goal: str = scenario.goal) -> None:
                client = OpenAIChatCompletionClient(
                    model="gpt-4o-mini",
                    base_url=model.base_url,
                    api_key="test-key",
                    model_info={
                        "vision": False,
                        "function_calling": True,
                        "json_output": False,
                        "family": "unknown",
                        "structured_output": False,
                    },
                )
                tracer = trace.get_tracer("corpus.autogen")
                with tracer.start_as_current_span("oncall run"):
                    agent = AssistantAgent(
                        "oncall_agent",
                        model_client=client,
                        tools=tools.functions(),
                        max_tool_iterations=12,
                        reflect_on_tool_use=False,
                    )
                    await agent.run(task=goal)
                await client.close()

            recorder.record(scenario, lambda r=run_once: asyncio.run(r()), provider.force_flush)
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
