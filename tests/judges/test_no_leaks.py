"""Trace text copied into attributes and log lines: secrets redacted, control characters escaped
(tool names and ``error.type`` values are written by the agent, and by whatever it read)."""

from __future__ import annotations

import logging
import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_semloop import SemloopSpanProcessor
from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.scoring import Scorer
from otel_semloop.writeback import evaluation_event, verdict_attributes
from tests.support.traces import flat_trace

SECRET = "sk-proj-LEAKLEAKLEAK0123456789"
HOSTILE_TOOL = f"search\nERROR forged line {SECRET} \x1b[31m"


def hostile_trace() -> Trace:
    steps = []
    for i in range(6):
        steps.append(Step(StepKind.LLM, "chat", output="try again", output_text="try again", span_id=f"l{i}"))
        steps.append(
            Step(
                StepKind.TOOL,
                HOSTILE_TOOL,
                tool_arguments={"q": "x"},
                tool_result="denied",
                is_error=True,
                error_type=f"AuthenticationError: invalid key {SECRET} for ops@example.com",
                span_id=f"t{i}",
            )
        )
    return flat_trace(steps, trace_id="5" * 32, goal="do it")


def test_a_secret_or_newline_in_a_tool_name_or_error_type_never_reaches_the_reason_or_event():
    verdict = Scorer().score(hostile_trace())
    assert SECRET in verdict.reason  # the detectors quote what they saw...
    attrs = verdict_attributes(verdict)
    event = evaluation_event(verdict)
    written = [attrs["semloop.reason"], event.attributes["gen_ai.evaluation.explanation"]]
    for text in written:  # ...but nothing written carries it
        assert SECRET not in text and "ops@example.com" not in text
        assert "\n" not in text and "\x1b" not in text
        assert "[REDACTED:api_key]" in text and "search\\nERROR forged line" in text


def test_a_newline_in_a_tool_name_cannot_forge_a_live_guard_log_line(caplog):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(
        SemloopSpanProcessor(SimpleSpanProcessor(exporter), live_guard="warn", grace_seconds=0.05)
    )
    tracer = provider.get_tracer("leaks")
    with caplog.at_level(logging.WARNING, logger="otel_semloop"):
        with tracer.start_as_current_span(
            "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            for _ in range(8):
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": HOSTILE_TOOL,
                    "gen_ai.tool.call.arguments": '{"q": "x"}',
                    "gen_ai.tool.call.result": "no results",
                }
                with tracer.start_as_current_span(f"execute_tool {HOSTILE_TOOL}", attributes=attributes):
                    pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("live guard" in r.getMessage() for r in caplog.records):
            time.sleep(0.02)
        provider.shutdown()
    guard_lines = [r.getMessage() for r in caplog.records if "live guard" in r.getMessage()]
    assert guard_lines, "the live guard logged no warning"
    for line in guard_lines:
        assert "\n" not in line and "\x1b" not in line and SECRET not in line
        assert "search\\nERROR forged line" in line
