"""A span patch written as protobuf bytes appended to the span's own bytes.

Why: a scoring process patches the spans of every scored trace (the verdict's attributes
and evaluation event on the root, ``semloop.in_loop`` on the loop's steps). Setting them
field by field on a decoded message and serializing it again costs about 100 us for a
root with its fourteen verdict attributes and event, a few percent of scoring a trace.

How: a protobuf message is a sequence of ``tag, value`` fields, and a parser appends a
repeated field's entries in the order they come. So the bytes of the new
``Span.attributes`` (field 9) and ``Span.events`` (field 11) entries, after the span's own
bytes, parse as the span with those attributes and events added last: exactly what
:func:`~otel_semloop.otlp.apply_patch_proto` makes of a span that does not already have
any of the patch's keys (it would overwrite such a key in place instead).

:func:`appended` takes that path only when it gives the same span: no patch key already on
the span, and only values whose encoding is fixed here (``str``, ``bool``, ``int`` in the
signed 64-bit range, ``float``, and lists or tuples of them). Anything else returns None and
the caller applies the patch on the message. ``tests/service/test_wirepatch.py`` checks both
paths parse to equal spans on generated spans and patches.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from otel_semloop.writeback import SpanPatch

__all__ = ["appended", "varint"]

_MIN_I64, _MAX_I64 = -(1 << 63), (1 << 63) - 1
_DOUBLE = struct.Struct("<d").pack
_FIXED64 = struct.Struct("<Q").pack


_SMALL = [bytes((n,)) for n in range(0x80)]
_TAGS = {tag: bytes((tag,)) for tag in (0x0A, 0x12, 0x1A, 0x2A, 0x4A, 0x5A)}


class _Unsupported(Exception):
    """A value this module does not encode: the caller takes the message path."""


def appended(wire: bytes, existing: Mapping[str, Any], patch: SpanPatch) -> bytes | None:
    """``wire`` (a serialized ``Span`` whose attributes are ``existing``) with ``patch``
    applied, or None when the patch must be applied on the decoded message instead."""
    attributes = patch.attributes
    for key in attributes:
        if key in existing:
            return None
    try:
        parts = [wire]
        for key, value in attributes.items():
            parts.append(_entry(0x4A, key, value))
        for event in patch.events:
            parts.append(_field(0x5A, _event(event.name, event.time_ns, event.attributes)))
    except (_Unsupported, UnicodeEncodeError):
        return None
    return b"".join(parts)


def _event(name: str, time_ns: Any, attributes: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> bytes:
    if type(time_ns) is not int or not 0 <= time_ns < 1 << 64 or type(name) is not str:
        raise _Unsupported
    parts = []
    if time_ns:
        parts.append(b"\x09" + _FIXED64(time_ns))  # time_unix_nano, fixed64
    if name:
        parts.append(_field(0x12, name.encode()))
    items = attributes.items() if isinstance(attributes, Mapping) else attributes
    for key, value in items:
        parts.append(_entry(0x1A, key, value))
    return b"".join(parts)


def _entry(tag: int, key: Any, value: Any) -> bytes:
    """A ``KeyValue`` as the field ``tag`` of its message (``Span.attributes``,
    ``Event.attributes``). Made once per process and kept (:data:`_MEMO`): the whole field
    for a flag or a short text (a label, an action), everything before the 8 bytes of a
    float (the scores), a key's own bytes for other values."""
    t = type(value)
    if type(key) is not str:
        return _field(tag, _key_value(_head(str(key)), value))
    if t is float:
        prefix = _MEMO.get((tag, key, float))
        if prefix is None:
            head = _head(key)
            prefix = _TAGS[tag] + varint(len(head) + 11) + head + b"\x12\x09\x21"  # AnyValue{double}
            _remember((tag, key, float), prefix)
        return prefix + _DOUBLE(value)
    memo = t is bool or (t is str and len(value) <= _SHORT)
    if memo:
        whole = _MEMO.get((tag, key, t, value))
        if whole is not None:
            return whole
    head = _MEMO.get(key)
    if head is None:
        head = _head(key)
        _remember(key, head)
    out = _field(tag, _key_value(head, value))
    if memo:
        _remember((tag, key, t, value), out)
    return out


def _key_value(head: bytes, value: Any) -> bytes:
    """A ``KeyValue``'s bytes after its key's own (``head``)."""
    t = type(value)
    if t is str:
        raw = value.encode()
        any_value = b"\x0a" + varint(len(raw)) + raw
    elif t is bool:
        any_value = b"\x10\x01" if value else b"\x10\x00"
    elif t is float:
        any_value = b"\x21" + _DOUBLE(value)
    else:
        any_value = _any(value)
    return head + b"\x12" + varint(len(any_value)) + any_value


def _head(key: str) -> bytes:
    """``KeyValue.key`` (field 1) as bytes; proto3 writes no empty key."""
    name = key.encode()
    return b"\x0a" + varint(len(name)) + name if name else b""


def _remember(memo_key: Any, value: bytes) -> None:
    if len(_MEMO) < _MEMO_LIMIT:
        _MEMO[memo_key] = value


#: Texts up to this many characters have their whole entry kept (labels, actions).
_SHORT = 64
#: At most this many pieces are kept: patch keys are the contract's names and short values
#: a few labels, so the bound only guards against an unusual scorer.
_MEMO_LIMIT = 4096
_MEMO: dict[Any, bytes] = {}


def _any(value: Any) -> bytes:
    """An ``AnyValue``'s bytes: its oneof member is written even when it is the default."""
    t = type(value)
    if t is str:
        return _field(0x0A, value.encode())
    if t is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if t is int:
        if not _MIN_I64 <= value <= _MAX_I64:
            raise _Unsupported
        return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF)
    if t is float:
        return b"\x21" + _DOUBLE(value)
    if t is list or t is tuple:
        return _field(0x2A, b"".join([_field(0x0A, _any(x)) for x in value]))
    raise _Unsupported


def _field(tag: int, payload: bytes) -> bytes:
    return _TAGS[tag] + varint(len(payload)) + payload


def varint(value: int) -> bytes:
    """A protobuf base-128 varint (a length, a tag, an integer): the exporter frames its
    requests with it too."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
