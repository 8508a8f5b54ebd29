"""The codec between protobuf ``TracesData`` / ``ExportTraceServiceRequest`` (and
``LogsData`` / ``ExportLogsServiceRequest``) and OTLP JSON (parsed into dicts and lists).

OTLP JSON wants lowercase hex ids, integer enums and 64-bit integers as decimal strings
(the deviations from proto3 JSON are listed in :mod:`otel_semloop.otlp._common`), and the
Collector's key order; ``google.protobuf.json_format`` writes base64 ids and orders keys
by field number. Output omits default-valued scalars and empty lists as the Collector
does; a sub-message is written, possibly as ``{}``, exactly when it is present, so
protobuf -> JSON -> protobuf gives back an equal message. Input ignores unknown keys,
treats ``null`` as the default, and raises :class:`~otel_semloop.errors.OTLPDecodeError`
with the path of the first invalid value.

Size: both directions for traces and logs; each message's fields are listed once
(:class:`_Message`) and serve both.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import Bad, field
from otel_semloop.otlp.anyvalue import MAX_DEPTH, value_key

__all__ = ["json_to_logs", "json_to_traces", "logs_to_json", "span_to_json", "traces_to_json"]

M = TypeVar("M", TracesData, ExportTraceServiceRequest)
L = TypeVar("L", LogsData, ExportLogsServiceRequest)

# --- protobuf -> JSON -----------------------------------------------------------------


def _any_pb_to_json(v: AnyValue) -> dict[str, Any]:
    """A protobuf ``AnyValue`` as its OTLP JSON dict (structure preserved exactly)."""
    which = v.WhichOneof("value")
    if which == "array_value":
        values = v.array_value.values
        return {"arrayValue": {"values": [_any_pb_to_json(x) for x in values]} if values else {}}
    if which == "kvlist_value":
        kvs = v.kvlist_value.values
        return {"kvlistValue": {"values": _kvs_json(kvs)} if kvs else {}}
    if which is None:
        return {}
    scalar = _ANY_SCALARS[which]
    value = getattr(v, which)
    return {scalar.key: scalar.out(value) if scalar.out else value}


def _kvs_json(kvs: Any) -> list[dict[str, Any]]:
    out = []
    for kv in kvs:
        d: dict[str, Any] = {"key": kv.key}
        if kv.HasField("value"):
            d["value"] = _any_pb_to_json(kv.value)
        if kv.key_strindex:
            d["keyStrindex"] = kv.key_strindex
        out.append(d)
    return out


# --- JSON -> protobuf -----------------------------------------------------------------


def _obj(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        c.bad_type(f"{what} object", value)
    return value


def _each(d: dict[str, Any], key: str, fill: Any, pb: Any, name: str) -> None:
    """Decode every item of the JSON array ``d[key]`` (missing or null is empty) into a new
    element of ``pb``'s repeated field ``name``."""
    items = d.get(key)
    if type(items) is not list:
        if items is None:
            return
        c.bad_type("an array", items, key)
    if not items:
        return
    repeated = getattr(pb, name)
    for i, item in enumerate(items):
        try:
            fill(repeated.add(), item)
        except Bad as e:
            e.path.append(f"{key}[{i}]")
            raise


def _any_json_to_pb(v: Any, pb: AnyValue, depth: int = 0) -> None:
    """Fill protobuf ``pb`` from a JSON ``AnyValue`` dict (raises :class:`Bad`).

    ``depth`` counts enclosing arrays/kvlists, limited to ``anyvalue.MAX_DEPTH``.
    """
    d = _obj(v, "an AnyValue")
    found = value_key(d)
    if found is None:
        return
    if found != "arrayValue" and found != "kvlistValue":
        scalar = _ANY_SCALARS[found]
        setattr(pb, scalar.name, field(d, found, scalar.parse))
        return
    if depth >= MAX_DEPTH:
        raise Bad(f"AnyValue nested deeper than {MAX_DEPTH} levels", found)
    try:
        if found == "arrayValue":
            x = _obj(d[found], "an arrayValue")
            pb.array_value.SetInParent()
            _each(x, "values", lambda p, item: _any_json_to_pb(item, p, depth + 1), pb.array_value, "values")
        else:
            x = _obj(d[found], "a kvlistValue")
            pb.kvlist_value.SetInParent()
            _each(x, "values", lambda p, item: _fill_kv(p, item, depth + 1), pb.kvlist_value, "values")
    except Bad as e:
        e.path.append(found)
        raise


def _fill_kv(pb: Any, item: Any, depth: int = 0) -> None:
    d = _obj(item, "a key/value")
    key = d.get("key")
    if type(key) is str:
        pb.key = key
    elif key is not None:
        c.bad_type("a string", key, "key")
    value = d.get("value")
    if value is not None:
        pb.value.SetInParent()
        try:
            _any_json_to_pb(value, pb.value, depth)
        except Bad as e:
            e.path.append("value")
            raise
    strindex = d.get("keyStrindex")
    if strindex is not None:
        pb.key_strindex = field(d, "keyStrindex", c.i32)


# --- messages, field by field -----------------------------------------------------------


class _Field:
    """One field of a message: its JSON key, its protobuf name (proto3 JSON names a field
    in lowerCamelCase) and, for a message field, the message's fields (``item``)."""

    def __init__(self, key: str, item: _Message | None = None) -> None:
        self.key = key
        self.name = re.sub("[A-Z]", lambda m: "_" + m.group().lower(), key)
        self.item = item


class _Scalar(_Field):
    """A scalar field: written when not the default, ``out`` making its JSON value;
    ``parse`` reads the JSON value back (raises :class:`Bad`)."""

    def __init__(
        self, key: str, parse: Callable[[Any], Any] = c.string, out: Callable[[Any], Any] | None = None
    ) -> None:
        super().__init__(key)
        self.parse, self.out = parse, out

    def to_json(self, msg: Any, d: dict[str, Any]) -> None:
        value = getattr(msg, self.name)
        if value:
            d[self.key] = self.out(value) if self.out else value

    def fill(self, pb: Any, d: dict[str, Any]) -> None:
        setattr(pb, self.name, field(d, self.key, self.parse))


class _Repeated(_Field):
    """A repeated field of messages (``item`` their fields) or of ``KeyValue`` s (no
    ``item``); written when not empty."""

    def to_json(self, msg: Any, d: dict[str, Any]) -> None:
        items = getattr(msg, self.name)
        if items:
            d[self.key] = [self.item.to_json(x) for x in items] if self.item else _kvs_json(items)

    def fill(self, pb: Any, d: dict[str, Any]) -> None:
        _each(d, self.key, self.item.fill if self.item else _fill_kv, pb, self.name)


class _Strings(_Field):
    """A repeated string field; written when not empty."""

    def to_json(self, msg: Any, d: dict[str, Any]) -> None:
        values = getattr(msg, self.name)
        if values:
            d[self.key] = list(values)

    def fill(self, pb: Any, d: dict[str, Any]) -> None:
        values = d.get(self.key)
        if values is None:
            return
        if type(values) is not list:
            c.bad_type("an array", values, self.key)
        repeated = getattr(pb, self.name)
        for i, x in enumerate(values):
            if type(x) is not str:
                c.bad_type("a string", x, f"{self.key}[{i}]")
            repeated.append(x)


class _Sub(_Field):
    """A sub-message (``item`` its fields, or an ``AnyValue`` without): written, possibly
    as ``{}``, exactly when it is present, so protobuf -> JSON -> protobuf gives back an
    equal message."""

    def to_json(self, msg: Any, d: dict[str, Any]) -> None:
        if msg.HasField(self.name):
            value = getattr(msg, self.name)
            d[self.key] = self.item.to_json(value) if self.item else _any_pb_to_json(value)

    def fill(self, pb: Any, d: dict[str, Any]) -> None:
        value = d.get(self.key)
        if value is not None:
            sub = getattr(pb, self.name)
            sub.SetInParent()
            try:
                if self.item:
                    self.item.fill(sub, value)
                else:
                    _any_json_to_pb(value, sub)
            except Bad as e:
                e.path.append(self.key)
                raise


@dataclasses.dataclass(frozen=True, slots=True)
class _Message:
    """A message's fields in the order they are written (the Collector's) and read (the
    first invalid one is reported); ``what`` names it in errors."""

    what: str
    fields: tuple[_Scalar | _Repeated | _Strings | _Sub, ...]

    def to_json(self, msg: Any) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for f in self.fields:
            f.to_json(msg, d)
        return d

    def fill(self, pb: Any, item: Any) -> None:
        d = _obj(item, self.what)
        for f in self.fields:
            f.fill(pb, d)


def _id16(value: Any) -> bytes:
    return c.id_bytes(value, 16)


def _id8(value: Any) -> bytes:
    return c.id_bytes(value, 8)


def _time(key: str) -> _Scalar:
    return _Scalar(key, c.u64, str)


def _ids(*keys: str) -> tuple[_Scalar, ...]:
    return tuple(_Scalar(key, _id16 if key == "traceId" else _id8, bytes.hex) for key in keys)


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        c.bad_type("true or false", value)
    return value


#: The scalars an ``AnyValue`` holds, by JSON key and by protobuf field (the keys of
#: ``anyvalue.value_key``; arrays and kvlists nest, and are written apart).
_ANY_SCALARS = {
    name: scalar
    for scalar in (
        _Scalar("stringValue"),
        _Scalar("boolValue", _bool),
        _Scalar("intValue", c.i64, str),
        _Scalar("doubleValue", c.double, c.double_json),
        _Scalar("bytesValue", c.b64decode, c.b64encode),
        _Scalar("stringValueStrindex", c.i32),
    )
    for name in (scalar.key, scalar.name)
}
_ATTRIBUTES = (_Repeated("attributes"), _Scalar("droppedAttributesCount", c.u32))
_ENTITY_REF = _Message(
    "an entityRef", (_Scalar("schemaUrl"), _Scalar("type"), _Strings("idKeys"), _Strings("descriptionKeys"))
)
_RESOURCE = _Message("a resource", (*_ATTRIBUTES, _Repeated("entityRefs", _ENTITY_REF)))
_SCOPE = _Message("a scope", (_Scalar("name"), _Scalar("version"), *_ATTRIBUTES))
_EVENT = _Message("an event", (_time("timeUnixNano"), _Scalar("name"), *_ATTRIBUTES))
_LINK = _Message(
    "a link", (*_ids("traceId", "spanId"), _Scalar("traceState"), *_ATTRIBUTES, _Scalar("flags", c.u32))
)
_STATUS = _Message("a status", (_Scalar("message"), _Scalar("code", c.status_code)))
_SPAN = _Message(
    "a span",
    (
        *_ids("traceId", "spanId"),
        _Scalar("traceState"),
        *_ids("parentSpanId"),
        _Scalar("flags", c.u32),
        _Scalar("name"),
        _Scalar("kind", c.span_kind),
        _time("startTimeUnixNano"),
        _time("endTimeUnixNano"),
        *_ATTRIBUTES,
        _Repeated("events", _EVENT),
        _Scalar("droppedEventsCount", c.u32),
        _Repeated("links", _LINK),
        _Scalar("droppedLinksCount", c.u32),
        _Sub("status", _STATUS),
    ),
)
_LOG_RECORD = _Message(
    "a log record",
    (
        _time("timeUnixNano"),
        _time("observedTimeUnixNano"),
        _Scalar("severityNumber", c.i32),
        _Scalar("severityText"),
        _Sub("body"),
        *_ATTRIBUTES,
        _Scalar("flags", c.u32),
        *_ids("traceId", "spanId"),
        _Scalar("eventName"),
    ),
)


def _signal(resources: str, scopes: str, items: str, item: _Message) -> _Message:
    """Traces and logs share the layout resource -> scope -> items, under other names."""
    scope = _Message(f"a {scopes}", (_Sub("scope", _SCOPE), _Repeated(items, item), _Scalar("schemaUrl")))
    resource = _Message(
        f"a {resources}", (_Sub("resource", _RESOURCE), _Repeated(scopes, scope), _Scalar("schemaUrl"))
    )
    return _Message("", (_Repeated(resources, resource),))


_TRACES = _signal("resourceSpans", "scopeSpans", "spans", _SPAN)
_LOGS = _signal("resourceLogs", "scopeLogs", "logRecords", _LOG_RECORD)


def _from_json(signal: _Message, obj: Any, where: str, msg: Any, what: str) -> None:
    with c.decode_errors(where):
        signal.fill(msg, _obj(obj, what))


def span_to_json(s: Span) -> dict[str, Any]:
    """One protobuf ``Span`` as its OTLP JSON dict."""
    return _SPAN.to_json(s)


def traces_to_json(msg: TracesData | ExportTraceServiceRequest) -> dict[str, Any]:
    """A ``TracesData`` or ``ExportTraceServiceRequest`` as an OTLP JSON dict.

    ``orjson.dumps`` of the result is one line of the Collector file exporter's format.
    """
    return _TRACES.to_json(msg)


def logs_to_json(msg: LogsData | ExportLogsServiceRequest) -> dict[str, Any]:
    """A ``LogsData`` or ``ExportLogsServiceRequest`` as an OTLP JSON dict (one line of the
    Collector file exporter's logs file)."""
    return _LOGS.to_json(msg)


def json_to_traces(obj: Any, where: str = "", message_type: type[M] = TracesData) -> M:  # type: ignore[assignment]
    """An OTLP JSON dict (one file-exporter line, one OTLP/HTTP JSON body) as protobuf.

    ``message_type`` is ``TracesData`` (default) or ``ExportTraceServiceRequest``; they
    share one layout. Raises :class:`~otel_semloop.errors.OTLPDecodeError` whose
    ``where`` is ``where`` followed by the field path, e.g.
    ``"in.jsonl:12 resourceSpans[0].scopeSpans[1].spans[3].traceId"``.
    """
    msg = message_type()
    _from_json(_TRACES, obj, where, msg, "a TracesData")
    return msg


def json_to_logs(obj: Any, where: str = "", message_type: type[L] = LogsData) -> L:  # type: ignore[assignment]
    """An OTLP JSON logs dict (one line of the Collector file exporter's logs file, one
    OTLP/HTTP JSON ``/v1/logs`` body) as protobuf ``LogsData`` (default) or
    ``ExportLogsServiceRequest``. A log record's ids may be empty (no trace context).
    Raises :class:`~otel_semloop.errors.OTLPDecodeError` with the field path, as
    :func:`json_to_traces` does."""
    msg = message_type()
    _from_json(_LOGS, obj, where, msg, "a LogsData")
    return msg
