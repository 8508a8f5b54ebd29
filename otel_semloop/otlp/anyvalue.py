"""OTLP ``AnyValue`` and attribute lists, in JSON and protobuf form, to and from Python.

Python values: ``str``, ``bool``, ``int``, ``float``, ``bytes``, ``list`` (``arrayValue``),
``dict`` (``kvlistValue``; a repeated key keeps its last value) and ``None`` (an empty
``AnyValue``). Encoding accepts tuples and any ``Mapping`` too.

JSON form (OTLP JSON)::

    {"stringValue": "x"}   {"boolValue": true}   {"intValue": "123"}   {"doubleValue": 1.5}
    {"bytesValue": "<base64>"}   {"arrayValue": {"values": [...]}}
    {"kvlistValue": {"values": [{"key": "k", "value": {...}}]}}   {}

``intValue`` is accepted as a number or a decimal string and always written as a string;
``doubleValue`` also accepts "NaN", "Infinity", "-Infinity" (written that way too, since
JSON has no such numbers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import Bad

__all__ = [
    "decode_any_json",
    "decode_any_pb",
    "decode_attributes_json",
    "decode_attributes_pb",
    "encode_any_json",
    "encode_any_pb",
    "encode_attributes_json",
    "encode_attributes_pb",
]

#: How deeply arrays and kvlists may nest inside one attribute value. Real attributes
#: nest a level or two; the bound keeps every accepted line within what ``orjson.dumps``
#: can write back (255 JSON levels; a kvlist level takes 4) and what Python protobuf
#: parses back (its recursion limit of 100 messages is hit at 32 kvlists in an event).
MAX_DEPTH = 24

# --- JSON -> Python -------------------------------------------------------------------


def _array_json(x: Any, depth: int) -> list[Any]:
    if type(x) is not dict:
        if x is None:
            return []
        c.bad_type("an object with values", x)
    values = x.get("values")
    if values is None:
        return []
    if type(values) is not list:
        c.bad_type("an array", values, "values")
    out = []
    for i, item in enumerate(values):
        try:
            out.append(any_json(item, depth))
        except Bad as e:
            e.path.append(f"values[{i}]")
            raise
    return out


def _kvlist_json(x: Any, depth: int) -> dict[str, Any]:
    if type(x) is not dict:
        if x is None:
            return {}
        c.bad_type("an object with values", x)
    values = x.get("values")
    if values is None:
        return {}
    try:
        return attributes_json(values, depth)
    except Bad as e:
        e.path.append("values")
        raise


_DECODERS = {
    "stringValue": c.string,
    "boolValue": None,  # handled inline (must be a real bool)
    "intValue": c.i64,
    "doubleValue": c.double,
    "bytesValue": c.b64decode,
    "arrayValue": None,  # handled inline (nesting depth)
    "kvlistValue": None,
    "stringValueStrindex": None,  # profiles dictionary index: no value of its own here
}


def value_key(v: dict[str, Any]) -> str | None:
    """The key of the one value a JSON ``AnyValue`` dict holds (unknown keys and nulls do
    not count), None when it holds none; raises :class:`Bad` when it holds two."""
    found = None
    for key, value in v.items():
        if value is not None and key in _DECODERS:
            if found is not None:
                raise Bad(f"AnyValue has more than one value: {found} and {key}")
            found = key
    return found


def any_json(v: Any, depth: int = 0) -> Any:
    """Internal decoder of one JSON ``AnyValue`` (raises :class:`Bad`).

    ``depth`` counts enclosing arrays/kvlists; past :data:`MAX_DEPTH` the value is
    rejected.
    """
    if v is None:
        return None
    if type(v) is not dict:
        c.bad_type("an AnyValue object", v)
    found = value_key(v)
    if found is None:
        return None
    x = v[found]
    try:
        if found == "boolValue":
            if type(x) is not bool:
                c.bad_type("true or false", x)
            return x
        if found == "arrayValue" or found == "kvlistValue":
            if depth >= MAX_DEPTH:
                raise Bad(f"AnyValue nested deeper than {MAX_DEPTH} levels")
            if found == "arrayValue":
                return _array_json(x, depth + 1)
            return _kvlist_json(x, depth + 1)
        if found == "stringValueStrindex":
            c.i32(x)
            return None
        return _DECODERS[found](x)  # type: ignore[misc]
    except Bad as e:
        e.path.append(found)
        raise


def attributes_json(kvs: Any, depth: int = 0) -> dict[str, Any]:
    """Internal decoder of a JSON ``KeyValue`` list into a dict (raises :class:`Bad`)."""
    if type(kvs) is not list:
        if kvs is None:
            return {}
        c.bad_type("an array of key/value objects", kvs)
    out: dict[str, Any] = {}
    for i, kv in enumerate(kvs):
        try:
            if type(kv) is not dict:
                c.bad_type("a key/value object", kv)
            key = kv.get("key")
            if type(key) is not str:
                key = c.string(key) if key is None else c.bad_type("a string", key, "key")
            try:
                out[key] = any_json(kv.get("value"), depth)
            except Bad as e:
                e.path.append("value")
                raise
        except Bad as e:
            e.path.append(f"[{i}]")
            raise
    return out


def decode_any_json(value: Any, where: str = "") -> Any:
    """A JSON ``AnyValue`` (already parsed) as a Python value.

    Raises :class:`~otel_semloop.errors.OTLPDecodeError` naming ``where`` and the path.
    """
    with c.decode_errors(where, "AnyValue"):
        return any_json(value)


def decode_attributes_json(kvs: Any, where: str = "") -> dict[str, Any]:
    """A JSON ``KeyValue`` list (``attributes``) as a dict of Python values."""
    with c.decode_errors(where, "AnyValue"):
        return attributes_json(kvs)


# --- Python -> JSON -------------------------------------------------------------------


def encode_any_json(value: Any) -> dict[str, Any]:
    """A Python value as a JSON ``AnyValue`` dict.

    Raises ``TypeError`` for a value OTLP cannot carry, ``ValueError`` for an int outside
    the signed 64-bit range.
    """
    t = type(value)
    if t is str:
        return {"stringValue": value}
    if t is bool:
        return {"boolValue": value}
    if t is int:
        if not c.MIN_I64 <= value <= c.MAX_I64:
            raise ValueError(f"int out of the signed 64-bit range: {value}")
        return {"intValue": str(value)}
    if t is float:
        return {"doubleValue": c.double_json(value)}
    if value is None:
        return {}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytesValue": c.b64encode(bytes(value))}
    if isinstance(value, (list, tuple)):
        return (
            {"arrayValue": {"values": [encode_any_json(x) for x in value]}} if value else {"arrayValue": {}}
        )
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": encode_attributes_json(value)}} if value else {"kvlistValue": {}}
    # subclasses: IntEnum members, str-mixin enums, float subclasses
    if isinstance(value, int):
        return encode_any_json(int(value))
    if isinstance(value, float):
        return encode_any_json(float(value))
    if isinstance(value, str):
        return {"stringValue": str.__str__(value)}
    raise TypeError(f"cannot encode {type(value).__name__} as an OTLP AnyValue")


def encode_attributes_json(attributes: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    """A mapping (or key/value pairs) as a JSON ``KeyValue`` list."""
    items = attributes.items() if isinstance(attributes, Mapping) else attributes
    return [{"key": str(k), "value": encode_any_json(v)} for k, v in items]


# --- protobuf -> Python ---------------------------------------------------------------


def decode_any_pb(v: AnyValue) -> Any:
    """A protobuf ``AnyValue`` as a Python value (``None`` when empty)."""
    which = v.WhichOneof("value")
    if which == "array_value":
        return [decode_any_pb(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return decode_attributes_pb(v.kvlist_value.values)
    if which is None or which == "string_value_strindex":  # an index into a profiles dictionary
        return None
    return getattr(v, which)


def decode_attributes_pb(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    """A repeated protobuf ``KeyValue`` as a dict of Python values."""
    return {kv.key: decode_any_pb(kv.value) for kv in kvs}


# --- Python -> protobuf ---------------------------------------------------------------


def encode_any_pb(value: Any, out: AnyValue | None = None) -> AnyValue:
    """A Python value as a protobuf ``AnyValue`` (filled into ``out`` when given).

    Raises ``TypeError``/``ValueError`` like :func:`encode_any_json`.
    """
    pb = AnyValue() if out is None else out
    if out is not None:
        pb.Clear()
    t = type(value)
    if t is str:
        pb.string_value = value
    elif t is bool:
        pb.bool_value = value
    elif t is int:
        if not c.MIN_I64 <= value <= c.MAX_I64:
            raise ValueError(f"int out of the signed 64-bit range: {value}")
        pb.int_value = value
    elif t is float:
        pb.double_value = value
    elif value is None:
        pass
    elif isinstance(value, (bytes, bytearray, memoryview)):
        pb.bytes_value = bytes(value)
    elif isinstance(value, (list, tuple)):
        pb.array_value.SetInParent()
        values = pb.array_value.values
        for x in value:
            encode_any_pb(x, values.add())
    elif isinstance(value, Mapping):
        pb.kvlist_value.SetInParent()
        encode_attributes_pb(value, pb.kvlist_value.values)
    elif isinstance(value, int):
        encode_any_pb(int(value), pb)
    elif isinstance(value, float):
        pb.double_value = float(value)
    elif isinstance(value, str):
        pb.string_value = str.__str__(value)
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as an OTLP AnyValue")
    return pb


def encode_attributes_pb(attributes: Mapping[str, Any] | Iterable[tuple[str, Any]], out: Any) -> Any:
    """Append a mapping (or key/value pairs) to a repeated ``KeyValue`` field ``out``."""
    items = attributes.items() if isinstance(attributes, Mapping) else attributes
    for k, v in items:
        kv = out.add()
        kv.key = str(k)
        encode_any_pb(v, kv.value)
    return out
