"""A hand-written codec between protobuf ``TracesData`` / ``ExportTraceServiceRequest``
(and ``LogsData`` / ``ExportLogsServiceRequest``) and OTLP JSON (parsed into dicts and lists).

``google.protobuf.json_format`` is not used: it is several times slower, orders keys by
field number and writes ids as base64, while
OTLP JSON wants lowercase hex ids, integer enums and 64-bit integers as decimal strings
(the deviations are listed in :mod:`otel_semloop.otlp._common`). Output omits
default-valued scalars and empty lists as the Collector does; a sub-message
(``resource``, ``scope``, ``status``, a ``KeyValue``'s ``value``) is written, possibly as
``{}``, exactly when it is present in the message, so protobuf -> JSON -> protobuf gives
back an equal message. Input ignores unknown keys,
treats ``null`` as the default, and raises :class:`~otel_semloop.errors.OTLPDecodeError`
with the path of the first invalid value.

Size: both directions of one codec for traces and logs, field by field, so each field's
encoding and decoding are read side by side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, LogsData
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData

from otel_semloop.otlp import _common as c
from otel_semloop.otlp._common import Bad, field
from otel_semloop.otlp.anyvalue import MAX_DEPTH, value_key

__all__ = [
    "any_json_to_pb",
    "any_pb_to_json",
    "json_to_logs",
    "json_to_traces",
    "logs_to_json",
    "traces_to_json",
]

M = TypeVar("M", TracesData, ExportTraceServiceRequest)
L = TypeVar("L", LogsData, ExportLogsServiceRequest)

# --- protobuf -> JSON -----------------------------------------------------------------


def any_pb_to_json(v: AnyValue) -> dict[str, Any]:
    """A protobuf ``AnyValue`` as its OTLP JSON dict (structure preserved exactly)."""
    which = v.WhichOneof("value")
    if which == "string_value":
        return {"stringValue": v.string_value}
    if which == "int_value":
        return {"intValue": str(v.int_value)}
    if which == "bool_value":
        return {"boolValue": v.bool_value}
    if which == "double_value":
        return {"doubleValue": c.double_json(v.double_value)}
    if which == "array_value":
        values = v.array_value.values
        return {"arrayValue": {"values": [any_pb_to_json(x) for x in values]} if values else {}}
    if which == "kvlist_value":
        kvs = v.kvlist_value.values
        return {"kvlistValue": {"values": _kvs_json(kvs)} if kvs else {}}
    if which == "bytes_value":
        return {"bytesValue": c.b64encode(v.bytes_value)}
    if which == "string_value_strindex":
        return {"stringValueStrindex": v.string_value_strindex}
    return {}


def _kvs_json(kvs: Any) -> list[dict[str, Any]]:
    out = []
    for kv in kvs:
        d: dict[str, Any] = {"key": kv.key}
        if kv.HasField("value"):
            d["value"] = any_pb_to_json(kv.value)
        if kv.key_strindex:
            d["keyStrindex"] = kv.key_strindex
        out.append(d)
    return out


def _resource_json(r: Resource) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if r.attributes:
        d["attributes"] = _kvs_json(r.attributes)
    if r.dropped_attributes_count:
        d["droppedAttributesCount"] = r.dropped_attributes_count
    if r.entity_refs:
        refs = []
        for ref in r.entity_refs:
            e: dict[str, Any] = {}
            if ref.schema_url:
                e["schemaUrl"] = ref.schema_url
            if ref.type:
                e["type"] = ref.type
            if ref.id_keys:
                e["idKeys"] = list(ref.id_keys)
            if ref.description_keys:
                e["descriptionKeys"] = list(ref.description_keys)
            refs.append(e)
        d["entityRefs"] = refs
    return d


def _scope_json(s: InstrumentationScope) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if s.name:
        d["name"] = s.name
    if s.version:
        d["version"] = s.version
    if s.attributes:
        d["attributes"] = _kvs_json(s.attributes)
    if s.dropped_attributes_count:
        d["droppedAttributesCount"] = s.dropped_attributes_count
    return d


def span_to_json(s: Span) -> dict[str, Any]:
    """One protobuf ``Span`` as its OTLP JSON dict."""
    d: dict[str, Any] = {}
    if s.trace_id:
        d["traceId"] = s.trace_id.hex()
    if s.span_id:
        d["spanId"] = s.span_id.hex()
    if s.trace_state:
        d["traceState"] = s.trace_state
    if s.parent_span_id:
        d["parentSpanId"] = s.parent_span_id.hex()
    if s.flags:
        d["flags"] = s.flags
    if s.name:
        d["name"] = s.name
    if s.kind:
        d["kind"] = s.kind
    if s.start_time_unix_nano:
        d["startTimeUnixNano"] = str(s.start_time_unix_nano)
    if s.end_time_unix_nano:
        d["endTimeUnixNano"] = str(s.end_time_unix_nano)
    if s.attributes:
        d["attributes"] = _kvs_json(s.attributes)
    if s.dropped_attributes_count:
        d["droppedAttributesCount"] = s.dropped_attributes_count
    if s.events:
        events = []
        for ev in s.events:
            e: dict[str, Any] = {}
            if ev.time_unix_nano:
                e["timeUnixNano"] = str(ev.time_unix_nano)
            if ev.name:
                e["name"] = ev.name
            if ev.attributes:
                e["attributes"] = _kvs_json(ev.attributes)
            if ev.dropped_attributes_count:
                e["droppedAttributesCount"] = ev.dropped_attributes_count
            events.append(e)
        d["events"] = events
    if s.dropped_events_count:
        d["droppedEventsCount"] = s.dropped_events_count
    if s.links:
        links = []
        for ln in s.links:
            e = {}
            if ln.trace_id:
                e["traceId"] = ln.trace_id.hex()
            if ln.span_id:
                e["spanId"] = ln.span_id.hex()
            if ln.trace_state:
                e["traceState"] = ln.trace_state
            if ln.attributes:
                e["attributes"] = _kvs_json(ln.attributes)
            if ln.dropped_attributes_count:
                e["droppedAttributesCount"] = ln.dropped_attributes_count
            if ln.flags:
                e["flags"] = ln.flags
            links.append(e)
        d["links"] = links
    if s.dropped_links_count:
        d["droppedLinksCount"] = s.dropped_links_count
    if s.HasField("status"):
        st: dict[str, Any] = {}
        if s.status.message:
            st["message"] = s.status.message
        if s.status.code:
            st["code"] = s.status.code
        d["status"] = st
    return d


def _log_record_json(r: LogRecord) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if r.time_unix_nano:
        d["timeUnixNano"] = str(r.time_unix_nano)
    if r.observed_time_unix_nano:
        d["observedTimeUnixNano"] = str(r.observed_time_unix_nano)
    if r.severity_number:
        d["severityNumber"] = r.severity_number
    if r.severity_text:
        d["severityText"] = r.severity_text
    if r.HasField("body"):
        d["body"] = any_pb_to_json(r.body)
    if r.attributes:
        d["attributes"] = _kvs_json(r.attributes)
    if r.dropped_attributes_count:
        d["droppedAttributesCount"] = r.dropped_attributes_count
    if r.flags:
        d["flags"] = r.flags
    if r.trace_id:
        d["traceId"] = r.trace_id.hex()
    if r.span_id:
        d["spanId"] = r.span_id.hex()
    if r.event_name:
        d["eventName"] = r.event_name
    return d


# --- JSON -> protobuf -----------------------------------------------------------------


def _obj(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        c.bad_type(f"{what} object", value)
    return value


def _items(d: dict[str, Any], key: str) -> list[Any]:
    """``d[key]`` as a list (missing or null is empty)."""
    value = d.get(key)
    if value is None:
        return []
    if type(value) is not list:
        c.bad_type("an array", value, key)
    return value


def _each(d: dict[str, Any], key: str, fill: Any, pb: Any, name: str) -> None:
    """Decode every item of the JSON array ``d[key]`` (missing or null is empty) into a new
    element of ``pb``'s repeated field ``name`` (only looked up when there are items: a
    protobuf field access is not free)."""
    items = d.get(key)
    if type(items) is not list:
        if items is None:
            return
        c.bad_type("an array", items, key)
    if not items:
        return
    repeated = getattr(pb, name)
    for item in items:
        try:
            fill(repeated.add(), item)
        except Bad as e:
            e.path.append(f"{key}[{c.index_of(items, item)}]")
            raise


def _submessage(d: dict[str, Any], key: str, fill: Any, pb: Any, name: str) -> None:
    """Decode ``d[key]`` into ``pb``'s sub-message ``name``, present (even as ``{}``)
    exactly when the key is there and not null."""
    value = d.get(key)
    if value is not None:
        sub = getattr(pb, name)
        sub.SetInParent()
        try:
            fill(sub, value)
        except Bad as e:
            e.path.append(key)
            raise


def any_json_to_pb(v: Any, pb: AnyValue, depth: int = 0) -> None:
    """Fill protobuf ``pb`` from a JSON ``AnyValue`` dict (raises :class:`Bad`).

    ``depth`` counts enclosing arrays/kvlists, limited to ``anyvalue.MAX_DEPTH``.
    """
    d = _obj(v, "an AnyValue")
    found = value_key(d)
    if found is None:
        return
    x = d[found]
    try:
        if found == "arrayValue" or found == "kvlistValue":
            if depth >= MAX_DEPTH:
                raise Bad(f"AnyValue nested deeper than {MAX_DEPTH} levels")
            if found == "arrayValue":
                _fill_array(pb, x, depth + 1)
            else:
                _fill_kvlist(pb, x, depth + 1)
        else:
            _ANY_FILLERS[found](pb, x)
    except Bad as e:
        e.path.append(found)
        raise


def _fill_bool(pb: AnyValue, x: Any) -> None:
    if type(x) is not bool:
        c.bad_type("true or false", x)
    pb.bool_value = x


def _fill_array(pb: AnyValue, x: Any, depth: int) -> None:
    d = _obj(x, "an arrayValue")
    pb.array_value.SetInParent()
    _each(d, "values", lambda p, item: any_json_to_pb(item, p, depth), pb.array_value, "values")


def _fill_kvlist(pb: AnyValue, x: Any, depth: int) -> None:
    d = _obj(x, "a kvlistValue")
    pb.kvlist_value.SetInParent()
    _each(d, "values", lambda p, item: _fill_kv(p, item, depth), pb.kvlist_value, "values")


def _set_string(pb: AnyValue, x: Any) -> None:
    pb.string_value = c.string(x)


def _set_int(pb: AnyValue, x: Any) -> None:
    pb.int_value = c.i64(x)


def _set_double(pb: AnyValue, x: Any) -> None:
    pb.double_value = c.double(x)


def _set_bytes(pb: AnyValue, x: Any) -> None:
    pb.bytes_value = c.b64decode(x)


def _set_strindex(pb: AnyValue, x: Any) -> None:
    pb.string_value_strindex = c.i32(x)


#: One filler per ``AnyValue`` key (the keys of ``anyvalue.value_key``).
_ANY_FILLERS = {
    "stringValue": _set_string,
    "boolValue": _fill_bool,
    "intValue": _set_int,
    "doubleValue": _set_double,
    "arrayValue": None,  # handled in any_json_to_pb (nesting depth)
    "kvlistValue": None,
    "bytesValue": _set_bytes,
    "stringValueStrindex": _set_strindex,
}


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
            any_json_to_pb(value, pb.value, depth)
        except Bad as e:
            e.path.append("value")
            raise
    strindex = d.get("keyStrindex")
    if strindex is not None:
        pb.key_strindex = field(d, "keyStrindex", c.i32)


def _fill_entity_ref(pb: Any, item: Any) -> None:
    d = _obj(item, "an entityRef")
    pb.schema_url = field(d, "schemaUrl", c.string)
    pb.type = field(d, "type", c.string)
    for key, repeated in (("idKeys", pb.id_keys), ("descriptionKeys", pb.description_keys)):
        values = _items(d, key)
        for x in values:
            if type(x) is not str:
                c.bad_type("a string", x, f"{key}[{c.index_of(values, x)}]")
            repeated.append(x)


def _fill_resource(pb: Resource, value: Any) -> None:
    d = _obj(value, "a resource")
    _each(d, "attributes", _fill_kv, pb, "attributes")
    pb.dropped_attributes_count = field(d, "droppedAttributesCount", c.u32)
    _each(d, "entityRefs", _fill_entity_ref, pb, "entity_refs")


def _fill_scope(pb: InstrumentationScope, value: Any) -> None:
    d = _obj(value, "a scope")
    pb.name = field(d, "name", c.string)
    pb.version = field(d, "version", c.string)
    _each(d, "attributes", _fill_kv, pb, "attributes")
    pb.dropped_attributes_count = field(d, "droppedAttributesCount", c.u32)


def _id16(value: Any) -> bytes:
    return c.id_bytes(value, 16)


def _id8(value: Any) -> bytes:
    return c.id_bytes(value, 8)


def _fill_event(pb: Span.Event, item: Any) -> None:
    d = _obj(item, "an event")
    pb.time_unix_nano = field(d, "timeUnixNano", c.u64)
    pb.name = field(d, "name", c.string)
    _each(d, "attributes", _fill_kv, pb, "attributes")
    pb.dropped_attributes_count = field(d, "droppedAttributesCount", c.u32)


def _fill_link(pb: Span.Link, item: Any) -> None:
    d = _obj(item, "a link")
    pb.trace_id = field(d, "traceId", _id16)
    pb.span_id = field(d, "spanId", _id8)
    pb.trace_state = field(d, "traceState", c.string)
    _each(d, "attributes", _fill_kv, pb, "attributes")
    pb.dropped_attributes_count = field(d, "droppedAttributesCount", c.u32)
    pb.flags = field(d, "flags", c.u32)


def _fill_status(pb: Status, value: Any) -> None:
    d = _obj(value, "a status")
    pb.message = field(d, "message", c.string)
    pb.code = field(d, "code", c.status_code)  # type: ignore[assignment]


def fill_span(pb: Span, item: Any) -> None:
    """Fill protobuf ``pb`` from one OTLP JSON span dict (raises :class:`Bad`)."""
    d = _obj(item, "a span")
    pb.trace_id = field(d, "traceId", _id16)
    pb.span_id = field(d, "spanId", _id8)
    pb.trace_state = field(d, "traceState", c.string)
    pb.parent_span_id = field(d, "parentSpanId", _id8)
    pb.flags = field(d, "flags", c.u32)
    pb.name = field(d, "name", c.string)
    pb.kind = field(d, "kind", c.span_kind)  # type: ignore[assignment]
    pb.start_time_unix_nano = field(d, "startTimeUnixNano", c.u64)
    pb.end_time_unix_nano = field(d, "endTimeUnixNano", c.u64)
    _each(d, "attributes", _fill_kv, pb, "attributes")
    pb.dropped_attributes_count = field(d, "droppedAttributesCount", c.u32)
    _each(d, "events", _fill_event, pb, "events")
    pb.dropped_events_count = field(d, "droppedEventsCount", c.u32)
    _each(d, "links", _fill_link, pb, "links")
    pb.dropped_links_count = field(d, "droppedLinksCount", c.u32)
    _submessage(d, "status", _fill_status, pb, "status")


def _fill_log_record(pb: LogRecord, item: Any) -> None:
    d = _obj(item, "a log record")
    pb.time_unix_nano = field(d, "timeUnixNano", c.u64)
    pb.observed_time_unix_nano = field(d, "observedTimeUnixNano", c.u64)
    pb.severity_number = field(d, "severityNumber", c.i32)  # type: ignore[assignment]
    pb.severity_text = field(d, "severityText", c.string)
    value = d.get("body")
    if value is not None:
        pb.body.SetInParent()
        try:
            any_json_to_pb(value, pb.body)
        except Bad as e:
            e.path.append("body")
            raise
    _each(d, "attributes", _fill_kv, pb, "attributes")
    pb.dropped_attributes_count = field(d, "droppedAttributesCount", c.u32)
    pb.flags = field(d, "flags", c.u32)
    pb.trace_id = field(d, "traceId", _id16)
    pb.span_id = field(d, "spanId", _id8)
    pb.event_name = field(d, "eventName", c.string)


# --- the two signals ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Layout:
    """Where a signal's items stand in its message: traces and logs share the layout
    resource -> scope -> items, under other names, so one writer and one reader serve
    both. Each level is named ``(JSON key, protobuf field)``."""

    message: str
    resources: tuple[str, str]
    scopes: tuple[str, str]
    items: tuple[str, str]
    item_json: Callable[[Any], dict[str, Any]]
    fill_item: Callable[[Any, Any], None]

    def to_json(self, msg: Any) -> dict[str, Any]:
        resources_key, resources_field = self.resources
        scopes_key, scopes_field = self.scopes
        items_key, items_field = self.items
        item_json = self.item_json
        out: list[dict[str, Any]] = []
        for resource in getattr(msg, resources_field):
            d: dict[str, Any] = {}
            if resource.HasField("resource"):
                d["resource"] = _resource_json(resource.resource)
            scopes = getattr(resource, scopes_field)
            if scopes:
                scopes_json = []
                for scope in scopes:
                    sd: dict[str, Any] = {}
                    if scope.HasField("scope"):
                        sd["scope"] = _scope_json(scope.scope)
                    items = getattr(scope, items_field)
                    if items:
                        sd[items_key] = [item_json(item) for item in items]
                    if scope.schema_url:
                        sd["schemaUrl"] = scope.schema_url
                    scopes_json.append(sd)
                d[scopes_key] = scopes_json
            if resource.schema_url:
                d["schemaUrl"] = resource.schema_url
            out.append(d)
        return {resources_key: out} if out else {}

    def fill_scope(self, pb: Any, item: Any) -> None:
        d = _obj(item, f"a {self.scopes[0]}")
        _submessage(d, "scope", _fill_scope, pb, "scope")
        _each(d, self.items[0], self.fill_item, pb, self.items[1])
        pb.schema_url = field(d, "schemaUrl", c.string)

    def fill_resource(self, pb: Any, item: Any) -> None:
        d = _obj(item, f"a {self.resources[0]}")
        _submessage(d, "resource", _fill_resource, pb, "resource")
        _each(d, self.scopes[0], self.fill_scope, pb, self.scopes[1])
        pb.schema_url = field(d, "schemaUrl", c.string)

    def from_json(self, obj: Any, where: str, msg: Any) -> None:
        try:
            _each(
                _obj(obj, f"a {self.message}"), self.resources[0], self.fill_resource, msg, self.resources[1]
            )
        except Bad as e:
            raise e.to_error(where) from None
        except RecursionError:
            raise Bad("value nested too deeply").to_error(where) from None


_TRACES = _Layout(
    "TracesData",
    ("resourceSpans", "resource_spans"),
    ("scopeSpans", "scope_spans"),
    ("spans", "spans"),
    span_to_json,
    fill_span,
)
_LOGS = _Layout(
    "LogsData",
    ("resourceLogs", "resource_logs"),
    ("scopeLogs", "scope_logs"),
    ("logRecords", "log_records"),
    _log_record_json,
    _fill_log_record,
)


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
    _TRACES.from_json(obj, where, msg)
    return msg


def json_to_logs(obj: Any, where: str = "", message_type: type[L] = LogsData) -> L:  # type: ignore[assignment]
    """An OTLP JSON logs dict (one line of the Collector file exporter's logs file, one
    OTLP/HTTP JSON ``/v1/logs`` body) as protobuf ``LogsData`` (default) or
    ``ExportLogsServiceRequest``. A log record's ids may be empty (no trace context).
    Raises :class:`~otel_semloop.errors.OTLPDecodeError` with the field path, as
    :func:`json_to_traces` does."""
    msg = message_type()
    _LOGS.from_json(obj, where, msg)
    return msg
