"""The scoring pool's rules, exactly: budget, stuck-thread cap, staged verdicts, a raising
scorer, the no-steps fast path, drain, and delivery exactly once.

Time is passed in (``now=``) so budgets are tested at their boundary, not by sleeping.
The spans are plain :class:`~otel_semloop.model.SpanRecord` objects behind a small
adapter, so nothing here depends on a front door.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider

from otel_semloop.grouping import Release, ReleaseReason
from otel_semloop.model import SpanRecord, Trace
from otel_semloop.pool import ScoringPool
from otel_semloop.release import Outcome, SpanLinks, evaluate
from otel_semloop.telemetry import SelfTelemetry
from otel_semloop.verdict import Action, Label, Verdict
from otel_semloop.writeback import SpanPatch

WAIT = 10.0  # seconds a test waits for a thread it expects to act at once


class Records:
    """The adapter: spans are records; a patch makes a new record."""

    def __init__(self, agent: bool = True) -> None:
        self.agent = agent

    def record(self, span: SpanRecord) -> SpanRecord:
        return dataclasses.replace(span, source=span)

    def patched(self, span: SpanRecord, patch: SpanPatch) -> SpanRecord:
        return dataclasses.replace(
            span, attributes={**span.attributes, **patch.attributes}, events=(*span.events, *patch.events)
        )

    def links(self, span: SpanRecord) -> SpanLinks:
        return SpanLinks(
            span.span_id, span.parent_span_id or None, bool(span.parent_is_remote), span.start_ns
        )

    def may_have_steps(self, spans: Sequence[SpanRecord]) -> bool:
        return self.agent


def agent_release(n: int = 0, reason: ReleaseReason = ReleaseReason.COMPLETE) -> Release[SpanRecord]:
    tid = f"{n + 1:032x}"
    root = SpanRecord(tid, "a" * 16, "", "invoke_agent", 1, 10, {"gen_ai.operation.name": "invoke_agent"})
    tool = SpanRecord(
        tid, "b" * 16, "a" * 16, "execute_tool t", 2, 3,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    )  # fmt: skip
    return Release(trace_key=tid, spans=[root, tool], reason=reason, root_ended=True)


LOOP = Verdict(label=Label.LOOP, score=0.1, action=Action.STOP, reason="cycle")
NO_LOOP = Verdict(label=Label.NO_LOOP, score=0.9, reason="fine")


class Gate:
    """A scorer that announces each call and waits until let through; then answers
    ``verdict`` (or raises ``error``)."""

    def __init__(
        self, verdict: Verdict = LOOP, error: BaseException | None = None, hold: bool = True
    ) -> None:
        self.verdict = verdict
        self.error = error
        self.entered = threading.Semaphore(0)
        self.gate = threading.Event()
        if not hold:
            self.gate.set()
        self.calls = 0

    def score(self, trace: Trace) -> Verdict:
        self.calls += 1
        self.entered.release()
        self.gate.wait(WAIT * 3)
        if self.error is not None:
            raise self.error
        return self.verdict

    def wait_entered(self) -> None:
        assert self.entered.acquire(timeout=WAIT), "the scorer was never called"


class Staged:
    """First stage at once, then waits for the gate before the final one."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.first = threading.Event()

    def score(self, trace: Trace) -> Verdict:
        return NO_LOOP

    def score_stages(self, trace: Trace) -> Iterator[Verdict]:
        yield LOOP
        self.first.set()
        self.gate.wait(WAIT * 3)
        yield NO_LOOP


class Batches:
    """A batch evaluator (as the service's worker processes are): scores each release of
    a batch with the in-process path and records the batch sizes; ``error`` fails a
    whole batch (a worker that died)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.sizes: list[int] = []
        self.error = error

    def __call__(self, releases: list[Release[SpanRecord]], adapter: Any, scorer: Any) -> list[Any]:
        self.sizes.append(len(releases))
        if self.error is not None:
            raise self.error
        out: list[Any] = []
        for release in releases:
            try:
                out.append(evaluate(release, adapter, scorer))
            except Exception as exc:
                out.append(exc)
        return out


class Harness:
    def __init__(
        self,
        scorer: Any,
        *,
        agent: bool = True,
        threads: int = 1,
        max_stuck: int = 1,
        budget: float = 5.0,
        batches: Batches | None = None,
    ) -> None:
        self.delivered: list[Outcome[SpanRecord]] = []
        self.threads: list[int] = []
        self.arrived = threading.Condition()
        self.telemetry = SelfTelemetry(MeterProvider(), dict, "processor")
        self.pool: ScoringPool[SpanRecord] = ScoringPool(
            scorer,
            Records(agent),
            self.deliver,
            self.telemetry,
            threads=threads,
            max_stuck=max_stuck,
            budget=budget,
            **({"batch_evaluator": batches, "batch": 16} if batches is not None else {}),
        )

    def deliver(self, outcome: Outcome[SpanRecord]) -> None:
        with self.arrived:
            self.delivered.append(outcome)
            self.threads.append(threading.get_ident())
            self.arrived.notify_all()

    def wait_delivered(self, count: int) -> list[Outcome[SpanRecord]]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.delivered) >= count, WAIT), self.delivered
        return self.delivered

    def stats(self) -> dict[str, int]:
        return self.telemetry.snapshot()

    def root(self, outcome: Outcome[SpanRecord]) -> SpanRecord:
        (root,) = [s for s in outcome.spans if not s.parent_span_id]
        return root


@pytest.fixture
def harnesses() -> Iterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for harness in made:
        harness.pool.stop()


def make(harnesses: list[Harness], scorer: Any, **kwargs: Any) -> Harness:
    harness = Harness(scorer, **kwargs)
    harnesses.append(harness)
    return harness


def test_a_verdict_within_the_budget_is_written_back_and_delivered_once(harnesses: list[Harness]) -> None:
    scorer = Gate(hold=False)
    h = make(harnesses, scorer)
    h.pool.submit(agent_release(), now=100.0)
    (outcome,) = h.wait_delivered(1)
    assert outcome.label == "loop" and outcome.patched == 1
    assert h.root(outcome).attributes["semloop.label"] == "loop"
    assert h.stats()["semloop.traces.loop"] == 1 and h.stats()["semloop.releases.complete"] == 1
    h.pool.expire(1e9)
    assert len(h.delivered) == 1 and h.pool.pending == 0


def test_the_budget_ends_exactly_at_its_deadline(harnesses: list[Harness]) -> None:
    scorer = Gate()
    h = make(harnesses, scorer)
    h.pool.submit(agent_release(), now=100.0)
    scorer.wait_entered()
    h.pool.expire(104.999)
    assert h.delivered == [] and h.pool.next_deadline() == 105.0
    h.pool.expire(105.0)
    (outcome,) = h.delivered
    root = h.root(outcome)
    assert root.attributes["semloop.label"] == "unscored"
    assert root.attributes["semloop.unscored.reason"] == "scoring budget exceeded"
    assert h.stats()["semloop.unscored.budget"] == 1 and h.pool.stuck == 1
    # The stuck thread returns: its verdict is discarded, never delivered a second time.
    scorer.gate.set()
    for _ in range(1000):
        if h.pool.stuck == 0:
            break
        threading.Event().wait(0.01)
    assert h.pool.stuck == 0
    assert h.stats()["semloop.scoring.discarded.late"] == 1
    assert len(h.delivered) == 1


def test_queueing_counts_against_the_budget(harnesses: list[Harness]) -> None:
    scorer = Gate()
    h = make(harnesses, scorer, max_stuck=0)
    h.pool.submit(agent_release(1), now=100.0)
    scorer.wait_entered()
    h.pool.submit(agent_release(2), now=101.0)  # queued behind the first
    h.pool.expire(105.5)
    assert len(h.delivered) == 1  # only the first is due
    h.pool.expire(106.0)
    assert [o.label for o in h.delivered] == ["unscored", "unscored"]
    scorer.gate.set()


def test_a_stuck_thread_is_replaced_up_to_the_cap_then_releases_leave_unscored_at_once(
    harnesses: list[Harness],
) -> None:
    scorer = Gate()
    h = make(harnesses, scorer, threads=1, max_stuck=1)
    h.pool.submit(agent_release(1), now=0.0)
    scorer.wait_entered()
    h.pool.expire(5.0)  # thread 1 stuck; a replacement starts (1 stuck allowed)
    assert h.pool.stuck == 1
    h.pool.submit(agent_release(2), now=10.0)
    scorer.wait_entered()  # the replacement took it
    h.pool.expire(15.0)  # thread 2 stuck too: the cap is reached, no replacement
    assert h.pool.stuck == 2
    h.pool.submit(agent_release(3), now=20.0)
    # Delivered at once on this thread, not queued behind the stuck ones.
    assert len(h.delivered) == 3 and h.threads[-1] == threading.get_ident()
    root = h.root(h.delivered[-1])
    assert (
        root.attributes["semloop.unscored.reason"] == "scoring unavailable: scorers stuck past their budget"
    )
    assert h.stats()["semloop.unscored.stuck"] == 1 and h.stats()["semloop.unscored.budget"] == 2
    assert scorer.calls == 2
    # The stuck threads come back and one rejoins: scoring works again.
    scorer.gate.set()
    for _ in range(1000):
        if h.pool.stuck == 0:
            break
        threading.Event().wait(0.01)
    h.pool.submit(agent_release(4), now=30.0)
    assert h.wait_delivered(4)[-1].label == "loop"


def test_with_no_stuck_thread_allowed_the_first_stuck_thread_stops_scoring(harnesses: list[Harness]) -> None:
    scorer = Gate()
    h = make(harnesses, scorer, threads=1, max_stuck=0)
    h.pool.submit(agent_release(1), now=0.0)
    scorer.wait_entered()
    h.pool.expire(5.0)
    h.pool.submit(agent_release(2), now=6.0)
    assert [o.label for o in h.delivered] == ["unscored", "unscored"]
    assert h.stats()["semloop.unscored.stuck"] == 1
    scorer.gate.set()


def test_past_the_budget_a_staged_scorer_s_latest_verdict_is_written_with_a_mark(
    harnesses: list[Harness],
) -> None:
    scorer = Staged()
    h = make(harnesses, scorer)
    h.pool.submit(agent_release(), now=0.0)
    assert scorer.first.wait(WAIT)
    h.pool.expire(5.0)
    (outcome,) = h.delivered
    root = h.root(outcome)
    assert outcome.label == "loop"
    assert root.attributes["semloop.label"] == "loop"
    assert root.attributes["semloop.budget_exceeded"] is True
    assert h.stats()["semloop.unscored.budget_staged"] == 1
    scorer.gate.set()


def test_a_staged_scorer_within_the_budget_delivers_its_last_stage(harnesses: list[Harness]) -> None:
    scorer = Staged()
    scorer.gate.set()
    h = make(harnesses, scorer)
    h.pool.submit(agent_release(), now=0.0)
    (outcome,) = h.wait_delivered(1)
    assert outcome.label == "no_loop"
    assert "semloop.budget_exceeded" not in h.root(outcome).attributes


def test_a_raising_scorer_yields_an_unscored_release_with_its_error_type(harnesses: list[Harness]) -> None:
    h = make(harnesses, Gate(error=ZeroDivisionError("bug"), hold=False))
    h.pool.submit(agent_release(), now=0.0)
    (outcome,) = h.wait_delivered(1)
    assert h.root(outcome).attributes["semloop.unscored.reason"] == "scoring failed: ZeroDivisionError"
    assert h.stats()["semloop.errors.scorer"] == 1 and h.stats()["semloop.unscored.error"] == 1
    assert h.pool.stuck == 0


def test_a_release_without_agent_steps_is_delivered_untouched_without_scoring(
    harnesses: list[Harness],
) -> None:
    scorer = Gate(hold=False)
    h = make(harnesses, scorer, agent=False)
    release = agent_release()
    h.pool.submit(release, now=0.0)
    (outcome,) = h.delivered  # at once, on the caller's thread
    assert outcome.label == "none" and outcome.patched == 0
    assert all(a is b for a, b in zip(outcome.spans, release.spans, strict=True))
    assert scorer.calls == 0


def test_a_drain_caps_every_budget_and_settles_everything_by_its_deadline(harnesses: list[Harness]) -> None:
    scorer = Gate()
    h = make(harnesses, scorer, threads=1, max_stuck=0)
    first = h.pool.submit(agent_release(1), now=0.0)
    scorer.wait_entered()
    last = h.pool.submit(agent_release(2), now=0.0)
    assert (first, last) == (1, 2)
    assert h.pool.cap_deadlines(1.0) == 2
    assert not h.pool.settled_through(2) and h.pool.next_deadline() == 1.0
    h.pool.expire(1.0)
    assert h.pool.settled_through(2) and h.pool.pending == 0
    assert [h.root(o).attributes["semloop.unscored.reason"] for o in h.delivered] == [
        "scoring budget exceeded",
        "scoring budget exceeded",
    ]
    scorer.gate.set()


def test_take_back_all_delivers_whatever_is_pending(harnesses: list[Harness]) -> None:
    scorer = Gate()
    h = make(harnesses, scorer, max_stuck=0)
    for n in range(3):
        h.pool.submit(agent_release(n), now=0.0)
    h.pool.take_back_all()
    assert len(h.delivered) == 3 and h.pool.pending == 0
    scorer.gate.set()


@pytest.mark.parametrize("batched", [False, True])
def test_every_release_is_delivered_exactly_once_when_verdicts_race_the_budget(
    harnesses: list[Harness], batched: bool
) -> None:
    """Scorers finishing right around their deadline, two threads (taking batches or
    not): each release leaves exactly once, scored or not."""

    class Jittery:
        def __init__(self) -> None:
            self.count = 0

        def score(self, trace: Trace) -> Verdict:
            self.count += 1
            threading.Event().wait((self.count % 5) * 0.001)
            return LOOP

    batches = Batches() if batched else None
    h = make(harnesses, Jittery(), threads=2, max_stuck=4, budget=0.002, batches=batches)
    releases = [agent_release(n) for n in range(300)]
    clock = 0.0
    for release in releases:
        h.pool.submit(release, now=clock)
        clock += 0.001
        h.pool.expire(clock)  # budgets of 2 ms on this clock: some verdicts win, some lose
    h.pool.expire(1e9)
    h.wait_delivered(len(releases))
    delivered = Counter(o.spans[0].trace_id for o in h.delivered)
    assert sorted(delivered) == sorted(r.spans[0].trace_id for r in releases)
    assert set(delivered.values()) == {1}


def test_a_thread_takes_the_releases_queued_behind_its_own_as_one_batch(harnesses: list[Harness]) -> None:
    scorer = Gate()
    batches = Batches()
    h = make(harnesses, scorer, threads=1, batches=batches)
    h.pool.submit(agent_release(0), now=0.0)
    scorer.wait_entered()  # the thread holds the first release; nine queue behind it
    for n in range(1, 10):
        h.pool.submit(agent_release(n), now=0.0)
    scorer.gate.set()
    outcomes = h.wait_delivered(10)
    assert batches.sizes == [1, 9]  # one round trip for the nine
    expected = sorted(agent_release(n).trace_key for n in range(10))
    assert sorted(o.spans[0].trace_id for o in outcomes) == expected
    assert [o.label for o in outcomes] == ["loop"] * 10
    assert h.stats()["semloop.traces.loop"] == 10


def test_a_batch_past_its_budget_makes_its_thread_stuck_once_and_its_late_verdicts_are_discarded(
    harnesses: list[Harness],
) -> None:
    class Turnstile:
        """One verdict per permit."""

        def __init__(self) -> None:
            self.entered = threading.Semaphore(0)
            self.permits = threading.Semaphore(0)

        def score(self, trace: Trace) -> Verdict:
            self.entered.release()
            self.permits.acquire(timeout=WAIT * 3)
            return LOOP

    scorer = Turnstile()
    batches = Batches()
    h = make(harnesses, scorer, threads=1, max_stuck=1, batches=batches)
    h.pool.submit(agent_release(0), now=0.0)
    assert scorer.entered.acquire(timeout=WAIT)
    for n in range(1, 4):
        h.pool.submit(agent_release(n), now=0.0)
    scorer.permits.release()  # the first one is scored; the thread takes the other three
    assert scorer.entered.acquire(timeout=WAIT)
    assert h.wait_delivered(1)[0].label == "loop"
    assert batches.sizes == [1, 3]
    h.pool.expire(6.0)  # the batch of three is past its budget
    outcomes = h.wait_delivered(4)
    assert [o.label for o in outcomes[1:]] == ["unscored"] * 3
    assert h.pool.stuck == 1  # one thread, stuck once
    scorer.permits.release(3)
    for _ in range(1000):
        if h.pool.stuck == 0:
            break
        threading.Event().wait(0.01)
    assert h.pool.stuck == 0
    assert len(h.delivered) == 4
    assert h.stats()["semloop.scoring.discarded.late"] == 3
    assert h.stats()["semloop.unscored.budget"] == 3


def test_a_batch_that_fails_whole_leaves_every_release_in_it_unscored_with_the_error_type(
    harnesses: list[Harness],
) -> None:
    h = make(harnesses, Gate(hold=False), batches=Batches(error=ConnectionError("worker exited")))
    for n in range(3):
        h.pool.submit(agent_release(n), now=0.0)
    outcomes = h.wait_delivered(3)
    for outcome in outcomes:
        assert outcome.label == "unscored"
        assert h.root(outcome).attributes["semloop.unscored.reason"] == "scoring failed: ConnectionError"


def test_a_release_queued_behind_a_stuck_thread_is_scored_by_its_replacement(
    harnesses: list[Harness],
) -> None:
    class FirstHangs:
        def __init__(self) -> None:
            self.gate = threading.Event()
            self.calls = 0

        def score(self, trace: Trace) -> Verdict:
            self.calls += 1
            if self.calls == 1:
                self.gate.wait(WAIT * 3)
            return LOOP

    scorer = FirstHangs()
    h = make(harnesses, scorer, threads=1, max_stuck=1)
    h.pool.submit(agent_release(1), now=0.0)
    for _ in range(1000):
        if scorer.calls:
            break
        threading.Event().wait(0.01)
    h.pool.submit(agent_release(2), now=1.0)  # queued behind the hanging one
    h.pool.expire(5.0)  # the first is stuck: its replacement takes the queued release at once
    outcomes = h.wait_delivered(2)
    assert [o.label for o in outcomes] == ["unscored", "loop"]
    scorer.gate.set()
