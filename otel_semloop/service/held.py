"""The service's received items: how each span or log record is held, checked and read.

Each received span (or log record) is held as a :class:`Held`: its own copy of the item's
wire bytes plus envelopes holding only the Resource and InstrumentationScope it arrived
with (and their schema URLs), so that it is exported with them and keeps nothing of its
request alive. ``cost`` is its share of its request's bytes (counted against
``memory_limit_bytes`` until forwarded), ``ticket`` the durable-queue record it belongs to.

:func:`prepare` checks a traces request's spans (bad ids are rejected one by one, with the
first reason) and copies the good ones out, touching no shared state, so a large request
is prepared on a thread. :data:`PROTO_SPANS` is the :class:`~otel_semloop.release.SpanAdapter`
the scoring pool reads spans through. :data:`WIRE` names each signal's OTLP service and
messages; :data:`SHALLOW_REQUEST` and :data:`SHALLOW_ENVELOPE` read or write a request's
nesting with its items as bytes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.conventions import KIND_KEYS, step_kind
from otel_semloop.model import SpanRecord, StepKind
from otel_semloop.otlp import apply_patch_proto, record_from_proto_span
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE
from otel_semloop.release import SpanLinks
from otel_semloop.service.config import Signal
from otel_semloop.writeback import SpanPatch

__all__ = [
    "KIND_KEYS",
    "PROTO_SPANS",
    "SHALLOW_ENVELOPE",
    "SHALLOW_REQUEST",
    "SPAN_OVERHEAD_BYTES",
    "WIRE",
    "Accepted",
    "Held",
    "Prepared",
    "ProtoSpans",
    "count_items",
    "envelopes",
    "invalid_span_reason",
    "prepare",
]


class Wire(NamedTuple):
    """A signal's OTLP names: its gRPC service, its HTTP path, its request and response."""

    service: str
    path: str
    request: Any
    response: Any


WIRE: dict[Signal, Wire] = {
    "traces": Wire(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        "/v1/traces",
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
    ),
    "logs": Wire(
        "opentelemetry.proto.collector.logs.v1.LogsService",
        "/v1/logs",
        logs_service_pb2.ExportLogsServiceRequest,
        logs_service_pb2.ExportLogsServiceResponse,
    ),
}


def _shallow_messages() -> tuple[Any, Any]:
    """Message types for an export request's nesting with its parts kept as bytes. Both
    signals nest alike: a request is repeated field 1 (resource spans or logs); a resource
    or scope envelope is a head (field 1: resource or scope), repeated items (field 2:
    scope envelopes, or spans or records) and a schema URL (field 3)."""
    bytes_type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    file = descriptor_pb2.FileDescriptorProto(name="otel_semloop/shallow.proto", package="otel_semloop")
    request = file.message_type.add(name="ShallowRequest")
    request.field.add(name="items", number=1, type=bytes_type, label=repeated)
    envelope = file.message_type.add(name="ShallowEnvelope")
    envelope.field.add(name="head", number=1, type=bytes_type, label=optional)
    envelope.field.add(name="items", number=2, type=bytes_type, label=repeated)
    envelope.field.add(name="schema_url", number=3, type=bytes_type, label=optional)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return tuple(  # type: ignore[return-value]
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"otel_semloop.{name}"))
        for name in ("ShallowRequest", "ShallowEnvelope")
    )


#: The shallow request and envelope types (see :func:`_shallow_messages`).
SHALLOW_REQUEST, SHALLOW_ENVELOPE = _shallow_messages()

_ZERO_TRACE_ID = bytes(16)


class Held:
    """One received span or log record, and the envelopes it came in (``resource`` and
    ``scope``: ``ResourceSpans``/``ScopeSpans`` or ``ResourceLogs``/``ScopeLogs`` holding
    only the Resource and InstrumentationScope).

    The item is kept as its wire bytes (``wire``: smaller than a decoded message, and
    shipped to a scoring process or into an export request as they are) until something
    changes it: :attr:`span` decodes it once and from then on the message is the span.
    :meth:`view` reads it without keeping the decoded copy. ``key`` identifies it within
    its durable-queue request (else empty)."""

    __slots__ = ("_span", "cost", "key", "resource", "scope", "ticket", "wire")

    def __init__(
        self, span: Any, resource: Any, scope: Any, cost: int = 0, ticket: int = 0, key: bytes = b""
    ) -> None:
        if isinstance(span, bytes):
            self.wire: bytes | None = span
            self._span: Any = None
        else:
            self.wire, self._span = None, span
        self.resource = resource
        self.scope = scope
        self.cost = cost
        self.ticket = ticket
        self.key = key

    @property
    def span(self) -> Any:
        """The span as a protobuf message, to change it (decoded once, then kept)."""
        if self._span is None:
            self._span = trace_pb2.Span.FromString(self.wire)
            self.wire = None
        return self._span

    def view(self) -> Any:
        """The span as a message to read (a throwaway decoding while it is still bytes)."""
        return self._span if self._span is not None else trace_pb2.Span.FromString(self.wire)

    def replaced(self, wire: bytes) -> Held:
        """A copy holding ``wire`` (the span patched elsewhere); this one is left as it was."""
        return Held(wire, self.resource, self.scope, self.cost, self.ticket, self.key)

    def serialized(self) -> bytes:
        """The item's wire bytes (as received, unless it was changed)."""
        return self.wire if self.wire is not None else self._span.SerializeToString()  # type: ignore[no-any-return]


#: A span whose bytes contain none of the attribute keys :func:`~otel_semloop.conventions.step_kind`
#: reads cannot be a step (checked before decoding anything).
_MAY_BE_STEP = re.compile(b"|".join(re.escape(key.encode()) for key in sorted(KIND_KEYS)))


def envelopes(resource: Any, scope: Any) -> tuple[Any, Any]:
    """Copies of a resource envelope and its scope envelope without their items
    (``ResourceSpans``/``ScopeSpans`` or ``ResourceLogs``/``ScopeLogs``: the same fields)."""
    out_resource = type(resource)()
    if resource.HasField("resource"):
        out_resource.resource.CopyFrom(resource.resource)
    out_resource.schema_url = resource.schema_url
    out_scope = type(scope)()
    if scope.HasField("scope"):
        out_scope.scope.CopyFrom(scope.scope)
    out_scope.schema_url = scope.schema_url
    return out_resource, out_scope


def _remote_parent(span: Any) -> bool:
    flags = span.flags
    return bool(flags & FLAGS_HAS_IS_REMOTE and flags & FLAGS_IS_REMOTE)


class ProtoSpans:
    """The :class:`~otel_semloop.release.SpanAdapter` for received protobuf spans
    (:class:`Held`): records are decoded from the protobuf, patches are applied in place."""

    __slots__ = ()

    def record(self, held: Held) -> SpanRecord:
        record = record_from_proto_span(held.view())
        record.source = held
        return record

    def patched(self, held: Held, patch: SpanPatch) -> Held:
        if patch.attributes or patch.events:  # an empty patch: applied where it was made
            apply_patch_proto(held.span, patch)
        return held

    def links(self, held: Held) -> SpanLinks:
        span = held.view()
        return SpanLinks(
            span_id=span.span_id,
            parent_id=span.parent_span_id or None,
            parent_is_remote=_remote_parent(span),
            start_ns=span.start_time_unix_nano,
        )

    def may_have_steps(self, spans: Sequence[Held]) -> bool:
        """Reads only the few attribute keys that classify a span; a span whose bytes hold
        none of those keys is not even decoded."""
        for held in spans:
            if held.wire is not None and _MAY_BE_STEP.search(held.wire) is None:
                continue
            span = held.view()
            kinds = {kv.key: kv.value.string_value for kv in span.attributes if kv.key in KIND_KEYS}
            if kinds and step_kind(kinds, top_level=True) is not StepKind.OTHER:
                return True
        return False


#: The adapter instance the service uses.
PROTO_SPANS = ProtoSpans()


@dataclasses.dataclass(slots=True)
class Accepted:
    """What became of a request: items taken, items rejected (with the first reason,
    naming the item's path)."""

    accepted: int = 0
    rejected: int = 0
    message: str = ""


#: Memory a held item costs beyond its wire bytes (the holder, the buffer's and the export
#: queue's entries, and the decoded request while it is copied).
SPAN_OVERHEAD_BYTES = 640


def count_items(request: Any) -> int:
    """The spans of a traces request, or the records of a logs request."""
    if hasattr(request, "resource_spans"):
        return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    return sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)


def item_cost(request: Any, size: int) -> int:
    """What one item of ``request`` (``size`` bytes) counts against the memory limit: its
    share of the bytes plus the Python objects around it."""
    total = count_items(request)
    return (size // total if total else 0) + SPAN_OVERHEAD_BYTES


@dataclasses.dataclass(slots=True)
class Prepared:
    """A traces request's spans checked and copied out, as ``(trace id, local root, held)``."""

    spans: list[tuple[bytes, bool, Held]]
    result: Accepted
    #: Bytes the spans count against the memory limit.
    cost: int = 0


def prepare(request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> Prepared:
    """Check and copy a traces request's spans, each into its own bytes (so that no held
    span pins its request). ``skip`` names spans already delivered (durable replay) by
    ``trace_id + span_id``."""
    result = Accepted()
    out: list[tuple[bytes, bool, Held]] = []
    cost = item_cost(request, size)
    for i, rs in enumerate(request.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            env_rs, env_ss = envelopes(rs, ss)
            for k, span in enumerate(ss.spans):
                reason = invalid_span_reason(span)
                if reason is not None:
                    result.rejected += 1
                    if not result.message:
                        result.message = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]: {reason}"
                    continue
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if skip and trace_id + span_id in skip:
                    continue
                local_root = not parent or _remote_parent(span)
                key = trace_id + span_id if ticket else b""
                held = Held(span.SerializeToString(), env_rs, env_ss, cost, ticket, key)
                out.append((trace_id, local_root, held))
    result.accepted = len(out)
    return Prepared(out, result, cost * len(out))


def invalid_span_reason(span: Any) -> str | None:
    """Why a protobuf span cannot be grouped (bad ids), or None. OTLP requires a 16-byte
    non-zero trace id and an 8-byte span id; the parent id is empty or 8 bytes."""
    tid = span.trace_id
    if len(tid) != 16:
        return f"traceId must be 16 bytes, got {len(tid)}"
    if tid == _ZERO_TRACE_ID:
        return "traceId must not be all zeros"
    if len(span.span_id) != 8:
        return f"spanId must be 8 bytes, got {len(span.span_id)}"
    parent = span.parent_span_id
    if parent and len(parent) != 8:
        return f"parentSpanId must be empty or 8 bytes, got {len(parent)}"
    return None
