"""Spilling open traces to disk when held units pass the memory budget, and putting them
back at the end (docs/rescore.md, "Streaming, in bounded memory"): a spilled trace's spans
go to one of a few partition files by trace id, read back a partition at a time as scoring
jobs; from the first spill on, every decided unit goes, in order, to one units file instead
of the output, replayed at the end with the spilled traces' patches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from otel_semloop.batch.pending import PendingUnit, parse_unit, patch_unit
from otel_semloop.batch.scan import UnitSpans
from otel_semloop.batch.spans import dump_json
from otel_semloop.batch.units import Unit
from otel_semloop.batch.worker import TraceJob, trace_job
from otel_semloop.batch.writer import OutputError
from otel_semloop.conventions import LogEvent
from otel_semloop.writeback import SpanPatch

__all__ = ["Spill"]

_PARTITIONS = 16


@contextlib.contextmanager
def _spill_io(directory: str | None) -> Iterator[None]:
    """A spill file that cannot be written or read (a full disk, a file size limit) ends the
    run as an output that could not be written (exit status 3), in one line."""
    try:
        yield
    except OSError as exc:
        where = directory or tempfile.gettempdir()
        raise OutputError(
            f"cannot spill to {where}: {exc.strerror or exc} (held lines passed --memory-budget; "
            "free space there or give --spill-dir another place)"
        ) from None


class Spill:
    """Spans of spilled traces in partition files by trace id, and the units written
    after the first spill, in order, in one file."""

    def __init__(self, directory: str | None) -> None:
        self.where = directory
        with _spill_io(directory):
            self.dir = tempfile.TemporaryDirectory(prefix="otel-semloop-spill-", dir=directory)
        self.parts: list[IO[bytes]] = []
        self.units: IO[bytes] | None = None
        try:
            with _spill_io(directory):
                for i in range(_PARTITIONS):
                    self.parts.append(open(os.path.join(self.dir.name, f"part-{i:02d}"), "w+b"))  # noqa: SIM115
                self.units = open(os.path.join(self.dir.name, "units"), "w+b")  # noqa: SIM115
        except OutputError:
            self.close()
            raise
        self.traces: dict[str, list[str]] = {}  # trace id -> root span ids
        self.held_units = 0
        self._spooled: dict[tuple[str, int], IO[bytes]] = {}

    def _part(self, tid: str) -> IO[bytes]:
        return self.parts[zlib.crc32(tid.encode()) % _PARTITIONS]

    def add(self, tid: str, spans: UnitSpans) -> None:
        """Spans of spilled trace ``tid`` (of one unit) to its partition: a JSON array, or
        each protobuf span's bytes (as bytes: a span may nest deeper than pickle goes)."""
        if spans.is_json:
            item = (tid, True, spans.json_array())
        else:
            item = (tid, False, [span.SerializeToString() for span in spans.spans])
        with _spill_io(self.where):
            pickle.dump(item, self._part(tid))
        self.traces[tid].extend(spans.roots)

    def spill(self, tid: str, held: list[UnitSpans]) -> None:
        """Move trace ``tid``'s held spans to its partition; their units no longer wait
        for them, but will need the trace's patches when replayed."""
        self.traces[tid] = []
        for spans in held:
            self.add(tid, spans)
            spans.unit.waiting -= 1
            spans.unit.spilled.add(tid)

    def hold(self, pending: PendingUnit, doc: Any) -> None:
        """Write a decided unit to the spill file (in order), as
        :func:`~otel_semloop.batch.pending.rendered` made it (``doc`` None: as read)."""
        unit = pending.unit
        data = unit.raw
        if doc is not None:
            data = dump_json(doc) if unit.kind == "json" else doc.SerializeToString()
        spooled = unit.spooled
        held = dataclasses.replace(unit, raw=data, spooled=None)
        late, dirty = bool(pending.spilled), pending.dirty
        assert self.units is not None
        with _spill_io(self.where):
            pickle.dump((held, spooled[1:] if spooled else None, late, dirty, doc is not None), self.units)
        self.held_units += 1
        if spooled:
            self._spooled[(unit.source, unit.seq)] = spooled[0]

    def jobs(self, log_events: Mapping[str, tuple[LogEvent, ...]]) -> Iterable[list[TraceJob]]:
        """The spilled traces' scoring jobs, a partition at a time, each with its GenAI log
        events from ``log_events``."""
        for fp in self.parts:
            by_trace: dict[str, list[UnitSpans]] = {}
            for tid, json, data in self._read(fp):
                if json:
                    held = UnitSpans(0, 0, encoded=data)
                else:
                    held = UnitSpans(0, 0, [Span.FromString(span) for span in data])
                by_trace.setdefault(tid, []).append(held)
            yield [
                trace_job(tid, held, tuple(self.traces.get(tid, ())), log_events.get(tid, ()))
                for tid, held in by_trace.items()
            ]
            with _spill_io(self.where):
                fp.truncate(0)

    def _read(self, fp: IO[bytes]) -> Iterator[Any]:
        """What was pickled to ``fp``, in order."""
        with _spill_io(self.where):
            fp.flush()
            fp.seek(0)
        while True:
            with _spill_io(self.where):
                try:
                    item = pickle.load(fp)
                except EOFError:
                    return
            yield item

    def write_back(
        self, patches: dict[str, dict[str, SpanPatch]], write: Callable[[Unit, Any, bool], None]
    ) -> None:
        """Every unit held since the first spill, in order, to ``write`` (as the engine
        writes units), with the spilled traces' ``patches`` (trace id -> span id -> patch)
        applied to the units that held their spans."""
        assert self.units is not None
        for unit, spooled, late, dirty, rendered in self._read(self.units):
            if spooled:
                unit.spooled = (self._spooled[(unit.source, unit.seq)], *spooled)
            doc: Any = None
            if unit.error is not None:
                pass
            elif late:
                parsed, by_trace = parse_unit(unit)
                found = patch_unit(by_trace, patches)
                if found or rendered:
                    dirty = dirty or found
                    doc = parsed
            elif rendered:
                doc = unit.raw if unit.kind == "json" else TracesData.FromString(unit.raw)
            write(unit, doc, dirty)

    def close(self) -> None:
        """Remove the spill files; what they hold is no longer needed, so a write still
        buffered that fails on close (a full disk) is no error."""
        for fp in [*self.parts, *([self.units] if self.units is not None else [])]:
            with contextlib.suppress(OSError):
                fp.close()
        self.dir.cleanup()
