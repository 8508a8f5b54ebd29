"""Record a LangGraph ReAct agent through OpenInference's or OpenLLMetry's LangChain instrumentor.

    python bench/corpus/record/langgraph_react.py --instrumentation openinference|openllmetry

Needs ``langgraph``, ``langchain-openai`` and the instrumentor (not the project's venv:
see bench/corpus/record/README.md). ``create_react_agent`` with ``ChatOpenAI`` pointed at
the fake model on loopback runs every scenario; a failing tool answers the model with its
error text (``handle_tool_error``), as LangChain tools do.
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
    parser.add_argument(
        "--instrumentation", choices=("openinference", "openllmetry"), default="openinference"
    )
    args = parser.parse_args()

    from langchain_core.tools import StructuredTool, ToolException
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    framework = f"langgraph-{args.instrumentation}"
    tools = Tools()
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        if args.instrumentation == "openinference":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            instrumentor = LangChainInstrumentor()
        else:
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor

            instrumentor = LangchainInstrumentor()
        instrumentor.instrument(tracer_provider=provider)

        def lc_tool(function):
            def run(**kwargs):
                try:
                    return function(**kwargs)
                except ToolFailure as exc:
                    raise ToolException(str(exc)) from exc

            t = StructuredTool.from_function(
                func=function, name=function.__name__, description=function.__doc__
            )
            t.func = run
            t.handle_tool_error = True
            return t

        recorder = Recorder(framework, args.instrumentation, out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            llm = ChatOpenAI(model="gpt-4o-mini", base_url=model.base_url, api_key="test-key", max_retries=0)
            agent = create_react_agent(llm, [lc_tool(f) for f in tools.functions()], name="oncall_agent")
            recorder.record(
                scenario,
                lambda a=agent, g=scenario.goal: a.invoke(
                    {"messages": [("user", g)]}, {"recursion_limit": 40}
                ),
                provider.force_flush,
            )
        instrumentor.uninstrument()
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
