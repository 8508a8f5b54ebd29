"""``rescore --emit evaluations``: only the evaluation records, for traces a backend already
stores.

Re-sending scored spans to a backend that holds the originals shows every span twice.
Instead each scored trace becomes one ``gen_ai.evaluation.result`` log record parented to
its root (the shared record of :mod:`otel_semloop.evaluation`) and/or a carrier span, child
of and linked to the root, for backends that take only traces; written to the output as OTLP JSON lines or
length-prefixed protobuf, or sent to ``--export-endpoint`` by OTLP (HTTP protobuf or gRPC).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from otel_semloop.batch.worker import TraceRow
from otel_semloop.evaluation import (
    EVENT_NAME,
    SCOPE_NAME,
    EvaluationRecord,
    logs_data_json,
)
from otel_semloop.otlp.anyvalue import encode_attributes_pb
from otel_semloop.otlp.codec import json_to_logs, traces_to_json

__all__ = ["export_evaluations", "logs_json", "records_for"]

#: Records per line / per request: about what a Collector batch holds.
BATCH = 512
_RETRYABLE = {429, 502, 503, 504}


def _batches(rows: Sequence[TraceRow], kinds: Sequence[str]) -> list[tuple[str, list[TraceRow]]]:
    """The scored rows, ``BATCH`` at a time, for each carrier kind (``logs``, ``spans``)."""
    chosen = [r for r in rows if r.root_span_id and r.evaluation]
    return [(kind, chosen[i : i + BATCH]) for kind in kinds for i in range(0, len(chosen), BATCH)]


def _message(kind: str, chunk: Sequence[TraceRow]) -> LogsData | TracesData:
    return logs_data(chunk) if kind == "logs" else traces_data(chunk)


def _record(row: TraceRow) -> EvaluationRecord:
    return EvaluationRecord(row.trace_id, row.root_span_id, row.event_ns, row.evaluation)


def logs_json(rows: Sequence[TraceRow]) -> dict[str, Any]:
    """One OTLP JSON ``LogsData`` holding a log record per row (the shared record shape of
    :mod:`otel_semloop.evaluation`; the observed time is the record's time, so the same
    input gives the same bytes)."""
    doc = logs_data_json([_record(r) for r in rows])
    for sl in doc["resourceLogs"][0]["scopeLogs"]:
        for rec in sl["logRecords"]:
            rec["observedTimeUnixNano"] = rec["timeUnixNano"]
    return doc


def carrier_span(row: TraceRow) -> Span:
    """A span in the evaluated trace, child of and linked to the evaluated root, carrying the
    evaluation attributes and the ``gen_ai.evaluation.result`` event; its id derives from
    the root's, so the same input gives the same span."""
    span = Span(
        trace_id=bytes.fromhex(row.trace_id),
        span_id=hashlib.sha256(f"semloop-evaluation:{row.trace_id}:{row.root_span_id}".encode()).digest()[:8],
        parent_span_id=bytes.fromhex(row.root_span_id),
        name=f"evaluate {row.evaluation.get('gen_ai.evaluation.name', 'semloop.loop')}",
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=row.event_ns,
        end_time_unix_nano=row.event_ns,
    )
    encode_attributes_pb(row.evaluation, span.attributes)
    link = span.links.add()
    link.trace_id = bytes.fromhex(row.trace_id)
    link.span_id = bytes.fromhex(row.root_span_id)
    event = span.events.add()
    event.name = EVENT_NAME
    event.time_unix_nano = row.event_ns
    encode_attributes_pb(row.evaluation, event.attributes)
    return span


def logs_data(rows: Sequence[TraceRow]) -> LogsData:
    """The same records as protobuf."""
    return json_to_logs(logs_json(rows))


def traces_data(rows: Iterable[TraceRow]) -> TracesData:
    data = TracesData()
    rs = data.resource_spans.add()
    encode_attributes_pb({"service.name": "otel-semloop"}, rs.resource.attributes)
    ss = rs.scope_spans.add()
    ss.scope.CopyFrom(InstrumentationScope(name=SCOPE_NAME))
    ss.spans.extend(carrier_span(r) for r in rows)
    return data


def records_for(rows: Sequence[TraceRow], carrier: str, fmt: str) -> Iterable[bytes]:
    """The framed lines / messages to write: ``carrier`` is ``logs`` or ``spans``."""
    for _, chunk in _batches(rows, (carrier,)):
        if fmt == "json":
            doc = traces_to_json(traces_data(chunk)) if carrier == "spans" else logs_json(chunk)
            yield orjson.dumps(doc) + b"\n"
        else:
            data = _message(carrier, chunk).SerializeToString()
            yield len(data).to_bytes(4, "big") + data


def export_evaluations(
    rows: Sequence[TraceRow],
    endpoint: str,
    carrier: str,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    retries: int = 5,
    protocol: str = "http/protobuf",
) -> int:
    """Send the records to ``endpoint`` by OTLP: ``http/protobuf`` POSTs to the base URL
    plus ``/v1/logs`` / ``/v1/traces`` and retries 429/502/503/504 with backoff (honouring
    ``Retry-After``); ``grpc`` calls the Logs / Trace service at ``host:port`` (``http://``
    plaintext, ``https://`` TLS, no scheme plaintext) and retries UNAVAILABLE,
    RESOURCE_EXHAUSTED, ABORTED and DEADLINE_EXCEEDED. Returns the number of records sent;
    raises ``RuntimeError`` when the endpoint refuses them."""
    batches = _batches(rows, ("logs", "spans") if carrier == "both" else (carrier,))
    if protocol == "grpc":
        _export_grpc(batches, endpoint, headers or {}, timeout, retries)
        return sum(len(chunk) for _, chunk in batches)
    try:
        import httpx
    except ImportError:
        raise RuntimeError("--export-endpoint needs httpx (pip install 'otel-semloop[batch]')") from None

    base = endpoint.rstrip("/")
    sent = 0
    with httpx.Client(timeout=timeout) as client:
        for kind, chunk in batches:
            url = f"{base}/v1/logs" if kind == "logs" else f"{base}/v1/traces"
            _post(client, url, _message(kind, chunk).SerializeToString(), headers or {}, retries)
            sent += len(chunk)
    return sent


def _export_grpc(
    batches: list[tuple[str, list[TraceRow]]],
    endpoint: str,
    headers: dict[str, str],
    timeout: float,
    retries: int,
) -> None:
    try:
        import grpc
    except ImportError:
        raise RuntimeError(
            "--export-protocol grpc needs grpcio (pip install 'otel-semloop[collector]')"
        ) from None
    from urllib.parse import urlsplit

    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    target = parts.netloc.rsplit("@", 1)[-1]
    if parts.scheme == "https":
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
    else:
        channel = grpc.insecure_channel(target)
    retryable = {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
    metadata = [(k.lower(), v) for k, v in headers.items()]
    with channel:
        logs, traces = LogsServiceStub(channel), TraceServiceStub(channel)
        for kind, chunk in batches:
            call = logs.Export if kind == "logs" else traces.Export
            request_type: Any = ExportLogsServiceRequest if kind == "logs" else ExportTraceServiceRequest
            request = request_type.FromString(_message(kind, chunk).SerializeToString())  # one layout
            delay = 0.5
            for attempt in range(retries + 1):
                try:
                    call(request, timeout=timeout, metadata=metadata)
                    break
                except grpc.RpcError as exc:
                    code = exc.code()  # type: ignore[attr-defined]
                    if code not in retryable or attempt == retries:
                        raise RuntimeError(f"grpc {target} answered {code.name}") from None
                time.sleep(delay)
                delay = min(delay * 2, 30.0)


def _shown(url: str) -> str:
    """``url`` without its user:password part, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _post(client: Any, url: str, body: bytes, headers: dict[str, str], retries: int) -> None:
    import httpx

    delay = 0.5
    for attempt in range(retries + 1):
        try:
            response = client.post(
                url, content=body, headers={"Content-Type": "application/x-protobuf", **headers}
            )
        except httpx.TransportError as exc:
            if attempt == retries:
                raise RuntimeError(f"cannot reach {_shown(url)}: {type(exc).__name__}") from None
        else:
            if response.status_code < 300:
                return
            if response.status_code not in _RETRYABLE or attempt == retries:
                raise RuntimeError(f"{_shown(url)} answered {response.status_code}")
            after = response.headers.get("Retry-After", "")
            if after.isdigit():
                delay = min(float(after), 30.0)
        time.sleep(delay)
        delay = min(delay * 2, 30.0)
