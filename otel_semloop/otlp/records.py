"""OTLP spans as :class:`~otel_semloop.model.SpanRecord`s: JSON span dicts and protobuf
``Span``s (write-back onto them is :mod:`otel_semloop.otlp.patch`).

:func:`records_from_json` is the hot path of ``otel-semloop rescore``: it reads the span
dicts of an ``orjson``-parsed line directly (attributes into a plain dict, no protobuf
objects) and keeps each span dict as the record's ``source``, so
:func:`~otel_semloop.otlp.patch.apply_patch_json` edits the document in place and the
line is dumped again with everything else untouched. Only what a record needs is
validated (ids, times, name, kind, flags, status, attributes, events); other fields pass
through as they are.

Size: the JSON decoder's first pass (ids and times checked and converted in bulk) and the
plain path it falls back to are one function with a switch, so that they cannot drift
apart; the protobuf reader fills the same records the same way.
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
from otel_semloop.otlp.anyvalue import (
    attributes_json,
    attributes_json_parsed,
    decode_any_pb,
    decode_attributes_pb,
)

__all__ = ["log_event_from_proto", "record_from_proto_span", "records_from_json", "records_from_proto"]

_u64 = c.u64
_is_lower_hex16 = c.is_lower_hex16
_parent_id = functools.partial(c.span_id_hex, allow_empty=True)
_NOTHING = object()  # equal to no JSON value

#: The span keys :func:`_spans_json` reads, as ``orjson`` makes them: it keeps one string
#: object per object key it has seen (its key cache) and hands out that same object again,
#: and a dict lookup compares the key's identity before its text. With these as our
#: constants a span dict's lookup skips the text comparison (a full ``==`` through
#: ``PyObject_RichCompare`` in the dicts ``orjson`` makes for spans, cachegrind): about
#: 1,500 instructions a span, 4% of its decoding. Only the speed depends on it: a key
#: that is not the same object is compared by its text, as any string would be.
_SPAN_KEYS = (
    "traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano",
    "attributes", "events", "flags", "status",
)  # fmt: skip
(
    _TRACE_ID, _SPAN_ID, _PARENT_SPAN_ID, _NAME, _KIND, _START, _END, _ATTRIBUTES, _EVENTS, _FLAGS,
    _STATUS,
) = _loads(b"{" + b",".join(b'"%s":0' % k.encode() for k in _SPAN_KEYS) + b"}")  # fmt: skip


def _attributes(attrs: Any, decode: Any = attributes_json) -> dict[str, Any]:
    """The ``attributes`` value of a span or event dict as a dict (missing, null or ``[]``:
    empty); ``decode`` is :func:`attributes_json` or, for a parser's output,
    :func:`attributes_json_parsed`."""
    if attrs:
        try:
            return decode(attrs)
        except Bad as e:
            e.path.append("attributes")
            raise
    if attrs is None or type(attrs) is list:
        return {}
    c.bad_type("an array", attrs, "attributes")


def _events_json(
    events: Any,
    decode: Any = attributes_json,
    _type: Any = type,
    _str: Any = str,
    _dict: Any = dict,
    _int: Any = int,
    _len: Any = len,
    _list_type: Any = list,
) -> list[EventRecord]:
    """A span's ``events`` as records (raises :class:`Bad` with the path inside them);
    ``decode`` reads their attribute lists, as the span's (see :func:`_attributes`).

    Why this spelling: each event is made without ``EventRecord.__init__`` (a frame an
    event), a time of fewer than 20 digits is converted by ``int`` at once (``_u64``
    checked its digits again), attributes go through :func:`_attributes`, and the
    builtins are locals (not arguments to pass). A time of 20 digits or more still goes
    through ``_u64`` directly, so that its range error names the event without the field,
    as it always has."""
    if _type(events) is not _list_type:
        c.bad_type("an array", events)
    out = []
    for ev in events:
        try:
            if _type(ev) is not _dict:
                c.bad_type("an event object", ev)
            name = ev.get("name")
            if _type(name) is not _str:
                name = field(ev, "name", c.string)
            t = ev.get("timeUnixNano")
            if _type(t) is _str and t.isdigit() and t.isascii():
                t = _int(t) if _len(t) < 20 else _u64(t)
            else:
                t = field(ev, "timeUnixNano", _u64)
            attrs = _attributes(ev.get("attributes"), decode)
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
    _type: Any = type,
    _str: Any = str,
    _dict: Any = dict,
    _int: Any = int,
    _len: Any = len,
    _min_i32: int = c.MIN_I32,
    _max_i32: int = c.MAX_I32,
    _max_u32: int = c.MAX_U32,
) -> None:
    """Each JSON span dict of ``spans`` as a record, passed to ``append`` (raises
    :class:`Bad` with the path from the span on).

    With ``hexes`` and ``digits`` (lists), span and parent ids of the right length and
    times of fewer than 20 characters are taken unchecked and appended to them, the times
    left 0 (every span appends its two times, as text): the caller checks them all at
    once, converts the times in one go and sets them, and decodes again with None (each
    value checked and converted here) when one is not lowercase hex or ASCII digits. One
    bulk check instead of a regular expression per id and ``isdigit`` per time, and one
    conversion instead of ``int`` per time: those were a fifth of a span's decoding.

    ``parsed`` (``records_from_json(json_types=True)``: only a JSON parser's types) drops
    the exact-type checks that only a subclass could fail: a span that is not a dict has
    no ``get`` (``AttributeError``), an unhashable trace id raises ``TypeError``, an id
    that is not a string fails ``len`` or the bulk ``join``; the caller then decodes
    again value by value. It also reads the ids and times by subscript, not ``get``
    (a missing one raises ``KeyError``: decoded value by value, where a missing id is
    an error and a missing time 0). Attributes (the span's and its events') are read by
    :func:`~otel_semloop.otlp.anyvalue.attributes_json_parsed`. Times keep their type
    check: JSON numbers are valid times, and would send every such span there.

    Why this spelling: one call for a list of spans, not one a span (a frame each); a
    span whose raw trace id equals the previous span's takes its id (one string compare,
    not a hash and a lookup a span); the builtins and bounds come in as locals (``_type``
    ... are not arguments to pass), cheaper to load than globals; the span's keys are read with
    ``orjson``'s own key objects (see :data:`_SPAN_KEYS`); a non-empty attribute list is
    decoded here, not through :func:`_attributes` (a call a span).
    """
    decode = attributes_json_parsed if parsed else attributes_json
    last_tid: Any = _NOTHING
    last_trace_id = ""
    for span in spans:
        try:
            if not parsed and _type(span) is not _dict:
                c.bad_type("a span object", span)
            get = span.get
            tid = span[_TRACE_ID] if parsed else get(_TRACE_ID)
            if tid == last_tid and (parsed or _type(tid) is _str):
                trace_id = last_trace_id
            else:
                trace_id = trace_ids.get(tid) if _type(tid) is _str else None
                if trace_id is None:
                    trace_id = field(span, "traceId", c.trace_id_hex)
                    trace_ids[tid] = trace_id
                last_tid = tid
                last_trace_id = trace_id
            span_id = span[_SPAN_ID] if parsed else get(_SPAN_ID)
            parent = get(_PARENT_SPAN_ID, "")
            if (
                hexes is not None
                and (parsed or _type(span_id) is _str is _type(parent))
                and _len(span_id) == 16
                and (_len(parent) == 16 or not parent)
            ):
                hexes.append(span_id)
                hexes.append(parent)
            else:
                if _type(span_id) is not _str or not _is_lower_hex16(span_id):
                    span_id = field(span, "spanId", c.span_id_hex)
                if _type(parent) is not _str or (parent and not _is_lower_hex16(parent)):
                    parent = field(span, "parentSpanId", _parent_id)
            name = get(_NAME, "")
            if _type(name) is not _str:
                name = field(span, "name", c.string)
            kind = get(_KIND, 0)
            if _type(kind) is not _int or not _min_i32 <= kind <= _max_i32:
                kind = field(span, "kind", c.span_kind)
            start = span[_START] if parsed else get(_START)
            end = span[_END] if parsed else get(_END)
            if (
                digits is not None
                and _type(start) is _str is _type(end)
                and _len(start) < 20
                and _len(end) < 20
            ):
                digits.append(start)
                digits.append(end)
                start = end = 0  # converted in bulk by the caller
            else:
                if _type(start) is _str and start.isdigit() and start.isascii() and _len(start) < 20:
                    start = _int(start)
                else:
                    start = field(span, "startTimeUnixNano", _u64)
                if _type(end) is _str and end.isdigit() and end.isascii() and _len(end) < 20:
                    end = _int(end)
                else:
                    end = field(span, "endTimeUnixNano", _u64)
                if digits is not None:  # two a span, in span order, for the caller's conversion
                    digits.append(_str(start))
                    digits.append(_str(end))
            attrs = get(_ATTRIBUTES)
            if attrs.__class__ is list and attrs:  # (as _attributes reads it)
                try:
                    attrs = decode(attrs)
                except Bad as e:
                    e.path.append("attributes")
                    raise
            else:
                attrs = _attributes(attrs, decode)
            events = get(_EVENTS)
            if events:
                try:
                    events = _events_json(events, decode)
                except Bad as e:
                    e.path.append("events")
                    raise
            elif events is None or _type(events) is list:
                events = ()
            else:
                c.bad_type("an array", events, "events")
            flags = get(_FLAGS)
            if flags:
                if _type(flags) is not _int or flags < 0 or flags > _max_u32:
                    flags = field(span, "flags", c.u32)
                remote = flags & FLAGS_IS_REMOTE != 0 if flags & FLAGS_HAS_IS_REMOTE else None
            else:
                if flags is not None:
                    field(span, "flags", c.u32)
                remote = None
            status = get(_STATUS)
            if status:
                if _type(status) is not _dict:
                    c.bad_type("a status object", status, "status")
                try:
                    code, message = _status(status)
                except Bad as e:
                    e.path.append("status")
                    raise
            elif status is None or _type(status) is _dict:
                code, message = 0, ""
            else:
                c.bad_type("a status object", status, "status")
            # Every field stored here (checked at import below): __init__ costs a frame a span.
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
    """Whether ``text`` is lowercase hex digits only: deleting them from its bytes costs a
    third of a regular expression's character class per character."""
    return text.isascii() and not text.encode("ascii").translate(None, b"0123456789abcdef")


def _set_times(records: list[SpanRecord], digits: list[str]) -> None:
    """Each record's start and end from ``digits`` (two a record, each checked to be ASCII
    digits of fewer than 20, so within ``orjson``'s unsigned 64-bit integers), converted by
    one ``orjson.loads`` of them as a JSON array: about 60 instructions a number against
    1,300 for ``int()``. JSON has no leading zeros: such a time raises ``ValueError``, and
    the caller decodes value by value."""
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


def _span_pb(span: Any, _len: Any = len) -> SpanRecord:
    """One protobuf ``Span`` as a record (raises :class:`Bad` with the field). Each field
    is read once: a protobuf attribute read looks the field up by name, and a submessage
    read (``status``) makes a wrapper object."""
    tid = span.trace_id
    sid = span.span_id
    pid = span.parent_span_id
    if _len(tid) != 16:
        raise Bad(f"trace id must be 16 bytes, got {len(tid)}", "traceId")
    if _len(sid) != 8:
        raise Bad(f"span id must be 8 bytes, got {len(sid)}", "spanId")
    if pid and _len(pid) != 8:
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
