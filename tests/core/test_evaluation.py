"""The evaluation record: one shape for the span event, the log record and the Phoenix annotation."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from otel_semloop.builder import build_trace
from otel_semloop.evaluation import (
    EVENT_NAME,
    EvaluationPublisher,
    evaluation_attributes,
    evaluation_record,
    logs_data_json,
)
from otel_semloop.model import SpanRecord
from otel_semloop.phoenix import PhoenixAnnotator, annotation_json
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label, Verdict
from otel_semloop.writeback import patches_for

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT = "00f067aa0ba902b7"


def looping_trace():
    spans = [
        SpanRecord(
            TRACE,
            ROOT,
            "",
            "invoke_agent fixer",
            0,
            100_000,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "fixer",
                "gen_ai.response.id": "resp-1",
            },
        ),
    ]
    for i in range(6):
        spans.append(
            SpanRecord(
                TRACE,
                f"{i + 1:016x}",
                ROOT,
                "execute_tool search",
                10 + i * 10,
                15 + i * 10,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": '{"q": "timeout"}',
                    "gen_ai.tool.call.result": "no results",
                },
            )
        )
    return build_trace(spans)


def test_a_loop_record_carries_the_genai_attributes_and_points_at_the_root():
    trace = looping_trace()
    verdict = Scorer().score(trace)
    record = evaluation_record(trace, verdict)
    assert verdict.label is Label.LOOP
    assert (record.trace_id, record.span_id, record.time_ns) == (TRACE, ROOT, 100_000)
    assert record.attributes == {
        "gen_ai.evaluation.name": "semloop.loop",
        "gen_ai.evaluation.score.value": verdict.score,
        "gen_ai.evaluation.score.label": "loop",
        "gen_ai.evaluation.explanation": verdict.reason,
        "gen_ai.response.id": "resp-1",
    }


def test_the_span_event_is_the_same_record():
    trace = looping_trace()
    verdict = Scorer().score(trace)
    (event,) = patches_for(trace, verdict)[ROOT].events
    assert event.name == EVENT_NAME
    assert dict(event.attributes) == dict(evaluation_record(trace, verdict).attributes)


def test_a_failed_evaluation_has_an_error_type_and_no_score():
    attrs = evaluation_attributes(Verdict.unscored("scoring budget exceeded"))
    assert attrs["error.type"] == "timeout" and attrs["gen_ai.evaluation.score.label"] == "unscored"
    assert "gen_ai.evaluation.score.value" not in attrs
    assert evaluation_attributes(Verdict.unscored("scoring failed: KeyError"))["error.type"] == "KeyError"
    assert "error.type" not in evaluation_attributes(Verdict(label=Label.NO_LOOP, score=1.0))


def memory_logs():
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider, exporter


def test_the_log_record_is_an_event_parented_to_the_evaluated_root():
    provider, exporter = memory_logs()
    trace = looping_trace()
    publisher = EvaluationPublisher(logger_provider=provider)
    publisher.publish_verdict(trace, Scorer().score(trace))
    (log,) = exporter.get_finished_logs()
    record = log.log_record
    assert record.event_name == EVENT_NAME
    assert (f"{record.trace_id:032x}", f"{record.span_id:016x}") == (TRACE, ROOT)
    assert record.attributes["gen_ai.evaluation.score.label"] == "loop"
    assert record.timestamp == 100_000
    assert log.instrumentation_scope.name == "otel_semloop"


def test_logs_follow_the_provider_unless_the_environment_says_otherwise(monkeypatch):
    trace = looping_trace()
    verdict = Scorer().score(trace)
    assert not EvaluationPublisher(logger_provider=NoOpLoggerProvider()).logs_enabled
    provider, exporter = memory_logs()
    monkeypatch.setenv("SEMLOOP_EVALUATION_LOGS", "false")
    EvaluationPublisher(logger_provider=provider).publish_verdict(trace, verdict)
    assert exporter.get_finished_logs() == ()
    monkeypatch.setenv("SEMLOOP_EVALUATION_LOGS", "true")
    EvaluationPublisher(logger_provider=provider).publish_verdict(trace, verdict)
    assert len(exporter.get_finished_logs()) == 1


def test_a_trace_that_was_not_evaluated_publishes_nothing():
    provider, exporter = memory_logs()
    publisher = EvaluationPublisher(logger_provider=provider)
    publisher.publish_verdict(looping_trace(), Verdict.unscored("no agent steps in trace"))
    assert exporter.get_finished_logs() == ()


def test_logs_data_json_is_otlp_json_with_hex_ids_and_the_event_name():
    trace = looping_trace()
    record = evaluation_record(trace, Scorer().score(trace))
    (resource_logs,) = logs_data_json([record], service_name="rescore")["resourceLogs"]
    (log,) = resource_logs["scopeLogs"][0]["logRecords"]
    assert (log["traceId"], log["spanId"], log["eventName"]) == (TRACE, ROOT, EVENT_NAME)
    assert {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "loop"}} in log["attributes"]
    assert log["timeUnixNano"] == "100000"


# -- Phoenix annotations, against a loopback server that behaves like Phoenix's API ------------


class FakePhoenix(BaseHTTPRequestHandler):
    """``POST /v1/span_annotations?sync=true`` answers 404 for span ids not yet "ingested",
    as Phoenix does; everything posted is recorded."""

    known: set[str] = set()
    posts: list[tuple[str, dict]] = []
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            self.posts.append((self.path, body))
            missing = [d["span_id"] for d in body["data"] if d["span_id"] not in self.known]
        if "sync=true" in self.path and missing:
            payload = json.dumps({"detail": f"Spans with IDs {', '.join(missing)} do not exist."}).encode()
            status = 404
        else:
            payload, status = b'{"data": []}', 200
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def fake_phoenix():
    from tests.e2e.http_thread import ServerThread

    FakePhoenix.known, FakePhoenix.posts = set(), []
    server = ServerThread("127.0.0.1", FakePhoenix)
    server.start()
    yield server
    server.stop()


def test_the_annotation_is_code_with_label_score_and_explanation():
    trace = looping_trace()
    verdict = Scorer().score(trace)
    item = annotation_json(evaluation_record(trace, verdict))
    assert item["span_id"] == ROOT and item["annotator_kind"] == "CODE" and item["name"] == "semloop.loop"
    assert item["result"] == {"label": "loop", "score": verdict.score, "explanation": verdict.reason}
    assert item["identifier"] == "otel-semloop"


def test_an_annotation_sent_before_its_span_is_ingested_is_retried_until_it_is(fake_phoenix):
    trace = looping_trace()
    annotator = PhoenixAnnotator(f"http://127.0.0.1:{fake_phoenix.port}", api_key="k", retry_seconds=20)
    publisher = EvaluationPublisher(logs=False, phoenix=annotator)
    publisher.publish_verdict(trace, Scorer().score(trace))
    threading.Timer(0.6, lambda: FakePhoenix.known.add(ROOT)).start()
    assert publisher.flush(timeout=15)
    assert annotator.sent == 1 and annotator.dropped == 0
    assert len(FakePhoenix.posts) >= 2, "the first post came before the span and was retried"
    path, body = FakePhoenix.posts[-1]
    assert path == "/v1/span_annotations?sync=true" and body["data"][0]["span_id"] == ROOT
    annotator.shutdown()


def test_an_unreachable_phoenix_costs_the_caller_nothing_and_is_counted():
    annotator = PhoenixAnnotator("http://127.0.0.1:9", retry_seconds=0.5, timeout=0.5)
    trace = looping_trace()
    record = evaluation_record(trace, Scorer().score(trace))
    annotator.submit(record)
    assert annotator.flush(timeout=10)
    assert annotator.sent == 0 and annotator.dropped == 1
    annotator.shutdown()
