"""A unit between its read and its write: its spans found by trace (:func:`read_unit`),
whether they gained patches (applied as each verdict arrives, by the one patcher of their
span type, :mod:`otel_semloop.otlp.patch`), how many of its traces are still undecided, and
what it is written as (:func:`rendered`: as read when it gained nothing and is already in
the output format, else re-serialised).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.scan import UnitSpans, scan_json, scan_proto
from otel_semloop.batch.spans import load_json
from otel_semloop.batch.units import InputProblem, Unit
from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.patch import apply_patch_json, apply_patch_proto
from otel_semloop.writeback import SpanPatch

__all__ = [
    "PendingUnit",
    "parse_unit",
    "patch_spans",
    "patch_unit",
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
    #: the traces its spans were handed to the trace buffer for
    trace_ids: list[str] = field(default_factory=list)
    #: its traces' spans still held for undecided traces (one :class:`UnitSpans` each)
    waiting: int = 0
    #: whether a span of it gained a patch
    dirty: bool = False
    #: spilled traces whose patches it still needs (see :mod:`~otel_semloop.batch.spill`)
    spilled: set[str] = field(default_factory=set)


def parse_unit(unit: Unit) -> tuple[Any, dict[str, UnitSpans]]:
    """The unit's document and its spans by trace id. Raises :class:`Bad` and the
    decoders' errors (see :func:`read_unit`)."""
    if unit.kind == "json":
        doc = load_json(unit.raw)
        return doc, scan_json(doc)
    message = TracesData.FromString(unit.raw)
    return message, scan_proto(message)


def read_unit(unit: Unit) -> tuple[Any, dict[str, UnitSpans]] | InputProblem:
    """The unit's document and its spans by trace id, or what makes the unit malformed
    (its read error, or what parsing it found; it is then copied through as read)."""
    if unit.error is not None:
        return InputProblem(unit.where, unit.error)
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


def patch_spans(spans: UnitSpans, patches: dict[str, SpanPatch]) -> bool:
    """``patches`` (by span id) onto the spans they are for, replacing what an earlier run
    wrote; whether any was."""
    patched = False
    for span, span_id in zip(spans.spans, spans.span_ids, strict=True):
        patch = patches.get(span_id)
        if patch is None:
            continue
        if type(span) is dict:
            apply_patch_json(span, patch, replace_previous=True)
        else:
            apply_patch_proto(span, patch, replace_previous=True)
        patched = True
    return patched


def patch_unit(by_trace: dict[str, UnitSpans], patches: dict[str, dict[str, SpanPatch]]) -> bool:
    """The patches (trace id -> span id -> patch) onto a unit's spans; whether any was."""
    patched = False
    for trace_id, spans in by_trace.items():
        found = patches.get(trace_id)
        if found and patch_spans(spans, found):
            patched = True
    return patched


def rendered(pending: PendingUnit, output_format: str) -> Any:
    """What the writer gets for a decided unit: None to copy it as read, else its
    document, patches applied (for the writer to serialise)."""
    unit = pending.unit
    if unit.error is not None:
        return None
    as_read = unit.kind == output_format and not (unit.kind == "json" and b"\n" in unit.raw)
    if not pending.dirty and as_read:
        return None
    return pending.doc
