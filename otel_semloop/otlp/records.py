"""OTLP spans as :class:`~otel_semloop.model.SpanRecord`s: JSON span dicts and protobuf
``Span``s (write-back onto them is :mod:`otel_semloop.otlp.patch`); protobuf GenAI log
records as the :class:`~otel_semloop.conventions.LogEvent`s scoring puts on their spans.

:func:`records_from_json` is the hot path of ``otel-semloop rescore``: it reads the span
dicts of an ``orjson``-parsed line directly (attributes into a plain dict, no protobuf
objects) and keeps each span dict as the record's ``source``, so
:func:`~otel_semloop.otlp.patch.apply_patch_json` edits the document in place and the
line is dumped again with everything else untouched. Only what a record needs is
validated (ids, times, name, kind, flags, status, attributes, events); other fields pass
through as they are.

The JSON decoder's first pass (ids and times checked and converted in bulk, records made
without ``__init__``) is kept because ``bench/otlp_codec.py`` shows it buys well over the
20% the project asks of a fast path; it and the plain path it falls back to (its oracle
in ``tests/otlp/test_records_fast_path.py``) are one function with a switch, so that they
cannot drift apart.

Size: both span forms and the log records that join them are read here, one reading.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from orjson import loads as _loads

from otel_semloop.conventions import LogEvent, is_genai_event
from otel_semloop.model import EventRecord, SpanRecord
from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE, Bad, field
from otel_semloop.otlp.anyvalue import attributes_json, decode_any_pb, decode_attributes_pb

__all__ = ["log_event_from_proto", "record_from_proto_span", "records_from_json", "records_from_proto"]

_parent_id = functools.partial(c.span_id_hex, allow_empty=True)
_NOTHING = object()  # equal to no JSON value


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


def _events_json(
    events: Any,
) -> list[EventRecord]:
    """A span's ``events`` as records (raises :class:`Bad` with the path inside them);
    their attribute lists are read as the span's (see :func:`_attributes`).

    Each event is made without ``EventRecord.__init__``, as :func:`_spans_json` makes
    records. A time of 20 digits or more goes through ``c.u64`` directly, so that its range
    error names the event without the field."""
    if type(events) is not list:
        c.bad_type("an array", events)
    out = []
    for ev in events:
        try:
            if type(ev) is not dict:
                c.bad_type("an event object", ev)
            name = ev.get("name")
            if type(name) is not str:
                name = field(ev, "name", c.string)
            t = ev.get("timeUnixNano")
            if type(t) is str and t.isdigit() and t.isascii():
                t = int(t) if len(t) < 20 else c.u64(t)
            else:
                t = field(ev, "timeUnixNano", c.u64)
            attrs = _attributes(ev.get("attributes"))
            event = _new_event(EventRecord)
            event.name = name
            event.time_ns = t
            event.attributes = attrs
            out.append(event)
        except Bad as e:
            e.path.append(f"[{c.index_of(events, ev)}]")
            raise
    return out


_new_event = EventRecord.__new__
if tuple(f.name for f in dataclasses.fields(EventRecord)) != ("name", "time_ns", "attributes"):
    raise ImportError("_events_json stores each field of an EventRecord by name: update it")


def _status(status: dict[str, Any]) -> tuple[int, str]:
    code = field(status, "code", c.status_code)
    message = status.get("message", "")
    if type(message) is not str:
        message = field(status, "message", c.string)
    return code, message


def _spans_json(
    spans: list[Any],
    trace_ids: dict[str, str],
    hexes: list[str] | None,
    digits: list[str] | None,
    append: Any,
    parsed: bool,
) -> None:
    """Each JSON span dict of ``spans`` as a record, passed to ``append`` (raises
    :class:`Bad` with the path from the span on).

    With ``hexes`` and ``digits`` (lists), span and parent ids of the right length and
    times of fewer than 20 characters are taken unchecked and appended to them, the times
    left 0 (every span appends its two times, as text): the caller checks them all at
    once, converts the times in one go and sets them, and decodes again with None (each
    value checked and converted here) when one is not lowercase hex or ASCII digits. One
    bulk check instead of a regular expression per id and ``isdigit`` per time, and one
    conversion instead of ``int`` per time.

    ``parsed`` (``records_from_json(json_types=True)``: only a JSON parser's types) drops
    the exact-type checks that only a subclass could fail: a span that is not a dict has
    no ``get`` (``AttributeError``), an unhashable trace id raises ``TypeError``, an id
    that is not a string fails ``len`` or the bulk ``join``; the caller then decodes
    again value by value. It also reads the ids and times by subscript, not ``get``
    (a missing one raises ``KeyError``: decoded value by value, where a missing id is
    an error and a missing time 0). Times keep their type check: JSON numbers are valid
    times, and would send every such span there.

    One call for a list of spans; a span whose raw trace id equals the previous span's
    takes its id; a non-empty attribute list is decoded here, not through
    :func:`_attributes`.
    """
    last_tid: Any = _NOTHING
    last_trace_id = ""
    for span in spans:
        try:
            if not parsed and type(span) is not dict:
                c.bad_type("a span object", span)
            get = span.get
            tid = span["traceId"] if parsed else get("traceId")
            if tid == last_tid and (parsed or type(tid) is str):
                trace_id = last_trace_id
            else:
                trace_id = trace_ids.get(tid) if type(tid) is str else None
                if trace_id is None:
                    trace_id = field(span, "traceId", c.trace_id_hex)
                    trace_ids[tid] = trace_id
                last_tid = tid
                last_trace_id = trace_id
            span_id = span["spanId"] if parsed else get("spanId")
            parent = get("parentSpanId", "")
            if (
                hexes is not None
                and (parsed or type(span_id) is str is type(parent))
                and len(span_id) == 16
                and (len(parent) == 16 or not parent)
            ):
                hexes.append(span_id)
                hexes.append(parent)
            else:
                if type(span_id) is not str or not c.is_lower_hex16(span_id):
                    span_id = field(span, "spanId", c.span_id_hex)
                if type(parent) is not str or (parent and not c.is_lower_hex16(parent)):
                    parent = field(span, "parentSpanId", _parent_id)
            name = get("name", "")
            if type(name) is not str:
                name = field(span, "name", c.string)
            kind = get("kind", 0)
            if type(kind) is not int or not c.MIN_I32 <= kind <= c.MAX_I32:
                kind = field(span, "kind", c.span_kind)
            start = span["startTimeUnixNano"] if parsed else get("startTimeUnixNano")
            end = span["endTimeUnixNano"] if parsed else get("endTimeUnixNano")
            if digits is not None and type(start) is str is type(end) and len(start) < 20 and len(end) < 20:
                digits.append(start)
                digits.append(end)
                start = end = 0  # converted in bulk by the caller
            else:
                if type(start) is str and start.isdigit() and start.isascii() and len(start) < 20:
                    start = int(start)
                else:
                    start = field(span, "startTimeUnixNano", c.u64)
                if type(end) is str and end.isdigit() and end.isascii() and len(end) < 20:
                    end = int(end)
                else:
                    end = field(span, "endTimeUnixNano", c.u64)
                if digits is not None:  # two a span, in span order, for the caller's conversion
                    digits.append(str(start))
                    digits.append(str(end))
            attrs = get("attributes")
            if attrs.__class__ is list and attrs:  # (as _attributes reads it)
                try:
                    attrs = attributes_json(attrs)
                except Bad as e:
                    e.path.append("attributes")
                    raise
            else:
                attrs = _attributes(attrs)
            events = get("events")
            if events:
                try:
                    events = _events_json(events)
                except Bad as e:
                    e.path.append("events")
                    raise
            elif events is None or type(events) is list:
                events = ()
            else:
                c.bad_type("an array", events, "events")
            flags = get("flags")
            if flags:
                if type(flags) is not int or flags < 0 or flags > c.MAX_U32:
                    flags = field(span, "flags", c.u32)
                remote = flags & FLAGS_IS_REMOTE != 0 if flags & FLAGS_HAS_IS_REMOTE else None
            else:
                if flags is not None:
                    field(span, "flags", c.u32)
                remote = None
            status = get("status")
            if status:
                if type(status) is not dict:
                    c.bad_type("a status object", status, "status")
                try:
                    code, message = _status(status)
                except Bad as e:
                    e.path.append("status")
                    raise
            elif status is None or type(status) is dict:
                code, message = 0, ""
            else:
                c.bad_type("a status object", status, "status")
            # Every field stored here (checked at import below).
            record = _new_record(SpanRecord)
            record.trace_id = trace_id
            record.span_id = span_id
            record.parent_span_id = parent
            record.name = name
            record.start_ns = start
            record.end_ns = end
            record.attributes = attrs
            record.events = events
            record.status_code = code
            record.status_message = message
            record.kind = kind
            record.parent_is_remote = remote
            record.source = span
            append(record)
        except Bad as e:
            e.path.append(f"spans[{c.index_of(spans, span)}]")
            raise


_new_record = SpanRecord.__new__
if tuple(f.name for f in dataclasses.fields(SpanRecord)) != (
    "trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "attributes", "events",
    "status_code", "status_message", "kind", "parent_is_remote", "source",
):  # fmt: skip
    raise ImportError("_spans_json stores each field of a SpanRecord by name: update it")


def records_from_json(obj: Any, where: str = "", *, json_types: bool = False) -> list[SpanRecord]:
    """Every span of one parsed OTLP JSON ``TracesData`` (a file-exporter line or an
    OTLP/HTTP JSON body) as a :class:`SpanRecord` whose ``source`` is the span's dict.

    Ids come out as lowercase hex, times as ints, ``kind`` and ``status_code`` as ints
    (enum names written by older Collectors are accepted), ``parent_is_remote`` from the
    flags bits when present. Raises :class:`~otel_semloop.errors.OTLPDecodeError` whose
    ``where`` is ``where`` plus the path, e.g. ``"in.jsonl:12
    resourceSpans[0].scopeSpans[1].spans[3].traceId"``.

    ``json_types=True`` is the caller's word that ``obj`` is straight from a JSON parser
    (``orjson.loads``, ``json.loads``): only ``dict``, ``list``, ``str``, ``int``,
    ``float``, ``bool`` and None, no subclasses and no other objects. The first pass then
    skips the type checks such input cannot fail (see :func:`_spans_json`); the records
    and errors are the same.
    """
    # First with the ids and times checked and the times converted in bulk (see
    # _spans_json); whatever that pass doubts (a value the bulk check rejects, any error)
    # is decoded again value by value, which gives the records or the error (the first in
    # document order) exactly.
    hexes: list[str] = []
    digits: list[str] = []
    try:
        out = _records_json(obj, hexes, digits, json_types)
        if _all_hex("".join(hexes)) and _all_digits("".join(digits)):
            _set_times(out, digits)
            return out
    except (Bad, ValueError, RecursionError, TypeError, AttributeError, KeyError):
        pass
    try:
        return _records_json(obj, None, None, False)
    except Bad as e:
        raise e.to_error(where) from None
    except RecursionError:
        raise Bad("value nested too deeply").to_error(where) from None


def _all_hex(text: str) -> bool:
    """Whether ``text`` is lowercase hex digits only (its bytes with them deleted are empty)."""
    return text.isascii() and not text.encode("ascii").translate(None, b"0123456789abcdef")


def _set_times(records: list[SpanRecord], digits: list[str]) -> None:
    """Each record's start and end from ``digits`` (two a record, each checked to be ASCII
    digits of fewer than 20, so within ``orjson``'s unsigned 64-bit integers), converted by
    one ``orjson.loads`` of them as a JSON array. JSON has no leading zeros: such a time
    raises ``ValueError``, and the caller decodes value by value."""
    times = iter(_loads("[" + ",".join(digits) + "]"))
    for record, start, end in zip(records, times, times):  # noqa: B905 (two a record)
        record.start_ns = start
        record.end_ns = end


def _all_digits(text: str) -> bool:
    """Whether ``text`` is ASCII digits only (``bytes.isdigit`` is ASCII-only and a table
    lookup a character; ``str.isdigit`` looks each one up in the Unicode database)."""
    return not text or (text.isascii() and text.encode("ascii").isdigit())


def _records_json(
    obj: Any, hexes: list[str] | None, digits: list[str] | None, parsed: bool
) -> list[SpanRecord]:
    """The records of ``obj`` (raises :class:`Bad`); ``hexes``, ``digits`` and ``parsed``
    as in :func:`_spans_json`."""
    out: list[SpanRecord] = []
    append = out.append
    trace_ids: dict[str, str] = {}
    c.each_span_array(obj, lambda spans: _spans_json(spans, trace_ids, hexes, digits, append, parsed))
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
    """One protobuf ``Span`` as a record (raises :class:`Bad` with the field). Each field
    is read once: a protobuf attribute read looks the field up by name, and a submessage
    read (``status``) makes a wrapper object."""
    tid = span.trace_id
    sid = span.span_id
    pid = span.parent_span_id
    if len(tid) != 16:
        raise Bad(f"trace id must be 16 bytes, got {len(tid)}", "traceId")
    if len(sid) != 8:
        raise Bad(f"span id must be 8 bytes, got {len(sid)}", "spanId")
    if pid and len(pid) != 8:
        raise Bad(f"parent span id must be 8 bytes, got {len(pid)}", "parentSpanId")
    events = span.events
    flags = span.flags
    status = span.status
    record = _new_record(SpanRecord)
    record.trace_id = tid.hex()
    record.span_id = sid.hex()
    record.parent_span_id = pid.hex()
    record.name = span.name
    record.start_ns = span.start_time_unix_nano
    record.end_ns = span.end_time_unix_nano
    record.attributes = decode_attributes_pb(span.attributes)
    record.events = (
        [
            EventRecord(
                ev.name, ev.time_unix_nano, decode_attributes_pb(ev.attributes) if ev.attributes else {}
            )
            for ev in events
        ]
        if events
        else []
    )
    record.status_code = status.code
    record.status_message = status.message
    record.kind = span.kind
    record.parent_is_remote = bool(flags & FLAGS_IS_REMOTE) if flags & FLAGS_HAS_IS_REMOTE else None
    record.source = span
    return record


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
