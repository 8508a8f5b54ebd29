"""The streaming rescoring engine: units in, spans grouped by trace, each trace scored once
when complete, every unit written out in input order with its patches applied.

Data flow: :mod:`~otel_semloop.batch.inputs` yields units; the engine sends them a chunk
at a time to :mod:`~otel_semloop.batch.chunks` (parsed, and the traces wholly inside the
chunk scored, in a worker); it groups the spans of every unit by trace here, sends the
traces a chunk could not score as jobs to :mod:`~otel_semloop.batch.worker`, holds each
unit as a :class:`~otel_semloop.batch.held.Held` until its traces are decided, and writes
it as :func:`~otel_semloop.batch.held.render` makes it; over the memory budget open traces
go to :mod:`~otel_semloop.batch.spill`.

Completion window
    A trace is complete when its root (a span without a parent, or with a remote parent)
    has been seen and none of its spans arrived for ``window`` units. It is then scored
    (in a process pool when there is more than one core) and the units holding its spans
    are patched. A unit is written once every trace it holds is decided, so the output
    keeps the input's order, and a unit that gained nothing is copied byte for byte.
    Traces without a root wait until the end of the input (their root may be in a later
    file) and are then scored as partial. A span that arrives after its trace was decided
    is written untouched and counted as late.

Bounded memory
    Only units waiting for an open trace are held. When they exceed ``memory_budget``
    bytes, the traces holding back the oldest unit are spilled (see
    :mod:`~otel_semloop.batch.spill`), and from then on decided units go to the spill in
    order instead of the output, to be replayed with the spilled traces' patches at the
    end.

Determinism
    Verdicts depend only on each trace's spans, patches are applied where each span
    stands, and summary rows are sorted by the order traces were closed: the same input
    gives the same output bytes, with or without a pool.

Size: one concern, the bookkeeping of which trace is where (units held in order; traces
open, stalled without a root, scoring, decided; chunks and job batches in flight; the
chunk verdicts waiting to be used) and the transitions between those states. Every
method moves a trace or a unit between these shared tables; the parts that need none of
them (rendering a unit, the spill files, parsing, scoring) have their own modules.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.batch.chunks import ChunkResult, parse_chunk
from otel_semloop.batch.held import Held, apply_written, job_for, render
from otel_semloop.batch.hints import ReaderHints
from otel_semloop.batch.spill import Spill
from otel_semloop.batch.tasks import Pool, Task
from otel_semloop.batch.units import InputProblem, Pieces, Unit
from otel_semloop.batch.worker import ScorerSpec, TraceJob, TraceRow, score_jobs

__all__ = ["Engine", "EngineOptions", "EngineStats"]

#: Units a trace with a root must be idle for before it is complete. A Collector writes
#: spans in end order, root last, so a trace is usually whole once its root is seen; the
#: window is for spans of the same trace exported later by other processes.
DEFAULT_WINDOW = 16
#: Bytes of held units (as read) before open traces are spilled to disk. Parsed, a unit
#: takes several times its size in memory.
DEFAULT_MEMORY_BUDGET = 64 << 20
#: Input bytes / units a worker parses and scores at a time. Larger chunks leave fewer
#: traces cut by a chunk's edges (each becomes a job this process assembles and ships),
#: smaller ones hold less memory.
DEFAULT_CHUNK_BYTES = 16 << 20
DEFAULT_CHUNK_UNITS = 4096
#: Near the end of an input of known size chunks shrink, down to this, so that the
#: workers finish together instead of one scoring the last big chunk alone.
MIN_TAIL_CHUNK_BYTES = 1 << 20
_JOBS_PER_TASK = 16


@dataclass(slots=True)
class EngineOptions:
    window: int = DEFAULT_WINDOW
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    workers: int = 0  # 0: one per core when there is more than one, else in-process
    spec: ScorerSpec = field(default_factory=ScorerSpec)
    spill_dir: str | None = None
    #: the format the writer wants: a unit of another format is handed over parsed
    output_format: str = "json"
    #: units are parsed (and the traces inside them scored) a chunk at a time
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    chunk_units: int = DEFAULT_CHUNK_UNITS
    #: the writer takes a spliced line as :class:`~otel_semloop.batch.units.Pieces` (not joined)
    pieces: bool = False


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
    #: traces whose verdict came with their chunk (scored where they were parsed)
    scored_in_chunk: int = 0
    chunks: int = 0


class _Open:
    __slots__ = ("chunk", "count", "last", "mixed", "roots", "spans")

    def __init__(self, chunk: int) -> None:
        self.spans: list[tuple[Held, list[int]]] = []  # per unit, its span indexes
        self.count = 0
        self.roots: list[str] = []
        self.last = 0
        self.chunk = chunk  # the chunk of its first span
        self.mixed = False  # spans from more than one chunk


Writer = Callable[[Unit, Any, bool], None]


class Engine:
    """Run once over the units of a whole input: :meth:`feed` each, then :meth:`finish`.

    ``write(unit, doc, dirty)`` receives every unit in input order, ``dirty`` saying
    whether patches were applied to it. ``doc`` is None when the unit's ``raw`` bytes are
    to be written as read (a unit that gained nothing, in ``options.output_format``, or
    one that did not parse); the unit's compact JSON (``bytes``, or with
    ``options.pieces`` a spliced line's :class:`~otel_semloop.batch.units.Pieces`) when it
    is JSON that gained patches or has to be re-serialised; else the parsed document (a
    dict or a ``TracesData``) with its patches applied.
    """

    def __init__(self, options: EngineOptions, write: Writer, stats: EngineStats | None = None) -> None:
        self.options = options
        self.stats = stats or EngineStats()
        self._write = write
        self._pending: deque[Held] = deque()
        self._held_bytes = 0
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._stalled: dict[str, _Open] = {}
        self._scoring: dict[str, _Open] = {}
        self._done: set[str] = set()
        self._batch: list[TraceJob] = []
        self._futures: deque[Task] = deque()  # job tasks in flight, oldest first
        self._seq = 0
        self._n = 0
        self._rows: list[tuple[int, TraceRow]] = []
        self._order: dict[str, int] = {}
        self._workers = options.workers or (os.cpu_count() or 1)
        self._pool: Pool | None = None
        self.stats.workers = 1
        self._max_inflight = max(2, self._workers * 3)
        self._spill: Spill | None = None
        self._inbox: list[Unit] = []
        self._inbox_bytes = 0
        self._fed = 0
        self._chunks: deque[tuple[int, list[Unit], Task | concurrent.futures.Future[ChunkResult]]] = deque()
        self._chunk_no = 0
        self._chunk = 0  # the chunk whose units are being taken
        self._chunk_held: dict[int, list[Held]] = {}  # units of chunks with verdicts waiting
        self._verdicts: dict[str, tuple[int, int, tuple[str, ...], Any, Any]] = {}
        self._hints = ReaderHints()

    # -- input -------------------------------------------------------------------------

    def feed(self, unit: Unit, left: float | None = None) -> None:
        """Queue ``unit``; units are parsed a chunk at a time (in a worker once the input
        is larger than a chunk) and taken in input order as their chunk comes back.

        ``left``, when the caller knows it, is the share of the input not read yet (0 to
        1): once the workers run, the last chunks get smaller as the input runs out, so
        that the workers finish together (the output does not depend on it)."""
        self._inbox.append(unit)
        size = len(unit.raw)
        self._inbox_bytes += size
        self._fed += size
        limit = self.options.chunk_bytes
        if left is not None and self._pool is not None and left < 1.0:
            rest = self._fed * left / (1.0 - left)  # input bytes still to come, estimated
            limit = max(min(limit, MIN_TAIL_CHUNK_BYTES), min(limit, int(rest / self._workers)))
        if self._inbox_bytes >= limit or len(self._inbox) >= self.options.chunk_units:
            self._send_chunk(full=True)
        self._receive(block=False)

    def _send_chunk(self, full: bool) -> None:
        units, self._inbox, self._inbox_bytes = self._inbox, [], 0
        if not units:
            return
        self._chunk_no += 1
        self.stats.chunks += 1
        work = [None if u.error is not None else (u.kind, u.raw, u.where) for u in units]
        if full:
            self._start_pool()
        # Traces of the two previous chunks that go on in this one: the worker need not
        # score them (a hint, see batch/hints.py).
        carried = self._hints.next(work)
        task: Task | concurrent.futures.Future[ChunkResult]
        if self._pool is not None:
            # the chunks in flight: while the ring has no room, the pool waits for the oldest
            earlier = [chunk[2] for chunk in self._chunks if type(chunk[2]) is Task]
            task = self._pool.parse(work, self.options.window, carried, earlier)
        else:
            task = concurrent.futures.Future()
            task.set_result(parse_chunk(work, self.options.window, self.options.spec, carried))
        self._chunks.append((self._chunk_no, units, task))
        while len(self._chunks) > self._workers + 1:
            self._receive(block=True, one=True)

    def _receive(self, block: bool, one: bool = False) -> None:
        """Take the units of finished chunks, in order."""
        while self._chunks and (block or self._chunks[0][2].done()):
            number, units, task = self._chunks.popleft()
            parsed, verdicts = task.result()
            for tid, (count, roots, patches, row) in verdicts.items():
                self._verdicts[tid] = (number, count, roots, patches, row)
            self._chunk = number
            self._chunk_held[number] = []
            for unit, p in zip(units, parsed, strict=True):
                self._take(unit, p)
            self._forget_verdicts(number)
            if one:
                return

    def _forget_verdicts(self, number: int) -> None:
        """After chunk ``number``'s units were taken: keep each worker verdict while its
        trace is open here, since the completion window may close it only chunks later
        (small chunks near the end of an input hold a few units each; a verdict dropped
        earlier had its trace scored a second time, as a job); drop the ones whose trace
        is not open (already closed, or its spans were late): they will never be used.
        The units of a chunk are kept while a verdict points into them."""
        open_, stalled = self._open, self._stalled
        unused = [
            tid
            for tid, v in self._verdicts.items()
            if v[0] == number and tid not in open_ and tid not in stalled
        ]
        for tid in unused:
            del self._verdicts[tid]
        needed = {v[0] for v in self._verdicts.values()}
        for chunk in [c for c in self._chunk_held if c < number and c not in needed]:
            del self._chunk_held[chunk]

    def _take(self, unit: Unit, parsed: tuple[Any, ...]) -> None:
        self._n += 1
        self.stats.units += 1
        held = Held(unit)
        self._chunk_held[self._chunk].append(held)
        if unit.error is not None:
            self.stats.malformed.append(InputProblem(unit.where, unit.error))
        elif parsed[0] is not None or parsed[1] is not None:
            where, unit.error = parsed[0], parsed[1]
            self.stats.malformed.append(InputProblem(where, unit.error))
        else:
            self._group(held, parsed)
        self._pending.append(held)
        self._held_bytes += len(unit.raw)
        self._close_idle()
        self._pump(block=False)
        self._flush()
        if self._held_bytes > self.options.memory_budget:
            self._relieve()

    def _group(self, held: Held, parsed: tuple[Any, ...]) -> None:
        _, _, (held.sids, held.rootmask), held.spans, held.gaps, groups, held.bounds = parsed
        self.stats.spans += len(held.rootmask)
        n = self._n
        chunk = self._chunk
        spill = self._spill
        for tid, indexes, roots in groups:
            t = self._open.get(tid)
            if t is None:
                if tid in self._done:
                    self.stats.late_spans += len(indexes)
                    continue
                if spill is not None and tid in spill.traces:
                    for i in indexes:
                        spill.add(tid, held.sid(i), held.rootmask[i] == 1, held.unit.kind, held.span(i))
                    if held.late is None:
                        held.late = set()
                    held.late.add(tid)
                    continue
                t = self._stalled.pop(tid, None) or self._scoring_guard(tid, chunk, len(indexes))
                if t is None:
                    continue
                self._open[tid] = t
            else:
                self._open.move_to_end(tid)
            if t.chunk != chunk:
                t.mixed = True
            t.spans.append((held, indexes))
            t.count += len(indexes)
            held.waiting += 1
            t.last = n
            if roots:
                t.roots += roots

    def _scoring_guard(self, tid: str, chunk: int, spans: int) -> _Open | None:
        if tid in self._scoring:  # spans of a trace being scored: they are late
            self.stats.late_spans += spans
            return None
        return _Open(chunk)

    # -- closing traces ----------------------------------------------------------------

    def _close_idle(self) -> None:
        limit = self._n - self.options.window
        while self._open:
            tid, t = next(iter(self._open.items()))
            if t.last > limit:
                break
            del self._open[tid]
            if t.roots:
                self._dispatch(tid, t)
            else:
                self._stalled[tid] = t

    def _dispatch(self, tid: str, t: _Open) -> None:
        self._seq += 1
        self._order[tid] = self._seq
        self._scoring[tid] = t
        self.stats.traces += 1
        roots = tuple(t.roots)
        known = self._verdicts.pop(tid, None)
        if known is not None and not t.mixed and known[:3] == (t.chunk, t.count, roots):
            # the worker scored exactly these spans: its patches, by place in the chunk
            units = self._chunk_held[t.chunk]
            for unit_index, i, patch in known[3]:
                held = units[unit_index]
                if held.patches is None:
                    held.patches = {}
                held.patches[i] = patch
            self._apply([(tid, None, known[4])])
            self.stats.scored_in_chunk += 1
            return
        self._batch.append(job_for(tid, t.spans, roots))
        if len(self._batch) >= _JOBS_PER_TASK:
            self._submit()

    def expect(self, input_bytes: int) -> None:
        """Say how large the input is (when known): if it will need the workers, they
        start now, while the first chunk is read, instead of after it."""
        if input_bytes > self.options.chunk_bytes:
            self._start_pool()

    def _start_pool(self) -> None:
        """Processes cost a second or so to start: only for inputs larger than a chunk."""
        if self._pool is None and self._workers > 1:
            self._pool = Pool(self._workers, self.options.spec, self.options.chunk_bytes)
            self.stats.workers = self._workers

    def _submit(self) -> None:
        batch, self._batch = self._batch, []
        if not batch:
            return
        if self._pool is None:
            self._apply(score_jobs(batch, self.options.spec))
            return
        self._futures.append(self._pool.score(batch))
        while len(self._futures) > self._max_inflight:
            self._apply(self._futures.popleft().result())

    def _pump(self, block: bool) -> None:
        """Apply finished results; submit a part-filled batch when the pool has room."""
        while self._futures and (block or self._futures[0].done()):
            self._apply(self._futures.popleft().result())
        if self._batch and (block or len(self._futures) < self._workers):
            self._submit()
            if block:
                self._pump(True)

    def _apply(self, results: Iterable[tuple[str, Any, TraceRow | None]]) -> None:
        for tid, patches, row in results:
            t = self._scoring.pop(tid)
            self._done.add(tid)
            if row is not None:
                self._rows.append((self._order.pop(tid, 0), row))
                self.stats.loops += row.label == "loop"
            else:
                self._order.pop(tid, None)
            if type(patches) is list:  # each span's patched compact JSON, in t.spans order
                apply_written(t.spans, patches)
                continue
            for held, indexes in t.spans:  # each unit once
                if patches:
                    sids = held.sids
                    for i in indexes:
                        patch = patches.get(sids[16 * i : 16 * i + 16])
                        if patch is not None:
                            if held.patches is None:
                                held.patches = {}
                            held.patches[i] = patch
                held.waiting -= 1

    # -- output ------------------------------------------------------------------------

    def _flush(self) -> None:
        pending = self._pending
        while pending and pending[0].waiting == 0:
            held = pending.popleft()
            self._held_bytes -= len(held.unit.raw)
            doc = render(held, self.options.output_format)
            if type(doc) is Pieces and not self.options.pieces:
                doc = b"".join(doc)
            if self._spill is not None:
                self._spill.hold(held, doc)
            else:
                self._write(held.unit, doc, bool(held.patches))
            # written: only its place in the chunk is kept (until the chunk's verdicts go)
            held.unit.raw = b""
            held.spans = []
            held.sids, held.rootmask = "", b""
            held.gaps = held.patches = held.bounds = None

    def _relieve(self) -> None:
        """Over the memory budget: spill the traces holding back the oldest unit."""
        while self._held_bytes > self.options.memory_budget // 2 and self._pending:
            head = self._pending[0]
            if self._scoring:
                self._pump(block=True)  # in-flight traces resolve soon: wait for them first
                self._flush()
                continue
            if self._spill is None:
                self._spill = Spill(self.options.spill_dir)
            blocking = {
                tid
                for tid, t in (*self._open.items(), *self._stalled.items())
                if any(held is head for held, _ in t.spans)
            }
            if not blocking:
                break
            for tid in blocking:
                t = self._open.pop(tid, None) or self._stalled.pop(tid)
                self._verdicts.pop(tid, None)
                self._spill.spill(tid, t.spans)
                self.stats.spilled_traces += 1
            self._flush()

    def finish(self) -> EngineStats:
        """Close every open trace, score what is left, write everything out."""
        self._send_chunk(full=False)
        self._receive(block=True)
        for tid, t in list(self._open.items()) + list(self._stalled.items()):
            self._dispatch(tid, t)
        self._open.clear()
        self._stalled.clear()
        self._pump(block=True)
        self._flush()
        if self._spill is not None:
            self._finish_spill(self._spill)
        self.close()
        self._rows.sort(key=lambda item: item[0])
        self.stats.rows = [row for _, row in self._rows]
        return self.stats

    def _finish_spill(self, spill: Spill) -> None:
        patches: dict[str, dict[str, Any]] = {}
        for jobs in spill.jobs():
            for job in jobs:
                self._seq += 1
                self._order[job.trace_id] = self._seq
                self.stats.traces += 1
            results = score_jobs(jobs, self.options.spec) if self._pool is None else None
            if results is None:
                assert self._pool is not None
                futures = [
                    self._pool.score(jobs[i : i + _JOBS_PER_TASK], shared=False)
                    for i in range(0, len(jobs), _JOBS_PER_TASK)
                ]
                results = [r for f in futures for r in f.result()]
            for tid, p, row in results:
                if p:
                    patches[tid] = p
                if row is not None:
                    self._rows.append((self._order.pop(tid, 0), row))
                    self.stats.loops += row.label == "loop"
        self.stats.spilled_units = spill.held_units
        spill.write_back(patches, self._write)
        spill.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._spill is not None:
            self._spill.close()
