"""Regenerate ``examples/agent_traces.otlp.jsonl``: five small agent runs recorded with the
real OpenTelemetry SDK in three attribute conventions, encoded by the real OTLP encoder and
written as the Collector file exporter writes them (one TracesData per line).

    python examples/make_samples.py

The runs: a looping grep (OpenInference), an A-B-A-B file-reading cycle (GenAI), healthy
pagination (GenAI), status polling that makes progress (OpenLLMetry), and a plain HTTP
request that is not an agent run at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, StatusCode, Tracer

from otel_semloop.otlp import traces_to_json

OUT = Path(__file__).with_name("agent_traces.otlp.jsonl")
_clock = [1_767_225_600_000_000_000]


def _tick(ms: int = 40) -> int:
    _clock[0] += ms * 1_000_000
    return _clock[0]


@contextmanager
def _span(tracer: Tracer, name: str, attributes: dict) -> Iterator[Span]:
    span = tracer.start_span(name, attributes=attributes, start_time=_tick())
    try:
        yield span
    finally:
        span.end(end_time=_tick())


def looping_grep_openinference(tracer: Tracer) -> None:
    thought = (
        "The handler for guest checkout must be somewhere in the repository, so I will search the "
        "whole codebase for it again and read what the search returns before deciding what to change "
        "in the order service and its error handling path."
    )
    with _span(
        tracer, "engineer", {"openinference.span.kind": "AGENT", "input.value": "Fix the 500 on /api/orders"}
    ) as agent:
        ctx = _ctx(agent)
        for _ in range(6):
            with _child(tracer, ctx, "ChatCompletion", _oi_llm(thought)):
                pass
            with _child(
                tracer,
                ctx,
                "grep",
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": "grep",
                    "input.value": json.dumps({"pattern": "guest_checkout", "path": "."}),
                    "output.value": "no matches",
                },
            ):
                pass


def alternating_files_genai(tracer: Tracer) -> None:
    agent_attrs = _genai_agent("coder", "Make the flaky billing test pass")
    with _span(tracer, "invoke_agent coder", agent_attrs) as agent:
        ctx = _ctx(agent)
        for _ in range(4):
            for path, body in (
                ("billing.py", "def charge(): ..."),
                ("test_billing.py", "def test_charge(): ..."),
            ):
                with _child(
                    tracer, ctx, "execute_tool read_file", _genai_tool("read_file", {"path": path}, body)
                ):
                    pass


def healthy_pagination_genai(tracer: Tracer) -> None:
    with _span(tracer, "invoke_agent reporter", _genai_agent("reporter", "Count all open orders")) as agent:
        ctx = _ctx(agent)
        for page in range(1, 6):
            result = json.dumps(
                {"page": page, "orders": [f"ord-{page}{i}" for i in range(3)], "more": page < 5}
            )
            with _child(
                tracer, ctx, "execute_tool list_orders", _genai_tool("list_orders", {"page": page}, result)
            ):
                pass
        with _child(tracer, ctx, "chat gpt-4o", _genai_chat("There are 15 open orders.")):
            pass


def polling_openllmetry(tracer: Tracer) -> None:
    with _span(
        tracer,
        "deploy.workflow",
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "deployer",
            "traceloop.entity.input": json.dumps({"goal": "Deploy build 812 and wait until it is live"}),
        },
    ) as agent:
        ctx = _ctx(agent)
        for status in ("queued", "running 20%", "running 60%", "running 90%", "live"):
            with _child(
                tracer,
                ctx,
                "check_status.tool",
                {
                    "traceloop.span.kind": "tool",
                    "traceloop.entity.name": "check_status",
                    "traceloop.entity.input": json.dumps({"build": 812}),
                    "traceloop.entity.output": json.dumps({"status": status}),
                },
            ):
                pass


def plain_http(tracer: Tracer) -> None:
    with _span(
        tracer, "GET /healthz", {"http.request.method": "GET", "http.response.status_code": 200}
    ) as span:
        span.set_status(StatusCode.OK)


def _ctx(span: Span):
    from opentelemetry.trace import set_span_in_context

    return set_span_in_context(span)


@contextmanager
def _child(tracer: Tracer, ctx, name: str, attributes: dict) -> Iterator[Span]:
    span = tracer.start_span(name, context=ctx, attributes=attributes, start_time=_tick())
    try:
        yield span
    finally:
        span.end(end_time=_tick())


def _oi_llm(text: str) -> dict:
    return {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": text,
    }


def _genai_agent(name: str, goal: str) -> dict:
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": name,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": goal}]}]),
    }


def _genai_tool(name: str, arguments: dict, result: str) -> dict:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(arguments),
        "gen_ai.tool.call.result": result,
    }


def _genai_chat(text: str) -> dict:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}]
        ),
    }


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sample-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("otel-semloop.examples")
    runs = (
        looping_grep_openinference,
        alternating_files_genai,
        healthy_pagination_genai,
        polling_openllmetry,
        plain_http,
    )
    lines = []
    for run in runs:
        exporter.clear()
        run(tracer)
        lines.append(traces_to_json(encode_spans(exporter.get_finished_spans())))
    with OUT.open("wb") as fp:
        for line in lines:
            fp.write(orjson.dumps(line) + b"\n")
    print(f"wrote {len(lines)} lines to {OUT}")


if __name__ == "__main__":
    main()
