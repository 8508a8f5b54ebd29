"""Adapter between the OpenTelemetry Python SDK's ``ReadableSpan`` and the core model.

:data:`SDK_SPANS` is the :class:`~otel_semloop.release.SpanAdapter` the span processor
hands the core:

* :func:`span_to_record` reads an ended span into a :class:`~otel_semloop.model.SpanRecord`
  without copying its attributes (the record holds the span's read-only mapping).
* :func:`apply_patch` writes a verdict back. Ended SDK spans are immutable, so the result
  is a *new* ``ReadableSpan`` from the public constructor, carrying every field of the
  original with the patch's attributes merged in and its events appended.

Attribute limits are kept: the copy rebuilds the original's bounded containers with the
same limits (read from the private ``ReadableSpan._attributes`` and ``_events``, stable
since 1.0, else from ``SpanLimits()``), and patch attributes are added last, so at the
count limit the SDK rule applies; the original's dropped counts carry over.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits
from opentelemetry.sdk.util import BoundedList

from otel_semloop.conventions import step_kind
from otel_semloop.model import EventRecord, SpanRecord, StepKind
from otel_semloop.release import SpanLinks
from otel_semloop.writeback import SpanPatch

__all__ = ["SDK_SPANS", "SdkSpans", "apply_patch", "span_to_record", "with_attributes"]


def span_to_record(span: ReadableSpan) -> SpanRecord:
    """The core's view of an ended SDK span. ``source`` is the span itself.

    ``kind`` uses OTLP numbering (``SPAN_KIND_INTERNAL`` = 1 ... ``CONSUMER`` = 5), like
    the records the OTLP codecs produce; the SDK's ``SpanKind`` counts from 0.
    """
    context = span.context
    parent = span.parent
    status = span.status
    events = span.events
    return SpanRecord(
        trace_id=format(context.trace_id, "032x") if context is not None else "",
        span_id=format(context.span_id, "016x") if context is not None else "",
        parent_span_id=format(parent.span_id, "016x") if parent is not None else "",
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_plain_attributes(getattr(span, "_attributes", None), span.attributes),
        events=tuple(
            EventRecord(
                e.name, e.timestamp or 0, _plain_attributes(getattr(e, "_attributes", None), e.attributes)
            )
            for e in events
        ),
        status_code=int(status.status_code.value) if status is not None else 0,
        status_message=(status.description or "") if status is not None else "",
        kind=int(span.kind.value) + 1,
        parent_is_remote=bool(parent.is_remote) if parent is not None else False,
        source=span,
    )


def _plain_attributes(bounded: Any, public: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The attributes of an ended span or event as a read-only view of the SDK container's
    own dict (frozen once the span ended; copied otherwise), else the public mapping."""
    # Kept: the public proxy runs Python code per read (bench/processor_overhead.py); tested against it.
    inner = getattr(bounded, "_dict", None)
    if type(inner) is dict and isinstance(bounded, BoundedAttributes):
        return MappingProxyType(inner if getattr(bounded, "_immutable", False) else dict(inner))
    return public or {}


def apply_patch(span: ReadableSpan, patch: SpanPatch) -> ReadableSpan:
    """A new ``ReadableSpan``: ``span`` with ``patch`` applied (attributes merged, patch
    values win; events appended). Returns ``span`` itself when the patch is empty."""
    if not patch.attributes and not patch.events:
        return span
    limits = _limits_of(span)
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_merged_attributes(span, patch.attributes, limits),
        events=_appended_events(span, patch.events, limits),
        links=_links_of(span),
        kind=span.kind,
        instrumentation_info=getattr(span, "_instrumentation_info", None),
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def with_attributes(span: ReadableSpan, attributes: Mapping[str, Any]) -> ReadableSpan:
    """``span`` with ``attributes`` added (a late span's ``semloop.late`` mark)."""
    return apply_patch(span, SpanPatch(attributes=dict(attributes)))


class SdkSpans:
    """The :class:`~otel_semloop.release.SpanAdapter` for SDK ``ReadableSpan`` objects:
    records wrap the span, patches make copies (an ended SDK span is immutable)."""

    __slots__ = ()

    def record(self, span: ReadableSpan) -> SpanRecord:
        return span_to_record(span)

    def patched(self, span: ReadableSpan, patch: SpanPatch) -> ReadableSpan:
        return apply_patch(span, patch)

    def links(self, span: ReadableSpan) -> SpanLinks:
        parent = span.parent
        context = span.context
        return SpanLinks(
            span_id=context.span_id if context is not None else id(span),
            parent_id=parent.span_id if parent is not None else None,
            parent_is_remote=bool(parent is not None and parent.is_remote),
            start_ns=span.start_time or 0,
        )

    def may_have_steps(self, spans: Sequence[ReadableSpan]) -> bool:
        """Whether any span reads as an agent, LLM or tool step (a few attribute lookups).
        Errs toward yes: a top-level OpenInference CHAIN counts as an agent wherever it is."""
        for span in spans:
            attributes = span.attributes
            if attributes and step_kind(attributes, top_level=True) is not StepKind.OTHER:
                return True
        return False


#: The adapter instance the span processor uses.
SDK_SPANS = SdkSpans()


# -- limits ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Limits:
    attributes: int | None = None
    attribute_value_length: int | None = None
    attribute_dropped: int = 0
    events: int | None = None
    event_attributes: int | None = None


@functools.cache
def _default_limits() -> SpanLimits:
    return SpanLimits()


def _limits_of(span: ReadableSpan) -> _Limits:
    """The limits the SDK applied to ``span``. A span built by hand with plain
    containers had no limit, so its copy gets none either."""
    limits = _Limits()
    attributes = getattr(span, "_attributes", None)
    if isinstance(attributes, BoundedAttributes):
        limits.attributes = attributes.maxlen
        limits.attribute_value_length = attributes.max_value_len
        limits.attribute_dropped = attributes.dropped
    events = getattr(span, "_events", None)
    if isinstance(events, BoundedList):
        # BoundedList exposes no maxlen; its deque does. Fall back to the env limits.
        limits.events = getattr(getattr(events, "_dq", None), "maxlen", _default_limits().max_events)
    limits.event_attributes = _default_limits().max_event_attributes
    return limits


def _merged_attributes(span: ReadableSpan, extra: Mapping[str, Any], limits: _Limits) -> BoundedAttributes:
    merged: dict[str, Any] = dict(span.attributes or {})
    for key, value in extra.items():
        # Re-adding a key moves it last, as the SDK does when a span sets it again.
        merged.pop(key, None)
        merged[key] = value
    attributes = BoundedAttributes(
        maxlen=limits.attributes,
        attributes=merged,
        immutable=True,
        max_value_len=limits.attribute_value_length,
    )
    attributes.dropped += limits.attribute_dropped
    return attributes


def _appended_events(span: ReadableSpan, extra: Iterable[EventRecord], limits: _Limits) -> BoundedList:
    events = BoundedList(limits.events)
    events.dropped = span.dropped_events
    new = [
        Event(
            record.name,
            attributes=BoundedAttributes(
                maxlen=limits.event_attributes,
                attributes=dict(record.attributes),
                immutable=True,
                max_value_len=limits.attribute_value_length,
            ),
            timestamp=record.time_ns or span.end_time,
        )
        for record in extra
    ]
    events.extend([*span.events, *new])
    return events


def _links_of(span: ReadableSpan) -> BoundedList:
    links = BoundedList(None)
    links.dropped = span.dropped_links
    links.extend(span.links)
    return links
