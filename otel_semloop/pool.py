"""The scoring pool: released traces scored on background threads under a time budget.

Both buffering front doors use it: the span processor's worker thread and the service's
event loop (the *owner*, one thread) submit releases and call :meth:`ScoringPool.expire`
on their tick; every release is then *delivered* exactly once, as an
:class:`~otel_semloop.release.Outcome`, through the front door's ``deliver`` callback, from
whichever thread settles it. A scoring thread runs :func:`~otel_semloop.release.evaluate`
or another ``evaluator`` of its signature (the service's hands the release to a worker
process: :mod:`otel_semloop.service.processes`).

Rules (each has an exact test in ``tests/core/test_pool.py``)
    * Budget: ``budget`` seconds from :meth:`submit` to the verdict, queueing included.
      Past it, :meth:`expire` delivers the release with a staged scorer's latest verdict
      (``semloop.budget_exceeded=true``), else unscored ("scoring budget exceeded").
    * Stuck threads: a thread whose release outlived its budget is *stuck* (Python cannot
      kill it) and is replaced while fewer than ``max_stuck`` are stuck. When every thread
      is stuck and the cap is reached, a release is delivered unscored at once ("scorers
      stuck"). A stuck thread that returns has its verdict discarded (counted) and rejoins,
      or retires when the pool is full again.
    * A scorer that raises: unscored ("scoring failed: <error type>").
    * No agent steps: delivered untouched (label ``none``); small releases are checked with
      :meth:`~otel_semloop.release.SpanAdapter.may_have_steps` on the owner's thread.
    * Drain: :meth:`cap_deadlines` shortens every budget to a flush or shutdown deadline;
      :meth:`settled_through` tells a flush when everything it covered left.

Exactly once: a release moves PENDING -> RUNNING -> DONE, each claim under one lock, so
one thread delivers it. A scoring thread only reads the spans until it wins the claim, so
a thread abandoned past its budget never changes a span that already left. Threads
deliver their own results; the owner is woken only while a flush waits
(:attr:`ScoringPool.waiting`).

Batches: with a ``batch_evaluator`` (the service's worker processes) a thread also takes
the releases queued behind it (up to ``batch`` and its fair share of the queue) and scores
them in one call, one round trip per batch; every rule above holds per release.

Size: one state machine (a job's claim, its budget, the stuck-thread accounting and the
batches a thread takes) under one lock; split apart, each piece would need the others'
private state.
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.context
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from otel_semloop.grouping import Release
from otel_semloop.release import (
    Evaluation,
    Evaluator,
    Outcome,
    SpanAdapter,
    evaluate,
    unscored,
    written_back,
    yield_gil,
)
from otel_semloop.scoring import Scorer
from otel_semloop.telemetry import SelfTelemetry, get_logger
from otel_semloop.writeback import UNSCORED_BUDGET_EXCEEDED, UNSCORED_SCORERS_STUCK

__all__ = ["ScoringPool", "process_context"]

S = TypeVar("S")

_logger = get_logger(__name__)

#: Releases up to this size are checked for agent steps on the owner's thread before
#: queueing (cheap); bigger ones go to a scoring thread, where the check is the build.
PREFILTER_SPANS = 1000

#: A batch stops growing once it holds this many spans (a large trace goes alone).
BATCH_SPANS = 2000

_PENDING, _RUNNING, _DONE = 0, 1, 2

#: What a ``batch_evaluator`` returns for each release: an evaluation, None (no agent
#: steps), or the exception its scoring raised.
BatchResult = Evaluation | Exception | None
BatchEvaluator = Callable[[list[Release[Any]], Any, Scorer], list[BatchResult]]


def process_context(
    preload: Sequence[str] = (), *, fork_if_alone: bool = False
) -> multiprocessing.context.BaseContext:
    """How every front door starts its scoring processes (the one home of this choice).

    * ``fork``, when ``fork_if_alone`` and this is Linux and this process runs no other
      thread: a forked worker has the caller's imports already, so it starts at once.
      Forking a process that runs threads can deadlock, hence only then.
    * Else ``forkserver`` where there is one: a fresh server process imports ``preload``
      once and every worker is forked from it, so workers inherit none of the caller's
      state (threads, gRPC, asyncio) and do not import the scoring stack again. The
      preload applies only if this process's fork server has not started yet.
    * Else ``spawn``.
    """
    if fork_if_alone and sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        if preload:
            context.set_forkserver_preload(list(preload))
        return context
    return multiprocessing.get_context("spawn")


@dataclass(slots=True, eq=False)
class _Lane:
    """One scoring thread, as its jobs see it."""

    stuck: bool = False


@dataclass(slots=True, eq=False)
class _Job(Generic[S]):
    seq: int
    release: Release[S]
    deadline: float
    state: int = _PENDING
    finished: bool = False
    lane: _Lane | None = None
    #: The latest verdict of a staged scorer, set by the scoring thread.
    best: Evaluation | None = None


class ScoringPool(Generic[S]):
    """Scoring threads, their budget and their accounting (see the module docstring).

    ``submit``, ``expire``, ``cap_deadlines``, ``settled_through``, ``take_back_all`` and
    ``deliver_unscored`` are called by the owner only (one thread at a time); ``deliver``
    is called from the owner or from a scoring thread, once per release.
    """

    def __init__(
        self,
        scorer: Scorer,
        adapter: SpanAdapter[S],
        deliver: Callable[[Outcome[S]], None],
        telemetry: SelfTelemetry,
        *,
        threads: int,
        max_stuck: int,
        budget: float,
        notify: Callable[[], None] | None = None,
        thread_name: str = "semloop-scorer",
        evaluator: Evaluator[S] = evaluate,
        batch_evaluator: BatchEvaluator | None = None,
        batch: int = 16,
    ) -> None:
        self._scorer = scorer
        self._evaluator = evaluator
        self._batch_evaluator = batch_evaluator
        self._batch = max(1, batch) if batch_evaluator is not None else 1
        self._adapter = adapter
        self._deliver = deliver
        self._telemetry = telemetry
        self._threads = threads
        self._max_stuck = max_stuck
        self._budget = budget
        self._notify = notify
        self._thread_name = thread_name
        self._queue: queue.SimpleQueue[_Job[S] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._alive = 0
        self._stuck = 0
        self._spawned = 0
        self._seq = 0
        self._outstanding: collections.deque[_Job[S]] = collections.deque()
        #: Set by the owner while a flush waits: scoring threads then call ``notify``
        #: after each delivery.
        self.waiting = False

    # -- state -----------------------------------------------------------------------------

    @property
    def stuck(self) -> int:
        """Threads abandoned past their budget and not yet returned."""
        return self._stuck

    @property
    def pending(self) -> int:
        """Releases submitted and not yet delivered."""
        return sum(1 for job in self._outstanding if not job.finished)

    def next_deadline(self) -> float | None:
        """The earliest budget deadline pending (budgets are equal; a flush shortens them
        all), or None."""
        self._compact()
        return self._outstanding[0].deadline if self._outstanding else None

    def settled_through(self, seq: int) -> bool:
        """Whether every release submitted up to number ``seq`` was delivered."""
        return all(job.finished for job in self._outstanding if job.seq <= seq)

    # -- the owner's calls -----------------------------------------------------------------

    def submit(self, release: Release[S], now: float | None = None) -> int:
        """Queue ``release`` for scoring (or deliver it at once: no agent steps, or every
        thread stuck). Returns its number, for :meth:`settled_through`."""
        now = time.monotonic() if now is None else now
        self._seq += 1
        job = _Job(self._seq, release, now + self._budget)
        telemetry = self._telemetry
        telemetry.add("semloop.releases", release.reason.value)
        if release.reason.early:
            telemetry.add("semloop.releases.early", release.reason.value)
        if len(release.spans) <= PREFILTER_SPANS and not self._adapter.may_have_steps(release.spans):
            # Plain HTTP/DB traces (most traces of most services) gain nothing: forward
            # them now instead of converting and building them on a scoring thread.
            job.state = _DONE
            self._settle(job, Outcome(list(release.spans), "none"))
            return job.seq
        if not self._ensure_threads():
            # Every scoring thread is stuck: do not queue behind them.
            job.state = _DONE
            self._settle(job, self._unscored(job, UNSCORED_SCORERS_STUCK, "stuck"))
            return job.seq
        self._outstanding.append(job)
        self._queue.put(job)
        return job.seq

    def expire(self, now: float | None = None) -> None:
        """Deliver every release whose deadline passed (staged verdict or unscored)."""
        now = time.monotonic() if now is None else now
        outstanding = self._outstanding
        while outstanding:
            job = outstanding[0]
            if job.finished:
                outstanding.popleft()
                continue
            if job.deadline > now:
                break
            outstanding.popleft()
            self._take_back(job, replace=True)
        if len(outstanding) > 64:
            self._compact(everywhere=True)

    def cap_deadlines(self, deadline: float) -> int:
        """Shorten every pending budget to end by ``deadline`` (a flush or shutdown).
        Returns the number of the last release submitted so far."""
        for job in self._outstanding:
            if job.deadline > deadline:
                job.deadline = deadline
        return self._seq

    def take_back_all(self) -> None:
        """Deliver everything still pending now, without a verdict (the end of a drain)."""
        while self._outstanding:
            self._take_back(self._outstanding.popleft(), replace=False)

    def deliver_unscored(self, release: Release[S], reason: str, key: str) -> None:
        """Deliver ``release`` unscored without queueing it (the owner cannot score)."""
        self._seq += 1
        job = _Job(self._seq, release, 0.0)
        job.state = _DONE
        self._settle(job, self._unscored(job, reason, key))

    def stop(self) -> None:
        """Let the scoring threads exit (stuck ones exit when they return)."""
        with self._lock:
            alive = self._alive
        for _ in range(alive):
            self._queue.put(None)

    # -- internals -------------------------------------------------------------------------

    def _compact(self, everywhere: bool = False) -> None:
        outstanding = self._outstanding
        while outstanding and outstanding[0].finished:
            outstanding.popleft()
        if everywhere:
            # Threads finish out of order only with several of them: compact now and then.
            self._outstanding = collections.deque(job for job in outstanding if not job.finished)

    def _ensure_threads(self) -> bool:
        """Top the pool up; True when at least one healthy thread exists."""
        with self._lock:
            while self._alive - self._stuck < self._threads and self._alive < self._threads + self._max_stuck:
                self._spawned += 1
                self._alive += 1
                threading.Thread(
                    target=self._run, name=f"{self._thread_name}-{self._spawned}", daemon=True
                ).start()
            return self._alive - self._stuck > 0

    def _take_back(self, job: _Job[S], *, replace: bool) -> None:
        """The owner settles a job past its deadline, unless a thread already did."""
        with self._lock:
            previous = job.state
            if previous == _DONE:
                return
            job.state = _DONE
            if previous == _RUNNING and job.lane is not None and not job.lane.stuck:
                job.lane.stuck = True
                self._stuck += 1
        self._settle(job, self._unscored(job, UNSCORED_BUDGET_EXCEEDED, "budget"))
        if previous == _RUNNING and replace:
            self._ensure_threads()  # replace the stuck thread while the cap allows

    def _settle(self, job: _Job[S], outcome: Outcome[S]) -> None:
        self._telemetry.add("semloop.traces", outcome.label)
        if outcome.evaluation is not None:
            self._count_judge(outcome.evaluation.verdict.attributes)
        if "semloop.loop.steps" in outcome.root_attributes:
            self._count_loop(outcome.label, outcome.root_attributes)
        try:
            self._deliver(outcome)
        finally:
            job.finished = True

    def _count_judge(self, attrs: Any) -> None:
        """The judge's totals (:mod:`otel_semloop.judges`), from the attributes it wrote."""
        status = attrs.get("semloop.judge.status")
        if status is None:
            return
        telemetry = self._telemetry
        telemetry.add("semloop.judge.traces", str(status))
        backend = str(attrs.get("semloop.judge.backend", ""))
        tokens = int(attrs.get("semloop.judge.input_tokens", 0) or 0)
        if tokens:
            telemetry.add("semloop.judge.input_tokens", backend, tokens)
        cost = round(float(attrs.get("semloop.judge.cost_usd", 0.0) or 0.0) * 1e6)
        if cost:
            telemetry.add("semloop.judge.cost", backend, cost)

    def _count_loop(self, label: str, attrs: Mapping[str, Any]) -> None:
        """A loop's metrics (:mod:`otel_semloop.telemetry`), from what its root gained
        (the ``semloop.loop.*`` attributes of :mod:`otel_semloop.loop_cost`)."""
        telemetry = self._telemetry
        agent = telemetry.agent_name(str(attrs.get("semloop.loop.agent", "")))
        where = (agent, str(attrs.get("semloop.loop.signal", "")))
        telemetry.add("semloop.loops", (*where, label))
        telemetry.record("semloop.loop.steps", int(attrs["semloop.loop.steps"]), where)
        tokens = 0
        for kind in ("input", "output"):
            count = attrs.get(f"semloop.loop.{kind}_tokens")
            if count is not None:
                tokens += int(count)
                telemetry.add("semloop.loop.tokens.burned", (*where, kind), int(count))
        if "semloop.loop.input_tokens" in attrs or "semloop.loop.output_tokens" in attrs:
            telemetry.record("semloop.loop.tokens", tokens, where)
        cost = attrs.get("semloop.loop.cost")
        if cost is not None:
            telemetry.add("semloop.loop.cost.burned", where, float(cost))

    def _unscored(self, job: _Job[S], reason: str, key: str) -> Outcome[S]:
        """A job's outcome without a fresh verdict: its best staged verdict when the
        budget ran out, else unscored. Never raises: if even marking fails, the original
        spans still go out."""
        telemetry = self._telemetry
        best = job.best
        if best is not None and key == "budget":
            try:
                outcome = written_back(job.release, self._adapter, best, {"semloop.budget_exceeded": True})
            except Exception as exc:
                self._error("writeback", exc)
            else:
                telemetry.add("semloop.unscored", "budget_staged")
                return outcome
        telemetry.add("semloop.unscored", key)
        try:
            return unscored(job.release, self._adapter, reason)
        except Exception as exc:
            self._error("writeback", exc)
            return Outcome(list(job.release.spans), "unscored")

    def _error(self, where: str, exc: BaseException) -> None:
        self._telemetry.add("semloop.errors", where)
        _logger.warning(
            "otel-semloop: %s failed: %r (counted in semloop.errors)",
            where,
            exc,
            extra={"semloop_limit": where},
        )

    def _take(self, first: _Job[S]) -> tuple[list[_Job[S]], bool]:
        """``first`` and, when batching, the jobs queued behind it (up to the batch size,
        its share of the queue among the threads, and :data:`BATCH_SPANS`). Also whether
        the stop sentinel was met (the thread exits after this batch)."""
        jobs = [first]
        if self._batch == 1:
            return jobs, False
        limit = min(self._batch, 1 + self._queue.qsize() // max(1, self._threads))
        spans = len(first.release.spans)
        while len(jobs) < limit and spans < BATCH_SPANS:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return jobs, True
            jobs.append(job)
            spans += len(job.release.spans)
        return jobs, False

    def _score(self, jobs: list[_Job[S]]) -> list[tuple[Evaluation | None, Exception | None]]:
        """Each claimed job's evaluation or failure (in order)."""
        if self._batch_evaluator is None:
            job = jobs[0]

            def keep(stage: Evaluation, job: _Job[S] = job) -> None:
                job.best = stage

            try:
                return [(self._evaluator(job.release, self._adapter, self._scorer, keep), None)]
            except Exception as exc:
                return [(None, exc)]
        try:
            results = self._batch_evaluator([job.release for job in jobs], self._adapter, self._scorer)
        except Exception as exc:  # the whole batch failed (a worker died)
            return [(None, exc)] * len(jobs)
        return [(None, r) if isinstance(r, Exception) else (r, None) for r in results]

    def _run(self) -> None:
        lane = _Lane()
        lock = self._lock
        telemetry = self._telemetry
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                taken, stop = self._take(first)
                jobs: list[_Job[S]] = []
                with lock:
                    for job in taken:
                        if job.state == _PENDING:  # else already delivered by the owner
                            job.state = _RUNNING
                            job.lane = lane
                            jobs.append(job)
                del taken, first
                if not jobs:
                    if stop:
                        return
                    continue
                started = time.perf_counter()
                results = self._score(jobs)
                duration = (time.perf_counter() - started) / len(jobs)
                with lock:
                    mine = [job.state == _RUNNING for job in jobs]
                    for job, won in zip(jobs, mine, strict=True):
                        if won:
                            job.state = _DONE
                    retire = False
                    if lane.stuck:
                        lane.stuck = False
                        self._stuck -= 1
                        retire = self._alive - self._stuck > self._threads
                yield_gil()
                for job, won, (evaluation, failure) in zip(jobs, mine, results, strict=True):
                    telemetry.record("semloop.scoring.duration", duration)
                    if won:
                        self._settle(job, self._outcome(job, evaluation, failure))
                    else:
                        telemetry.add("semloop.scoring.discarded", "late")
                del jobs, results, job, evaluation
                if self.waiting and self._notify is not None:
                    self._notify()
                if retire or stop:
                    return
        finally:
            with lock:
                self._alive -= 1
                if lane.stuck:
                    self._stuck -= 1

    def _outcome(self, job: _Job[S], evaluation: Evaluation | None, failure: Exception | None) -> Outcome[S]:
        if failure is not None:
            self._error("scorer", failure)
            return self._unscored(job, f"scoring failed: {type(failure).__name__}", "error")
        if evaluation is None:
            # Not an agent trace (plain HTTP, DB...): it gains nothing, forward it untouched.
            return Outcome(list(job.release.spans), "none")
        try:
            return written_back(job.release, self._adapter, evaluation)
        except Exception as exc:
            self._error("writeback", exc)
            return self._unscored(job, f"write-back failed: {type(exc).__name__}", "error")
