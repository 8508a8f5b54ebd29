"""The two OTLP receivers: gRPC ``TraceService/Export`` (``grpc.aio``) and OTLP/HTTP
``POST /v1/traces`` (an ASGI app served by uvicorn), both on the service's asyncio loop.

What a sender gets back
    * Success: an ``ExportTraceServiceResponse`` (protobuf, or OTLP JSON for a JSON
      request). Spans with bad ids are rejected one by one and reported as
      ``partial_success`` (``rejected_spans`` and the first reason with its path); the
      valid spans of the same request are kept.
    * HTTP 400 / gRPC INVALID_ARGUMENT: nothing in the request was usable (a body that is
      not protobuf or JSON, broken gzip, every span invalid). The message says what and
      where, e.g. ``resourceSpans[0].scopeSpans[0].spans[3].traceId: ...``. Not
      retryable: the sender must not send it again.
    * HTTP 503 with ``Retry-After`` / gRPC UNAVAILABLE: the export queue is full (the
      downstream is down); retryable, the sender keeps the data.
    * HTTP 404 (other paths), 405 (not POST), 413 (body over ``max_request_bytes``, also
      after decompression), 415 (content type other than ``application/x-protobuf`` /
      ``application/json``, or an encoding other than gzip/identity).

    Error bodies are a ``google.rpc.Status`` (protobuf, or its JSON for JSON requests), as
    the OTLP/HTTP specification asks.

JSON requests
    Decoded with :func:`~otel_semloop.otlp.json_to_traces` (OTLP JSON: hex ids, ints as
    strings). If it fails, the request is decoded span by span so that one bad span
    costs only itself: envelopes (resource, scope) that are themselves invalid reject
    their spans.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import grpc
import orjson
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import json_to_traces
from otel_semloop.service.pipeline import Accepted

__all__ = ["BadRequest", "GrpcTraceService", "decode_http_body", "http_app"]

_Request = trace_service_pb2.ExportTraceServiceRequest
_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
# google.rpc.Code values
_INVALID_ARGUMENT = 3
_UNAVAILABLE = 14


class BadRequest(Exception):
    """A request the receivers refuse; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Ingest(Protocol):
    """What the receivers call (implemented by :class:`~otel_semloop.service.SemloopService`):
    ``full`` means refuse retryably (503 / UNAVAILABLE); ``accept`` holds a request's valid
    spans and says how many were rejected and why."""

    @property
    def full(self) -> bool: ...

    def accept(self, request: Any) -> Accepted: ...


# -- decoding ------------------------------------------------------------------------------


def _gunzip(body: bytes, limit: int) -> bytes:
    """gzip-decompress at most ``limit`` bytes (a small bomb cannot exhaust memory)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(400, f"body is not valid gzip: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise BadRequest(413, f"decompressed body exceeds {limit} bytes")
    if not inflater.eof:
        raise BadRequest(400, "body is not valid gzip: truncated stream")
    return out


def _salvage_json(obj: Any) -> tuple[_Request, int, str]:
    """Decode a JSON request that failed as a whole, span by span: ``(request with the
    valid spans, rejected spans, first error)``. Raises :class:`BadRequest` when the
    top level is not a TracesData object."""
    if type(obj) is not dict or type(obj.get("resourceSpans", [])) is not list:
        raise BadRequest(400, "body is not an OTLP JSON ExportTraceServiceRequest object")
    request = _Request()
    rejected = 0
    first = ""

    def note(error: Exception, path: str, count: int = 1) -> None:
        nonlocal rejected, first
        rejected += count
        if not first:
            first = f"{path}: {error}"

    for i, rs in enumerate(obj.get("resourceSpans") or []):
        scope_list = rs.get("scopeSpans") if type(rs) is dict else None
        if type(scope_list) is not list:
            continue
        try:
            envelope = json_to_traces(
                {"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": []} for ss in scope_list]}]},
                message_type=_Request,
            )
        except (OTLPDecodeError, TypeError) as exc:
            count = sum(len(ss.get("spans") or []) for ss in scope_list if type(ss) is dict)
            note(exc, f"resourceSpans[{i}]", count)
            continue
        out_rs = request.resource_spans.add()
        out_rs.CopyFrom(envelope.resource_spans[0])
        for j, ss in enumerate(scope_list):
            spans = ss.get("spans") if type(ss) is dict else None
            if type(spans) is not list:
                continue
            out_ss = out_rs.scope_spans[j]
            for k, span in enumerate(spans):
                try:
                    one = json_to_traces(
                        {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}, message_type=_Request
                    )
                except OTLPDecodeError as exc:
                    note(exc, f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]")
                    continue
                out_ss.spans.add().CopyFrom(one.resource_spans[0].scope_spans[0].spans[0])
    return request, rejected, first


def decode_http_body(body: bytes, content_type: str, encoding: str, limit: int) -> tuple[_Request, int, str]:
    """An OTLP/HTTP body as ``(request, rejected spans, first error)``; raises
    :class:`BadRequest`."""
    if encoding == "gzip":
        body = _gunzip(body, limit)
    elif encoding not in ("", "identity"):
        raise BadRequest(415, f"unsupported Content-Encoding {encoding!r}: use gzip or none")
    if content_type == _PROTOBUF:
        request = _Request()
        try:
            request.ParseFromString(body)
        except Exception as exc:
            raise BadRequest(400, f"body is not a protobuf ExportTraceServiceRequest: {exc}") from None
        return request, 0, ""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(400, f"body is not JSON: {exc}") from None
    try:
        return json_to_traces(obj, message_type=_Request), 0, ""
    except OTLPDecodeError:
        return _salvage_json(obj)


def _total_spans(request: _Request) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


# -- gRPC ------------------------------------------------------------------------------------


class GrpcTraceService(trace_service_pb2_grpc.TraceServiceServicer):
    """``TraceService/Export`` on a ``grpc.aio`` server."""

    def __init__(self, ingest: Ingest) -> None:
        self._ingest = ingest

    async def Export(
        self, request: _Request, context: grpc.aio.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        ingest = self._ingest
        if ingest.full:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, "otel-semloop: export queue full (downstream down); retry later"
            )
        result = ingest.accept(request)
        response = trace_service_pb2.ExportTraceServiceResponse()
        if result.rejected:
            if not result.accepted:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, result.message)
            response.partial_success.rejected_spans = result.rejected
            response.partial_success.error_message = result.message
        return response


# -- HTTP (ASGI) -----------------------------------------------------------------------------

_Receive = Callable[[], Awaitable[dict[str, Any]]]
_Send = Callable[[dict[str, Any]], Awaitable[None]]


def _status_body(code: int, message: str, json: bool) -> bytes:
    if json:
        return orjson.dumps({"code": code, "message": message})
    from google.rpc import status_pb2

    return status_pb2.Status(code=code, message=message).SerializeToString()


async def _respond(
    send: _Send, status: int, body: bytes, content_type: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def http_app(
    ingest: Ingest, max_request_bytes: int
) -> Callable[[dict[str, Any], _Receive, _Send], Awaitable[None]]:
    """The ASGI app serving ``POST /v1/traces``."""

    async def app(scope: dict[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        json = content_type == _JSON
        reply_type = _JSON if json else _PROTOBUF

        async def error(
            status: int, code: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
        ) -> None:
            await _respond(send, status, _status_body(code, message, json), reply_type, extra)

        if scope["path"] != "/v1/traces":
            await error(404, 5, f"no such path {scope['path']!r}: OTLP traces go to POST /v1/traces")
            return
        if scope["method"] != "POST":
            await error(405, _INVALID_ARGUMENT, "use POST", [(b"allow", b"POST")])
            return
        if content_type not in (_PROTOBUF, _JSON):
            await error(
                415,
                _INVALID_ARGUMENT,
                f"unsupported Content-Type {content_type!r}: use {_PROTOBUF} or {_JSON}",
            )
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > max_request_bytes:
            await error(413, _INVALID_ARGUMENT, f"body exceeds {max_request_bytes} bytes")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > max_request_bytes:
                await error(413, _INVALID_ARGUMENT, f"body exceeds {max_request_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        if ingest.full:
            await error(
                503,
                _UNAVAILABLE,
                "otel-semloop: export queue full (downstream down); retry later",
                [(b"retry-after", b"1")],
            )
            return
        encoding = headers.get("content-encoding", "").strip().lower()
        try:
            request, rejected, first = decode_http_body(
                b"".join(chunks), content_type, encoding, max_request_bytes
            )
        except BadRequest as exc:
            await error(exc.status, _INVALID_ARGUMENT, exc.message)
            return
        result = ingest.accept(request)
        rejected += result.rejected
        first = first or result.message
        if rejected and not result.accepted:
            await error(400, _INVALID_ARGUMENT, first)
            return
        response = trace_service_pb2.ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = first
        if json:
            body = (
                orjson.dumps({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": first}})
                if rejected
                else b"{}"
            )
        else:
            body = response.SerializeToString()
        await _respond(send, 200, body, reply_type)

    return app
