"""Real OTLP trace receivers on loopback that keep everything they are sent.

* :class:`GrpcOtlpReceiver`: a gRPC server implementing
  ``opentelemetry.proto.collector.trace.v1.TraceService/Export``, insecure, ``127.0.0.1``
  on an ephemeral port; point ``OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True)``
  (from ``opentelemetry.exporter.otlp.proto.grpc``) at it.
* :class:`HttpOtlpReceiver`: OTLP/HTTP ``POST /v1/traces`` with a binary protobuf body
  (optionally gzip), for the ``opentelemetry.exporter.otlp.proto.http`` exporter; its
  ``endpoint`` is the full ``/v1/traces`` URL.

Both flatten every ``ExportTraceServiceRequest`` they receive into :class:`ReceivedSpan`
values with decoded attributes, so tests assert on what a backend would store, including
duplicates (a span sent twice appears twice). Both also take OTLP logs (gRPC
``LogsService/Export``, HTTP ``POST /v1/logs``) and keep each log record as it arrived
(:class:`ReceivedLogRecord`: the record's own bytes, its ids, event name and body).
The decoding is written here on purpose, independent of the package's own OTLP codec.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2

from .http_thread import ServerThread, reply

__all__ = [
    "GrpcOtlpReceiver",
    "HttpOtlpReceiver",
    "OtlpReceiver",
    "ReceivedEvent",
    "ReceivedLogRecord",
    "ReceivedSpan",
    "decode_any_value",
]


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One span as it arrived: hex ids, decoded attributes and events."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    events: tuple[ReceivedEvent, ...]
    status_code: int
    scope: str
    resource: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id

    def events_named(self, name: str) -> list[ReceivedEvent]:
        return [e for e in self.events if e.name == name]


@dataclass(frozen=True, slots=True)
class ReceivedLogRecord:
    """One log record as it arrived: its wire bytes (to compare with what was sent), hex
    ids, event name, decoded body and attributes, and its scope's name."""

    wire: bytes
    trace_id: str
    span_id: str
    event_name: str
    body: Any
    attributes: Mapping[str, Any]
    scope: str


def decode_any_value(value: common_pb2.AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a Python value (kvlists become dicts)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [decode_any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: decode_any_value(kv.value) for kv in pairs}


class OtlpReceiver:
    """What both receivers share: the store of received requests and its views."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._spans: list[ReceivedSpan] = []
        self._logs: list[ReceivedLogRecord] = []

    # -- store ----------------------------------------------------------------------------

    def _record(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=int(span.kind),
                            start_ns=int(span.start_time_unix_nano),
                            end_ns=int(span.end_time_unix_nano),
                            attributes=_attributes(span.attributes),
                            events=tuple(
                                ReceivedEvent(e.name, int(e.time_unix_nano), _attributes(e.attributes))
                                for e in span.events
                            ),
                            status_code=int(span.status.code),
                            scope=scope_spans.scope.name,
                            resource=resource,
                        )
                    )
        with self._changed:
            self._spans.extend(spans)
            self._changed.notify_all()

    def _record_logs(self, request: logs_service_pb2.ExportLogsServiceRequest) -> None:
        records = [
            ReceivedLogRecord(
                wire=record.SerializeToString(),
                trace_id=record.trace_id.hex(),
                span_id=record.span_id.hex(),
                event_name=record.event_name,
                body=decode_any_value(record.body) if record.HasField("body") else None,
                attributes=_attributes(record.attributes),
                scope=scope_logs.scope.name,
            )
            for resource_logs in request.resource_logs
            for scope_logs in resource_logs.scope_logs
            for record in scope_logs.log_records
        ]
        with self._changed:
            self._logs.extend(records)
            self._changed.notify_all()

    @property
    def log_records(self) -> list[ReceivedLogRecord]:
        """Every log record received, in arrival order, duplicates included."""
        with self._lock:
            return list(self._logs)

    def wait_for_log_records(self, count: int, timeout: float = 10.0) -> list[ReceivedLogRecord]:
        """Block until at least ``count`` log records arrived (or ``timeout``); returns them."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._logs) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(remaining)
            return list(self._logs)

    @property
    def spans(self) -> list[ReceivedSpan]:
        """Every span received, in arrival order, duplicates included."""
        with self._lock:
            return list(self._spans)

    def root_of(self, trace_id: str) -> ReceivedSpan:
        """The one span of ``trace_id`` received without a parent (each copy counts)."""
        roots = [s for s in self.spans if s.trace_id == trace_id and s.is_root]
        if len(roots) != 1:
            copies = Counter(s.span_id for s in roots)
            raise AssertionError(f"trace {trace_id}: expected 1 root span, received {dict(copies)}")
        return roots[0]

    def wait_until(
        self, condition: Callable[[list[ReceivedSpan]], bool], timeout: float = 10.0
    ) -> list[ReceivedSpan]:
        """Block until ``condition(received spans)`` holds (or ``timeout``); returns them all."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self._spans):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(remaining)
            return list(self._spans)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    def start(self) -> OtlpReceiver:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self._receiver._record(request)
        return trace_service_pb2.ExportTraceServiceResponse()


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(
        self, request: logs_service_pb2.ExportLogsServiceRequest, context: grpc.ServicerContext
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        self._receiver._record_logs(request)
        return logs_service_pb2.ExportLogsServiceResponse()


class GrpcOtlpReceiver(OtlpReceiver):
    """OTLP/gRPC TraceService and LogsService on ``127.0.0.1``, insecure, ephemeral port."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(self), self._server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsService(self), self._server)
        self._host = host
        self._port = self._server.add_insecure_port(f"{host}:0")

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self._port}"

    def start(self) -> GrpcOtlpReceiver:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None).wait(5)


class HttpOtlpReceiver(OtlpReceiver):
    """OTLP/HTTP ``POST /v1/traces`` (binary protobuf, optional gzip) on ``127.0.0.1``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        super().__init__()
        self._host = host
        self._server = ServerThread(host, _http_handler_for(self))
        #: Answer this many next requests with 503 + ``Retry-After`` (an overloaded backend).
        self.refuse_next = 0
        self.refused = 0
        #: The ``Retry-After`` seconds a refusal asks for.
        self.retry_after = 0
        #: When each request arrived (``time.monotonic()``), refused or not.
        self.arrivals: list[float] = []

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self.port}/v1/traces"

    def start(self) -> HttpOtlpReceiver:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()


def _http_handler_for(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            if path not in ("/v1/traces", "/v1/logs"):
                reply(self, 404, b"not found", "text/plain")
                return
            content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip()
            if content_type != "application/x-protobuf":
                reply(self, 415, b"only application/x-protobuf is accepted", "text/plain")
                return
            if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                body = gzip.decompress(body)
            if path == "/v1/logs":
                logs = logs_service_pb2.ExportLogsServiceRequest()
                try:
                    logs.ParseFromString(body)
                except Exception:
                    reply(self, 400, b"invalid ExportLogsServiceRequest", "text/plain")
                    return
                receiver._record_logs(logs)
                reply(self, 200, b"", "application/x-protobuf")
                return
            request = trace_service_pb2.ExportTraceServiceRequest()
            try:
                request.ParseFromString(body)
            except Exception:
                reply(self, 400, b"invalid ExportTraceServiceRequest", "text/plain")
                return
            if isinstance(receiver, HttpOtlpReceiver):
                receiver.arrivals.append(time.monotonic())
            if isinstance(receiver, HttpOtlpReceiver) and receiver.refuse_next > 0:
                receiver.refuse_next -= 1
                receiver.refused += 1
                self.send_response(503)
                self.send_header("Retry-After", str(receiver.retry_after))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            receiver._record(request)
            response = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            reply(self, 200, response, "application/x-protobuf")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
