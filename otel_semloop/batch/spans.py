"""OTLP JSON spans as the core sees them: :class:`JsonSpans`, the
:class:`~otel_semloop.release.SpanAdapter` for span dicts as decoded from a file line
(protobuf spans go through the service's :data:`~otel_semloop.service.held.PROTO_SPANS`),
and JSON (de)serialisation past orjson's nesting limits. What does not decode is dropped
from its span and noted on the trace's root (``semloop.input.dropped``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from otel_semloop.conventions import step_kind
from otel_semloop.model import SpanRecord, StepKind
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE
from otel_semloop.otlp.anyvalue import decode_attributes_json
from otel_semloop.otlp.patch import apply_patch_json
from otel_semloop.otlp.records import record_from_json
from otel_semloop.release import SpanLinks
from otel_semloop.service.held import KIND_KEYS
from otel_semloop.writeback import SpanPatch

__all__ = ["JsonSpans", "dump_json", "load_json"]


class JsonSpans:
    """The span adapter for one trace's OTLP JSON span dicts. A span's attributes and
    events that do not decode are left out of its record, and what was left out is
    collected (:attr:`dropped`). Patches replace what an earlier run wrote."""

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def record(self, span: dict[str, Any]) -> SpanRecord:
        try:
            record = record_from_json(span)
        except Exception:
            fixed, lost = _decodable(span)
            record = record_from_json(fixed)
            record.source = span
            self.dropped.extend(lost)
        return record

    def patched(self, span: dict[str, Any], patch: SpanPatch) -> dict[str, Any]:
        apply_patch_json(span, patch, replace_previous=True)
        return span

    def links(self, span: dict[str, Any]) -> SpanLinks:
        parent = span.get("parentSpanId") or None
        flags = span.get("flags")
        remote_bits = FLAGS_HAS_IS_REMOTE | FLAGS_IS_REMOTE
        return SpanLinks(
            span_id=span.get("spanId"),
            parent_id=parent,
            parent_is_remote=type(flags) is int and flags & remote_bits == remote_bits,
            start_ns=int(span.get("startTimeUnixNano") or 0),
        )

    def may_have_steps(self, spans: Sequence[dict[str, Any]]) -> bool:
        for span in spans:
            kinds = {
                kv["key"]: (kv.get("value") or {}).get("stringValue", "")
                for kv in span.get("attributes") or ()
                if type(kv) is dict and kv.get("key") in KIND_KEYS
            }
            if kinds and step_kind(kinds, top_level=True) is not StepKind.OTHER:
                return True
        return False


def _decodable(span: Any) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``span`` without the attributes and events that do not decode, and what
    was dropped."""
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
            for event in events:
                probe = {"traceId": "1" * 32, "spanId": "1" * 16, "events": [event]}
                try:
                    record_from_json(probe)
                except Exception as exc:
                    dropped.append(f"event: {exc}"[:200])
                else:
                    kept_events.append(event)
        span["events"] = kept_events
    status = span.get("status")
    if status is not None and type(status) is not dict:
        span.pop("status")
        dropped.append("status (not an object)")
    return span, dropped


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
