"""Record a CrewAI crew through OpenInference's CrewAI and OpenAI instrumentors.

    python bench/corpus/record/crewai_oi.py

Needs ``crewai``, ``openinference-instrumentation-crewai`` and
``openinference-instrumentation-openai`` (a venv of their own:
bench/corpus/record/README.md). One agent, one task, the scenario tools as CrewAI tools,
CrewAI's native OpenAI provider pointed at the fake model on loopback. CrewAI's own
telemetry is switched off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

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
    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    framework = "crewai-openinference"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        CrewAIInstrumentor().instrument(tracer_provider=provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        recorder = Recorder(framework, "openinference", out_dir(framework), receiver)
        crew_tools = [tool(fn.__name__)(fn) for fn in tools.functions()]
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            llm = LLM(model="openai/gpt-4o-mini", base_url=model.base_url, api_key="test-key")
            agent = Agent(
                role="On-call engineer",
                goal="Find the root cause of incidents",
                backstory="You investigate production incidents with the tools you have.",
                tools=crew_tools,
                llm=llm,
                max_iter=14,
                verbose=False,
            )
            task = Task(description=scenario.goal, expected_output="A short answer.", agent=agent)
            crew = Crew(agents=[agent], tasks=[task], verbose=False)
            recorder.record(scenario, crew.kickoff, provider.force_flush)
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
