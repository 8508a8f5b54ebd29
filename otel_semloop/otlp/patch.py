"""Write-back of :class:`~otel_semloop.writeback.SpanPatch`es onto OTLP spans (JSON span
dicts and protobuf ``Span``s, in place), and span JSON made from records built in memory.
The spans' decoding into records is :mod:`otel_semloop.otlp.records`.

``replace_previous`` (rescoring a file that was scored before): a root patch (one with
events) first takes off what an earlier run wrote, the span's other ``semloop.*``
attributes and its ``gen_ai.evaluation.result`` event named ``semloop.loop``, so that
rescoring a scored file gives the same bytes again."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from otel_semloop.model import EventRecord, SpanRecord
from otel_semloop.otlp.anyvalue import (
    encode_any_json,
    encode_any_pb,
    encode_attributes_json,
    encode_attributes_pb,
)
from otel_semloop.writeback import EVALUATION_NAME, SpanPatch

__all__ = ["apply_patch_json", "apply_patch_proto", "record_to_json", "records_to_traces_json"]


# --- write-back -----------------------------------------------------------------------


def _event_json(ev: EventRecord) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if ev.time_ns:
        d["timeUnixNano"] = str(ev.time_ns)
    if ev.name:
        d["name"] = ev.name
    if ev.attributes:
        d["attributes"] = encode_attributes_json(ev.attributes)
    return d


_EVALUATION_EVENT = "gen_ai.evaluation.result"


def _previous_event_json(event: Any) -> bool:
    """Whether a JSON span event is the evaluation record an earlier run wrote."""
    if type(event) is not dict or event.get("name") != _EVALUATION_EVENT:
        return False
    for kv in event.get("attributes") or ():
        if type(kv) is dict and kv.get("key") == "gen_ai.evaluation.name":
            value = kv.get("value")
            return type(value) is dict and value.get("stringValue") == EVALUATION_NAME
    return False


def _drop_previous_json(span: dict[str, Any], patch: SpanPatch) -> None:
    events = span.get("events")
    if type(events) is list and any(_previous_event_json(event) for event in events):
        span["events"] = [event for event in events if not _previous_event_json(event)]
    attrs = span.get("attributes")
    if type(attrs) is list:

        def stale(kv: Any) -> bool:
            key = kv.get("key") if type(kv) is dict else None
            return type(key) is str and key.startswith("semloop.") and key not in patch.attributes

        if any(stale(kv) for kv in attrs):
            span["attributes"] = [kv for kv in attrs if not stale(kv)]


def apply_patch_json(span: dict[str, Any], patch: SpanPatch, *, replace_previous: bool = False) -> None:
    """Write ``patch`` onto an OTLP JSON span dict in place.

    An attribute whose key exists gets its value replaced where it stands (every
    occurrence, if the key is repeated); a new key is appended. Events are appended.
    ``replace_previous``: see the module docstring.
    """
    if replace_previous and patch.events:
        _drop_previous_json(span, patch)
    new = patch.attributes
    if new:
        attrs = span.get("attributes")
        if type(attrs) is not list:
            attrs = span["attributes"] = []
        replaced: set[str] = set()
        for kv in attrs:
            key = kv.get("key") if type(kv) is dict else None
            if type(key) is str and key in new:
                kv["value"] = encode_any_json(new[key])
                replaced.add(key)
        attrs.extend({"key": k, "value": encode_any_json(v)} for k, v in new.items() if k not in replaced)
    if patch.events:
        events = span.get("events")
        if type(events) is not list:
            events = span["events"] = []
        events.extend(_event_json(ev) for ev in patch.events)


def _drop_previous_proto(span: Any, patch: SpanPatch) -> None:
    def previous(event: Any) -> bool:
        return event.name == _EVALUATION_EVENT and any(
            kv.key == "gen_ai.evaluation.name" and kv.value.string_value == EVALUATION_NAME
            for kv in event.attributes
        )

    def stale(kv: Any) -> bool:
        return kv.key.startswith("semloop.") and kv.key not in patch.attributes

    _drop(span.events, previous)
    _drop(span.attributes, stale)


def _drop(field: Any, dropped: Any) -> None:
    """Take the elements ``dropped`` says out of a repeated message field. A repeated field
    cannot take back an element it gave up: the kept ones are copied, the field emptied
    and refilled."""
    if not any(dropped(item) for item in field):
        return
    kept = []
    for item in field:
        if not dropped(item):
            copy = type(item)()
            copy.CopyFrom(item)
            kept.append(copy)
    del field[:]
    field.extend(kept)


def apply_patch_proto(span: Any, patch: SpanPatch, *, replace_previous: bool = False) -> None:
    """Write ``patch`` onto a protobuf ``Span`` in place (same rules as
    :func:`apply_patch_json`)."""
    if replace_previous and patch.events:
        _drop_previous_proto(span, patch)
    if patch.attributes:
        seen: set[str] = set()
        for kv in span.attributes:
            if kv.key in patch.attributes:
                encode_any_pb(patch.attributes[kv.key], kv.value)
                seen.add(kv.key)
        for key, value in patch.attributes.items():
            if key not in seen:
                kv = span.attributes.add()
                kv.key = key
                encode_any_pb(value, kv.value)
    for ev in patch.events:
        pb = span.events.add()
        pb.time_unix_nano = ev.time_ns
        pb.name = ev.name
        if ev.attributes:
            encode_attributes_pb(ev.attributes, pb.attributes)


# --- records to OTLP JSON -------------------------------------------------------------


def record_to_json(record: SpanRecord) -> dict[str, Any]:
    """An OTLP JSON span dict for a record built in memory (samples, benchmarks, tests)."""
    span: dict[str, Any] = {
        "traceId": record.trace_id,
        "spanId": record.span_id,
        "name": record.name,
        "kind": record.kind,
        "startTimeUnixNano": str(record.start_ns),
        "endTimeUnixNano": str(record.end_ns),
    }
    if record.parent_span_id:
        span["parentSpanId"] = record.parent_span_id
    if record.attributes:
        span["attributes"] = encode_attributes_json(record.attributes)
    if record.events:
        span["events"] = [_event_json(event) for event in record.events]
    if record.status_code or record.status_message:
        status: dict[str, Any] = {}
        if record.status_code:
            status["code"] = record.status_code
        if record.status_message:
            status["message"] = record.status_message
        span["status"] = status
    return span


def records_to_traces_json(
    records: Iterable[SpanRecord], *, service_name: str = "unknown_service", scope_name: str = "otel-semloop"
) -> dict[str, Any]:
    """One OTLP JSON ``TracesData`` (a file-exporter line) holding ``records`` under a
    single resource and scope."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": encode_attributes_json({"service.name": service_name})},
                "scopeSpans": [
                    {"scope": {"name": scope_name}, "spans": [record_to_json(r) for r in records]}
                ],
            }
        ]
    }
