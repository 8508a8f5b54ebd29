"""Record pydantic-ai through its own OpenTelemetry instrumentation (GenAI conventions).

    python bench/corpus/record/pydantic_ai_native.py [--version N]

A real ``pydantic_ai.Agent`` on ``OpenAIChatModel`` (pointed at the fake model on
loopback) with the scenario tools, instrumented with ``InstrumentationSettings`` on an SDK
provider whose real OTLP/HTTP exporter posts to the JSON lines receiver. ``--version``
picks pydantic-ai's instrumentation version (``InstrumentationSettings(version=N)``: 1 to 5
in the 1.x releases; 1 and 2 write ``agent run`` / ``running tool`` spans with
``tool_arguments`` / ``tool_response``, 3 and later ``invoke_agent`` / ``execute_tool``
spans with ``gen_ai.tool.call.*``) and records into ``pydantic-ai-native-vN``; without it,
the installed release's default version is recorded into ``pydantic-ai-native``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.corpus.record.harness import (
    SCENARIOS,
    FakeModel,
    OtlpJsonLinesReceiver,
    Recorder,
    ToolFailure,
    Tools,
    otlp_provider,
    out_dir,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", type=int, default=None)
    args = parser.parse_args()

    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    framework = "pydantic-ai-native" if args.version is None else f"pydantic-ai-native-v{args.version}"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        settings = InstrumentationSettings(tracer_provider=provider)
        if args.version is not None:
            settings = InstrumentationSettings(tracer_provider=provider, version=args.version)
        Agent.instrument_all(settings)
        # Versions 1 and 2 name tools' arguments and results in attributes of their own.
        convention = "pydantic-ai" if args.version in (1, 2) else "genai-native"
        recorder = Recorder(framework, convention, out_dir(framework), receiver)

        def retrying(function):  # a failing tool tells the model, as pydantic-ai tools do
            def wrapper(*a, **kw):
                try:
                    return function(*a, **kw)
                except ToolFailure as exc:
                    raise ModelRetry(str(exc)) from exc

            wrapper.__name__, wrapper.__doc__ = function.__name__, function.__doc__
            wrapper.__signature__ = __import__("inspect").signature(function)
            wrapper.__annotations__ = function.__annotations__
            return wrapper

        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            agent = Agent(
                OpenAIChatModel(
                    "gpt-4o-mini", provider=OpenAIProvider(base_url=model.base_url, api_key="test-key")
                ),
                name="oncall-agent",
                instructions="You are an on-call assistant. Use the tools, then answer.",
                tools=[retrying(f) for f in tools.functions()],
                retries=20,
            )
            recorder.record(scenario, lambda a=agent, g=scenario.goal: a.run_sync(g), provider.force_flush)
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
