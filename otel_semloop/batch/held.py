"""A unit between its parse and its write: where its spans are, the patches they gained,
and how many undecided traces it still waits for; and what it is written as.

Rendering does the least work that gives the bytes re-serialising the whole unit would:
a unit that gained nothing is copied as read (when it is already in the output format); a
compact JSON line (one that is exactly what orjson writes for it, so its spans are known
by offset) has only its patched spans re-serialised and spliced in; a line parsed into
gaps and span bytes is joined again; anything else is parsed, patched and handed over
as a document for the writer to serialise.
"""

from __future__ import annotations

from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.chunks import render_json
from otel_semloop.batch.spans import (
    apply_json,
    apply_proto,
    dump_json,
    load_json,
    scan_json,
    scan_proto,
    trace_job,
)
from otel_semloop.batch.units import Pieces, Unit
from otel_semloop.batch.worker import TraceJob
from otel_semloop.writeback import SpanPatch

__all__ = ["Held", "apply_written", "job_for", "render", "splice"]


class Held:
    """A unit waiting to be written: its spans' ids and where their bytes are (from the
    parse), the patches its spans gained, and how many undecided traces it still waits
    for."""

    __slots__ = ("bounds", "gaps", "late", "patches", "rootmask", "sids", "spans", "unit", "waiting")

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.sids = ""  # every span's id, 16 hex characters each
        self.rootmask = b""  # one byte a span: 1 for a local root
        #: each span's bytes, or None when ``bounds`` has their offsets in ``unit.raw``
        self.spans: list[bytes] | None = []
        self.gaps: list[bytes] | None = None
        self.bounds: Any = None  # array of (start, end) per span in a compact JSON line
        #: span index -> its patch, or (from a worker) its patched compact JSON
        self.patches: dict[int, SpanPatch | bytes] | None = None
        self.waiting = 0
        self.late: set[str] | None = None  # spilled traces whose patches it still needs

    def sid(self, i: int) -> str:
        """Span ``i``'s id."""
        return self.sids[16 * i : 16 * i + 16]

    def span(self, i: int) -> bytes:
        """Span ``i``'s bytes (compact JSON or protobuf)."""
        if self.spans is not None:
            return self.spans[i]
        return self.unit.raw[self.bounds[2 * i] : self.bounds[2 * i + 1]]

    def parts(self, indexes: list[int]) -> list[Any]:
        """The bytes of the spans at ``indexes`` without copying them: views into the
        line (bounds) or the span bytes themselves, for joining."""
        if self.spans is not None:
            spans = self.spans
            return [spans[i] for i in indexes]
        view = memoryview(self.unit.raw)
        bounds = self.bounds
        return [view[bounds[2 * i] : bounds[2 * i + 1]] for i in indexes]


def job_for(tid: str, spans: list[tuple[Held, list[int]]], roots: tuple[str, ...]) -> TraceJob:
    """The scoring job of a trace from its spans, ``(held unit, span indexes)`` in order.

    When every unit takes patched spans as compact JSON (see :func:`render`), the job
    carries the span ids and the worker, which decodes the spans anyway, sends back each
    patched span's JSON (see :func:`apply_written`) instead of this process parsing them
    again; the payload is joined from views of the lines."""
    if all(h.unit.kind == "json" and (h.bounds is not None or h.gaps is not None) for h, _ in spans):
        parts: list[Any] = []
        ids: list[str] = []
        for held, indexes in spans:
            parts += held.parts(indexes)
            sids = held.sids
            ids += [sids[16 * i : 16 * i + 16] for i in indexes]
        # one join: the brackets go on the first and last span's bytes (a copy of those
        # two only), not around the joined spans (a second copy of the whole payload)
        parts[0] = b"[" + parts[0]
        parts[-1] = b"".join((parts[-1], b"]"))
        payload = b",".join(parts)
        return TraceJob(tid, "json", payload, roots, not roots, "".join(ids))
    return trace_job(tid, [(held.unit.kind, held.span(i)) for held, indexes in spans for i in indexes], roots)


def apply_written(spans: list[tuple[Held, list[int]]], written: list[bytes | None]) -> None:
    """A job's patched spans, as compact JSON in the job's order, onto their units; each
    unit waits for one trace less."""
    k = 0
    for held, indexes in spans:
        for i in indexes:
            patch = written[k]
            k += 1
            if patch is not None:
                if held.patches is None:
                    held.patches = {}
                held.patches[i] = patch
        held.waiting -= 1


def render(held: Held, output_format: str) -> Any:
    """What the engine's writer gets as ``doc`` for a decided unit: None to copy
    ``unit.raw`` as read; compact JSON bytes, or :class:`Pieces` of it; or the parsed
    document with its patches applied (see :class:`otel_semloop.batch.engine.Engine`)."""
    unit = held.unit
    if unit.error is not None:
        return None
    patches = held.patches
    if not patches and unit.kind == output_format and not (unit.kind == "json" and b"\n" in unit.raw):
        return None
    if held.bounds is not None:
        return splice(unit.raw, held.bounds, patches) if patches else unit.raw
    if unit.kind == "json" and held.gaps is not None:
        spans = held.spans
        assert spans is not None
        if patches:
            spans = list(spans)
            for i, patch in patches.items():
                if type(patch) is bytes:  # written by the worker
                    spans[i] = patch
                else:
                    span = orjson.loads(spans[i])
                    apply_json(span, patch)
                    spans[i] = dump_json(span)
        return render_json(held.gaps, spans)
    doc = load_json(unit.raw) if unit.kind == "json" else TracesData.FromString(unit.raw)
    if patches:
        scanned = scan_json(doc) if unit.kind == "json" else scan_proto(doc)
        for i, patch in patches.items():
            (apply_json if unit.kind == "json" else apply_proto)(scanned[i].span, patch)
    return doc


def splice(raw: bytes, bounds: Any, patches: dict[int, SpanPatch | bytes]) -> Pieces:
    """The compact JSON line ``raw`` with its patched spans re-serialised, as pieces to be
    joined (views of ``raw`` and the patched spans' bytes): the bytes of re-serialising the
    whole line, since ``raw`` is what orjson writes for it."""
    view = memoryview(raw)
    parts = Pieces()
    at = 0
    for i in sorted(patches):
        patch = patches[i]
        start, end = bounds[2 * i], bounds[2 * i + 1]
        parts.append(view[at:start])
        if type(patch) is bytes:  # written by the worker
            parts.append(patch)
        else:
            span = orjson.loads(view[start:end])
            apply_json(span, patch)
            parts.append(dump_json(span))
        at = end
    parts.append(view[at:])
    return parts
