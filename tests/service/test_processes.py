"""Scoring in worker processes (issue 13 "Scaling out", issue 10): the pool's threads hand
each release to a worker process; the verdict and patches are the ones the in-process
path writes; a worker that dies or hangs costs only its own trace."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest
from opentelemetry.sdk.metrics import MeterProvider

from otel_semloop.grouping import Release, ReleaseReason
from otel_semloop.pool import ScoringPool
from otel_semloop.release import Outcome, evaluate, written_back
from otel_semloop.scoring import DetectorScorer, Scorer
from otel_semloop.service.held import PROTO_SPANS, Held
from otel_semloop.service.processes import ScoringProcesses, WorkerDied, runs_in_workers
from otel_semloop.telemetry import SelfTelemetry
from tests.service.traffic import agent_spans, trace_id_of


def _release(index: int, loop: bool, reason: ReleaseReason = ReleaseReason.COMPLETE) -> Release[Held]:
    spans = agent_spans(trace_id_of(77, index), 4, loop=loop)
    held = [Held(s, None, None) for s in spans]
    return Release(trace_key=spans[0].trace_id, spans=held, reason=reason, root_ended=True)


def _evaluate(workers: ScoringProcesses, release: Release[Held], adapter: object, scorer: object) -> object:
    """One release scored in a worker, its error raised."""
    (result,) = workers.evaluate_many([release], adapter, scorer)  # type: ignore[arg-type]
    if isinstance(result, Exception):
        raise result
    return result


def _attributes(outcome: Outcome[Held]) -> list[dict[str, object]]:
    out = []
    for held in outcome.spans:
        span = held.span
        out.append(
            {
                "attributes": sorted((kv.key, kv.value.SerializeToString()) for kv in span.attributes),
                "events": [(e.name, sorted(kv.key for kv in e.attributes)) for e in span.events],
            }
        )
    return out


def _assert_same_verdict_as_the_service_reads_it(remote: Any, local: Any) -> None:
    """A worker's verdict holds what the service reads (the rest is in its patches)."""
    assert remote.findings == () and remote.lexical is None and not remote.in_loop_span_ids
    for name in ("label", "score", "action", "reason", "unscored_reason", "partial", "attributes"):
        assert getattr(remote, name) == getattr(local, name)


def _wire(held: Held) -> bytes:
    return held.span.SerializeToString()  # type: ignore[no-any-return]


def _pool(
    workers: ScoringProcesses, deliver: Callable[[Outcome[Held]], None], *, budget: float, **batching: Any
) -> ScoringPool[Held]:
    """A one-thread pool whose releases are scored by ``workers`` (``batching``: the
    pool's batch_evaluator and batch size, when the test wants them)."""
    return ScoringPool(
        Scorer(),
        PROTO_SPANS,
        deliver,
        SelfTelemetry(MeterProvider(), dict, "service"),
        threads=1,
        max_stuck=1,
        budget=budget,
        **{"batch_evaluator": workers.evaluate_many, **batching},
    )


@pytest.fixture
def workers() -> Iterator[ScoringProcesses]:
    processes = ScoringProcesses(1, _wire, kill_after=1.5)
    processes.start()
    try:
        yield processes
    finally:
        processes.close()


def test_a_worker_process_writes_what_the_in_process_path_writes(workers: ScoringProcesses) -> None:
    scorer = Scorer()
    for index, loop, reason in ((1, True, ReleaseReason.COMPLETE), (2, False, ReleaseReason.IDLE)):
        remote = _evaluate(workers, _release(index, loop, reason), PROTO_SPANS, scorer)
        local = evaluate(_release(index, loop, reason), PROTO_SPANS, scorer)
        assert remote is not None and local is not None
        _assert_same_verdict_as_the_service_reads_it(remote.verdict, local.verdict)
        remote_out = written_back(_release(index, loop, reason), PROTO_SPANS, remote)
        local_out = written_back(_release(index, loop, reason), PROTO_SPANS, local)
        assert remote_out.label == local_out.label == ("loop" if loop else "no_loop")
        assert remote_out.patched == local_out.patched
        assert _attributes(remote_out) == _attributes(local_out)
        # The root as the loop log line and the evaluation record read it.
        assert remote.trace.root_span_id == local.trace.root_span_id
        assert remote.trace.spans[remote.trace.root_span_id].name == "invoke_agent researcher"
    assert workers.started == 1


def test_the_worker_makes_the_loop_line_the_in_process_path_would_log(workers: ScoringProcesses) -> None:
    """The worker makes the loop log line, and the service logs and writes what the
    in-process path does."""
    from otel_semloop.service.scoring_worker import loop_summary

    for index, loop in ((7, True), (8, False)):
        local = evaluate(_release(index, loop), PROTO_SPANS, Scorer())
        remote = _evaluate(workers, _release(index, loop), PROTO_SPANS, Scorer())
        assert remote is not None and local is not None
        root = remote.trace.spans[remote.trace.root_span_id]
        assert root.attributes["gen_ai.agent.name"] == "researcher"
        assert root.name == "invoke_agent researcher"
        assert remote.trace.trace_id == local.trace.trace_id == trace_id_of(77, index).hex()
        if loop:
            assert local.verdict.fired_signals  # the line names them
            assert remote.summary == loop_summary(local.trace, local.verdict)
        else:
            assert remote.summary is None
        _assert_same_verdict_as_the_service_reads_it(remote.verdict, local.verdict)
        # and the spans written back are still the in-process ones
        out = written_back(_release(index, loop), PROTO_SPANS, remote)
        assert out.label == local.verdict.label.value
        assert _attributes(out) == _attributes(written_back(_release(index, loop), PROTO_SPANS, local))


def test_a_loop_span_already_carrying_semloop_in_loop_keeps_one_such_attribute(
    workers: ScoringProcesses,
) -> None:
    """The worker appends ``semloop.in_loop`` as bytes only to a span without the key; a
    span that has it (a second pass) gets it overwritten, never twice."""
    from opentelemetry.proto.common.v1 import common_pb2

    release = _release(9, True)
    for held in release.spans[1:]:
        held.span.attributes.append(
            common_pb2.KeyValue(key="semloop.in_loop", value=common_pb2.AnyValue(bool_value=False))
        )
    local = evaluate(_release(9, True), PROTO_SPANS, Scorer())
    remote = _evaluate(workers, release, PROTO_SPANS, Scorer())
    assert remote is not None and local is not None
    out = written_back(release, PROTO_SPANS, remote)
    flagged = 0
    for held in out.spans[1:]:
        values = [kv.value for kv in held.span.attributes if kv.key == "semloop.in_loop"]
        assert len(values) == 1
        flagged += values[0].bool_value
    assert flagged == len(local.verdict.in_loop_span_ids) > 0


def test_a_worker_that_dies_costs_only_its_own_trace(workers: ScoringProcesses) -> None:
    delivered: list[Outcome[Held]] = []
    arrived = threading.Event()

    def deliver(outcome: Outcome[Held]) -> None:
        delivered.append(outcome)
        arrived.set()

    pool = _pool(workers, deliver, budget=30.0)
    try:
        (pid,) = workers.pids()
        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(psutil.NoSuchProcess):  # already gone
            psutil.Process(pid).wait(10)
        pool.submit(_release(3, True))
        assert arrived.wait(20)
        root = next(h.span for h in delivered[0].spans if not h.span.parent_span_id)
        attrs = {kv.key: kv.value.string_value for kv in root.attributes}
        assert attrs["semloop.label"] == "unscored"
        assert attrs["semloop.unscored.reason"] == "scoring failed: WorkerDied"
        arrived.clear()
        pool.submit(_release(4, True))  # a new worker takes the next trace
        assert arrived.wait(60)
        assert delivered[1].label == "loop" and workers.started == 2
    finally:
        pool.stop()


def test_releases_queued_together_go_to_a_worker_in_one_round_trip(workers: ScoringProcesses) -> None:
    """The pool's thread takes what queued behind its release as one batch: one pipe
    round trip for many traces, each still delivered once with its own verdict."""
    delivered: list[Outcome[Held]] = []
    done = threading.Condition()
    sizes: list[int] = []

    def deliver(outcome: Outcome[Held]) -> None:
        with done:
            delivered.append(outcome)
            done.notify_all()

    def batch(releases: list[Release[Held]], adapter: object, scorer: Scorer) -> list[object]:
        sizes.append(len(releases))
        return workers.evaluate_many(releases, PROTO_SPANS, scorer)

    pool = _pool(workers, deliver, budget=60.0, batch_evaluator=batch, batch=16)
    try:
        releases = [_release(100 + i, loop=i % 2 == 0) for i in range(24)]
        for release in releases:
            pool.submit(release)
        with done:
            assert done.wait_for(lambda: len(delivered) == 24, 60)
    finally:
        pool.stop()
    assert sum(sizes) == 24 and len(sizes) < 24 and max(sizes) > 1
    labels = {o.spans[0].span.trace_id: o.label for o in delivered}
    expected = {r.spans[0].span.trace_id: "no_loop" if i % 2 else "loop" for i, r in enumerate(releases)}
    assert labels == expected
    for outcome in delivered:  # the verdict went on each trace's own root
        root = next(h.span for h in outcome.spans if not h.span.parent_span_id)
        attrs = {kv.key: kv.value.string_value for kv in root.attributes}
        assert attrs["semloop.label"] == outcome.label


def test_a_worker_busy_on_one_trace_past_kill_after_is_terminated(workers: ScoringProcesses) -> None:
    (pid,) = workers.pids()
    os.kill(pid, signal.SIGSTOP)  # hangs as a runaway detector would
    started = time.monotonic()
    with pytest.raises(WorkerDied):
        _evaluate(workers, _release(5, True), PROTO_SPANS, Scorer())
    assert 1.0 <= time.monotonic() - started < 15
    assert workers.killed == 1
    assert _evaluate(workers, _release(6, False), PROTO_SPANS, Scorer()) is not None


def test_only_the_default_scorer_runs_in_workers() -> None:
    assert runs_in_workers(Scorer())
    assert runs_in_workers(DetectorScorer(mode="lexical"))

    class Custom(DetectorScorer):
        pass

    assert not runs_in_workers(Custom())
    from otel_semloop.policy import Policy

    assert not runs_in_workers(DetectorScorer(policy=Policy(threshold=0.7)))


def test_two_threads_share_a_worker_each_gets_its_own_replies_and_both_learn_of_its_death() -> None:
    """With ``depth=2`` two scoring threads keep batches in one worker at once (the next
    one waits in its pipe): each thread reads the verdicts of its own traces; a worker
    killed with two batches in flight fails both, and the next batch gets a new worker."""
    workers = ScoringProcesses(1, _wire, kill_after=30.0, depth=2)
    workers.start()
    try:
        results: dict[int, list[object]] = {}

        def score(n: int) -> None:
            releases = [_release(300 + 10 * n + i, loop=(n + i) % 2 == 0) for i in range(6)]
            try:
                results[n] = [
                    o.verdict.label.value for o in workers.evaluate_many(releases, PROTO_SPANS, Scorer())
                ]
            except WorkerDied as exc:
                results[n] = [exc]

        for _ in range(2):
            threads = [threading.Thread(target=score, args=(n,)) for n in range(4)]
            for thread in threads[:2]:  # two at a time: both fit in the one worker
                thread.start()
            for thread in threads[:2]:
                thread.join(60)
            threads = threads[2:]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
        assert workers.started == 1, "two threads at a time fit in one worker at depth 2"
        for n in range(4):
            assert results[n] == ["loop" if (n + i) % 2 == 0 else "no_loop" for i in range(6)]

        (pid,) = workers.pids()
        os.kill(pid, signal.SIGSTOP)  # both batches below stay in it
        threads = [threading.Thread(target=score, args=(n,)) for n in (4, 5)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        for thread in threads:
            thread.join(60)
        assert all(len(results[n]) == 1 and isinstance(results[n][0], WorkerDied) for n in (4, 5))
        assert _evaluate(workers, _release(399, True), PROTO_SPANS, Scorer()) is not None
        assert workers.started == 2
    finally:
        workers.close()
