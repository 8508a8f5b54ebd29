"""A span record read straight from a serialized protobuf ``Span``, without building the
protobuf message: :func:`record_from_span_bytes`.

Why: with the upb backend every field read of a parsed message makes a new Python
wrapper or string, so ``Span.FromString`` then :func:`~otel_semloop.otlp.records.record_from_proto_span`
costs several times the parse itself. Reading the wire format here touches each byte
once and makes only the objects the record keeps.

Exactness is by construction, not by imitation: the reader handles only the canonical
shape of the fields a record needs (the field numbers and wire types of
``opentelemetry/proto/trace/v1/trace.proto`` and ``common.proto`` that every version
of them has). Anything else -- an unknown field or a known one with another wire type,
links, a group, a negative or out-of-range enum, an id of the
wrong length, nesting deeper than :data:`MAX_DEPTH`, invalid UTF-8, truncated data --
makes it hand the bytes to upb and the reference path, so the result (or the error) is
always the one ``record_from_proto_span(Span.FromString(data))`` gives.
Repeated singular fields follow protobuf's merge rules (last scalar wins, a message
field seen twice is merged, a oneof member replaces another), which the reader gets by
carrying its state across occurrences.
"""

from __future__ import annotations

import struct
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_semloop.model import EventRecord, SpanRecord
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE
from otel_semloop.otlp.records import record_from_proto_span

__all__ = ["record_from_span_bytes"]

#: Nesting of arrays/kvlists inside one attribute value the reader follows itself;
#: deeper values go to upb (whose own limit then applies).
MAX_DEPTH = 16

_fixed64 = struct.Struct("<Q").unpack_from
_fixed32 = struct.Struct("<I").unpack_from
_double = struct.Struct("<d").unpack_from
_MAX_I32 = (1 << 31) - 1
_U64 = (1 << 64) - 1
_I64_WRAP = 1 << 64
_I64_SIGN = 1 << 63


class _Other(Exception):
    """Internal: the bytes are not in the shape the reader handles; use upb."""


def _varint(data: bytes, i: int, j: int) -> tuple[int, int]:
    """The varint starting at ``data[i]`` and ending before ``j``: ``(value, next index)``.
    As upb reads them: at most 10 bytes, bits past the 64th dropped."""
    result = 0
    shift = 0
    while True:
        if i >= j or shift > 63:
            raise _Other
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _U64, i
        shift += 7


def _any(data: bytes, i: int, j: int, which: int, value: Any, depth: int) -> tuple[int, Any]:
    """Merge the ``AnyValue`` in ``data[i:j]`` into ``(which, value)`` (the oneof field
    number set so far and its Python value)."""
    while i < j:
        tag = data[i]
        i += 1
        if tag == 0x18:  # int_value
            v = data[i] if i < j else 0x80
            i += 1
            if v >= 0x80:
                v, i = _varint(data, i - 1, j)
                if v >= _I64_SIGN:
                    v -= _I64_WRAP
            which, value = 3, v
            continue
        if tag == 0x10:  # bool_value
            v = data[i] if i < j else 0x80
            i += 1
            if v >= 0x80:
                v, i = _varint(data, i - 1, j)
            which, value = 2, v != 0
            continue
        if tag == 0x21:  # double_value
            if i + 8 > j:
                raise _Other
            which, value = 4, _double(data, i)[0]
            i += 8
            continue
        ln = data[i] if i < j else 0x80
        i += 1
        if ln >= 0x80:
            ln, i = _varint(data, i - 1, j)
        k = i + ln
        if k > j:
            raise _Other
        if tag == 0x0A:  # string_value
            which, value = 1, data[i:k].decode()
        elif tag == 0x2A:  # array_value: a second one is merged (values appended)
            if depth >= MAX_DEPTH:
                raise _Other
            if which != 5:
                which, value = 5, []
            _array(data, i, k, value, depth + 1)
        elif tag == 0x32:  # kvlist_value: merged the same way
            if depth >= MAX_DEPTH:
                raise _Other
            if which != 6:
                which, value = 6, {}
            if _kvs(data, i, k, value, depth + 1, 0x0A) != k:
                raise _Other
        elif tag == 0x3A:  # bytes_value
            which, value = 7, data[i:k]
        else:
            raise _Other
        i = k
    return which, value


def _array(data: bytes, i: int, j: int, out: list[Any], depth: int) -> None:
    """Append the values of the ``ArrayValue`` in ``data[i:j]`` to ``out``."""
    while i < j:
        if data[i] != 0x0A:
            raise _Other
        ln = data[i + 1] if i + 1 < j else 0x80
        i += 2
        if ln >= 0x80:
            ln, i = _varint(data, i - 1, j)
        k = i + ln
        if k > j:
            raise _Other
        out.append(_any(data, i, k, 0, None, depth)[1])
        i = k


def _kvs(data: bytes, i: int, j: int, out: dict[str, Any], depth: int, tag: int) -> int:
    """Decode the ``KeyValue`` entries tagged ``tag`` at ``data[i:]`` into ``out`` (a
    repeated key keeps its last value, as a dict comprehension over them does) and return
    where the run of them ends (``j`` at the latest)."""
    while i < j and data[i] == tag:
        end = data[i + 1]
        if end < 0x80:
            i += 2
        elif data[i + 2] < 0x80:
            end = (end & 0x7F) | (data[i + 2] << 7)
            i += 3
        else:
            end, i = _varint(data, i + 1, j)
        end += i
        if end > j:
            raise _Other
        key = ""
        which = 0
        value = None
        while i < end:
            t = data[i]
            n = data[i + 1]
            if n < 0x80:
                i += 2
            else:
                b = data[i + 2]
                if b < 0x80:
                    n = (n & 0x7F) | (b << 7)
                    i += 3
                else:
                    n, i = _varint(data, i + 1, end)
            k = i + n
            if k > end:
                raise _Other
            if t == 0x0A:
                key = data[i:k].decode()
            elif t == 0x12:
                # The common value: one string_value filling the AnyValue (whatever came
                # before, a string replaces it); anything else is merged by _any.
                if n > 1 and data[i] == 0x0A:
                    m = data[i + 1]
                    if m < 0x80:
                        if i + 2 + m == k:
                            which, value = 1, data[i + 2 : k].decode()
                            i = k
                            continue
                    elif n > 2 and data[i + 2] < 0x80 and i + 3 + ((m & 0x7F) | (data[i + 2] << 7)) == k:
                        which, value = 1, data[i + 3 : k].decode()
                        i = k
                        continue
                which, value = _any(data, i, k, which, value, depth)
            else:
                raise _Other
            i = k
        out[key] = value
    return i


def _event(data: bytes, i: int, j: int) -> EventRecord:
    name = ""
    time_ns = 0
    attributes: dict[str, Any] = {}
    while i < j:
        tag = data[i]
        if tag == 0x1A:
            i = _kvs(data, i, j, attributes, 0, 0x1A)
            continue
        i += 1
        if tag == 0x09:
            if i + 8 > j:
                raise _Other
            time_ns = _fixed64(data, i)[0]
            i += 8
        elif tag == 0x12:
            ln = data[i] if i < j else 0x80
            i += 1
            if ln >= 0x80:
                ln, i = _varint(data, i - 1, j)
            k = i + ln
            if k > j:
                raise _Other
            name = data[i:k].decode()
            i = k
        elif tag == 0x20:  # dropped_attributes_count
            v = data[i] if i < j else 0x80
            i += 1
            if v >= 0x80:
                _, i = _varint(data, i - 1, j)
        else:
            raise _Other
    return EventRecord(name, time_ns, attributes)


_times = struct.Struct("<BQBQ").unpack_from


def _fast(data: bytes) -> SpanRecord:
    j = len(data)
    trace_id = span_id = parent = b""
    name = ""
    kind = start = end = flags = code = 0
    message = ""
    attributes: dict[str, Any] = {}
    events: list[EventRecord] = []
    # The head as every SDK and the Collector write it (fields in number order): ids,
    # name, kind, times, attributes. The loop after it reads any field in any order, so
    # this only saves its dispatch for the common layout.
    i = 0
    if data.startswith(b"\n\x10") and data.startswith(b"\x12\x08", 18):
        trace_id = data[2:18]
        span_id = data[20:28]
        i = 28
        if data.startswith(b'"\x08', 28):
            parent = data[30:38]
            i = 38
        if i + 1 < j and data[i] == 0x2A and data[i + 1] < 0x80:
            k = i + 2 + data[i + 1]
            name = data[i + 2 : k].decode()
            i = k
        if i + 1 < j and data[i] == 0x30 and data[i + 1] < 0x80:
            kind = data[i + 1]
            i += 2
        if i + 18 <= j and data[i] == 0x39 and data[i + 9] == 0x41:
            _, start, _, end = _times(data, i)
            i += 18
        if i < j and data[i] == 0x4A:
            i = _kvs(data, i, j, attributes, 0, 0x4A)
    while i < j:
        tag = data[i]
        if tag == 0x4A:  # attributes: the whole run of them at once
            i = _kvs(data, i, j, attributes, 0, 0x4A)
            continue
        i += 1
        if tag == 0x39 or tag == 0x41:  # start / end time
            if i + 8 > j:
                raise _Other
            if tag == 0x39:
                start = _fixed64(data, i)[0]
            else:
                end = _fixed64(data, i)[0]
            i += 8
            continue
        if tag == 0x30 or tag == 0x50 or tag == 0x60 or tag == 0x70:  # kind, dropped counts
            v = data[i] if i < j else 0x80
            i += 1
            if v >= 0x80:
                v, i = _varint(data, i - 1, j)
            if tag == 0x30:
                if v > _MAX_I32:
                    raise _Other
                kind = v
            continue
        if tag == 0x85:  # flags (field 16, fixed32): a two-byte tag
            if i + 5 > j or data[i] != 0x01:
                raise _Other
            flags = _fixed32(data, i + 1)[0]
            i += 5
            continue
        ln = data[i] if i < j else 0x80
        i += 1
        if ln >= 0x80:
            ln, i = _varint(data, i - 1, j)
        k = i + ln
        if k > j:
            raise _Other
        if tag == 0x0A:
            trace_id = data[i:k]
        elif tag == 0x12:
            span_id = data[i:k]
        elif tag == 0x22:
            parent = data[i:k]
        elif tag == 0x2A:
            name = data[i:k].decode()
        elif tag == 0x5A:
            events.append(_event(data, i, k))
        elif tag == 0x7A:  # status: a second one is merged into the first
            while i < k:
                t = data[i]
                i += 1
                if t == 0x18:
                    v = data[i] if i < k else 0x80
                    i += 1
                    if v >= 0x80:
                        v, i = _varint(data, i - 1, k)
                    if v > _MAX_I32:
                        raise _Other
                    code = v
                elif t == 0x12:
                    n = data[i] if i < k else 0x80
                    i += 1
                    if n >= 0x80:
                        n, i = _varint(data, i - 1, k)
                    if i + n > k:
                        raise _Other
                    message = data[i : i + n].decode()
                    i += n
                else:
                    raise _Other
            if i != k:
                raise _Other
        elif tag == 0x1A:  # trace_state: not kept, but upb refuses invalid UTF-8 in it
            data[i:k].decode()
        else:
            raise _Other
        i = k
    if i != j or len(trace_id) != 16 or len(span_id) != 8 or (parent and len(parent) != 8):
        raise _Other
    if flags & FLAGS_HAS_IS_REMOTE:
        remote: bool | None = bool(flags & FLAGS_IS_REMOTE)
    else:
        remote = None
    return SpanRecord(
        trace_id.hex(),
        span_id.hex(),
        parent.hex(),
        name,
        start,
        end,
        attributes,
        events,
        code,
        message,
        kind,
        remote,
        data,
    )


_from_string = Span.FromString


def record_from_span_bytes(data: bytes, where: str = "", path: str = "span") -> SpanRecord:
    """The record of the serialized protobuf ``Span`` ``data``: field for field what
    ``record_from_proto_span(Span.FromString(data), where, path)`` returns, except that
    ``source`` is ``data`` itself (parse it when you need the message). Raises what that
    does: ``google.protobuf.message.DecodeError`` for bytes that are not a span,
    :class:`~otel_semloop.errors.OTLPDecodeError` for ids of the wrong length.
    A ``bytearray`` or ``memoryview`` is read as a copy in ``bytes`` (the ``source``)."""
    if data.__class__ is not bytes:
        data = bytes(data)
    try:
        return _fast(data)
    except (_Other, IndexError, UnicodeDecodeError, struct.error):
        pass
    record = record_from_proto_span(_from_string(data), where, path)
    record.source = data
    return record
