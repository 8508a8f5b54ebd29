"""Turn a :class:`~otel_semloop.verdict.Verdict` into per-span patches.

A patch is what a span gains: attributes and events. Front doors apply patches to their
own representation (a new SDK ``ReadableSpan``, an OTLP JSON dict, a protobuf ``Span``);
spans that gain nothing are forwarded untouched. The attribute names are a contract (the
reference is README.md, "What lands on your spans", and docs/architecture.md, "Contracts";
tests/shared checks each attribute's type and value through every front door): flags are
booleans and labels low-cardinality, so Jaeger's exact-value tag search and Honeycomb's
numeric filters both work.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EVALUATION_NAME",
    "SpanPatch",
    "evaluation_event",
    "patches_for",
    "release_patches",
    "verdict_attributes",
]

from otel_semloop.evaluation import EVALUATION_NAME, evaluation_event
from otel_semloop.grouping import Release
from otel_semloop.loop_cost import loop_cost
from otel_semloop.model import AttributeValue, EventRecord, Trace
from otel_semloop.redact import safe_text
from otel_semloop.verdict import Label, Verdict


@dataclass(slots=True)
class SpanPatch:
    """Attributes and events to add to one span (existing keys are overwritten)."""

    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)


#: ``semloop.unscored.reason`` of a trace whose scoring ran past its time budget.
UNSCORED_BUDGET_EXCEEDED = "scoring budget exceeded"
#: ``semloop.unscored.reason`` while every scoring thread is stuck past its budget.
UNSCORED_SCORERS_STUCK = "scoring unavailable: scorers stuck past their budget"


def patches_for(trace: Trace, verdict: Verdict) -> dict[str, SpanPatch]:
    """Per-span patches for ``verdict``: the contract attributes and a
    ``gen_ai.evaluation.result`` event on the trace's root span, what the loop cost
    (``semloop.loop.*``, ``semloop.trace.*``: :mod:`otel_semloop.loop_cost`) on it too when
    the verdict names a loop, ``semloop.in_loop`` on the step spans that form the loop.
    Spans not in the result gain nothing."""
    patches: dict[str, SpanPatch] = {}
    if trace.root_span_id:
        root = trace.spans.get(trace.root_span_id)
        event_time = (root.end_ns or root.start_ns) if root is not None else 0
        response_id = root.attributes.get("gen_ai.response.id") if root is not None else None
        # The reason redacted once: semloop.reason and the event's explanation are one text.
        safe_reason = safe_text(verdict.reason) if verdict.reason else None
        attributes = verdict_attributes(verdict, safe_reason=safe_reason)
        cost = loop_cost(trace, verdict)
        if cost is not None:
            attributes.update(cost.attributes())
        event = evaluation_event(
            verdict,
            event_time,
            response_id=response_id if isinstance(response_id, str) else None,
            safe_reason=safe_reason,
        )
        patches[trace.root_span_id] = SpanPatch(attributes=attributes, events=[event])
    for span_id in verdict.in_loop_span_ids:
        if span_id in trace.spans:
            patches.setdefault(span_id, SpanPatch()).attributes["semloop.in_loop"] = True
    return patches


def verdict_attributes(verdict: Verdict, *, safe_reason: str | None = None) -> dict[str, AttributeValue]:
    """The ``semloop.*`` attributes of a verdict (root span). ``safe_reason``:
    ``safe_text(verdict.reason)`` when the caller made it already."""
    attrs: dict[str, AttributeValue] = {
        "semloop.loop.detected": verdict.loop_detected,
        "semloop.score": float(verdict.score),
        "semloop.label": verdict.label.value,
        "semloop.action": verdict.action.value,
        "semloop.partial": verdict.partial,
    }
    # Reasons quote trace text (tool names, error types): secrets redacted, controls escaped.
    if verdict.reason:
        if safe_reason is None:
            safe_reason = safe_text(verdict.reason)
        attrs["semloop.reason"] = safe_reason
    if verdict.label is Label.UNSCORED:
        unscored = verdict.unscored_reason or verdict.reason
        same = safe_reason is not None and unscored == verdict.reason
        attrs["semloop.unscored.reason"] = safe_reason if same else safe_text(unscored)
    signals = verdict.fired_signals
    if signals:
        attrs["semloop.signals"] = list(signals)
    for finding in verdict.findings:
        key = f"semloop.signal.{finding.signal}.severity"
        attrs[key] = max(float(finding.severity), float(attrs.get(key, 0.0)))
    if verdict.lexical is not None:
        attrs["semloop.deepeval.score"] = float(verdict.lexical.score)
        attrs["semloop.deepeval.loop"] = verdict.lexical.loop
        for name, value in verdict.lexical.breakdown.items():
            attrs[f"semloop.deepeval.{name}"] = float(value)
    for name, value in verdict.calibration.items():
        attrs[f"semloop.calibration.{name}"] = float(value)
    attrs.update(verdict.attributes)
    return attrs


def release_patches(
    release: Release[Any], trace: Trace, verdict: Verdict, made: dict[str, SpanPatch] | None = None
) -> dict[str, SpanPatch]:
    """:func:`patches_for` a trace that left a :class:`~otel_semloop.grouping.TraceBuffer`:
    a partial release makes the verdict partial, and an early release says why on the
    root (``semloop.release.reason``). Both front doors that buffer spans use this.
    ``made``: the patches :func:`patches_for` already gave elsewhere (a scoring process
    that built the trace with the release's ``partial``); only the reason is added."""
    if made is not None:
        patches = made
    else:
        if release.partial and not verdict.partial:
            verdict = dataclasses.replace(verdict, partial=True)
        patches = patches_for(trace, verdict)
    root_patch = patches.get(trace.root_span_id)
    if root_patch is not None and release.reason.early:
        root_patch.attributes["semloop.release.reason"] = release.reason.value
    return patches
