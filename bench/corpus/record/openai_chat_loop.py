"""Record a hand-written agent loop on the plain ``openai`` client.

    python bench/corpus/record/openai_chat_loop.py --instrumentation openinference|openllmetry

The loop an app writes itself: ``chat.completions.create`` with tools, run each requested
tool, feed results back, stop at a final answer or 12 turns.

* ``openinference``: ``openinference-instrumentation-openai`` for the model calls, and the
  app's own AGENT and TOOL spans from ``OITracer`` (``@tracer.tool``).
* ``openllmetry``: ``traceloop-sdk`` (``Traceloop.init`` with the OTLP/HTTP exporter, its
  OpenAI instrumentation) and its ``@workflow`` / ``@tool`` decorators for the app's spans.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.corpus.record.harness import (
    SCENARIOS,
    TOOL_DOCS,
    FakeModel,
    OtlpJsonLinesReceiver,
    Recorder,
    ToolFailure,
    Tools,
    otlp_provider,
    out_dir,
)

PARAMS = {
    "search_logs": {"query": {"type": "string"}},
    "get_metrics": {"service": {"type": "string"}, "metric": {"type": "string"}},
    "read_file": {"path": {"type": "string"}},
    "get_job_status": {"job_id": {"type": "string"}},
    "list_items": {"page": {"type": "integer"}},
}
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": TOOL_DOCS[name],
            "parameters": {"type": "object", "properties": props, "required": list(props)},
        },
    }
    for name, props in PARAMS.items()
]


def agent_loop(client, question: str, call_tool, max_turns: int = 12) -> str:
    messages = [
        {"role": "system", "content": "You are an on-call assistant. Use the tools, then answer."},
        {"role": "user", "content": question},
    ]
    for _ in range(max_turns):
        completion = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=SCHEMAS)
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            try:
                result = call_tool(call.function.name, json.loads(call.function.arguments))
            except ToolFailure as exc:
                result = f"Error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--instrumentation", choices=("openinference", "openllmetry"), default="openinference"
    )
    args = parser.parse_args()
    from openai import OpenAI

    framework = f"openai-chat-loop-{args.instrumentation}"
    tools = Tools()
    functions = {f.__name__: f for f in tools.functions()}
    with OtlpJsonLinesReceiver() as receiver, FakeModel(next(iter(SCENARIOS.values())).script()) as model:
        recorder = Recorder(framework, args.instrumentation, out_dir(framework), receiver)
        client = OpenAI(base_url=model.base_url, api_key="test-key", max_retries=0)
        if args.instrumentation == "openinference":
            from openinference.instrumentation import OITracer, TraceConfig
            from openinference.instrumentation.openai import OpenAIInstrumentor

            provider = otlp_provider(receiver.endpoint, framework)
            instrumentor = OpenAIInstrumentor()
            instrumentor.instrument(tracer_provider=provider)
            tracer = OITracer(provider.get_tracer(__name__), config=TraceConfig())
            traced = {name: tracer.tool(name=name)(fn) for name, fn in functions.items()}

            def run(goal: str) -> str:
                with tracer.start_as_current_span("oncall-agent", openinference_span_kind="agent") as span:
                    span.set_input(goal)
                    answer = agent_loop(client, goal, lambda n, a: traced[n](**a))
                    span.set_output(answer)
                    return answer

            flush, close = provider.force_flush, provider.shutdown
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from traceloop.sdk import Traceloop
            from traceloop.sdk.decorators import tool, workflow
            from traceloop.sdk.instruments import Instruments

            Traceloop.init(
                app_name=framework,
                exporter=OTLPSpanExporter(endpoint=receiver.endpoint),
                telemetry_enabled=False,
                instruments={Instruments.OPENAI},
            )
            traced = {name: tool(name=name)(fn) for name, fn in functions.items()}

            @workflow(name="oncall-agent")
            def run(goal: str) -> str:
                return agent_loop(client, goal, lambda n, a: traced[n](**a))

            from opentelemetry import trace

            flush = trace.get_tracer_provider().force_flush
            close = lambda: None  # noqa: E731
        for scenario in SCENARIOS.values():
            model.script = scenario.script()
            tools.world = scenario.world()
            recorder.record(scenario, lambda g=scenario.goal: run(g), flush)
        close()
        recorder.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
