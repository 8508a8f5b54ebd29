"""The light scan of a unit's document: every span with its trace id, span id and whether it
is a local root, and nothing else.

Why a light scan: the reading process only needs each span's trace id, span id, parent id
and whether it is a local root to group spans and decide when a trace is complete; the
full decode (attributes, events, conventions) happens once per trace in a scoring worker,
so it runs on another core. A span whose ids are wrong makes its line malformed (reported
with the place, copied through); anything wrong inside a span's attributes only concerns
its trace, which is then scored without the bad values or goes out unscored with a reason.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE, Bad

__all__ = ["ScannedSpan", "scan_json", "scan_proto"]

_ZERO_TRACE_HEX = "0" * 32
_ZERO_TRACE = bytes(16)
_REMOTE_BITS = FLAGS_HAS_IS_REMOTE | FLAGS_IS_REMOTE
_parent_id = functools.partial(c.span_id_hex, allow_empty=True)


@dataclass(slots=True)
class ScannedSpan:
    trace_id: str
    span_id: str
    root: bool
    span: Any  # the span dict (JSON) or protobuf Span, patched in place


def scan_json(doc: Any) -> list[ScannedSpan]:
    """Every span of an OTLP JSON ``TracesData`` with its ids. Raises :class:`Bad` (with
    the path) for a structure or id that is not OTLP, and for an all-zero trace id, which
    OTLP forbids and the service refuses too."""
    out: list[ScannedSpan] = []

    def scan(spans: list[Any]) -> None:
        for k, span in enumerate(spans):
            try:
                out.append(_scan_span(span))
            except Bad as e:
                e.path.append(f"spans[{k}]")
                raise

    c.each_span_array(doc, scan)
    return out


def _scan_span(span: Any) -> ScannedSpan:
    if type(span) is not dict:
        c.bad_type("a span object", span)
    tid = c.field(span, "traceId", c.trace_id_hex)
    if tid == _ZERO_TRACE_HEX:
        raise Bad("traceId must not be all zeros", "traceId")
    sid = c.field(span, "spanId", c.span_id_hex)
    parent = c.field(span, "parentSpanId", _parent_id)
    flags = span.get("flags")
    root = not parent or (type(flags) is int and flags & _REMOTE_BITS == _REMOTE_BITS)
    return ScannedSpan(tid, sid, root, span)


def scan_proto(msg: TracesData) -> list[ScannedSpan]:
    """Every span of a protobuf ``TracesData`` with its ids (raises :class:`Bad`)."""
    out: list[ScannedSpan] = []
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
                out.append(ScannedSpan(tid.hex(), sid.hex(), root, span))
    return out
