"""Record the OpenAI Agents SDK through OpenInference's instrumentor (or OpenLLMetry's).

    python bench/corpus/record/openai_agents_sdk.py [--instrumentation openinference|openllmetry]

A real ``agents.Agent`` with ``@function_tool`` tools runs every scenario of
:mod:`harness` through ``Runner.run`` on ``OpenAIChatCompletionsModel`` against the fake
model on loopback; the instrumentor's spans go through the real OTLP/HTTP exporter into
``bench/corpus/recordings/openai-agents-<instrumentation>/``.
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--instrumentation", choices=("openinference", "openllmetry"), default="openinference"
    )
    args = parser.parse_args()

    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from openai import AsyncOpenAI

    framework = f"openai-agents-{args.instrumentation}"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        if args.instrumentation == "openinference":
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            instrumentor = OpenAIAgentsInstrumentor()
            instrumentor.instrument(tracer_provider=provider, exclusive_processor=True)
        else:
            from agents import set_trace_processors
            from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            set_trace_processors([])
            instrumentor = OpenAIAgentsInstrumentor()
            instrumentor.instrument(tracer_provider=provider)
        recorder = Recorder(framework, args.instrumentation, out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()

            async def run_once(goal: str = scenario.goal) -> None:
                client = AsyncOpenAI(base_url=model.base_url, api_key="test-key")
                agent = Agent(
                    name="oncall-agent",
                    instructions="You are an on-call assistant. Use the tools, then answer.",
                    model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
                    tools=[function_tool(f) for f in tools.functions()],
                )
                try:
                    await Runner.run(agent, goal, max_turns=12, run_config=RunConfig(tracing_disabled=False))
                finally:
                    await client.close()

            recorder.record(scenario, lambda: asyncio.run(run_once()), provider.force_flush)
        instrumentor.uninstrument()
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
