"""End to end with the plain ``openai`` client and OpenTelemetry's own
``opentelemetry-instrumentation-openai-v2``.

With ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` that instrumentation puts
no message content on its chat spans: it emits each input message and each choice as a
log record (``gen_ai.user.message``, ``gen_ai.tool.message``, ``gen_ai.choice``, ...) in
the chat span's context. The app's spans go through ``SemloopSpanProcessor`` to a real
OTLP receiver, its log records through a real ``LoggerProvider`` to the app's own log
exporter, with semloop's log record processor added beside it. The model behind the
scripted server on loopback asks for the same tool call round after round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from tests.e2e.agent_app import run_untraced_tools_agent
from tests.e2e.contract import assert_delivered_exactly_once, assert_loop_verdict, assert_no_loop_verdict
from tests.e2e.fake_openai import LOOP_TOOL, FakeOpenAIServer, Script, healthy_script, looping_script
from tests.e2e.fixtures import Pipeline, Run, chat_agent_runner

LOOP_ROUNDS = 8


@pytest.fixture
def app_logs() -> Iterator[InMemoryLogRecordExporter]:
    """The application's own log exporter (every record the app emitted)."""
    yield InMemoryLogRecordExporter()


@pytest.fixture
def run_agent(
    pipeline: Pipeline,
    fake_openai: FakeOpenAIServer,
    app_logs: InMemoryLogRecordExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[Script], Run]]:
    """Runs the chat agent (only the LLM client instrumented, under a plain request span)
    with openai-v2 instrumented on this test's providers, content capture on."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)  # the log-record form
    logger_provider = LoggerProvider(shutdown_on_exit=False)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(app_logs))
    logger_provider.add_log_record_processor(pipeline.semloop.log_record_processor)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider, logger_provider=logger_provider)
    tracer = pipeline.provider.get_tracer("e2e.agent_app")
    try:
        with chat_agent_runner(pipeline, fake_openai, tracer, run_untraced_tools_agent) as run:
            yield run
    finally:
        instrumentor.uninstrument()
        logger_provider.shutdown()


def test_a_loop_whose_messages_are_log_records_is_flagged(
    run_agent, pipeline: Pipeline, app_logs: InMemoryLogRecordExporter
) -> None:
    run = run_agent(looping_script(rounds=LOOP_ROUNDS))

    received = pipeline.wait_delivered()
    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    chats = [s for s in received if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == LOOP_ROUNDS + 1
    # The spans carry no content: the tool calls exist only in the log records.
    assert not any(LOOP_TOOL in str(value) for s in chats for value in s.attributes.values())
    records = [data.log_record for data in app_logs.get_finished_logs()]
    choices = [r for r in records if r.event_name == "gen_ai.choice"]
    assert len(choices) == LOOP_ROUNDS + 1
    assert choices[0].body["message"]["tool_calls"][0]["function"]["name"] == LOOP_TOOL
    assert {f"{r.span_id:016x}" for r in choices} == {s.span_id for s in chats}

    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == "POST /triage"
    assert_loop_verdict(root)
    assert LOOP_TOOL in root.attributes["semloop.reason"]
    assert any(s.attributes.get("semloop.in_loop") for s in chats)
    stats = pipeline.semloop.stats()
    assert (stats["logs.held"], stats["logs.dropped"]) == (0, 0)


def test_a_healthy_run_whose_messages_are_log_records_is_not_flagged(run_agent, pipeline: Pipeline) -> None:
    run = run_agent(healthy_script())

    pipeline.wait_delivered()
    root = pipeline.receiver.root_of(run.trace_id)
    assert_no_loop_verdict(root)
