"""The collector service end to end, on real loopback sockets: an SDK app exports OTLP (gRPC
or HTTP) to ``otel-semloop serve``'s service, which forwards to a real OTLP receiver.

What it promises: the root of a looping agent trace arrives carrying the verdict, every span
arrives exactly once with its Resource and scope intact, healthy traces say ``no_loop``,
non-agent traces pass untouched, bad requests get precise errors without losing the valid
spans, and a downstream that is down at first still gets everything once it is up.
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_semloop.errors import ConfigError
from otel_semloop.service import ServiceConfig, ServiceThread
from tests.e2e.otlp_receiver import GrpcOtlpReceiver, HttpOtlpReceiver, OtlpReceiver, ReceivedSpan
from tests.service.support import grpc_export, wait_for
from tests.support.agent_spans import search_agent

RESOURCE = {"service.name": "research-agent", "deployment.environment": "test", "host.name": "box-7"}
SCOPE = "agent.instrumentation"
VERDICT_KEYS = ("semloop.loop.detected", "semloop.score", "semloop.label", "semloop.deepeval.score")


# -- builders ----------------------------------------------------------------------------------


def service_config(downstream: OtlpReceiver, **overrides: Any) -> ServiceConfig:
    """Test-sized timings; the export protocol follows the receiver's."""
    protocol = "grpc" if isinstance(downstream, GrpcOtlpReceiver) else "http/protobuf"
    options: dict[str, Any] = {
        "grpc": "127.0.0.1:0",
        "http": "127.0.0.1:0",
        "export_endpoint": downstream.endpoint,
        "export_protocol": protocol,
        "grace_seconds": 0.1,
        "tick_seconds": 0.02,
        "retry_initial_backoff": 0.05,
        "retry_max_backoff": 0.2,
        "export_timeout": 2.0,
        "shutdown_timeout_seconds": 5.0,
        **overrides,
    }
    return ServiceConfig(**options)


class App:
    """An instrumented application whose spans go to the service through a real exporter,
    and, to know what it produced, to an in-memory exporter too."""

    def __init__(self, service: ServiceThread, protocol: str) -> None:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

            exporter: Any = Grpc(endpoint=f"127.0.0.1:{service.grpc_port}", insecure=True, timeout=5)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

            exporter = Http(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces", timeout=5)
        self.produced = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create(RESOURCE))
        self.provider.add_span_processor(SimpleSpanProcessor(self.produced))
        self.provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=20))
        self.tracer = self.provider.get_tracer(SCOPE, "1.2.3")

    def agent_run(self, results: list[str]) -> str:
        """An ``invoke_agent`` root; per result, a chat span asking for ``search`` and the
        ``execute_tool search`` span returning it. Returns the trace id (hex)."""
        return search_agent(self.tracer, results)

    def plain_request(self) -> str:
        """An HTTP server span with a DB child: no agent steps."""
        with (
            self.tracer.start_as_current_span(
                "GET /orders", attributes={"http.request.method": "GET", "url.path": "/orders"}
            ) as root,
            self.tracer.start_as_current_span("SELECT orders", attributes={"db.system": "postgresql"}),
        ):
            pass
        return f"{root.get_span_context().trace_id:032x}"

    def spans_of(self, trace_id: str) -> list[ReadableSpan]:
        return [s for s in self.produced.get_finished_spans() if f"{s.context.trace_id:032x}" == trace_id]

    def flush(self) -> None:
        assert self.provider.force_flush(10_000)

    def shutdown(self) -> None:
        self.provider.shutdown()


@contextmanager
def running(
    downstream: OtlpReceiver,
    app_protocol: str,
    stop_timeout: float | None = None,
    *,
    every_span_once: bool = True,
    **overrides: Any,
) -> Iterator[tuple[ServiceThread, App]]:
    """The service and an app in front of it. On a clean exit, once both are shut down
    (nothing more can arrive), every span the app produced must have arrived exactly once:
    a duplicate sent late is caught whatever the test waited for."""
    service = ServiceThread(service_config(downstream, **overrides)).start()
    app = App(service, app_protocol)
    try:
        yield service, app
    except BaseException:
        app.shutdown()
        service.stop(stop_timeout)
        raise
    app.shutdown()
    service.stop(stop_timeout)
    produced = Counter(f"{s.context.span_id:016x}" for s in app.produced.get_finished_spans())
    if every_span_once and produced:
        assert Counter(s.span_id for s in downstream.spans if s.span_id in produced) == produced


def wait_trace(
    receiver: OtlpReceiver, trace_id: str, count: int, timeout: float = 10.0
) -> list[ReceivedSpan]:
    spans = receiver.wait_until(lambda got: sum(s.trace_id == trace_id for s in got) >= count, timeout)
    return [s for s in spans if s.trace_id == trace_id]


def assert_each_span_once_and_intact(produced: list[ReadableSpan], received: list[ReceivedSpan]) -> None:
    """No loss, no duplicate; ids, names, original attributes, Resource and scope intact."""
    counts = Counter(s.span_id for s in received)
    assert all(n == 1 for n in counts.values()), f"duplicates: {counts}"
    assert set(counts) == {f"{s.context.span_id:016x}" for s in produced}
    by_id = {s.span_id: s for s in received}
    for span in produced:
        got = by_id[f"{span.context.span_id:016x}"]
        assert got.name == span.name
        assert {k: got.attributes.get(k) for k in span.attributes} == dict(span.attributes)
        assert {k: got.resource.get(k) for k in RESOURCE} == RESOURCE
        assert got.scope == SCOPE


def root_of(spans: list[ReceivedSpan]) -> ReceivedSpan:
    (root,) = [s for s in spans if s.is_root]
    return root


@pytest.fixture
def grpc_downstream() -> Iterator[GrpcOtlpReceiver]:
    with GrpcOtlpReceiver() as receiver:
        yield receiver


@pytest.fixture
def http_downstream() -> Iterator[HttpOtlpReceiver]:
    with HttpOtlpReceiver() as receiver:
        yield receiver


# -- the verdict on the spans ------------------------------------------------------------------


def test_a_looping_agent_trace_sent_over_grpc_arrives_downstream_with_the_loop_verdict(
    grpc_downstream: GrpcOtlpReceiver,
) -> None:
    with running(grpc_downstream, "grpc") as (service, app):
        trace_id = app.agent_run(["no results"] * 8)
        app.flush()
        received = wait_trace(grpc_downstream, trace_id, 17)
        root = root_of(received)
        assert root.attributes["semloop.loop.detected"] is True
        assert root.attributes["semloop.label"] == "loop"
        assert root.attributes["semloop.score"] < 0.5
        assert isinstance(root.attributes["semloop.deepeval.score"], float)
        assert root.attributes["semloop.partial"] is False
        (event,) = root.events_named("gen_ai.evaluation.result")
        assert event.attributes["gen_ai.evaluation.score.label"] == "loop"
        assert event.attributes["gen_ai.evaluation.score.value"] == root.attributes["semloop.score"]
        assert any(s.attributes.get("semloop.in_loop") for s in received if s.name == "execute_tool search")
        assert not any(k in s.attributes for s in received if not s.is_root for k in VERDICT_KEYS)
        time.sleep(0.3)  # a duplicate would follow within a few ticks
        assert_each_span_once_and_intact(app.spans_of(trace_id), wait_trace(grpc_downstream, trace_id, 17))
        assert service.stats()["traces.loop"] == 1


def test_over_http_a_healthy_agent_trace_is_no_loop_and_a_plain_trace_passes_untouched(
    http_downstream: HttpOtlpReceiver,
) -> None:
    with running(http_downstream, "http") as (_, app):
        healthy = app.agent_run([f"found 3 papers on topic {i} (page {i})" for i in range(3)])
        plain = app.plain_request()
        app.flush()
        root = root_of(wait_trace(http_downstream, healthy, 7))
        assert root.attributes["semloop.loop.detected"] is False
        assert root.attributes["semloop.label"] == "no_loop"
        assert len(root.events_named("gen_ai.evaluation.result")) == 1
        received = wait_trace(http_downstream, plain, 2)
        for span in received:
            assert not any(k.startswith("semloop.") for k in span.attributes)
            assert not span.events
        assert_each_span_once_and_intact(app.spans_of(plain), received)
        assert_each_span_once_and_intact(app.spans_of(healthy), wait_trace(http_downstream, healthy, 7))


# -- bad requests --------------------------------------------------------------------------------


def _field(number: int, value: bytes) -> bytes:
    """A length-delimited protobuf field, written by hand: the protobuf library refuses
    to build a message nested deeper than it parses."""
    size, length = len(value), b""
    while size >= 0x80:
        length += bytes(((size & 0x7F) | 0x80,))
        size >>= 7
    return bytes(((number << 3) | 2,)) + length + bytes((size,)) + value


def _nested_attribute(depth: int) -> bytes:
    """A span's ``attributes`` entry (field 9) whose value nests ``depth`` key-value lists."""
    value = common_pb2.AnyValue(string_value="bottom").SerializeToString()
    for _ in range(depth):  # AnyValue.kvlist_value (6) > KeyValueList.values (1) > KeyValue
        value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))
    return _field(9, _field(1, b"nested") + _field(2, value))


def test_a_protobuf_span_nested_too_deep_costs_only_itself(grpc_downstream: GrpcOtlpReceiver) -> None:
    """As a bad span of a JSON request does: the request's other spans are kept."""
    fine = trace_pb2.Span(trace_id=b"\xab" * 16, span_id=b"\x01" * 8, name="fine").SerializeToString()
    deep = trace_pb2.Span(trace_id=b"\x02" * 16, span_id=b"\x03" * 8, name="deep").SerializeToString()
    scope_spans = _field(2, fine) + _field(2, deep + _nested_attribute(40))
    body = _field(1, _field(2, scope_spans))  # request > resourceSpans > scopeSpans
    with running(grpc_downstream, "grpc") as (service, _):
        answer = grpc_export(service.grpc_port, body)
        over_http = httpx.post(
            f"http://127.0.0.1:{service.http_port}/v1/traces",
            content=body,
            headers={"Content-Type": "application/x-protobuf"},
        )
        wait_for(lambda: len(grpc_downstream.spans) >= 2, 10, "the good span, twice")
    http_answer = trace_service_pb2.ExportTraceServiceResponse.FromString(over_http.content)
    for partial in (answer.partial_success, http_answer.partial_success):
        assert partial.rejected_spans == 1
        assert partial.error_message.startswith(
            "resourceSpans[0].scopeSpans[0].spans[1]: not a readable span"
        )
    assert [s.name for s in grpc_downstream.spans] == ["fine", "fine"]


def test_a_bad_json_span_is_named_by_its_path_once(grpc_downstream: GrpcOtlpReceiver) -> None:
    good = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "ok"}
    bad = {"traceId": "zz", "spanId": "cd" * 8, "name": "bad"}
    body = {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [good]}]},
            {"scopeSpans": [{"spans": []}, {"spans": [{**good, "spanId": "ef" * 8}, bad]}]},
        ]
    }
    with running(grpc_downstream, "grpc") as (service, _):
        response = httpx.post(f"http://127.0.0.1:{service.http_port}/v1/traces", json=body)
    assert response.status_code == 200
    assert response.json()["partialSuccess"] == {
        "rejectedSpans": "1",
        "errorMessage": "resourceSpans[1].scopeSpans[1].spans[1].traceId: id must be 32 hex characters, "
        "got string 'zz'",
    }


def test_a_malformed_http_body_gets_400_with_a_message(grpc_downstream: GrpcOtlpReceiver) -> None:
    with running(grpc_downstream, "grpc") as (service, _):
        url = f"http://127.0.0.1:{service.http_port}/v1/traces"
        response = httpx.post(
            url, content=b"not a protobuf", headers={"Content-Type": "application/x-protobuf"}
        )
        assert response.status_code == 400
        # Readable text, never binary protobuf, for a protobuf request's error.
        assert response.headers["content-type"].startswith("text/plain")
        assert "protobuf ExportTraceServiceRequest" in response.text

        response = httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
        assert response.status_code == 400 and "not JSON" in response.json()["message"]

        response = httpx.post(
            url,
            content=b"\x1f\x8bnot gzip",
            headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
        )
        assert response.status_code == 400 and b"gzip" in response.content

        response = httpx.post(url, content=b"x", headers={"Content-Type": "text/plain"})
        assert response.status_code == 415
        assert httpx.get(url).status_code == 405
        assert httpx.post(url.replace("/v1/traces", "/v1/metrics"), content=b"").status_code == 404


def _json_span(trace_id: str, span_id: str, name: str, parent: str = "") -> dict[str, Any]:
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1767225600000000000",
        "endTimeUnixNano": "1767225601000000000",
        "attributes": [{"key": "k", "value": {"stringValue": name}}],
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def test_a_bad_span_in_a_gzipped_json_request_is_rejected_alone_and_the_valid_ones_arrive(
    grpc_downstream: GrpcOtlpReceiver,
) -> None:
    trace_id = "5b8efff798038103d269b633813fc60c"
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-app"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "json-scope"},
                        "spans": [
                            _json_span(trace_id, "eee19b7ec3c1b174", "root"),
                            _json_span(trace_id, "not-hex", "broken"),
                            _json_span(trace_id, "eee19b7ec3c1b175", "child", parent="eee19b7ec3c1b174"),
                        ],
                    }
                ],
            }
        ]
    }
    with running(grpc_downstream, "grpc") as (service, _):
        response = httpx.post(
            f"http://127.0.0.1:{service.http_port}/v1/traces",
            content=gzip.compress(json.dumps(body).encode()),
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert response.status_code == 200, response.text
        partial = response.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "1"
        assert "spans[1]" in partial["errorMessage"] and "spanId" in partial["errorMessage"]
        received = wait_trace(grpc_downstream, trace_id, 2)
        assert sorted(s.name for s in received) == ["child", "root"]
        assert all(s.resource == {"service.name": "json-app"} and s.scope == "json-scope" for s in received)


@pytest.mark.parametrize(
    ("trace_id", "span_id", "message"),
    [
        (b"\x01" * 15, b"\x02" * 8, "traceId must be 16 bytes, got 15"),
        (b"\x01" * 16, b"\x02" * 7, "spanId must be 8 bytes, got 7"),
    ],
    ids=["trace-id", "span-id"],
)
def test_a_grpc_request_whose_spans_all_have_bad_ids_gets_invalid_argument(
    grpc_downstream: GrpcOtlpReceiver, trace_id: bytes, span_id: bytes, message: str
) -> None:
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    request = trace_service_pb2.ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = trace_id
    span.span_id = span_id
    with running(grpc_downstream, "grpc") as (service, _):
        with grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as error:
                stub.Export(request, timeout=5)
        assert error.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert message in error.value.details()
        assert not grpc_downstream.spans


def _request(*spans: tuple[bytes, bytes, bytes, str]) -> bytes:
    """An ExportTraceServiceRequest of (trace id, span id, parent id, name) spans."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    kv = resource_spans.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "raw-app"
    scope_spans = resource_spans.scope_spans.add()
    for trace_id, span_id, parent, name in spans:
        span = scope_spans.spans.add(trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name)
        span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
    return request.SerializeToString()


def test_a_span_arriving_after_its_trace_was_released_is_forwarded_once_marked_late(
    grpc_downstream: GrpcOtlpReceiver,
) -> None:
    trace_id, root_id, child_id = b"\x0a" * 16, b"\x01" * 8, b"\x02" * 8
    with running(grpc_downstream, "grpc") as (service, _):
        url = f"http://127.0.0.1:{service.http_port}/v1/traces"
        headers = {"Content-Type": "application/x-protobuf"}
        assert httpx.post(url, content=_request((trace_id, root_id, b"", "root")), headers=headers).is_success
        wait_trace(grpc_downstream, trace_id.hex(), 1)
        assert httpx.post(
            url, content=_request((trace_id, child_id, root_id, "late")), headers=headers
        ).is_success
        received = wait_trace(grpc_downstream, trace_id.hex(), 2)
        time.sleep(0.2)
        assert Counter(s.name for s in grpc_downstream.spans) == {"root": 1, "late": 1}
        (late,) = [s for s in received if s.name == "late"]
        assert late.attributes == {"semloop.late": True}
        assert late.resource == {"service.name": "raw-app"}


# -- downstream outage, drain ----------------------------------------------------------------------


def test_a_downstream_that_is_down_at_first_receives_everything_once_it_is_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="otel_semloop.service")
    downstream = GrpcOtlpReceiver()  # port reserved, not serving yet
    try:
        with running(downstream, "http") as (service, app):
            looping = app.agent_run(["no results"] * 8)
            plain = app.plain_request()
            app.flush()
            deadline = time.monotonic() + 10
            while service.stats().get("export.retries.retryable", 0) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert service.stats()["export.down"] == 1
            assert not downstream.spans
            assert f"downstream grpc {downstream.endpoint} unavailable (UNAVAILABLE" in caplog.text
            downstream.start()
            received = wait_trace(downstream, looping, 17)
            assert root_of(received).attributes["semloop.label"] == "loop"
            plain_received = wait_trace(downstream, plain, 2)
            time.sleep(0.3)
            assert_each_span_once_and_intact(app.spans_of(looping), wait_trace(downstream, looping, 17))
            assert_each_span_once_and_intact(app.spans_of(plain), plain_received)
            assert service.stats().get("export.dropped.retries_exhausted", 0) == 0
    finally:
        downstream.stop()


def test_shutdown_forwards_a_trace_still_waiting_for_its_root_as_partial(
    grpc_downstream: GrpcOtlpReceiver,
) -> None:
    service = ServiceThread(service_config(grpc_downstream)).start()
    app = App(service, "grpc")
    tracer = app.tracer
    root = tracer.start_span("invoke_agent researcher", attributes={"gen_ai.operation.name": "invoke_agent"})
    from opentelemetry import trace as trace_api

    with trace_api.use_span(root, end_on_exit=False):
        for _ in range(3):
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
            ):
                pass
    app.flush()
    trace_id = f"{root.get_span_context().trace_id:032x}"
    deadline = time.monotonic() + 5
    while service.stats().get("spans.held", 0) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not grpc_downstream.spans  # held: the root has not arrived
    assert service.stop() is True
    received = wait_trace(grpc_downstream, trace_id, 3)
    assert len(received) == 3 and {s.name for s in received} == {"execute_tool search"}
    (marked,) = [s for s in received if "semloop.label" in s.attributes]
    assert marked.attributes["semloop.partial"] is True
    assert marked.attributes["semloop.release.reason"] == "shutdown"
    app.shutdown()


class SlowScorer:
    """A scorer that outlives any test budget."""

    def score(self, trace: Any) -> Any:
        time.sleep(1.0)
        raise AssertionError("the budget should have run out first")


def test_a_trace_whose_scoring_outlives_the_budget_is_forwarded_unscored_once(
    grpc_downstream: GrpcOtlpReceiver,
) -> None:
    config = service_config(grpc_downstream, scoring_budget_seconds=0.2)
    service = ServiceThread(config, scorer=SlowScorer()).start()
    app = App(service, "grpc")
    try:
        trace_id = app.agent_run(["no results"] * 3)
        app.flush()
        received = wait_trace(grpc_downstream, trace_id, 7)
        root = root_of(received)
        assert root.attributes["semloop.label"] == "unscored"
        assert root.attributes["semloop.unscored.reason"] == "scoring budget exceeded"
        time.sleep(0.2)
        assert_each_span_once_and_intact(app.spans_of(trace_id), wait_trace(grpc_downstream, trace_id, 7))
        assert service.stats()["unscored.budget"] == 1
    finally:
        app.shutdown()
        service.stop(timeout=2)


def test_an_http_downstream_answering_503_gets_the_batch_again_until_it_accepts() -> None:
    with HttpOtlpReceiver() as downstream:
        downstream.refuse_next = 2
        with running(downstream, "grpc") as (_, app):
            trace = app.plain_request()
            app.flush()
            received = wait_trace(downstream, trace, 2)
            assert downstream.refused == 2
            assert_each_span_once_and_intact(app.spans_of(trace), received)


def test_a_downstream_retry_after_sets_the_wait_before_the_next_attempt() -> None:
    with HttpOtlpReceiver() as downstream:
        downstream.refuse_next, downstream.retry_after = 1, 1
        with running(downstream, "grpc", retry_initial_backoff=0.05, retry_max_backoff=5.0) as (_, app):
            trace = app.plain_request()
            app.flush()
            wait_trace(downstream, trace, 2)
        refused_at, accepted_at = downstream.arrivals[:2]
        assert 1.0 <= accepted_at - refused_at < 2.0  # the 1 s asked for, not the 0.05 s backoff


def test_while_the_downstream_is_down_a_full_queue_makes_receivers_refuse_retryably() -> None:
    downstream = GrpcOtlpReceiver()  # never started
    try:
        with running(
            downstream, "grpc", 0.5, every_span_once=False, export_queue_spans=2, retry_max_elapsed=0
        ) as (service, app):
            app.plain_request()
            app.flush()
            deadline = time.monotonic() + 5
            while service.stats().get("export.pending", 0) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            response = httpx.post(
                f"http://127.0.0.1:{service.http_port}/v1/traces",
                content=trace_service_pb2.ExportTraceServiceRequest().SerializeToString(),
                headers={"Content-Type": "application/x-protobuf"},
            )
            assert response.status_code == 503
            assert int(response.headers["retry-after"]) >= 1
            assert "export queue full" in response.text
        assert service.stats()["export.dropped.shutdown"] == 2  # counted, never silent
    finally:
        downstream.stop()


def test_spans_dropped_at_the_drain_deadline_are_logged_with_the_way_to_keep_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    downstream = GrpcOtlpReceiver()  # never started
    try:
        with (
            caplog.at_level("ERROR", logger="otel_semloop.service"),
            running(downstream, "grpc", 0.5, every_span_once=False, retry_max_elapsed=0) as (service, app),
        ):
            app.plain_request()
            app.flush()
            wait_for(lambda: service.stats().get("export.pending", 0) >= 2, 5, "2 spans pending")
    finally:
        downstream.stop()
    (line,) = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert "2 spans not delivered" in line and "dropped" in line
    assert "--durable-queue FILE" in line


def test_a_service_config_without_a_downstream_is_refused_before_listening() -> None:
    with pytest.raises(ConfigError, match="export_endpoint is required"):
        ServiceConfig(grpc="127.0.0.1:0", http="127.0.0.1:0")
    with pytest.raises(ConfigError, match="HOST:PORT"):
        ServiceConfig(grpc="4317", export_endpoint="http://127.0.0.1:4317")
