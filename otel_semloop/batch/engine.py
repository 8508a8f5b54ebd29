"""The streaming rescoring engine, built like the other front doors: units in, spans grouped
by trace in a :class:`~otel_semloop.grouping.TraceBuffer` whose clock is the input position
(unit ``n`` is time ``n``; a trace whose root was seen is complete after ``window`` units
without its spans, a trace without one at the end, as partial), each released trace scored
once (:mod:`~otel_semloop.batch.worker`, in a process pool when there is more than one
core), every unit written in input order once every span it holds is decided. Only units
waiting for an open trace are held; past ``memory_budget`` bytes (as read) the traces
holding back the oldest unit spill to disk (:mod:`~otel_semloop.batch.spill`). The rules
and their reasons: docs/rescore.md, "Streaming, in bounded memory".

The same input gives the same output bytes, with or without a pool: verdicts depend only
on each trace's spans, patches are applied where each span stands, and summary rows are
sorted by the order traces were released.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.batch.pending import PendingUnit, patch_spans, read_unit, rendered
from otel_semloop.batch.scan import UnitSpans
from otel_semloop.batch.spill import Spill
from otel_semloop.batch.units import InputProblem, Unit
from otel_semloop.batch.worker import (
    Scored,
    ScorerSpec,
    TraceJob,
    TraceRow,
    score_jobs,
    start_pool,
    trace_job,
)
from otel_semloop.conventions import LogEvent
from otel_semloop.grouping import BufferLimits, Release, ReleaseReason, TraceBuffer
from otel_semloop.writeback import SpanPatch

__all__ = ["Engine", "EngineOptions", "EngineStats"]

#: Units a trace with a root must be idle for before it is complete. A Collector writes
#: spans in end order, root last, so a trace is usually whole once its root is seen; the
#: window is for spans of the same trace exported later by other processes.
DEFAULT_WINDOW = 16
#: Bytes of held units (as read) before open traces are spilled to disk.
DEFAULT_MEMORY_BUDGET = 64 << 20
#: Input bytes past which the worker processes are started (they take a moment to start).
DEFAULT_CHUNK_BYTES = 16 << 20
#: Traces scored per task sent to a worker process.
JOBS_PER_TASK = 16


@dataclass(slots=True)
class EngineOptions:
    window: int = DEFAULT_WINDOW
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    workers: int = 0  # 0: one per core when there is more than one, else in-process
    spec: ScorerSpec = field(default_factory=ScorerSpec)
    spill_dir: str | None = None
    #: the format the writer wants: a unit of another format is handed over parsed
    output_format: str = "json"
    #: an input larger than this is scored in the worker processes
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    #: the logs files' GenAI events by hex trace id, each trace's scored with it
    #: (:mod:`otel_semloop.batch.logs`)
    log_events: Mapping[str, tuple[LogEvent, ...]] = field(default_factory=dict)


@dataclass(slots=True)
class EngineStats:
    units: int = 0
    spans: int = 0
    traces: int = 0
    late_spans: int = 0
    malformed: list[InputProblem] = field(default_factory=list)
    rows: list[TraceRow] = field(default_factory=list)
    spilled_traces: int = 0
    spilled_units: int = 0
    workers: int = 0
    loops: int = 0


Writer = Callable[[Unit, Any, bool], None]


def _buffer_limits(window: int) -> BufferLimits:
    """The completion window as buffer limits: grace is the window; nothing else releases
    a trace early (memory is bounded by spilling instead)."""
    return BufferLimits(
        grace=window,
        idle=float("inf"),
        max_age=float("inf"),
        max_traces=sys.maxsize,
        max_spans_per_trace=sys.maxsize,
        max_spans=sys.maxsize,
        recent=sys.maxsize,
    )


class Engine:
    """Run once over the units of a whole input: :meth:`feed` each, then :meth:`finish`.

    ``write(unit, doc, dirty)`` receives every unit in input order: ``doc`` None to write
    the unit's bytes as read, else its parsed document (a dict or a ``TracesData``), with
    patches applied when ``dirty``.
    """

    def __init__(self, options: EngineOptions, write: Writer, stats: EngineStats | None = None) -> None:
        self.options = options
        self.stats = stats or EngineStats()
        self.stats.workers = 1
        self._write = write
        self._buffer: TraceBuffer[UnitSpans] = TraceBuffer(_buffer_limits(options.window))
        self._pending: deque[PendingUnit] = deque()
        self._held_bytes = 0
        self._fed_bytes = 0
        self._number = 0
        #: released traces not yet scored: their spans
        self._scoring: dict[str, list[UnitSpans]] = {}
        self._jobs: list[TraceJob] = []
        self._futures: deque[concurrent.futures.Future[list[Scored]]] = deque()
        self._released = 0
        self._order: dict[str, int] = {}
        self._rows: list[tuple[int, TraceRow]] = []
        self._workers = options.workers or (os.cpu_count() or 1)
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._spill: Spill | None = None
        #: the spilled traces' patches, for their units replayed at the end
        self._spilled_patches: dict[str, dict[str, SpanPatch]] = {}

    # -- input -------------------------------------------------------------------------

    def expect(self, input_bytes: int) -> None:
        """Say how large the input is (when known): if it will need the workers, they
        start now, while the first units are read."""
        if input_bytes > self.options.chunk_bytes:
            self._start_pool()

    def feed(self, unit: Unit) -> None:
        """Take the next unit of the input."""
        self._number += 1
        self.stats.units += 1
        pending = PendingUnit(unit, self._number)
        self._fed_bytes += len(unit.raw)
        if self._fed_bytes > self.options.chunk_bytes:
            self._start_pool()
        read = read_unit(unit)
        if isinstance(read, InputProblem):
            unit.error = read.message
            self.stats.malformed.append(read)
        else:
            pending.doc, by_trace = read
            self._hold_spans(pending, by_trace)
        self._pending.append(pending)
        self._held_bytes += len(unit.raw)
        self._buffer.expire(self._number)
        self._take_releases()
        self._collect(block=False)
        self._flush()
        if self._held_bytes > self.options.memory_budget:
            self._relieve()

    def _hold_spans(self, pending: PendingUnit, by_trace: dict[str, UnitSpans]) -> None:
        spill = self._spill
        pending.trace_ids = [tid for tid in by_trace if spill is None or tid not in spill.traces]
        # to the buffer in the order of each trace's last span (its place among the ready ones)
        for trace_id, spans in sorted(by_trace.items(), key=lambda item: item[1].last):
            self.stats.spans += len(spans.spans)
            spans.unit = pending
            if spill is not None and trace_id in spill.traces:
                spill.add(trace_id, spans)
                pending.spilled.add(trace_id)
                continue
            pending.waiting += 1
            self._buffer.end(trace_id, bool(spans.roots), spans, self._number)

    # -- scoring -----------------------------------------------------------------------

    def _take_releases(self) -> None:
        releases, late = self._buffer.take()
        for spans in late:
            self.stats.late_spans += len(spans.spans)
            spans.unit.waiting -= 1
        for release in releases:
            self._dispatch(release)

    def _dispatch(self, release: Release[UnitSpans]) -> None:
        trace_id = str(release.trace_key)
        held = release.spans
        roots = tuple(root for unit_spans in held for root in unit_spans.roots)
        logs = self.options.log_events.get(trace_id, ())
        self._enqueue(trace_job(trace_id, held, roots, logs), held)

    def _enqueue(self, job: TraceJob, held: list[UnitSpans]) -> None:
        """Score ``job``; ``held``: the trace's held spans (none when it was spilled)."""
        self._released += 1
        self._order[job.trace_id] = self._released
        self.stats.traces += 1
        self._scoring[job.trace_id] = held
        self._jobs.append(job)
        if len(self._jobs) >= JOBS_PER_TASK:
            self._submit()

    def _start_pool(self) -> None:
        if self._pool is None and self._workers > 1:
            self._pool = start_pool(self._workers, self.options.spec)
            self.stats.workers = self._workers

    def _submit(self) -> None:
        jobs, self._jobs = self._jobs, []
        if not jobs:
            return
        if self._pool is None:
            self._apply(score_jobs(jobs, self.options.spec))
            return
        self._futures.append(self._pool.submit(score_jobs, jobs))
        while len(self._futures) > 3 * self._workers:
            self._apply(self._futures.popleft().result())

    def _collect(self, block: bool) -> None:
        """Apply finished results; submit a part-filled batch when the pool has room."""
        while self._futures and (block or self._futures[0].done()):
            self._apply(self._futures.popleft().result())
        if self._jobs and (block or len(self._futures) < self._workers):
            self._submit()
            if block:
                self._collect(block=True)

    def _apply(self, results: list[Scored]) -> None:
        for scored in results:
            held = self._scoring.pop(scored.trace_id)
            order = self._order.pop(scored.trace_id)
            if scored.row is not None:
                self._rows.append((order, scored.row))
                self.stats.loops += scored.row.label == "loop"
            patches = scored.patches or {}
            if self._spill is not None and scored.trace_id in self._spill.traces:
                self._spilled_patches[scored.trace_id] = patches
            for unit_spans in held:
                if patches and patch_spans(unit_spans, patches):
                    unit_spans.unit.dirty = True
                unit_spans.unit.waiting -= 1

    # -- output ------------------------------------------------------------------------

    def _flush(self) -> None:
        pending = self._pending
        while pending and pending[0].waiting == 0:
            done = pending.popleft()
            self._held_bytes -= len(done.unit.raw)
            doc = rendered(done, self.options.output_format)
            done.doc = None
            if self._spill is not None:
                self._spill.hold(done, doc)
            else:
                self._write(done.unit, doc, done.dirty)

    def _relieve(self) -> None:
        """Over the memory budget: spill the traces holding back the oldest unit."""
        while self._held_bytes > self.options.memory_budget // 2 and self._pending:
            head = self._pending[0]
            if self._scoring:
                self._collect(block=True)  # released traces resolve soon: wait for them first
                self._flush()
                continue
            if self._spill is None:
                self._spill = Spill(self.options.spill_dir)
            blocking = False
            for trace_id in head.trace_ids:
                spans = self._buffer.evict(trace_id)
                if spans is not None:
                    self._spill.spill(trace_id, spans)
                    self.stats.spilled_traces += 1
                    blocking = True
            if not blocking:
                break
            self._flush()

    def finish(self) -> EngineStats:
        """Close every open trace, score what is left, write everything out."""
        self._buffer.release_all(ReleaseReason.FLUSH)
        releases, _ = self._buffer.take()
        for release in sorted(releases, key=self._end_order):
            self._dispatch(release)
        self._collect(block=True)
        self._flush()
        if self._spill is not None:
            self._finish_spill(self._spill)
        self.close()
        self._rows.sort(key=lambda item: item[0])
        self.stats.rows = [row for _, row in self._rows]
        return self.stats

    def _end_order(self, release: Release[UnitSpans]) -> tuple[bool, int, int]:
        """The order the traces still open at the end are scored in: those whose spans
        arrived within the last window first, then those waiting for a root longer; each
        by where its last span stands."""
        last = release.spans[-1]
        waited = not release.root_ended and last.unit.number <= self._number - self.options.window
        return waited, last.unit.number, last.last

    def _finish_spill(self, spill: Spill) -> None:
        for jobs in spill.jobs(self.options.log_events):  # a partition at a time
            for job in jobs:
                self._enqueue(job, [])
            self._collect(block=True)
        self.stats.spilled_units = spill.held_units
        spill.write_back(self._spilled_patches, self._write)
        spill.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._spill is not None:
            self._spill.close()
            self._spill = None
