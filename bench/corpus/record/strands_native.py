"""Record a Strands agent through its own OpenTelemetry tracing (GenAI conventions).

    python bench/corpus/record/strands_native.py [--latest]

Needs ``strands-agents[openai]`` (a venv of its own: bench/corpus/record/README.md).
``OpenAIModel`` points at the fake model on loopback (Strands streams, the fake model
answers as server-sent events); Strands traces through the global tracer provider, set
here to an SDK provider with the real OTLP/HTTP exporter. ``--latest`` sets
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (messages as
``gen_ai.input.messages`` / ``gen_ai.output.messages``) instead of Strands' default form.
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--latest", action="store_true")
    args = parser.parse_args()
    if args.latest:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    from opentelemetry import trace
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    framework = "strands-native-latest" if args.latest else "strands-native"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        trace.set_tracer_provider(provider)
        recorder = Recorder(framework, "genai-native", out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            agent = Agent(
                name="oncall_agent",
                model=OpenAIModel(
                    client_args={"base_url": model.base_url, "api_key": "test-key"}, model_id="gpt-4o-mini"
                ),
                tools=[tool(fn) for fn in tools.functions()],
                system_prompt="You are an on-call assistant. Use the tools, then answer.",
                callback_handler=None,
            )
            recorder.record(scenario, lambda a=agent, g=scenario.goal: a(g), provider.force_flush)
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
