"""OTLP logs through the collector service, on real loopback sockets: an SDK app's spans and
log records (an agent whose messages and tool calls are GenAI log records, as
``opentelemetry-instrumentation-openai-v2`` emits them) go to the service, which forwards
every record once, unchanged, to a real OTLP receiver and scores the trace with the
records' content on its spans.

The app's telemetry is recorded in memory and encoded by the SDK's own OTLP encoders, so a
test chooses the order and grouping of the requests (records before spans, after them, in
separate requests, after the trace left).
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import orjson
import pytest

from otel_semloop.otlp.codec import logs_to_json
from otel_semloop.service import ServiceConfig
from tests.e2e.otlp_receiver import GrpcOtlpReceiver, HttpOtlpReceiver
from tests.service.support import LOGS_EXPORT, grpc_export, running, wait_for
from tests.support.log_record_agent import ROUNDS, SPANS, record_agent


@pytest.fixture
def downstream() -> Iterator[GrpcOtlpReceiver]:
    with GrpcOtlpReceiver() as receiver:
        yield receiver


def root_attributes(receiver: Any, trace_id: str) -> dict[str, Any]:
    received = receiver.wait_until(lambda spans: sum(s.trace_id == trace_id for s in spans) >= SPANS)
    assert sum(s.trace_id == trace_id for s in received) == SPANS
    return dict(receiver.root_of(trace_id).attributes)


@pytest.mark.parametrize(
    ("order", "processes"),
    [("records_first", 2), ("spans_first", 2), ("records_first", 0)],
    ids=["records-first", "spans-first", "records-first-threads"],
)
def test_a_loop_whose_content_is_in_log_records_is_flagged_and_every_record_forwarded_once(
    downstream: GrpcOtlpReceiver, order: str, processes: int
) -> None:
    run = record_agent()
    requests = [(LOGS_EXPORT, run.logs), (None, run.spans)]
    if order == "spans_first":
        requests.reverse()
    with running(downstream, grace_seconds=1.0, scoring_processes=processes) as service:
        for method, request in requests:
            grpc_export(service.grpc_port, request, **({"method": method} if method else {}))
        root = root_attributes(downstream, run.trace_id)
        assert root["semloop.label"] == "loop", root
        assert "search_logs" in root["semloop.reason"]
        received = downstream.wait_for_log_records(run.records)
        stats = service.stats()
    # Every record once, byte for byte as the app sent it.
    assert Counter(r.wire for r in received) == run.record_bytes()
    assert stats["log_records.received"] == run.records
    assert stats["log_records.attached"] == run.records
    assert stats["export.log_records.sent"] == run.records
    assert stats.get("log_records.late", 0) == 0


def test_without_its_log_records_the_same_trace_is_unscored(downstream: GrpcOtlpReceiver) -> None:
    run = record_agent()
    with running(downstream) as service:
        grpc_export(service.grpc_port, run.spans)
        root = root_attributes(downstream, run.trace_id)
    assert root["semloop.label"] == "unscored"
    assert root["semloop.unscored.reason"] == f"step content not readable ({ROUNDS} steps)"


def test_records_of_a_trace_that_already_left_are_forwarded_only_and_counted_late(
    downstream: GrpcOtlpReceiver,
) -> None:
    run = record_agent()
    with running(downstream) as service:
        grpc_export(service.grpc_port, run.spans)
        root = root_attributes(downstream, run.trace_id)
        grpc_export(service.grpc_port, run.logs, method=LOGS_EXPORT)
        received = downstream.wait_for_log_records(run.records)
        wait_for(lambda: service.stats().get("log_records.late", 0) == run.records, what="late records")
        stats = service.stats()
    assert root["semloop.label"] == "unscored"  # scored without them: they came too late
    assert Counter(r.wire for r in received) == run.record_bytes()
    assert stats["log_records.held"] == 0
    assert stats.get("log_records.attached", 0) == 0


def test_past_the_cap_the_oldest_held_records_are_dropped_from_the_hold_but_all_forwarded(
    downstream: GrpcOtlpReceiver,
) -> None:
    run = record_agent(rounds=2)
    cap = 3
    with running(downstream, max_log_events=cap, idle_seconds=30) as service:
        grpc_export(service.grpc_port, run.logs, method=LOGS_EXPORT)
        received = downstream.wait_for_log_records(run.records)
        stats = service.stats()
    assert run.records > cap
    assert (stats["log_records.held"], stats["log_records.dropped"]) == (cap, run.records - cap)
    assert Counter(r.wire for r in received) == run.record_bytes()


def test_records_without_a_trace_context_or_a_genai_name_are_forwarded_and_not_held(
    downstream: GrpcOtlpReceiver,
) -> None:
    request = record_agent(rounds=1).logs
    records = request.resource_logs[0].scope_logs[0].log_records
    plain = records.add()
    plain.body.string_value = "a plain log line"
    other = records.add()
    other.CopyFrom(records[0])
    other.event_name = "app.checkout.retry"
    genai_records = len(records) - 2
    with running(downstream, idle_seconds=30) as service:
        grpc_export(service.grpc_port, request, method=LOGS_EXPORT)
        received = downstream.wait_for_log_records(len(records))
        stats = service.stats()
    assert len(received) == len(records)
    assert stats["log_records.received"] == len(records)
    assert stats["log_records.kept"] == stats["log_records.held"] == genai_records


def test_http_json_and_gzip_logs_reach_an_http_downstream_at_v1_logs_unchanged() -> None:
    run = record_agent(rounds=2)
    body = gzip.compress(orjson.dumps(logs_to_json(run.logs)))
    with HttpOtlpReceiver() as receiver, running(receiver) as service:
        response = httpx.post(
            f"http://127.0.0.1:{service.http_port}/v1/logs",
            content=body,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
        assert response.status_code == 200, response.text
        assert response.json() == {}
        received = receiver.wait_for_log_records(run.records)
    assert Counter(r.wire for r in received) == run.record_bytes()


def test_a_logs_body_that_is_not_an_export_request_gets_400_with_the_reason(
    downstream: GrpcOtlpReceiver,
) -> None:
    bad = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "xyz"}]}]}]}
    with running(downstream) as service:
        response = httpx.post(
            f"http://127.0.0.1:{service.http_port}/v1/logs",
            content=orjson.dumps(bad),
            headers={"content-type": "application/json"},
        )
        assert service.stats()["requests.refused.malformed"] == 1
    assert response.status_code == 400
    assert "resourceLogs[0].scopeLogs[0].logRecords[0].traceId" in response.json()["message"]


def test_logs_need_the_bearer_token_like_traces(downstream: GrpcOtlpReceiver) -> None:
    run = record_agent(rounds=1)
    with running(downstream, auth_token="s3cret") as service:
        with pytest.raises(grpc.RpcError) as refused:
            grpc_export(service.grpc_port, run.logs, method=LOGS_EXPORT)
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        response = httpx.post(
            f"http://127.0.0.1:{service.http_port}/v1/logs",
            content=run.logs.SerializeToString(),
            headers={"content-type": "application/x-protobuf"},
        )
        assert response.status_code == 401
        grpc_export(service.grpc_port, run.logs, method=LOGS_EXPORT, token="s3cret")
        received = downstream.wait_for_log_records(run.records)
    assert len(received) == run.records


def test_logs_survive_a_restart_with_the_durable_queue(tmp_path: Any) -> None:
    run = record_agent(rounds=2)
    queue = str(tmp_path / "queue.db")
    # The downstream is down: the records wait on disk through the shutdown.
    with running("http://127.0.0.1:9", durable_queue=queue, shutdown_timeout_seconds=0.5) as service:
        grpc_export(service.grpc_port, run.logs, method=LOGS_EXPORT)
    with GrpcOtlpReceiver() as receiver, running(receiver, durable_queue=queue) as service:
        received = receiver.wait_for_log_records(run.records)
        wait_for(lambda: service.stats()["durable.pending"] == 0, what="the durable queue to empty")
    assert Counter(r.wire for r in received) == run.record_bytes()


@pytest.mark.parametrize(
    ("environ", "url", "protocol"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318"}, "http://b:4318/v1/logs", "http/protobuf"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318/v1/traces"},
            "http://b:4318/v1/logs",
            "http/protobuf",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318/otlp",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1",
            },
            "http://b:4318/otlp/v1/logs",
            "http/protobuf",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318",
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://l:9/in",
            },
            "http://l:9/in",
            "http/protobuf",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "http://b:4317",
            "grpc",
        ),
    ],
    ids=["base-url", "traces-url", "generic-beside-traces", "logs-variable", "grpc"],
)
def test_the_logs_downstream_follows_the_otlp_exporter_variables(
    environ: dict[str, str], url: str, protocol: str
) -> None:
    environ = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", **environ}
    target = ServiceConfig.load(environ=environ).export_target("logs")
    assert (target.url, target.protocol) == (url, protocol)


def test_logs_headers_and_compression_fall_back_to_the_traces_ones_unless_set() -> None:
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4317",
        "OTEL_EXPORTER_OTLP_HEADERS": "api-key=one",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
    }
    shared = ServiceConfig.load(environ=environ).export_target("logs")
    assert (dict(shared.headers), shared.compression) == ({"api-key": "one"}, True)
    environ |= {
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "api-key=two",
        "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION": "none",
    }
    own = ServiceConfig.load(environ=environ).export_target("logs")
    assert (dict(own.headers), own.compression) == ({"api-key": "two"}, False)
    assert dict(ServiceConfig.load(environ=environ).export_target("traces").headers) == {"api-key": "one"}
