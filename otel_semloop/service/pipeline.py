"""The service's core glue: received spans -> :class:`~otel_semloop.grouping.TraceBuffer`
-> scoring off the loop under a time budget -> write-back -> the export queue.

Everything here runs on the service's one asyncio loop, so the buffer needs no lock; only
scoring runs on the pool's threads, which patch a span only once they won its release.
Every span enters the buffer once, leaves it once (a release or a late span) and is put in
the export queue once. The service sees only ended spans: a trace is complete once its
root arrived and is released ``grace`` seconds after its last span (``idle``, ``max_age``
and overflow release the others early, as partial). Releases go to the
:class:`~otel_semloop.pool.ScoringPool` shared with the span processor (or to scoring
processes, :mod:`otel_semloop.service.processes`); traces without agent steps are forwarded
untouched. :attr:`Pipeline.load` measures how far scoring is behind, for admission.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from otel_semloop.conventions import LogEvent
from otel_semloop.evaluation import EvaluationPublisher
from otel_semloop.grouping import HeldLogs, ReleaseReason, TraceBuffer
from otel_semloop.otlp import apply_patch_proto
from otel_semloop.pool import ScoringPool
from otel_semloop.release import Outcome
from otel_semloop.scoring import Scorer
from otel_semloop.service.admission import ScoringLoad
from otel_semloop.service.config import ServiceConfig
from otel_semloop.service.held import PROTO_SPANS, Accepted, Held, Prepared
from otel_semloop.service.processes import ScoringProcesses
from otel_semloop.service.scoring_worker import loop_summary
from otel_semloop.telemetry import SelfTelemetry, count_forwarded, get_logger
from otel_semloop.writeback import SpanPatch

__all__ = ["Pipeline"]

_logger = get_logger("otel_semloop.service")

_LATE_PATCH = SpanPatch(attributes={"semloop.late": True})


class Pipeline:
    """Groups, scores and hands spans to ``forward`` (the export queue's ``put``).

    Call :meth:`hold` with received spans, run :meth:`run` as a task, and :meth:`drain`
    once at shutdown. Loop-thread only (see the module docstring); build it
    on the loop it will run on.
    """

    def __init__(
        self,
        config: ServiceConfig,
        forward: Callable[[list[Held]], None],
        scorer: Scorer,
        telemetry: SelfTelemetry,
        evaluations: EvaluationPublisher | None = None,
        processes: ScoringProcesses | None = None,
    ) -> None:
        self._config = config
        self._evaluations = evaluations
        #: Evaluation records go somewhere (logs or Phoenix): else none is built.
        self._publish = evaluations is not None and (
            evaluations.logs_enabled or evaluations.phoenix is not None
        )
        self._forward_spans = forward
        self._telemetry = telemetry
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.buffer: TraceBuffer[Held] = TraceBuffer(config.buffer_limits())
        scorers = threads = config.scoring_threads
        workers: dict[str, Any] = {}
        if processes is not None:
            # A thread per batch a worker holds.
            scorers, threads = config.scoring_processes, config.scoring_processes * processes.depth
            workers = {"batch_evaluator": processes.evaluate_many}
        self._pool: ScoringPool[Held] = ScoringPool(
            scorer,
            PROTO_SPANS,
            self._deliver,
            telemetry,
            threads=threads,
            max_stuck=config.max_stuck_scorers,
            budget=config.scoring_budget_seconds,
            **workers,
        )
        self.load = ScoringLoad(config.grace_seconds, scorers)
        #: While :meth:`_dispatch` submits a release, and whether it was delivered at once.
        self._submitting = False
        self._delivered_now = False
        #: GenAI log events held by trace id (:mod:`otel_semloop.service.logs`): a release
        #: takes its trace's events to be put on its spans before scoring.
        self.log_events: HeldLogs[LogEvent] | None = None

    def hold(self, prepared: Prepared) -> Accepted:
        """Put a request's checked spans (:func:`~otel_semloop.service.held.prepare`) in the
        buffer, and let the releases that causes leave."""
        now = time.monotonic()
        for trace_id, local_root, held in prepared.spans:
            self.buffer.end(trace_id, local_root, held, now)
        result = prepared.result
        self.load.accepted(now, result.accepted)
        if result.rejected:
            self._telemetry.add("semloop.spans.rejected", "invalid", result.rejected)
        self._dispatch()  # overflow and span-limit releases leave at once
        return result

    def release_held(self) -> None:
        """Release every held trace now (after a durable replay: a replayed trace whose
        root left before the crash can never complete, so it must not wait for ``idle``)."""
        self.buffer.release_all(ReleaseReason.FLUSH)
        self._dispatch()

    def scoring_slack(self, now: float) -> float | None:
        """Seconds left in the budget of the oldest release still waiting for its verdict
        (None: nothing waiting). Small slack means scoring is falling behind."""
        deadline = self._pool.next_deadline()
        return None if deadline is None else deadline - now

    @property
    def stuck(self) -> int:
        """Scoring threads abandoned past their budget and not yet returned."""
        return self._pool.stuck

    # -- the tick and the drain ------------------------------------------------------------

    async def run(self) -> None:
        """Release what is due, and settle releases past their budget, every ``tick``
        (sooner when a budget ends first) until cancelled."""
        tick = self._config.tick_seconds
        while True:
            deadline = self._pool.next_deadline()
            delay = tick if deadline is None else min(tick, max(0.0, deadline - time.monotonic()) + 0.001)
            await asyncio.sleep(delay)
            try:
                now = time.monotonic()
                self.buffer.expire(now)
                self._dispatch()
                self._pool.expire(now)
                self.load.sample(now)
            except Exception:
                self._telemetry.add("semloop.errors", "pipeline")
                _logger.exception(
                    "otel-semloop: error releasing traces (counted in semloop.errors)",
                    extra={"semloop_limit": "pipeline"},
                )

    async def drain(self, deadline: float) -> bool:
        """Release everything held, score what fits before ``deadline`` (the rest leaves
        unscored) and hand every span to the export queue. True if scoring finished in time."""
        self.buffer.release_all(ReleaseReason.SHUTDOWN)
        self._dispatch()
        pool = self._pool
        last = pool.cap_deadlines(deadline)
        while not pool.settled_through(last) and time.monotonic() < deadline:
            await asyncio.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
        clean = pool.settled_through(last)
        pool.expire(max(deadline, time.monotonic()))
        pool.take_back_all()
        pool.stop()
        await asyncio.sleep(0)  # run the deliveries scoring threads handed to the loop
        return clean

    def _dispatch(self) -> None:
        releases, late = self.buffer.take()
        if late:
            for held in late:
                apply_patch_proto(held.span, _LATE_PATCH)
            self._forward(late, 0, "late")
        load = self.load
        log_events = self.log_events
        for release in releases:
            if log_events is not None and log_events.held:
                release.logs = log_events.take(release.trace_key, release.final)
                if release.logs:
                    self._telemetry.add("semloop.log_records", "attached", len(release.logs))
            self._submitting, self._delivered_now = True, False
            try:
                self._pool.submit(release)
            finally:
                self._submitting = False
            # Delivered during submit: no agent steps (or every scorer stuck): no queue.
            load.released(time.monotonic(), len(release.spans), to_scorers=not self._delivered_now)

    def _deliver(self, outcome: Outcome[Held]) -> None:
        """The pool's delivery: on the loop, or handed to it from a scoring thread."""
        if threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self._take_scored, outcome)
        elif self._submitting:
            self._delivered_now = True
            self._delivered(outcome, False)
        else:
            self._delivered(outcome, True)  # past its budget, or at the end of a drain

    def _take_scored(self, outcome: Outcome[Held]) -> None:
        try:
            self._delivered(outcome, True, True)
        except Exception:
            self._telemetry.add("semloop.errors", "pipeline")
            _logger.exception(
                "otel-semloop: error forwarding a scored trace (counted in semloop.errors)",
                extra={"semloop_limit": "pipeline"},
            )

    def _delivered(self, outcome: Outcome[Held], queued: bool, scored: bool = False) -> None:
        if queued:
            self.load.delivered(time.monotonic(), len(outcome.spans), scored)
        evaluation = outcome.evaluation
        if outcome.label == "loop" and evaluation is not None and self._config.log_loops:
            line = evaluation.summary or loop_summary(evaluation.trace, evaluation.verdict)
            _logger.info("otel-semloop: loop %s", line)
        self._forward(outcome.spans, outcome.patched)
        if evaluation is not None and self._publish:
            self._evaluations.publish_verdict(evaluation.trace, evaluation.verdict)  # type: ignore[union-attr]

    def _forward(self, spans: list[Held], patched: int, state: str = "original") -> None:
        count_forwarded(self._telemetry, len(spans), patched, state)
        self._forward_spans(spans)
