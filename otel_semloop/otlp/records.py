"""OTLP spans as :class:`~otel_semloop.model.SpanRecord`s: JSON span dicts and protobuf
``Span``s (write-back onto them is :mod:`otel_semloop.otlp.patch`); protobuf GenAI log
records as the :class:`~otel_semloop.conventions.LogEvent`s scoring puts on their spans.

:func:`records_from_json` reads parsed span dicts directly and keeps each as its
record's ``source`` (patched in place). Only what a record needs is validated (ids, times,
name, kind, flags, status, attributes, events); other fields pass through as they are.
"""

from __future__ import annotations

import functools
from typing import Any

from otel_semloop.conventions import LogEvent, is_genai_event
from otel_semloop.model import EventRecord, SpanRecord
from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE, Bad, field
from otel_semloop.otlp.anyvalue import attributes_json, decode_any_pb, decode_attributes_pb

__all__ = [
    "log_event_from_proto",
    "record_from_json",
    "record_from_proto_span",
    "records_from_json",
    "records_from_proto",
]

_parent_id = functools.partial(c.span_id_hex, allow_empty=True)


def _attributes(attrs: Any) -> dict[str, Any]:
    """The ``attributes`` value of a span or event dict as a dict (missing, null or ``[]``:
    empty)."""
    if attrs:
        try:
            return attributes_json(attrs)
        except Bad as e:
            e.path.append("attributes")
            raise
    if attrs is None or type(attrs) is list:
        return {}
    c.bad_type("an array", attrs, "attributes")


def _events_json(events: Any) -> list[EventRecord] | tuple[()]:
    """A span's ``events`` as records (missing, null or ``[]``: none; raises :class:`Bad`
    with the path inside them)."""
    if events is None or events == []:
        return ()
    if type(events) is not list:
        c.bad_type("an array", events)
    out = []
    for i, ev in enumerate(events):
        try:
            if type(ev) is not dict:
                c.bad_type("an event object", ev)
            name = field(ev, "name", c.string)
            time_ns = field(ev, "timeUnixNano", c.u64)
            out.append(EventRecord(name, time_ns, _attributes(ev.get("attributes"))))
        except Bad as e:
            e.path.append(f"[{i}]")
            raise
    return out


def _status(status: Any) -> tuple[int, str]:
    if status is None:
        return 0, ""
    if type(status) is not dict:
        c.bad_type("a status object", status)
    return field(status, "code", c.status_code), field(status, "message", c.string)


def _span_json(span: Any) -> SpanRecord:
    """One JSON span dict as a record (raises :class:`Bad` with the path from the span on)."""
    if type(span) is not dict:
        c.bad_type("a span object", span)
    trace_id = field(span, "traceId", c.trace_id_hex)
    span_id = field(span, "spanId", c.span_id_hex)
    parent = field(span, "parentSpanId", _parent_id)
    name = field(span, "name", c.string)
    kind = field(span, "kind", c.span_kind)
    start = field(span, "startTimeUnixNano", c.u64)
    end = field(span, "endTimeUnixNano", c.u64)
    attrs = _attributes(span.get("attributes"))
    events = field(span, "events", _events_json)
    flags = field(span, "flags", c.u32)
    remote = flags & FLAGS_IS_REMOTE != 0 if flags & FLAGS_HAS_IS_REMOTE else None
    code, message = field(span, "status", _status)
    return SpanRecord(
        trace_id, span_id, parent, name, start, end, attrs, events, code, message, kind, remote, span
    )


def record_from_json(span: Any) -> SpanRecord:
    """One OTLP JSON span dict as a :class:`SpanRecord` whose ``source`` is the dict (what a
    span adapter reads, a span at a time). Raises
    :class:`~otel_semloop.errors.OTLPDecodeError` whose ``where`` is the path inside the
    span, e.g. ``"events[1].timeUnixNano"``."""
    with c.decode_errors():
        return _span_json(span)


def records_from_json(obj: Any, where: str = "") -> list[SpanRecord]:
    """Every span of one parsed OTLP JSON ``TracesData`` (a file-exporter line or an
    OTLP/HTTP JSON body) as a :class:`SpanRecord` whose ``source`` is the span's dict.

    Ids come out as lowercase hex, times as ints, ``kind`` and ``status_code`` as ints
    (enum names written by older Collectors are accepted), ``parent_is_remote`` from the
    flags bits when present. Raises :class:`~otel_semloop.errors.OTLPDecodeError` whose
    ``where`` is ``where`` plus the path, e.g. ``"in.jsonl:12
    resourceSpans[0].scopeSpans[1].spans[3].traceId"``.
    """
    out: list[SpanRecord] = []

    def visit(spans: list[Any]) -> None:
        for i, span in enumerate(spans):
            try:
                out.append(_span_json(span))
            except Bad as e:
                e.path.append(f"spans[{i}]")
                raise

    with c.decode_errors(where):
        c.each_span_array(obj, visit)
    return out


def records_from_proto(msg: Any, where: str = "") -> list[SpanRecord]:
    """Every span of a protobuf ``TracesData`` / ``ExportTraceServiceRequest`` as a
    :class:`SpanRecord` whose ``source`` is the protobuf ``Span``.

    Raises :class:`~otel_semloop.errors.OTLPDecodeError` for ids of the wrong length.
    """
    out: list[SpanRecord] = []
    for i, rs in enumerate(msg.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            for k, span in enumerate(ss.spans):
                try:
                    out.append(_span_pb(span))
                except Bad as e:  # the path is only made for an error
                    e.path.append(f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]")
                    raise e.to_error(where) from None
    return out


def record_from_proto_span(span: Any, where: str = "", path: str = "span") -> SpanRecord:
    """One protobuf ``Span`` as a :class:`SpanRecord` (``source`` is the span), for callers
    that hold spans outside their ``TracesData`` envelope. ``path`` locates it in errors."""
    try:
        return _span_pb(span)
    except Bad as e:
        e.path.append(path)
        raise e.to_error(where) from None


def _span_pb(span: Any) -> SpanRecord:
    """One protobuf ``Span`` as a record (raises :class:`Bad` with the field)."""
    tid = span.trace_id
    sid = span.span_id
    pid = span.parent_span_id
    if len(tid) != 16:
        raise Bad(f"trace id must be 16 bytes, got {len(tid)}", "traceId")
    if len(sid) != 8:
        raise Bad(f"span id must be 8 bytes, got {len(sid)}", "spanId")
    if pid and len(pid) != 8:
        raise Bad(f"parent span id must be 8 bytes, got {len(pid)}", "parentSpanId")
    flags = span.flags
    return SpanRecord(
        trace_id=tid.hex(),
        span_id=sid.hex(),
        parent_span_id=pid.hex(),
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=decode_attributes_pb(span.attributes),
        events=[
            EventRecord(ev.name, ev.time_unix_nano, decode_attributes_pb(ev.attributes)) for ev in span.events
        ],
        status_code=span.status.code,
        status_message=span.status.message,
        kind=span.kind,
        parent_is_remote=bool(flags & FLAGS_IS_REMOTE) if flags & FLAGS_HAS_IS_REMOTE else None,
        source=span,
    )


def log_event_from_proto(record: Any) -> LogEvent | None:
    """A protobuf ``LogRecord`` as the :class:`~otel_semloop.conventions.LogEvent` scoring
    puts on its span, or None when it is not a GenAI event in a span's context (its event
    name, or its ``event.name`` attribute, does not start with ``gen_ai.``, or its trace
    and span ids are not 16 and 8 bytes)."""
    if len(record.trace_id) != 16 or len(record.span_id) != 8:
        return None
    attributes = decode_attributes_pb(record.attributes)
    name = record.event_name or attributes.get("event.name")
    if not is_genai_event(name):
        return None
    return LogEvent(
        record.span_id.hex(),
        name,
        record.time_unix_nano or record.observed_time_unix_nano,
        attributes,
        decode_any_pb(record.body) if record.HasField("body") else None,
    )
