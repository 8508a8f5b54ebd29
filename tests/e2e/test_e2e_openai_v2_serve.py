"""End to end through ``otel-semloop serve`` and ``otel-semloop rescore`` with OpenTelemetry's
own ``opentelemetry-instrumentation-openai-v2`` (content capture on: the messages and tool
calls are log records, not span attributes).

The application (a plain ``openai`` client against the scripted model server on loopback)
exports its traces and its logs over real OTLP/gRPC exporters to the service, which
forwards to a real OTLP receiver. The same telemetry, written as the Collector file
exporter writes it (OTLP JSON lines, one traces file and one logs file), is rescored.
Both front doors flag the loop: the log records are joined to their spans before scoring.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common._internal._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common._internal.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_semloop.batch.inputs import read_records
from otel_semloop.cli import main as cli_main
from otel_semloop.otlp.codec import logs_to_json, traces_to_json
from otel_semloop.service import ServiceConfig, ServiceThread
from tests.e2e.agent_app import run_untraced_tools_agent
from tests.e2e.contract import assert_delivered_exactly_once, assert_loop_verdict, assert_no_loop_verdict
from tests.e2e.fake_openai import LOOP_TOOL, FakeOpenAIServer, Script, healthy_script, looping_script
from tests.e2e.fixtures import BATCH_DELAY_MILLIS, Pipeline, Run, chat_agent_runner
from tests.e2e.otlp_receiver import GrpcOtlpReceiver

LOOP_ROUNDS = 8


class App:
    """The instrumented application: its spans and log records go to ``serve`` through real
    OTLP/gRPC exporters, and to memory (what it produced, for the files and the checks)."""

    def __init__(self, service: ServiceThread, receiver: GrpcOtlpReceiver) -> None:
        endpoint = f"http://127.0.0.1:{service.grpc_port}"
        resource = Resource.create({"service.name": "e2e-agent"})
        self.produced = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.produced))
        self.tracer_provider.add_span_processor(
            BatchSpanProcessor(
                OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=5),
                schedule_delay_millis=BATCH_DELAY_MILLIS,
            )
        )
        self.produced_logs = InMemoryLogRecordExporter()
        self.logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.produced_logs))
        self.logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(
                OTLPLogExporter(endpoint=endpoint, insecure=True, timeout=5),
                schedule_delay_millis=BATCH_DELAY_MILLIS,
            )
        )
        self.pipeline = Pipeline(provider=self.tracer_provider, produced=self.produced, receiver=receiver)

    def record_bytes(self) -> Counter[bytes]:
        request = encode_logs(self.produced_logs.get_finished_logs())
        return Counter(
            record.SerializeToString()
            for rl in request.resource_logs
            for sl in rl.scope_logs
            for record in sl.log_records
        )

    def write_files(self, directory: Path) -> tuple[Path, Path]:
        """What a Collector's file exporters would have written: a traces file and a logs
        file of OTLP JSON lines."""
        traces, logs = directory / "traces.jsonl", directory / "logs.jsonl"
        traces.write_bytes(
            orjson.dumps(traces_to_json(encode_spans(self.produced.get_finished_spans()))) + b"\n"
        )
        logs.write_bytes(
            orjson.dumps(logs_to_json(encode_logs(self.produced_logs.get_finished_logs()))) + b"\n"
        )
        return traces, logs

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)  # the log-record form
    with GrpcOtlpReceiver() as receiver:
        config = ServiceConfig(
            grpc="127.0.0.1:0",
            http=None,
            export_endpoint=receiver.endpoint,
            grace_seconds=0.5,  # the logs exporter's batch and the spans' arrive apart
            tick_seconds=0.02,
            idle_seconds=30,
            shutdown_timeout_seconds=5,
        )
        with ServiceThread(config) as service:
            application = App(service, receiver)
            try:
                yield application
            finally:
                application.shutdown()


@pytest.fixture
def run_agent(app: App, fake_openai: FakeOpenAIServer) -> Iterator[Callable[[Script], Run]]:
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=app.tracer_provider, logger_provider=app.logger_provider)
    tracer = app.tracer_provider.get_tracer("e2e.agent_app")
    try:
        with chat_agent_runner(app.pipeline, fake_openai, tracer, run_untraced_tools_agent) as run:
            yield run
    finally:
        instrumentor.uninstrument()


def rescored_root(app: App, tmp_path: Path, trace_id: str) -> dict:
    traces, logs = app.write_files(tmp_path)
    out = tmp_path / "scored.jsonl"
    assert cli_main(["rescore", str(traces), str(logs), "-o", str(out), "--quiet"]) in (0, 1)
    roots = [r for r in read_records(out) if r.trace_id == trace_id and not r.parent_span_id]
    assert len(roots) == 1
    return dict(roots[0].attributes)


def test_a_loop_whose_messages_are_log_records_is_flagged_by_serve_and_by_rescore(
    run_agent: Callable[[Script], Run], app: App, tmp_path: Path
) -> None:
    run = run_agent(looping_script(rounds=LOOP_ROUNDS))
    app.logger_provider.force_flush()

    pipeline = app.pipeline
    received = pipeline.wait_delivered()
    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    chats = [s for s in received if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == LOOP_ROUNDS + 1
    # The spans carry no content: the tool calls exist only in the log records.
    assert not any(LOOP_TOOL in str(value) for s in chats for value in s.attributes.values())
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == "POST /triage"
    assert_loop_verdict(root)
    assert LOOP_TOOL in root.attributes["semloop.reason"]
    # Every log record the app emitted reached the downstream once, as it was sent.
    expected = app.record_bytes()
    assert sum(expected.values()) > LOOP_ROUNDS
    arrived = pipeline.receiver.wait_for_log_records(sum(expected.values()))
    assert Counter(r.wire for r in arrived) == expected

    rescored = rescored_root(app, tmp_path, run.trace_id)
    assert rescored["semloop.label"] == root.attributes["semloop.label"] == "loop"
    assert rescored["semloop.signals"] == root.attributes["semloop.signals"]


def test_a_healthy_run_whose_messages_are_log_records_is_not_flagged_by_either(
    run_agent: Callable[[Script], Run], app: App, tmp_path: Path
) -> None:
    run = run_agent(healthy_script())
    app.logger_provider.force_flush()
    app.pipeline.wait_delivered()
    root = app.pipeline.receiver.root_of(run.trace_id)
    assert_no_loop_verdict(root)
    assert rescored_root(app, tmp_path, run.trace_id)["semloop.label"] == root.attributes["semloop.label"]
