"""Record a LlamaIndex ``FunctionAgent`` through OpenInference's LlamaIndex instrumentor.

    python bench/corpus/record/llamaindex_oi.py

Needs ``llama-index-core``, ``llama-index-llms-openai`` and
``openinference-instrumentation-llama-index`` (a venv of their own:
bench/corpus/record/README.md). The agent streams its model calls; the fake model answers
them as server-sent events.
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
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    framework = "llamaindex-openinference"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        instrumentor = LlamaIndexInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        recorder = Recorder(framework, "openinference", out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            agent = FunctionAgent(
                name="oncall_agent",
                description="On-call assistant",
                tools=[FunctionTool.from_defaults(fn=fn) for fn in tools.functions()],
                llm=OpenAI(model="gpt-4o-mini", api_base=model.base_url, api_key="test-key", max_retries=0),
                system_prompt="You are an on-call assistant. Use the tools, then answer.",
            )

            async def run_once(a=agent, g=scenario.goal) -> None:
                await a.run(user_msg=g, max_iterations=40)

            recorder.record(scenario, lambda r=run_once: asyncio.run(r()), provider.force_flush)
        instrumentor.uninstrument()
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
