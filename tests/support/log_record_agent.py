"""A chat agent whose spans carry no content: its messages and tool calls are GenAI log
records in each chat span's context, as ``opentelemetry-instrumentation-openai-v2`` emits
them. Used by every front door that reads log records."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from opentelemetry.exporter.otlp.proto.common._internal._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common._internal.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

ROUNDS = 8
#: Spans of one run: the request span and one chat span per round.
SPANS = ROUNDS + 1
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "fake-gpt"}
SYSTEM = {"gen_ai.system": "openai"}


def chat_agent_with_log_records(tracer: Tracer, logger: Any, rounds: int = ROUNDS) -> int:
    """A request span with one content-free chat span per round; each chat emits its input
    messages and its choice as GenAI log records in its span's context. The model asks
    ``search_logs({"query": "timeout"})`` every round and gets the same result back.
    Returns the number of log records emitted."""
    history: list[tuple[str, dict[str, Any]]] = [
        ("gen_ai.user.message", {"content": "Why is checkout failing?"})
    ]
    emitted = 0
    with tracer.start_as_current_span("POST /triage"):
        for i in range(rounds):
            call = {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "search_logs", "arguments": json.dumps({"query": "timeout"})},
            }
            with tracer.start_as_current_span("chat fake-gpt", attributes=CHAT):
                for name, body in history:
                    logger.emit(event_name=name, body=body, attributes=SYSTEM)
                choice = {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "tool_calls": [call]},
                }
                logger.emit(event_name="gen_ai.choice", body=choice, attributes=SYSTEM)
                emitted += len(history) + 1
            history.append(("gen_ai.assistant.message", {"tool_calls": [call]}))
            history.append(
                ("gen_ai.tool.message", {"content": "3 matches: upstream timeout", "id": f"call_{i}"})
            )
    return emitted


@dataclass
class Recorded:
    """One run of the log-record agent: its spans and log records as OTLP requests."""

    spans: Any
    logs: Any
    records: int

    @property
    def trace_id(self) -> str:
        return self.spans.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()

    def record_bytes(self) -> Counter[bytes]:
        return record_bytes(self.logs)


def record_bytes(request: Any) -> Counter[bytes]:
    """Each log record of an ``ExportLogsServiceRequest`` as its wire bytes, counted."""
    return Counter(
        record.SerializeToString()
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for record in sl.log_records
    )


def record_agent(rounds: int = ROUNDS) -> Recorded:
    """One run of the agent below on a real TracerProvider and LoggerProvider, recorded in
    memory and encoded by the SDK's own OTLP encoders (as its exporters send them)."""
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    resource = Resource.create({"service.name": "triage-agent"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    logger = logger_provider.get_logger("opentelemetry.instrumentation.openai_v2")
    emitted = chat_agent_with_log_records(tracer_provider.get_tracer("agent"), logger, rounds)
    logger_provider.shutdown()
    return Recorded(encode_spans(spans.get_finished_spans()), encode_logs(logs.get_finished_logs()), emitted)
