"""Scoring in worker processes: the service's side of the pipes.

Scoring threads in the service process share its GIL with the receivers and the exporter,
so a service scoring on threads uses about one core. With :class:`ScoringProcesses` the
:class:`~otel_semloop.pool.ScoringPool`'s threads only dispatch: each checks out a worker
for a batch of releases (:meth:`ScoringProcesses.evaluate_many`, the pool's
``batch_evaluator``), sends their spans' wire bytes over a pipe and waits with the GIL
free. A worker (:mod:`otel_semloop.service.scoring_worker`) sends back a small
:class:`~otel_semloop.service.scoring_worker.Scored` per release, and each patched span
becomes a new :class:`~otel_semloop.service.held.Held` (the original is untouched, so a
thread abandoned past its budget changed nothing that left).

Workers start from a fork server (:func:`~otel_semloop.pool.process_context`) and are warm
before the service reports ready. A worker that dies costs only the traces it held; a
watchdog terminates one busy on a batch past ``kill_after``. Only the default scorer runs
in workers (:func:`runs_in_workers`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import pickle
import threading
import time
from collections.abc import Callable
from typing import Any

from otel_semloop.grouping import Release
from otel_semloop.pool import process_context
from otel_semloop.release import Evaluation, SpanAdapter, root_trace
from otel_semloop.scoring import DetectorScorer, Scorer
from otel_semloop.service.scoring_worker import READY, Batch, Scored, worker_main
from otel_semloop.telemetry import get_logger
from otel_semloop.writeback import SpanPatch

__all__ = ["WORKER_DEPTH", "ScoringProcesses", "WorkerDied", "runs_in_workers"]

_logger = get_logger("otel_semloop.service")

#: Batches the service keeps in each worker (``depth``): the one being scored and the next,
#: waiting in its pipe, so a worker does not wait for the busy service process to send it.
WORKER_DEPTH = 2


class WorkerDied(RuntimeError):
    """A scoring process exited (or was terminated) while it held a trace."""


def runs_in_workers(scorer: Scorer) -> bool:
    """Whether ``scorer`` scores the same in a worker process: the default
    :class:`~otel_semloop.scoring.DetectorScorer` built from the environment (a worker
    builds its own from the same variables). Anything else scores on threads."""
    if type(scorer) is not DetectorScorer:
        return False
    from otel_semloop.detectors.config import DetectorConfig
    from otel_semloop.detectors.lexical import LexicalDetector
    from otel_semloop.policy import Policy

    lexical, default = scorer.lexical, LexicalDetector()
    return (
        scorer.config == DetectorConfig.from_env()
        and scorer.policy == Policy()
        and type(lexical) is LexicalDetector
        and all(getattr(lexical, name) == getattr(default, name) for name in LexicalDetector.__slots__)
    )


class _Worker:
    __slots__ = ("conn", "dead", "inflight", "process", "since", "tickets", "turn")

    def __init__(self, process: Any, conn: Any) -> None:
        self.process = process
        self.conn = conn
        #: When it started on the batch it is scoring (monotonic), 0.0 while idle.
        self.since = 0.0
        #: Batches checked out on it (sent or about to be), at most ``depth``.
        self.inflight = 0
        #: One token per batch sent and not yet answered, in the order sent (the order
        #: of the replies); ``turn`` guards them, the pipe's writes and its reads.
        self.tickets: collections.deque[object] = collections.deque()
        self.turn = threading.Condition()
        #: Set once its pipe failed: threads still waiting on it give up.
        self.dead = False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(1)
        if self.process.is_alive():  # pragma: no cover - SIGTERM ignored
            self.process.kill()
            self.process.join(1)


@dataclasses.dataclass(slots=True)
class _Ref:
    """What :func:`~otel_semloop.release.written_back` reads of a record: id and source."""

    span_id: str
    source: Any


class ScoringProcesses:
    """Worker processes and the pool's ``batch_evaluator`` that scores in them (see the
    module docstring). ``serialize`` gives a held span's protobuf wire bytes. Thread-safe:
    any scoring thread may call :meth:`evaluate_many`."""

    def __init__(
        self,
        processes: int,
        serialize: Callable[[Any], bytes],
        *,
        mode: str = "default",
        kill_after: float = 30.0,
        depth: int = 1,
    ) -> None:
        self._processes = processes
        #: Batches one worker holds at a time (see :meth:`evaluate_many`).
        self.depth = max(1, depth)
        self._serialize = serialize
        self._mode = mode
        self._kill_after = kill_after
        self._context = process_context([worker_main.__module__])
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._closed = threading.Event()
        #: Workers started so far (replacements included).
        self.started = 0
        #: Workers terminated for holding one trace past ``kill_after``.
        self.killed = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Start the workers and wait until each is warm (blocking: call off the loop).
        Raises :class:`WorkerDied` if one does not start in ``timeout`` seconds."""
        workers = [self._spawn(wait=False) for _ in range(self._processes)]
        deadline = time.monotonic() + timeout
        try:
            for worker in workers:
                self._await_ready(worker, max(0.0, deadline - time.monotonic()))
        except BaseException:
            for worker in workers:
                worker.close()
            raise
        with self._lock:
            self._workers.extend(workers)
        threading.Thread(target=self._watch, name="semloop-scoring-watch", daemon=True).start()

    def close(self) -> None:
        """Terminate every worker (a thread still waiting on one gets :class:`WorkerDied`)."""
        with self._lock:
            self._closed.set()
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()

    def pids(self) -> list[int]:
        """Process ids of the live workers (idle and busy)."""
        with self._lock:
            return [w.process.pid for w in self._workers if w.process.is_alive()]

    def _spawn(self, wait: bool = True) -> _Worker:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=worker_main, args=(child, self._mode), name="semloop-scoring", daemon=True
        )
        process.start()
        child.close()
        self.started += 1
        worker = _Worker(process, parent)
        if wait:
            self._await_ready(worker, 60.0)
        return worker

    def _await_ready(self, worker: _Worker, timeout: float) -> None:
        try:
            ready = worker.conn.poll(timeout) and worker.conn.recv_bytes() == READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            worker.close()
            raise WorkerDied(f"a scoring process did not start within {timeout:.0f} s")

    def _watch(self) -> None:
        """Terminate a worker busy on one trace past ``kill_after`` (its thread then gets
        :class:`WorkerDied`, long after the pool settled the trace at its budget)."""
        period = min(1.0, self._kill_after / 4)
        while not self._closed.wait(period):
            now = time.monotonic()
            with self._lock:
                late = [w for w in self._workers if w.since and now - w.since > self._kill_after]
            for worker in late:
                self.killed += 1
                _logger.warning(
                    "otel-semloop: a scoring process spent %.0f s on one trace; terminated",
                    now - worker.since,
                    extra={"semloop_limit": "scoring_killed"},
                )
                worker.close()

    def _checkout(self) -> _Worker:
        """The least loaded live worker with room for a batch, else a new one (a
        replacement for one abandoned past its budget)."""
        with self._lock:
            if self._closed.is_set():
                raise WorkerDied("scoring processes closed")
            room = [w for w in self._workers if not w.dead and w.inflight < self.depth]
            worker = min(room, key=lambda w: w.inflight) if room else None
            if worker is not None:
                worker.inflight += 1
                return worker
        worker = self._spawn()
        with self._lock:
            worker.inflight = 1
            self._workers.append(worker)
            if not self._closed.is_set():
                return worker
        self._checkin(worker, False)
        raise WorkerDied("scoring processes closed")

    def _checkin(self, worker: _Worker, healthy: bool) -> None:
        """A batch is done with ``worker``: it stays, or (broken, closing, or idle beyond
        ``processes``) it is terminated."""
        with self._lock:
            worker.inflight -= 1
            spare = worker.inflight == 0 and len(self._workers) > self._processes
            drop = not healthy or worker.dead or self._closed.is_set() or spare
            if drop and worker in self._workers:
                self._workers.remove(worker)
        if drop:
            self._fail(worker)
            worker.close()

    @staticmethod
    def _fail(worker: _Worker) -> None:
        """Mark ``worker`` dead: threads waiting for their turn on it give up."""
        with worker.turn:
            worker.dead = True
            worker.turn.notify_all()

    def _round_trip(self, worker: _Worker, payload: bytes) -> bytes:
        """Send ``payload`` to ``worker`` and return its reply. Up to ``depth`` threads
        share a worker: each sends its batch at once (so the worker finds the next batch
        in its pipe the moment it answers one, instead of idling while the service
        process, busy receiving, gets round to sending it), and replies are read in the
        order the batches were sent."""
        ticket = object()
        try:
            with worker.turn:
                if worker.dead:
                    raise WorkerDied("a scoring process exited")
                # Sent under ``turn``: tickets are in the order of the batches in the pipe.
                # A send never waits for a reply (the worker reads its pipe before it
                # scores), so holding ``turn`` here delays a reader at most one write.
                worker.conn.send_bytes(payload)
                worker.tickets.append(ticket)
                if len(worker.tickets) == 1:
                    worker.since = time.monotonic()
                while worker.tickets[0] is not ticket and not worker.dead:
                    worker.turn.wait()
                if worker.dead:
                    raise WorkerDied("a scoring process exited")
            reply = worker.conn.recv_bytes()  # the head ticket's: only its thread reads
        except (EOFError, OSError) as exc:
            self._fail(worker)
            raise WorkerDied(f"a scoring process exited: {exc!r}") from exc
        with worker.turn:
            worker.tickets.popleft()
            worker.since = time.monotonic() if worker.tickets else 0.0
            worker.turn.notify_all()
        return reply  # type: ignore[no-any-return]

    # -- the pool's evaluator ----------------------------------------------------------------

    def evaluate_many(
        self, releases: list[Release[Any]], adapter: SpanAdapter[Any], scorer: Scorer
    ) -> list[Evaluation | Exception | None]:
        """Score several releases in one round trip to one worker (the pool's
        ``batch_evaluator``): per release its evaluation, None (no agent steps) or the
        exception its scoring raised. Raises :class:`WorkerDied` when the worker exits
        (every release of the batch then goes out unscored)."""
        batch: Batch = [([self._serialize(span) for span in r.spans], r.partial, r.logs) for r in releases]
        payload = pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)
        worker = self._checkout()
        healthy = False
        try:
            reply = self._round_trip(worker, payload)  # blocks without the GIL
            healthy = True
        finally:
            self._checkin(worker, healthy)
        del payload
        out: list[Evaluation | Exception | None] = []
        for release, result in zip(releases, pickle.loads(reply), strict=True):
            if isinstance(result, Scored):
                out.append(self._evaluation(release, adapter, result))
            else:
                out.append(result)
        return out

    def _evaluation(self, release: Release[Any], adapter: SpanAdapter[Any], scored: Scored) -> Evaluation:
        """What the pool writes back: each patched span as a new :class:`Held` of the bytes
        the worker patched (an empty patch each: nothing is left to apply, and a thread
        abandoned past its budget has changed no span that left), references holding only
        the sources of the others, and a trace of the root alone, decoded here."""
        spans = release.spans
        records: list[Any] = [_Ref("", held) for held in spans]
        patches: dict[str, SpanPatch] = {}
        for index, wire in scored.patched:
            key = f"#{index}"  # patches are keyed by these references' ids, not span ids
            records[index] = _Ref(key, spans[index].replaced(wire))
            patches[key] = SpanPatch()
        root = None
        if scored.root_index >= 0:
            root = adapter.record(records[scored.root_index].source)
            records[scored.root_index].span_id = root.span_id
            patches[root.span_id] = patches.pop(f"#{scored.root_index}", SpanPatch())
        trace = root_trace(root, release.partial)
        return Evaluation(trace, records, scored.verdict, patches, scored.summary, scored.loop_cost)
