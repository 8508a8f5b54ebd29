"""Record a Google ADK ``LlmAgent`` through ADK's own OpenTelemetry tracing.

    python bench/corpus/record/google_adk_native.py [--content]

Needs ``google-adk`` and ``litellm`` (a venv of their own: bench/corpus/record/README.md).
The agent's model is ADK's ``LiteLlm`` pointed at the fake OpenAI-compatible model on
loopback; ADK traces through the global tracer provider, set here to an SDK provider with the
real OTLP/HTTP exporter. Each scenario runs in a fresh session of an ``InMemoryRunner``.
By default ADK records no message content (its default, kept: traces like these exist);
``--content`` opts in to the latest GenAI conventions with content on the spans
(``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``,
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
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

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download at import


def error_as_result(function):
    """ADK tools report failures in their result (an exception would end the run)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except ToolFailure as exc:
            return {"status": "error", "error_message": str(exc)}

    return wrapper


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--content", action="store_true")
    args = parser.parse_args()
    if args.content:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from opentelemetry import trace

    framework = "google-adk-native-content" if args.content else "google-adk-native"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        trace.set_tracer_provider(provider)
        from google.adk.agents import LlmAgent
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.runners import InMemoryRunner
        from google.genai import types

        recorder = Recorder(framework, "genai-native", out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            agent = LlmAgent(
                name="oncall_agent",
                model=LiteLlm(model="openai/gpt-4o-mini", api_base=model.base_url, api_key="test-key"),
                instruction="You are an on-call assistant. Use the tools, then answer.",
                tools=[error_as_result(f) for f in tools.functions()],
            )
            runner = InMemoryRunner(agent=agent, app_name="corpus")

            async def run_once(r=runner, g=scenario.goal) -> None:
                session = await r.session_service.create_session(app_name="corpus", user_id="u1")
                message = types.Content(role="user", parts=[types.Part(text=g)])
                async for _ in r.run_async(user_id="u1", session_id=session.id, new_message=message):
                    pass

            recorder.record(scenario, lambda f=run_once: asyncio.run(f()), provider.force_flush)
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
