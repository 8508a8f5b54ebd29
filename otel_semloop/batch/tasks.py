"""The engine's worker pool: chunks to parse and batches of trace jobs to score, submitted
and taken back in order, their bytes handed over through shared rings when the workers
were forked (see :mod:`~otel_semloop.batch.ring`), else pickled through the pool's pipe.

Why the collector's objects are frozen while the pool runs: ``gc.freeze()`` before the
workers fork moves every object alive then (the imported scoring stack: modules,
functions, classes, about 28k tracked objects) out of the collector's reach until the pool
closes. The reading process's collections (run mostly while results are unpickled, in the
executor's thread) then walk only the objects made since, not the whole stack each time
(100 MB bench: that thread's collections 49 -> 15 ms of CPU, its unpickling 83 -> 47 ms),
and a forked worker's collections do not touch (and so copy) the pages it shares with the
reading process. :meth:`Pool.close` unfreezes them (a garbage cycle that was alive at the
fork is collected then instead of earlier).

And why the reading process's collector is then paused until the pool closes (once the
workers have forked: they collect as before): what it allocates meanwhile (the results'
tuples and lists, the units it holds, its bookkeeping) holds no cycles. On the 100 MB
bench its 63 collections found 39 cyclic objects, all in the one that ran before the
fork, and cost 16 ms of CPU (1.4 + 1.6 ms in the main thread, 7.7 + 5.2 ms in the
executor's thread, unpickling results); whatever cycle there is waits for the close.

Why rings are given back on taking a result: a chunk's (or a job batch's) space in its
ring is reused only once the worker has returned, so no bytes a worker may still read are
overwritten; the engine takes chunk results in chunk order and job results in submission
order, the order in which a ring hands out its space.
"""

from __future__ import annotations

import concurrent.futures
import gc
from dataclasses import replace
from typing import Any

from otel_semloop.batch.chunks import parse_chunk, parse_ring
from otel_semloop.batch.ring import Ring
from otel_semloop.batch.worker import ScorerSpec, TraceJob, score_jobs, score_ring_jobs, start_workers

__all__ = ["JOB_RING_BYTES", "RING_SLACK", "Pool", "Task"]

#: A chunk ends with the unit that takes it past its size: ring room for a line past it
#: (a chunk that does not fit goes through the pipe). The rings are touched page by page
#: as they fill (about 25 ms of CPU per 100 MiB the first time round), and count in the
#: reading process's memory: not larger than needed.
RING_SLACK = 2 << 20
#: Ring room for the payloads of the job tasks in flight (a task that does not fit goes
#: through the pipe): 16 jobs of 50-span traces take about 1 MiB, and at most three job
#: tasks a worker are in flight.
JOB_RING_BYTES = 8 << 20


class Task:
    """A submitted task: :meth:`result` waits for it and gives its ring space back."""

    __slots__ = ("future", "ring", "start")

    def __init__(
        self, future: concurrent.futures.Future[Any], ring: Ring | None = None, start: int = 0
    ) -> None:
        self.future = future
        self.ring = ring
        self.start = start

    def done(self) -> bool:
        return self.future.done()

    def result(self) -> Any:
        result = self.future.result()
        if self.ring is not None:
            self.ring.release(self.start)
            self.ring = None
        return result


class Pool:
    """``workers`` scoring processes (started now) and, when they are forked, a ring for
    chunks and one for job payloads.

    The chunk ring has room for the workers + 1 chunks in flight, not one more: a chunk
    that does not fit waits for the oldest chunk's result, which gives its room back (see
    :meth:`parse`). The ring's pages are touched as it fills and count in the reading
    process's memory: 80 MiB of shared memory written once cost about 55 ms of CPU
    (measured alone: page allocation; their release at the end comes on top), so one
    chunk's room less (18 MiB) saves about 13 ms a run and 18 MiB."""

    def __init__(self, workers: int, spec: ScorerSpec, chunk_bytes: int) -> None:
        chunk_ring = (workers + 1) * (chunk_bytes + RING_SLACK)
        gc.freeze()
        self._frozen = True
        try:
            self.executor, rings = start_workers(workers, spec, (chunk_ring, JOB_RING_BYTES))
        except BaseException:
            gc.unfreeze()
            raise
        self._chunks, self._jobs = rings if rings else (None, None)
        self._collecting = gc.isenabled()
        gc.disable()  # the workers have forked (collecting as before): see the module doc

    def parse(
        self,
        work: list[tuple[str, bytes, str] | None],
        window: int,
        carried: frozenset[str],
        earlier: list[Task] | None = None,
    ) -> Task:
        """:func:`~otel_semloop.batch.chunks.parse_chunk` of ``work`` in a worker, with
        ``carried`` its hint (see :mod:`~otel_semloop.batch.hints`).

        ``earlier``: the chunks in flight, oldest first. While the chunk ring has no room
        for this one, the oldest of them still holding room there is waited for (its
        result gives the room back; the caller takes it later, in order); only when none
        is left does the chunk go through the pipe."""
        ring = self._chunks
        placed = None
        if ring is not None:
            lines = [w[1] for w in work if w is not None]
            waiting = iter(earlier or ())
            placed = ring.put(lines)
            while placed is None:
                oldest = next((task for task in waiting if task.ring is not None), None)
                if oldest is None:
                    break
                oldest.result()
                placed = ring.put(lines)
        if placed is None or ring is None:
            return Task(self.executor.submit(parse_chunk, work, window, None, carried))
        metas = [None if w is None else (w[0], w[2]) for w in work]
        return Task(
            self.executor.submit(parse_ring, ring.key, placed, metas, window, None, carried), ring, placed[0]
        )

    def score(self, jobs: list[TraceJob], shared: bool = True) -> Task:
        """:func:`~otel_semloop.batch.worker.score_jobs` of ``jobs`` in a worker; through
        the job ring when ``shared`` (the caller takes such results in submission order)."""
        ring = self._jobs if shared else None
        placed = ring.put([job.payload for job in jobs]) if ring is not None else None
        if placed is None or ring is None:
            return Task(self.executor.submit(score_jobs, jobs))
        bare = [replace(job, payload=b"") for job in jobs]
        return Task(self.executor.submit(score_ring_jobs, ring.key, placed, bare), ring, placed[0])

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
            if self._collecting:
                gc.enable()
        for ring in (self._chunks, self._jobs):
            if ring is not None:
                ring.close()
        self._chunks = self._jobs = None
