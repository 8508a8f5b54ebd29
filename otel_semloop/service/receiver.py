"""The OTLP receivers: gRPC ``TraceService/Export`` and ``LogsService/Export`` and OTLP/HTTP
``POST /v1/traces`` and ``POST /v1/logs`` (an ASGI app served by uvicorn), on the service's
loop. Both transports and both signals get the same limits, authentication, admission and
answers (the contract of ``docs/service.md``, "Receivers"). A traces request that does not
decode as a whole is decoded span by span (:func:`_salvage_json`, :func:`parse_protobuf`),
so one bad span costs only itself.

Size: the two transports share admission, decoding and error answers, so they are read
together.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc
import orjson
from google.rpc import error_details_pb2, status_pb2

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import json_to_traces
from otel_semloop.otlp.codec import json_to_logs
from otel_semloop.service.config import Signal
from otel_semloop.service.held import SHALLOW_ENVELOPE, SHALLOW_REQUEST, WIRE, Accepted

__all__ = ["BadRequest", "Refusal", "check_bearer", "decode_http_body", "grpc_handler", "http_app"]

_logger = logging.getLogger("otel_semloop.service")

_Request = WIRE["traces"].request
_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"
_INVALID_ARGUMENT = 3
#: The google.rpc.Code (HTTP error bodies) and the gRPC status of an HTTP status.
_RPC_CODE = {401: 16, 404: 5, 408: 4, 413: 8, 503: 14}
_GRPC_STATUS = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    408: grpc.StatusCode.DEADLINE_EXCEEDED,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
}
#: Protobuf bodies up to this size are decoded on the loop (a C parse of microseconds).
_INLINE_DECODE_BYTES = 256 * 1024


class BadRequest(Exception):
    """A request the receivers refuse: ``status`` is the HTTP status, ``reason`` the
    refusal metric's attribute (default by status; empty: not counted), ``headers`` extra
    HTTP response headers."""

    def __init__(
        self,
        status: int,
        message: str,
        reason: str | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = ("too_large" if status == 413 else "malformed") if reason is None else reason
        self.headers = headers


class Refusal(Exception):
    """A retryable refusal (503 / UNAVAILABLE with retry information): the service is at
    a limit. ``reason`` is the metric attribute, ``retry_after`` the hint in seconds."""

    def __init__(self, reason: str, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry_after = retry_after


class Ingest(Protocol):
    """What the receivers call (implemented by :class:`~otel_semloop.service.SemloopService`):
    ``admit`` raises :class:`Refusal` when a request of ``size`` bytes must be refused
    retryably; ``accept`` holds a request's valid items (``size``: its body's bytes, counted
    against the memory limit until they are forwarded) and says how many were rejected and
    why; it may also raise :class:`Refusal` (e.g. the durable queue is full)."""

    def admit(self, size: int, signal: Signal) -> None: ...

    async def accept(self, request: Any, size: int, raw: bytes | None, signal: Signal) -> Accepted: ...

    def refused(self, reason: str) -> None: ...


def check_bearer(expected: str, header: str | None) -> bool:
    """Whether ``header`` is ``Bearer <expected>`` (constant-time comparison)."""
    if not expected:
        return True
    if not header:
        return False
    scheme, _, token = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected.encode())


# -- decoding ------------------------------------------------------------------------------


def _gunzip(body: bytes, limit: int) -> bytes:
    """gzip-decompress at most ``limit`` bytes (a small bomb cannot exhaust memory)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(400, f"body is not valid gzip: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise BadRequest(413, f"decompressed body exceeds max_decompressed_bytes={limit}")
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

    def note(error: Exception, path: str, decoded_as: str, count: int = 1) -> None:
        """Count ``count`` rejected spans; the first error names its JSON path once: the
        decoder's path was within the one-entry request ``decoded_as`` built, so its
        prefix is replaced by ``path`` in the body."""
        nonlocal rejected, first
        rejected += count
        if not first:
            where = getattr(error, "where", "")
            message = str(error).removeprefix(f"{where}: ") if where else str(error)
            if where.startswith(decoded_as):
                path += where[len(decoded_as) :]
            first = f"{path}: {message}"

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
            note(exc, f"resourceSpans[{i}]", "resourceSpans[0]", count)
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
                    note(exc, f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]", _ONE_SPAN)
                    continue
                out_ss.spans.add().CopyFrom(one.resource_spans[0].scope_spans[0].spans[0])
    return request, rejected, first


#: Where a span decoded alone sits in the request built around it.
_ONE_SPAN = "resourceSpans[0].scopeSpans[0].spans[0]"


def parse_protobuf(body: bytes) -> tuple[_Request, int, str]:
    """A protobuf ``ExportTraceServiceRequest`` as ``(request, rejected spans, first
    error)``. When the request does not parse as a whole, its spans are parsed one by one
    (through :data:`~otel_semloop.service.held.SHALLOW_REQUEST`), so that a span nested deeper than the
    parser allows, or otherwise unreadable, costs only itself, as a bad span does in JSON.
    Raises ``DecodeError`` when even the nesting is broken (the body is not a request)."""
    request = _Request()
    try:
        request.ParseFromString(body)
        return request, 0, ""
    except Exception as whole:
        error = whole
    request = _Request()
    rejected = 0
    first = ""
    try:
        for i, rs_bytes in enumerate(SHALLOW_REQUEST.FromString(body).items):
            out_rs = request.resource_spans.add()
            rs = SHALLOW_ENVELOPE.FromString(rs_bytes)
            if rs.HasField("head"):
                out_rs.resource.ParseFromString(rs.head)
            out_rs.schema_url = rs.schema_url.decode()
            for j, ss_bytes in enumerate(rs.items):
                out_ss = out_rs.scope_spans.add()
                ss = SHALLOW_ENVELOPE.FromString(ss_bytes)
                if ss.HasField("head"):
                    out_ss.scope.ParseFromString(ss.head)
                out_ss.schema_url = ss.schema_url.decode()
                for k, span_bytes in enumerate(ss.items):
                    try:
                        out_ss.spans.add().ParseFromString(span_bytes)
                    except Exception as exc:
                        del out_ss.spans[-1]
                        rejected += 1
                        if not first:
                            reason = str(exc).rsplit(": ", 1)[-1]
                            where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                            first = f"{where}: not a readable span ({reason})"
    except Exception:
        raise error from None
    return request, rejected, first


def parse_request(body: bytes, signal: Signal = "traces") -> tuple[Any, int, str]:
    """A protobuf export request of ``signal`` as ``(request, rejected items, first
    error)``: traces through :func:`parse_protobuf`; a logs request whole (its records are
    forwarded as they are, none is rejected). Raises ``DecodeError``."""
    if signal == "traces":
        return parse_protobuf(body)
    return WIRE["logs"].request.FromString(body), 0, ""


def decode_http_body(
    body: bytes, content_type: str, encoding: str, limit: int, signal: Signal = "traces"
) -> tuple[Any, int, str]:
    """An OTLP/HTTP body of ``signal`` as ``(request, rejected items, first error)``;
    raises :class:`BadRequest`."""
    if encoding == "gzip":
        body = _gunzip(body, limit)
    elif encoding not in ("", "identity"):
        raise BadRequest(415, f"unsupported Content-Encoding {encoding!r}: use gzip or none")
    request_type = WIRE[signal].request
    if content_type == _PROTOBUF:
        try:
            return parse_request(body, signal)
        except Exception as exc:
            raise BadRequest(400, f"body is not a protobuf {request_type.__name__}: {exc}") from None
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(400, f"body is not JSON: {exc}") from None
    if signal == "logs":
        try:
            return json_to_logs(obj, message_type=request_type), 0, ""
        except OTLPDecodeError as exc:
            raise BadRequest(400, f"body is not an OTLP JSON ExportLogsServiceRequest: {exc}") from None
    try:
        return json_to_traces(obj, message_type=_Request), 0, ""
    except OTLPDecodeError:
        return _salvage_json(obj)


def _reply(signal: Signal, rejected: int, message: str) -> bytes:
    """The protobuf export response, with ``partial_success`` when items were rejected."""
    response = WIRE[signal].response()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return response.SerializeToString()


# -- gRPC ------------------------------------------------------------------------------------


def _retry_trailer(message: str, retry_after: float) -> tuple[tuple[str, bytes], ...]:
    """The ``RetryInfo`` that tells an OTLP exporter when to retry, in the trailer the
    Collector's, Go and Java exporters read and in the one the Python exporter reads."""
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromNanoseconds(int(retry_after * 1e9))
    status = status_pb2.Status(code=_RPC_CODE[503], message=message)
    status.details.add().Pack(info)
    return (
        ("grpc-status-details-bin", status.SerializeToString()),
        ("google.rpc.retryinfo-bin", info.SerializeToString()),
    )


def grpc_handler(
    ingest: Ingest,
    *,
    auth_token: str,
    max_decompressed_bytes: int,
    body_timeout: float = 30.0,
    signal: Signal = "traces",
) -> grpc.GenericRpcHandler:
    """``signal``'s ``Export`` method taking the raw request bytes, so that a body that is not
    an export request gets INVALID_ARGUMENT with the reason (grpcio's own deserialiser would
    answer UNKNOWN and log a traceback). Registered as client-streaming (the same wire as a
    unary call) so that it runs when the headers arrive: the token is checked before any
    body is read, and a message not there within ``body_timeout`` ends the call."""
    service, _, request_type, _ = WIRE[signal]

    async def export(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        try:
            return await handle(requests, context)
        # A status set without raising (no abort): cheaper under load, and nothing for
        # grpcio to log if the client has gone by the time the status is sent.
        except Refusal as refusal:
            context.set_trailing_metadata(_retry_trailer(refusal.message, refusal.retry_after))
            code, message = grpc.StatusCode.UNAVAILABLE, refusal.message
        except BadRequest as exc:
            if exc.reason:
                ingest.refused(exc.reason)
            code, message = _GRPC_STATUS[exc.status], exc.message
        context.set_code(code)
        context.set_details(message)
        return b""

    async def handle(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        header = dict(context.invocation_metadata() or ()).get("authorization")
        if not check_bearer(auth_token, header if isinstance(header, str) else None):
            raise BadRequest(401, "otel-semloop: missing or wrong bearer token", "unauthenticated")
        try:
            body = await asyncio.wait_for(anext(requests), body_timeout)
        except asyncio.TimeoutError:
            message = f"otel-semloop: no request message within body_timeout={body_timeout:g} s"
            raise BadRequest(408, message, "slow_body") from None
        except StopAsyncIteration:
            raise BadRequest(400, "otel-semloop: the call carried no message") from None
        except Exception as exc:  # grpcio failed the read and ended the call itself
            # (a message past max_receive_message_length answered RESOURCE_EXHAUSTED, or the
            # peer gone): the sender already has its status; nothing was acknowledged.
            _logger.debug("%s: the call ended while its message was read: %r", signal, exc)
            return b""
        if len(body) > max_decompressed_bytes:  # grpcio checks the limit too; be explicit
            message = f"request of {len(body)} bytes exceeds max_decompressed_bytes={max_decompressed_bytes}"
            raise BadRequest(413, f"otel-semloop: {message}")
        ingest.admit(len(body), signal)
        try:
            request, unreadable, first = parse_request(body, signal)
        except Exception as exc:
            raise BadRequest(
                400, f"otel-semloop: body is not a protobuf {request_type.__name__}: {exc}"
            ) from None
        # The raw body is stored as it is (durable queue) only when all of it was read.
        result = await ingest.accept(request, len(body), None if unreadable else body, signal)
        rejected = unreadable + result.rejected
        message = first or result.message
        if rejected and not result.accepted:
            raise BadRequest(400, message, "")
        return _reply(signal, rejected, message)

    method = grpc.stream_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=None)
    return grpc.method_handlers_generic_handler(service, {"Export": method})


# -- HTTP (ASGI) -----------------------------------------------------------------------------

#: The slowest a request body may arrive on average, past its first ``body_timeout``
#: seconds (bytes a second; the rule of Apache's mod_reqtimeout ``MinRate``): the body's
#: deadline is ``body_timeout`` plus one second per this many bytes received.
MIN_BODY_RATE = 16 * 1024
_CLOSE = ((b"connection", b"close"),)

_Receive = Callable[[], Awaitable[dict[str, Any]]]
_Send = Callable[[dict[str, Any]], Awaitable[None]]


def http_app(
    ingest: Ingest,
    *,
    max_request_bytes: int,
    max_decompressed_bytes: int,
    auth_token: str = "",
    body_timeout: float = 30.0,
) -> Callable[[dict[str, Any], _Receive, _Send], Awaitable[None]]:
    """The ASGI app serving ``POST /v1/traces`` and ``POST /v1/logs``."""
    signals: dict[str, Signal] = {wire.path: signal for signal, wire in WIRE.items()}

    async def app(scope: dict[str, Any], receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        json = content_type == _JSON
        try:
            body = await export(scope, headers, content_type, receive)
            if body is None:  # the client went away
                return
            status, extra, reply_type = 200, (), _JSON if json else _PROTOBUF
        except (Refusal, BadRequest) as exc:
            if isinstance(exc, Refusal):
                status, extra = 503, ((b"retry-after", str(max(1, round(exc.retry_after))).encode()),)
            else:
                if exc.reason:
                    ingest.refused(exc.reason)
                status, extra = exc.status, exc.headers
            code = _RPC_CODE.get(status, _INVALID_ARGUMENT)
            if json:
                body, reply_type = orjson.dumps({"code": code, "message": exc.message}), _JSON
            else:
                body, reply_type = exc.message.encode("utf-8", "replace"), "text/plain; charset=utf-8"
        response = [(b"content-type", reply_type.encode()), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": [*response, *extra]})
        await send({"type": "http.response.body", "body": body})

    async def export(
        scope: dict[str, Any], headers: dict[str, str], content_type: str, receive: _Receive
    ) -> bytes | None:
        """The reply to a request, None if the client went away; raises :class:`BadRequest`
        or :class:`Refusal`."""
        path = scope["path"]
        if path not in signals:
            paths = " and ".join(f"POST {path}" for path in signals)
            raise BadRequest(404, f"no such path {path!r}: OTLP goes to {paths}", "")
        if scope["method"] != "POST":
            raise BadRequest(405, "use POST", "", ((b"allow", b"POST"),))
        if not check_bearer(auth_token, headers.get("authorization")):
            challenge = ((b"www-authenticate", b'Bearer realm="otel-semloop"'),)
            raise BadRequest(401, "missing or wrong bearer token", "unauthenticated", challenge)
        if content_type not in (_PROTOBUF, _JSON):
            raise BadRequest(
                415, f"unsupported Content-Type {content_type!r}: use {_PROTOBUF} or {_JSON}", ""
            )
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity", "gzip"):
            raise BadRequest(415, f"unsupported Content-Encoding {encoding!r}: use gzip or none", "")
        length = headers.get("content-length", "")
        declared = int(length) if length.isdigit() else 0
        if declared > max_request_bytes:
            raise BadRequest(413, f"body of {length} bytes exceeds max_request_bytes={max_request_bytes}")
        signal = signals[path]
        ingest.admit(declared, signal)
        body = await _read_body(receive, max_request_bytes, body_timeout)
        if body is None:
            return None
        decode = (body, content_type, encoding, max_decompressed_bytes, signal)
        if len(body) > _INLINE_DECODE_BYTES or content_type == _JSON:
            # Large or JSON bodies are decoded on a thread: the loop keeps serving.
            request, rejected, first = await asyncio.to_thread(decode_http_body, *decode)
        else:
            request, rejected, first = decode_http_body(*decode)
        result = await ingest.accept(request, len(body), None, signal)
        rejected += result.rejected
        first = first or result.message
        if rejected and not result.accepted:
            raise BadRequest(400, first, "")
        if content_type == _PROTOBUF:
            return _reply(signal, rejected, first)
        if not rejected:
            return b"{}"
        return orjson.dumps({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": first}})

    return app


async def _read_body(receive: _Receive, limit: int, body_timeout: float) -> bytes | None:
    """A request's body, None if the client went away. Each chunk must come within
    ``body_timeout``, and the whole body by a deadline that grows with what arrived
    (:data:`MIN_BODY_RATE`): a byte every few seconds cannot hold a slot."""
    chunks: list[bytes] = []
    size = 0
    started = time.monotonic()
    while True:
        left = started + body_timeout + size / MIN_BODY_RATE - time.monotonic()
        try:
            message = await asyncio.wait_for(receive(), max(0.0, min(body_timeout, left)))
        except asyncio.TimeoutError:
            why = (
                f"no body data for {body_timeout:g} s"
                if left > body_timeout
                else f"body slower than {MIN_BODY_RATE // 1024} KiB/s after {body_timeout:g} s"
            )
            raise BadRequest(408, why, "slow_body", _CLOSE) from None
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            raise BadRequest(413, f"body exceeds max_request_bytes={limit}", "too_large", _CLOSE)
        if not message.get("more_body", False):
            return b"".join(chunks)
