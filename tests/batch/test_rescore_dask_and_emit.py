"""Scale-out and evaluations only: ``--engine dask`` writes what the single process writes;
``--emit evaluations`` writes (or sends) one evaluation record per scored trace and no span."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

from otel_semloop.cli import main
from tests.batch.rescore_data import agent_lines, roots, write_jsonl

LINES = agent_lines(n_traces=12, per_line=9)


def test_dask_output_is_byte_identical_to_the_single_process_output(tmp_path):
    distributed = pytest.importorskip("distributed")
    first = write_jsonl(tmp_path / "a.jsonl", LINES[:7])
    second = write_jsonl(tmp_path / "b.jsonl", LINES[7:])  # traces straddle the two files
    local = tmp_path / "local.jsonl"
    assert main(["rescore", str(first), str(second), "-o", str(local), "-q"]) == 0
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = tmp_path / "dask.jsonl"
        code = main(
            [
                "rescore",
                str(first),
                str(second),
                "-o",
                str(on_dask),
                "-q",
                "--engine",
                "dask",
                "--scheduler",
                cluster.scheduler_address,
            ]
        )
    assert code == 0
    assert on_dask.read_bytes() == local.read_bytes()


def test_emit_evaluations_writes_one_log_record_per_scored_trace_and_no_span(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", LINES)
    scored = tmp_path / "scored.jsonl"
    assert main(["rescore", str(source), "-o", str(scored), "-q"]) == 0
    expected = {
        (tid, r.span_id): r.attributes["semloop.label"]
        for tid, r in roots(scored).items()
        if "semloop.label" in r.attributes
    }
    out = tmp_path / "evaluations.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q", "--emit", "evaluations"]) == 0
    found = {}
    for line in out.read_bytes().splitlines():
        doc = orjson.loads(line)
        assert "resourceSpans" not in doc
        for rl in doc["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                for rec in sl["logRecords"]:
                    assert rec["eventName"] == "gen_ai.evaluation.result"
                    attrs = {kv["key"]: kv["value"] for kv in rec["attributes"]}
                    assert attrs["gen_ai.evaluation.name"] == {"stringValue": "semloop.loop"}
                    found[(rec["traceId"], rec["spanId"])] = attrs["gen_ai.evaluation.score.label"][
                        "stringValue"
                    ]
    assert found == expected
    again = tmp_path / "again.jsonl"
    assert main(["rescore", str(source), "-o", str(again), "-q", "--emit", "evaluations"]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_carrier_spans_are_children_of_and_linked_to_each_root(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", LINES)
    out = tmp_path / "carriers.jsonl"
    assert (
        main(
            [
                "rescore",
                str(source),
                "-o",
                str(out),
                "-q",
                "--emit",
                "evaluations",
                "--evaluations-as",
                "spans",
            ]
        )
        == 0
    )
    spans = [
        s
        for line in out.read_bytes().splitlines()
        for s in orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    ]
    assert len(spans) == 12
    for span in spans:
        assert span["links"] == [{"traceId": span["traceId"], "spanId": span["parentSpanId"]}]
        assert [e["name"] for e in span["events"]] == ["gen_ai.evaluation.result"]


class _Collector(BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]] = []
    refuse_first = 1

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if type(self).refuse_first > 0:
            type(self).refuse_first -= 1
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.end_headers()
            return
        type(self).bodies.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_export_endpoint_sends_the_log_records_by_otlp_http_and_retries_a_503(tmp_path):
    pytest.importorskip("httpx")
    _Collector.bodies = []
    _Collector.refuse_first = 1
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        source = write_jsonl(tmp_path / "in.jsonl", LINES)
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        assert (
            main(["rescore", str(source), "-q", "--emit", "evaluations", "--export-endpoint", endpoint]) == 0
        )
    finally:
        server.shutdown()
    assert [path for path, _ in _Collector.bodies] == ["/v1/logs"]
    data = LogsData.FromString(_Collector.bodies[0][1])
    records = data.resource_logs[0].scope_logs[0].log_records
    assert len(records) == 12
    assert all(
        r.event_name == "gen_ai.evaluation.result" and len(r.trace_id) == 16 and len(r.span_id) == 8
        for r in records
    )


def test_a_password_in_the_export_url_never_reaches_a_message():
    pytest.importorskip("httpx")
    from otel_semloop.batch.emit import export_evaluations
    from otel_semloop.batch.worker import TraceRow

    row = TraceRow(
        "ab" * 16,
        "cd" * 8,
        "root",
        "agent",
        3,
        "loop",
        0.1,
        0.2,
        "stop",
        ("action_cycle",),
        "why",
        (),
        1,
        2,
        False,
        evaluation={"gen_ai.evaluation.name": "semloop.loop"},
    )
    with pytest.raises(RuntimeError) as failed:
        export_evaluations([row], "http://user:hunter2@127.0.0.1:1", "logs", retries=0)
    assert "hunter2" not in str(failed.value) and "***@127.0.0.1:1" in str(failed.value)


def test_export_protocol_grpc_sends_logs_and_carrier_spans_and_retries_unavailable(tmp_path):
    grpc = pytest.importorskip("grpc")
    from concurrent import futures

    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received: list[tuple[str, object, dict]] = []
    refused = []

    class Logs(logs_service_pb2_grpc.LogsServiceServicer):
        def Export(self, request, context):
            if not refused:  # the first call: the backend is busy
                refused.append(1)
                context.abort(grpc.StatusCode.UNAVAILABLE, "busy")
            received.append(("logs", request, dict(context.invocation_metadata())))
            return logs_service_pb2.ExportLogsServiceResponse()

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            received.append(("spans", request, dict(context.invocation_metadata())))
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        source = write_jsonl(tmp_path / "in.jsonl", LINES)
        command = ["rescore", str(source), "-q", "--emit", "evaluations", "--evaluations-as", "both"]
        endpoint = ["--export-endpoint", f"http://127.0.0.1:{port}", "--export-protocol", "grpc"]
        assert main([*command, *endpoint]) == 0
    finally:
        server.stop(None)
    assert refused and [kind for kind, _, _ in received] == ["logs", "spans"]
    records = received[0][1].resource_logs[0].scope_logs[0].log_records
    spans = received[1][1].resource_spans[0].scope_spans[0].spans
    assert len(records) == len(spans) == 12
    assert all(r.event_name == "gen_ai.evaluation.result" and len(r.trace_id) == 16 for r in records)
    assert {(r.trace_id, r.span_id) for r in records} == {(s.trace_id, s.parent_span_id) for s in spans}
