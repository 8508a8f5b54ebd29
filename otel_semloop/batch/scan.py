"""The light scan of a unit's document: its spans grouped by trace, each group with the
spans' ids and local roots, and nothing else.

Why a light scan: the reading process only needs each span's trace id, span id, parent id
and whether it is a local root to group spans and decide when a trace is complete; the
full decode (attributes, events, conventions) happens once per trace in a scoring worker,
so it runs on another core. A span whose ids are wrong makes its line malformed (reported
with the place, copied through); anything wrong inside a span's attributes only concerns
its trace, which is then scored without the bad values or goes out unscored with a reason.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from otel_semloop.batch.spans import dump_json
from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE, Bad
from otel_semloop.otlp.codec import span_to_json

__all__ = ["UnitSpans", "scan_json", "scan_proto"]

_ZERO_TRACE_HEX = "0" * 32
_ZERO_TRACE = bytes(16)
_REMOTE_BITS = FLAGS_HAS_IS_REMOTE | FLAGS_IS_REMOTE
_parent_id = functools.partial(c.span_id_hex, allow_empty=True)


@dataclass(slots=True, eq=False)
class UnitSpans:
    """The spans of one trace in one unit, in the unit's order: the span dicts (JSON) or
    protobuf ``Span`` s, patched in place, with their span ids and the ids of the local
    roots among them."""

    #: where its first and last span stand in the unit
    first: int
    last: int
    spans: list[Any] = field(default_factory=list)
    span_ids: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    #: the unit holding them, while the engine waits for their trace
    unit: Any = None
    #: the spans as one JSON array (see :meth:`json_array`)
    encoded: bytes | None = None

    @property
    def is_json(self) -> bool:
        return not self.spans or type(self.spans[0]) is dict

    def json_array(self) -> bytes:
        """The spans as one OTLP JSON array (protobuf spans converted), encoded once."""
        if self.encoded is None:
            self.encoded = dump_json([span_to_json(s) if isinstance(s, Span) else s for s in self.spans])
        return self.encoded


def _group(
    groups: dict[str, UnitSpans], position: int, trace_id: str, span_id: str, root: bool, span: Any
) -> None:
    group = groups.get(trace_id)
    if group is None:
        group = groups[trace_id] = UnitSpans(position, position)
    group.last = position
    group.spans.append(span)
    group.span_ids.append(span_id)
    if root:
        group.roots.append(span_id)


def scan_json(doc: Any) -> dict[str, UnitSpans]:
    """The spans of an OTLP JSON ``TracesData`` by trace id, in the order each trace's
    first span stands. Raises :class:`Bad` (with the path) for a structure or id that is
    not OTLP, and for an all-zero trace id, which OTLP forbids and the service refuses
    too."""
    groups: dict[str, UnitSpans] = {}
    position = 0

    def scan(spans: list[Any]) -> None:
        nonlocal position
        for k, span in enumerate(spans):
            try:
                trace_id, span_id, root = _span_ids(span)
            except Bad as e:
                e.path.append(f"spans[{k}]")
                raise
            _group(groups, position, trace_id, span_id, root, span)
            position += 1

    c.each_span_array(doc, scan)
    return groups


def _span_ids(span: Any) -> tuple[str, str, bool]:
    if type(span) is not dict:
        c.bad_type("a span object", span)
    tid = c.field(span, "traceId", c.trace_id_hex)
    if tid == _ZERO_TRACE_HEX:
        raise Bad("traceId must not be all zeros", "traceId")
    sid = c.field(span, "spanId", c.span_id_hex)
    parent = c.field(span, "parentSpanId", _parent_id)
    flags = span.get("flags")
    return tid, sid, not parent or (type(flags) is int and flags & _REMOTE_BITS == _REMOTE_BITS)


def scan_proto(msg: TracesData) -> dict[str, UnitSpans]:
    """The spans of a protobuf ``TracesData`` by trace id (raises :class:`Bad`)."""
    groups: dict[str, UnitSpans] = {}
    position = 0
    for i, rs in enumerate(msg.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k, span in enumerate(ss.spans):
                path = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                tid, sid, pid = span.trace_id, span.span_id, span.parent_span_id
                if len(tid) != 16:
                    raise Bad(f"trace id must be 16 bytes, got {len(tid)}", path, "traceId")
                if tid == _ZERO_TRACE:
                    raise Bad("traceId must not be all zeros", path, "traceId")
                if len(sid) != 8:
                    raise Bad(f"span id must be 8 bytes, got {len(sid)}", path, "spanId")
                if pid and len(pid) != 8:
                    raise Bad(f"parent span id must be 8 bytes, got {len(pid)}", path, "parentSpanId")
                flags = span.flags
                root = not pid or bool(flags & FLAGS_HAS_IS_REMOTE and flags & FLAGS_IS_REMOTE)
                _group(groups, position, tid.hex(), sid.hex(), root, span)
                position += 1
    return groups
