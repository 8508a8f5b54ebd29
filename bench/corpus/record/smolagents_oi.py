"""Record a smolagents ``ToolCallingAgent`` through OpenInference's smolagents instrumentor.

    python bench/corpus/record/smolagents_oi.py

Needs ``smolagents`` and ``openinference-instrumentation-smolagents`` (a venv of their own:
bench/corpus/record/README.md). ``OpenAIServerModel`` points at the fake model on loopback;
the closing answer of each scenario becomes smolagents' ``final_answer`` tool call.
"""

from __future__ import annotations

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
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    framework = "smolagents-openinference"
    tools = Tools()
    f = {fn.__name__: fn for fn in tools.functions()}

    @tool
    def search_logs(query: str) -> str:
        """Search the service logs for a query string.

        Args:
            query: what to search for.
        """
        return f["search_logs"](query)

    @tool
    def get_metrics(service: str, metric: str) -> str:
        """Read one metric of a service.

        Args:
            service: the service name.
            metric: the metric name.
        """
        return f["get_metrics"](service, metric)

    @tool
    def read_file(path: str) -> str:
        """Read a file from the repository.

        Args:
            path: the file path.
        """
        return f["read_file"](path)

    @tool
    def get_job_status(job_id: str) -> str:
        """Get the status of a background job.

        Args:
            job_id: the job id.
        """
        return f["get_job_status"](job_id)

    @tool
    def list_items(page: int) -> str:
        """List open issues, one page at a time.

        Args:
            page: the page number, from 1.
        """
        return f["list_items"](page)

    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        provider = otlp_provider(receiver.endpoint, framework)
        instrumentor = SmolagentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        recorder = Recorder(framework, "openinference", out_dir(framework), receiver)
        for scenario in SCENARIOS.values():
            model.script = scenario.script(final_tool="final_answer")
            tools.world = scenario.world()
            agent = ToolCallingAgent(
                tools=[search_logs, get_metrics, read_file, get_job_status, list_items],
                model=OpenAIServerModel("gpt-4o-mini", api_base=model.base_url, api_key="test-key"),
                max_steps=12,
                verbosity_level=0,
                name="oncall_agent",
            )
            recorder.record(scenario, lambda a=agent, g=scenario.goal: a.run(g), provider.force_flush)
        instrumentor.uninstrument()
        provider.shutdown()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
