"""GenAI log records read by the span processor: a real TracerProvider and LoggerProvider,
the application's own log exporter downstream, and an agent whose spans carry no content
(its messages and tool calls are log records, as ``opentelemetry-instrumentation-openai-v2``
emits them)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from otel_semloop.conventions import LogEvent
from otel_semloop.grouping import TraceBuffer
from otel_semloop.processor.logs import HeldLogs
from otel_semloop.processor.worker import SpanEvents
from tests.support.log_record_agent import CHAT, ROUNDS, SPANS
from tests.support.log_record_agent import chat_agent_with_log_records as log_record_agent
from tests.support.processor_support import Pipeline, pipeline, root_of


@dataclass
class Logs:
    provider: LoggerProvider
    exported: InMemoryLogRecordExporter

    @property
    def logger(self) -> Any:
        return self.provider.get_logger("opentelemetry.instrumentation.openai_v2")


@contextmanager
def span_and_log_pipeline(register: bool = True, **options: Any) -> Iterator[tuple[Pipeline, Logs]]:
    """The span pipeline of the processor tests, and a LoggerProvider exporting every
    record to memory (the application's exporter) with semloop's log record processor
    added beside it when ``register``."""
    with pipeline(**options) as line:
        provider = LoggerProvider(shutdown_on_exit=False)
        exported = InMemoryLogRecordExporter()
        provider.add_log_record_processor(SimpleLogRecordProcessor(exported))
        if register:
            provider.add_log_record_processor(line.processor.log_record_processor)
        try:
            yield line, Logs(provider, exported)
        finally:
            provider.shutdown()


def chat_agent_with_log_records(line: Pipeline, logs: Logs, rounds: int = ROUNDS) -> int:
    """The looping chat agent of :mod:`tests.support.log_record_agent` on this pipeline."""
    return log_record_agent(line.tracer, logs.logger, rounds)


@pytest.mark.parametrize("register", [True, False], ids=["log-processor-registered", "spans-only"])
def test_a_loop_whose_content_is_in_log_records_is_found_only_with_the_log_processor(register: bool) -> None:
    with span_and_log_pipeline(register=register) as (line, logs):
        emitted = chat_agent_with_log_records(line, logs)
        root = root_of(line.wait_exported(SPANS))
        if register:
            assert root.attributes["semloop.label"] == "loop", root.attributes
            assert root.attributes["semloop.loop.detected"] is True
            assert "search_logs" in root.attributes["semloop.reason"]
            assert "action_cycle" in root.attributes["semloop.signals"]
            assert any(s.attributes.get("semloop.in_loop") for s in line.exported_spans())
        else:
            # What a spans-only reading makes of it: steps with nothing to read.
            assert root.attributes["semloop.label"] == "unscored", root.attributes
            assert root.attributes["semloop.loop.detected"] is False
            assert root.attributes["semloop.unscored.reason"] == f"step content not readable ({ROUNDS} steps)"
        # The application's own log exporter got every record, unchanged.
        records = [data.log_record for data in logs.exported.get_finished_logs()]
        assert len(records) == emitted
        assert records[-1].event_name == "gen_ai.choice"
        assert records[-1].body["message"]["tool_calls"][0]["function"]["name"] == "search_logs"
        stats = line.processor.stats()
        assert stats["logs.held"] == 0  # the released trace took its records with it
        assert stats["logs.dropped"] == 0


def test_records_without_a_span_context_or_a_genai_name_are_ignored() -> None:
    with span_and_log_pipeline() as (line, logs):
        logger = logs.logger
        logger.emit(event_name="gen_ai.choice", body={"index": 0})  # no span around it
        unsampled = SpanContext(0xAB, 0xCD, is_remote=False, trace_flags=TraceFlags(TraceFlags.DEFAULT))
        logger.emit(
            event_name="gen_ai.choice",
            body={"index": 0},
            context=set_span_in_context(NonRecordingSpan(unsampled)),
        )
        with line.tracer.start_as_current_span("chat fake-gpt", attributes=CHAT):
            logger.emit(event_name="app.checkout.retry", body={"gen_ai": "no"})
            logger.emit(body="a plain log line", attributes={"gen_ai.system": "openai"})
            logger.emit(body="named by attribute", attributes={"event.name": "db.query"})
            assert line.processor.stats()["logs.held"] == 0
            # The control: GenAI names, by event_name and by the event.name attribute, are kept.
            logger.emit(event_name="gen_ai.user.message", body={"content": "hi"})
            logger.emit(body={"content": "hi"}, attributes={"event.name": "gen_ai.user.message"})
            assert line.processor.stats()["logs.held"] == 2
        line.wait_exported(1)
        assert len(logs.exported.get_finished_logs()) == 7


def test_the_cap_drops_the_oldest_records_and_counts_them() -> None:
    with span_and_log_pipeline(max_log_events=3, idle_seconds=30) as (line, logs):
        with line.tracer.start_as_current_span("chat fake-gpt", attributes=CHAT):
            for i in range(5):
                logs.logger.emit(event_name="gen_ai.user.message", body={"content": f"message {i}"})
            stats = line.processor.stats()
            assert (stats["logs.held"], stats["logs.dropped"]) == (3, 2)
        line.wait_exported(1)
        assert len(logs.exported.get_finished_logs()) == 5  # dropped from semloop's hold only
        assert line.processor.stats()["logs.held"] == 0


def test_emitting_a_record_does_not_wait_for_the_processor_lock() -> None:
    with span_and_log_pipeline(idle_seconds=30) as (line, logs):
        with line.tracer.start_as_current_span("chat fake-gpt", attributes=CHAT) as span:
            emitted = threading.Event()

            def emit() -> None:
                context = set_span_in_context(span)  # another thread: the span passed explicitly
                logs.logger.emit(event_name="gen_ai.user.message", body={"content": "hi"}, context=context)
                emitted.set()

            with line.processor._lock:  # the worker, a flush or stats() holding it
                thread = threading.Thread(target=emit)
                thread.start()
                returned = emitted.wait(5)
            thread.join()
            assert returned
            assert line.processor.stats()["logs.held"] == 1  # held once the lock is free
        line.wait_exported(1)


def event(span: int, text: str) -> LogEvent:
    return LogEvent(format(span, "016x"), "gen_ai.user.message", 0, {}, {"content": text})


def test_held_logs_drop_the_oldest_trace_oldest_event_first_and_release_by_trace() -> None:
    held = HeldLogs(cap=3)
    held.add(1, event(1, "a"))
    held.add(2, event(2, "b"))
    held.add(1, event(1, "c"))
    held.add(2, event(2, "d"))  # over the cap: trace 1's oldest ("a") goes
    assert (held.held, held.dropped) == (3, 1)
    held.add(3, event(3, "e"))  # then trace 1's next ("c"), and trace 1 is gone
    assert (held.held, held.dropped) == (3, 2)
    assert held.take(1) == ()
    # A chunk of a big trace leaves the events for the next chunk; the final release takes them.
    assert [e.body["content"] for e in held.take(2, final=False)] == ["b", "d"]
    assert held.held == 3
    assert [e.body["content"] for e in held.take(2)] == ["b", "d"]
    assert held.held == 1
    assert held.take(2) == ()
    assert [e.body["content"] for e in held.take(3)] == ["e"]
    assert held.held == 0


def test_a_record_past_a_full_event_queue_is_counted_not_queued() -> None:
    events = SpanEvents(limit=1)
    events.add_log(1, event(1, "a"))
    events.add_log(1, event(1, "b"))  # the queue is full (the worker is not draining it)
    held: HeldLogs[LogEvent] = HeldLogs(cap=10)
    events.apply(TraceBuffer(), held)
    assert [e.body["content"] for e in held.take(1)] == ["a"]
    assert events.logs_dropped == 1


class _Garbage:
    trace_id = "not an int"
    span_id = object()
    trace_flags = None
    attributes = {"event.name": "gen_ai.choice"}
    event_name = None


@pytest.mark.parametrize("garbage", [None, object(), 42, "text", _Garbage()], ids=repr)
def test_on_emit_given_garbage_does_not_raise(garbage: Any) -> None:
    with span_and_log_pipeline() as (line, _logs):
        line.processor.log_record_processor.on_emit(garbage)
        assert line.processor.stats()["logs.held"] == 0
        assert line.processor.stats()["errors.on_emit"] == 1  # counted, not raised
        assert line.processor.log_record_processor.force_flush() is True
