"""The service's received spans: how each one is held, checked and read.

Span identity and provenance
    Each received span is held as a :class:`Held`: its own copy of the protobuf ``Span``
    (its wire bytes until something changes it) plus envelopes holding only the Resource
    and InstrumentationScope it arrived with (and their schema URLs), so it is exported
    with them. A held span keeps nothing of its request alive: a few spans waiting for
    their root cannot pin the megabytes of the requests they came in. ``cost`` is the
    span's share of its request's bytes (counted against ``memory_limit_bytes`` until
    forwarded) and ``ticket`` the durable-queue record it belongs to.

:func:`prepare` checks a request's spans (ids; bad ones are rejected one by one, with
the first reason) and copies the good ones out as :class:`Held`, touching no shared state
(a large request is prepared on a thread). :data:`PROTO_SPANS` is the
:class:`~otel_semloop.release.SpanAdapter` the scoring pool reads them through; its
``may_have_steps`` tells agent traces from others by a few attribute keys, mostly without
decoding a span.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.conventions import step_kind
from otel_semloop.model import SpanRecord, StepKind
from otel_semloop.otlp import apply_patch_proto, record_from_proto_span
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE
from otel_semloop.release import SpanLinks
from otel_semloop.writeback import SpanPatch

__all__ = [
    "KIND_KEYS",
    "PROTO_SPANS",
    "SPAN_OVERHEAD_BYTES",
    "Accepted",
    "Held",
    "Prepared",
    "ProtoSpans",
    "envelopes",
    "invalid_span_reason",
    "prepare",
]

_ZERO_TRACE_ID = bytes(16)
#: The attributes :func:`~otel_semloop.conventions.step_kind` reads to classify a span.
KIND_KEYS = frozenset(
    {
        "confident.span.type",
        "openinference.span.kind",
        "traceloop.span.kind",
        "gen_ai.operation.name",
        "llm.request.type",
    }
)


class Held:
    """One received span and the envelope it came in (kept for its Resource and Scope).

    The span is kept as its protobuf wire bytes (``wire``: a few hundred bytes less than a
    decoded message, and shipped to a scoring process or into an export request as they
    are) until something changes it: :attr:`span` decodes it once and from then on the
    message is the span. :meth:`view` reads it without keeping the decoded copy. ``key``
    is ``trace_id + span_id`` when the durable queue needs it (else empty)."""

    __slots__ = ("_span", "cost", "key", "resource_spans", "scope_spans", "ticket", "wire")

    def __init__(
        self,
        span: Any,
        resource_spans: Any,
        scope_spans: Any,
        cost: int = 0,
        ticket: int = 0,
        key: bytes = b"",
    ) -> None:
        if isinstance(span, bytes):
            self.wire: bytes | None = span
            self._span: Any = None
        else:
            self.wire, self._span = None, span
        self.resource_spans = resource_spans
        self.scope_spans = scope_spans
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
        """A copy holding ``wire`` (the span patched elsewhere), with the same envelopes,
        cost, ticket and key; this one is left as it was."""
        return Held(wire, self.resource_spans, self.scope_spans, self.cost, self.ticket, self.key)

    def serialized(self) -> bytes:
        """The span's wire bytes (as received, unless it was changed)."""
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
    """What :meth:`Pipeline.accept` made of a request: spans taken, spans rejected (with
    the first reason, naming the span's path)."""

    accepted: int = 0
    rejected: int = 0
    message: str = ""


#: Memory a held span costs beyond its wire bytes (the holder, the buffer's and the export
#: queue's entries, and the decoded request while it is copied).
SPAN_OVERHEAD_BYTES = 640


@dataclasses.dataclass(slots=True)
class Prepared:
    """A request's spans checked and copied out, ready for :meth:`Pipeline.hold`."""

    spans: list[tuple[bytes, bool, Held]]
    result: Accepted


def prepare(request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> Prepared:
    """Check and copy a request's spans: O(spans), a few checks and each span's bytes (so
    that no held span pins its request). Touches no shared state, so a large request is
    prepared on a thread while the loop serves on."""
    result = Accepted()
    out: list[tuple[bytes, bool, Held]] = []
    total = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    # A held span costs its share of the wire bytes plus the Python objects around it.
    cost = (size // total if total else 0) + SPAN_OVERHEAD_BYTES
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
    return Prepared(out, result)


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
