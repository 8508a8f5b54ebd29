"""A unit between its read and its write: its spans found (:func:`read_unit`), the patches
they gained, how many of its spans are still held for undecided traces, and what it is
written as (:func:`rendered`).

A unit is held parsed while it waits: its spans are the objects the trace buffer holds.
A unit that gained nothing is copied as read (when it is already in the output format); a
unit that gained patches has them applied to its spans by the one patcher of their span
type (:mod:`otel_semloop.otlp.patch`) and is written re-serialised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.scan import ScannedSpan, scan_json, scan_proto
from otel_semloop.batch.spans import load_json
from otel_semloop.batch.units import InputProblem, Unit
from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.patch import apply_patch_json, apply_patch_proto
from otel_semloop.writeback import SpanPatch

__all__ = [
    "PendingUnit",
    "UnitSpans",
    "parse_unit",
    "patch_spans",
    "patches_by_index",
    "read_unit",
    "rendered",
]


@dataclass(slots=True, eq=False)
class PendingUnit:
    """A unit waiting to be written."""

    unit: Unit
    #: its place in the input (the trace buffer's clock)
    number: int
    #: the parsed document (None once written, or for a unit that did not parse)
    doc: Any = None
    #: its spans, in the order :func:`read_unit` found them
    spans: list[Any] = field(default_factory=list)
    #: the traces its spans were handed to the trace buffer for
    trace_ids: list[str] = field(default_factory=list)
    #: its traces' spans still held for undecided traces (one :class:`UnitSpans` each)
    waiting: int = 0
    #: span index -> the patch it gained
    patches: dict[int, SpanPatch] = field(default_factory=dict)
    #: spilled traces whose patches it still needs (see :mod:`~otel_semloop.batch.spill`)
    spilled: set[str] = field(default_factory=set)


@dataclass(slots=True, eq=False)
class UnitSpans:
    """The spans of one trace in one unit, as the trace buffer holds them: where they
    stand in the unit and their ids."""

    unit: PendingUnit
    indexes: list[int] = field(default_factory=list)
    span_ids: list[str] = field(default_factory=list)
    #: the span ids of its local roots
    roots: list[str] = field(default_factory=list)

    def add(self, index: int, found: ScannedSpan) -> None:
        self.indexes.append(index)
        self.span_ids.append(found.span_id)
        if found.root:
            self.roots.append(found.span_id)

    def spans(self) -> list[Any]:
        """The span dicts (JSON) or protobuf ``Span`` s."""
        return [self.unit.spans[index] for index in self.indexes]


def parse_unit(unit: Unit) -> tuple[Any, list[ScannedSpan]]:
    """The unit's document and its spans with their ids. Raises :class:`Bad` and the
    decoders' errors (see :func:`read_unit`)."""
    if unit.kind == "json":
        doc = load_json(unit.raw)
        return doc, scan_json(doc)
    message = TracesData.FromString(unit.raw)
    return message, scan_proto(message)


def read_unit(unit: Unit) -> tuple[Any, list[ScannedSpan]] | InputProblem:
    """The unit's document and its spans with their ids, or what makes the unit malformed
    (it is then copied through as read)."""
    try:
        return parse_unit(unit)
    except Bad as exc:
        return InputProblem(exc.to_error(unit.where).where, str(exc))
    except (orjson.JSONDecodeError, ValueError) as exc:
        return InputProblem(unit.where, f"invalid JSON: {exc}")
    except (DecodeError, RuntimeError) as exc:
        return InputProblem(unit.where, f"invalid protobuf: {exc}")
    except RecursionError:
        return InputProblem(unit.where, "nested too deeply to decode")


def patch_spans(spans: list[Any], patches: dict[int, SpanPatch]) -> None:
    """``patches`` (by span index) onto the spans, replacing what an earlier run wrote."""
    for index, patch in patches.items():
        span = spans[index]
        if type(span) is dict:
            apply_patch_json(span, patch, replace_previous=True)
        else:
            apply_patch_proto(span, patch, replace_previous=True)


def patches_by_index(
    scanned: list[ScannedSpan], patches: dict[str, dict[str, SpanPatch]]
) -> dict[int, SpanPatch]:
    """The patches (trace id -> span id -> patch) of a unit's spans, by span index."""
    return {
        index: patches[span.trace_id][span.span_id]
        for index, span in enumerate(scanned)
        if span.span_id in patches.get(span.trace_id, {})
    }


def rendered(pending: PendingUnit, output_format: str) -> Any:
    """What the writer gets for a decided unit: None to copy it as read, else its
    document with its patches applied (for the writer to serialise)."""
    unit = pending.unit
    if unit.error is not None:
        return None
    as_read = unit.kind == output_format and not (unit.kind == "json" and b"\n" in unit.raw)
    if not pending.patches and as_read:
        return None
    patch_spans(pending.spans, pending.patches)
    return pending.doc
