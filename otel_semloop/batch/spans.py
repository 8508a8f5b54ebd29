"""Units as documents: the payload a scoring worker decodes, write-back onto the document
before it is written out, and (de)serialisation. The light scan that finds each span's ids
is :mod:`otel_semloop.batch.scan` (re-exported here).

Write-back replaces what a previous run wrote: the root's ``semloop.*`` attributes and
its ``gen_ai.evaluation.result`` event named ``semloop.loop`` are removed before the new
ones are added, so rescoring a scored file gives the same bytes again.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from otel_semloop.batch.scan import ScannedSpan, scan_json, scan_json_columns, scan_proto
from otel_semloop.batch.worker import TraceJob
from otel_semloop.otlp.anyvalue import decode_attributes_json
from otel_semloop.otlp.codec import json_to_traces, span_to_json, traces_to_json
from otel_semloop.otlp.patch import apply_patch_json, apply_patch_proto
from otel_semloop.writeback import EVALUATION_NAME, SpanPatch

__all__ = ["ScannedSpan", "dump_json", "scan_json", "scan_json_columns", "scan_proto", "trace_job"]

_EVENT = "gen_ai.evaluation.result"


# --- payloads for scoring workers ---------------------------------------------------------


def payload_json(spans: list[Any]) -> bytes:
    return dump_json(spans)


def payload_proto(spans: list[Any]) -> bytes:
    holder = TracesData()
    scope = holder.resource_spans.add().scope_spans.add()
    scope.spans.extend(spans)
    return holder.SerializeToString()


def trace_job(
    trace_id: str, spans: list[tuple[str, Any]], roots: tuple[str, ...], span_ids: str = ""
) -> TraceJob:
    """The scoring job of a trace from its spans as ``(kind, bytes)`` in input order:
    protobuf spans in one ``TracesData``; compact JSON spans (as a worker or the spill
    holds them) joined into one array as they are; a mix of both as JSON. ``span_ids``
    (JSON spans only): the job sends back patched spans as compact JSON (see
    :func:`~otel_semloop.batch.worker.score_job`)."""
    kinds = {kind for kind, _ in spans}
    if kinds == {"proto"}:
        payload = payload_proto([Span.FromString(data) for _, data in spans])
        return TraceJob(trace_id, "proto", payload, roots, not roots)
    if kinds == {"json"}:
        payload = b"".join([b"[", b",".join([data for _, data in spans]), b"]"])
        return TraceJob(trace_id, "json", payload, roots, not roots, span_ids)
    decoded = [
        orjson.loads(data) if kind == "json" else span_to_json(Span.FromString(data)) for kind, data in spans
    ]
    return TraceJob(trace_id, "json", payload_json(decoded), roots, not roots)


def lenient_span_json(span: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``span`` without the attributes and events that do not decode, and what
    was dropped: a bad value concerns only itself, not its trace."""
    dropped: list[str] = []
    span = dict(span)
    attrs = span.get("attributes")
    if type(attrs) is list:
        kept = []
        for kv in attrs:
            try:
                decode_attributes_json([kv])
            except Exception as exc:
                key = kv.get("key") if type(kv) is dict else None
                dropped.append(f"attribute {key!r}: {exc}"[:200])
            else:
                kept.append(kv)
        span["attributes"] = kept
    elif attrs is not None:
        span.pop("attributes")
        dropped.append("attributes (not an array)")
    events = span.get("events")
    if events is not None:
        kept_events = []
        if type(events) is list:
            from otel_semloop.otlp.records import records_from_json

            for ev in events:
                probe = {"traceId": "1" * 32, "spanId": "1" * 16, "events": [ev]}
                try:
                    records_from_json({"resourceSpans": [{"scopeSpans": [{"spans": [probe]}]}]})
                except Exception as exc:
                    dropped.append(f"event: {exc}"[:200])
                else:
                    kept_events.append(ev)
        span["events"] = kept_events
    status = span.get("status")
    if status is not None and type(status) is not dict:
        span.pop("status")
        dropped.append("status (not an object)")
    return span, dropped


# --- write-back -------------------------------------------------------------------------------


def _is_own_event_json(ev: Any) -> bool:
    if type(ev) is not dict or ev.get("name") != _EVENT:
        return False
    for kv in ev.get("attributes") or ():
        if type(kv) is dict and kv.get("key") == "gen_ai.evaluation.name":
            value = kv.get("value")
            return type(value) is dict and value.get("stringValue") == EVALUATION_NAME
    return False


def apply_json(span: dict[str, Any], patch: SpanPatch) -> None:
    """Write ``patch`` onto a JSON span, replacing what a previous run wrote."""
    if patch.events:
        events = span.get("events")
        if type(events) is list and any(_is_own_event_json(ev) for ev in events):
            span["events"] = [ev for ev in events if not _is_own_event_json(ev)]
        attrs = span.get("attributes")
        if type(attrs) is list:
            stale = [
                kv
                for kv in attrs
                if type(kv) is dict
                and type(kv.get("key")) is str
                and kv["key"].startswith("semloop.")
                and kv["key"] not in patch.attributes
            ]
            if stale:
                span["attributes"] = [kv for kv in attrs if not any(kv is s for s in stale)]
    apply_patch_json(span, patch)


def apply_proto(span: Span, patch: SpanPatch) -> None:
    """Write ``patch`` onto a protobuf span, replacing what a previous run wrote."""
    if patch.events:
        keep = [
            ev
            for ev in span.events
            if not (
                ev.name == _EVENT
                and any(
                    kv.key == "gen_ai.evaluation.name" and kv.value.string_value == EVALUATION_NAME
                    for kv in ev.attributes
                )
            )
        ]
        if len(keep) != len(span.events):
            copies = [Span.Event() for _ in keep]
            for dst, src in zip(copies, keep, strict=True):
                dst.CopyFrom(src)
            del span.events[:]
            span.events.extend(copies)
        stale = [
            kv for kv in span.attributes if kv.key.startswith("semloop.") and kv.key not in patch.attributes
        ]
        if stale:
            keep_attrs = [kv for kv in span.attributes if kv not in stale]
            copies_kv = [type(kv)() for kv in keep_attrs]
            for dst, src in zip(copies_kv, keep_attrs, strict=True):
                dst.CopyFrom(src)
            del span.attributes[:]
            span.attributes.extend(copies_kv)
    apply_patch_proto(span, patch)


# --- serialisation ----------------------------------------------------------------------------


def dump_json(obj: Any) -> bytes:
    """``orjson.dumps``; past orjson's 255 nesting levels (OTLP allows any AnyValue depth)
    the stdlib encoder, with the same compact separators and UTF-8."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10000))
        try:
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        finally:
            sys.setrecursionlimit(limit)


def load_json(raw: bytes) -> Any:
    """``orjson.loads``; past orjson's 1024 nesting levels the stdlib decoder."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "recursion" not in str(exc).lower():
            raise
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 10000))
        try:
            return json.loads(raw)
        finally:
            sys.setrecursionlimit(limit)


def to_proto(doc: Any) -> TracesData:
    return json_to_traces(doc)


def to_json(msg: TracesData) -> dict[str, Any]:
    return traces_to_json(msg)
