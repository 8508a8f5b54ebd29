"""One call's progress state (:mod:`otel_semloop.detectors.call_progress`) as the facts show
it, and the LRU every run map is kept in (:mod:`otel_semloop.detectors.lru`).

The rules pinned here: a wait ends (``poll_ended``) when a call that answered with results
it had given before, at least twice in a row, gives one it never gave; progress is
measured against the best figure and size the call ever showed, not its last result; a
replay (figures read only when the call repeats) gives what reading them at once gives.
"""

from __future__ import annotations

import pytest

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.facts import Fingerprinter, StepFacts
from otel_semloop.detectors.lru import LRU
from otel_semloop.model import Step, StepKind


def _run(results: list[str], *, lazy: bool, arguments: object = None) -> list[StepFacts]:
    fingerprinter = Fingerprinter(DetectorConfig())
    fingerprinter.lazy = lazy
    args = {"job": "42"} if arguments is None else arguments
    steps = [
        Step(StepKind.TOOL, "status", span_id=f"s{i}", tool_arguments=args, tool_result=result)
        for i, result in enumerate(results)
    ]
    return [fingerprinter.facts(step, index) for index, step in enumerate(steps)]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_wait_ends_when_a_call_answered_the_same_twice_gives_a_new_answer(lazy: bool) -> None:
    facts = _run(["state: running", "state: running", "state: finished"], lazy=lazy)
    assert [f.poll_ended for f in facts] == [False, False, True]
    assert facts[2].previous_action == facts[1].action  # the (call, result) pair it ended
    # One earlier answer is no wait: a call answered once, then otherwise.
    facts = _run(["state: running", "state: finished"], lazy=lazy)
    assert [f.poll_ended for f in facts] == [False, False]
    # The wait is on the last answer: the pair it ends is that one's.
    facts = _run(["state: queued", "state: running", "state: running", "state: done"], lazy=lazy)
    assert [f.poll_ended for f in facts] == [False, False, False, True]
    assert facts[3].previous_action == facts[2].action != facts[0].action
    # Going back to an answer it gave before ends no wait.
    facts = _run(["state: running", "state: queued", "state: running", "state: queued"], lazy=lazy)
    assert not any(f.poll_ended for f in facts)


@pytest.mark.parametrize("lazy", [False, True])
def test_progress_is_measured_against_the_best_figure_not_the_last(lazy: bool) -> None:
    facts = _run(["done 40%", "done 70%", "done 40%", "done 70%", "done 90%"], lazy=lazy)
    assert [f.progressed for f in facts] == [False, True, False, False, True]
    assert [f.call_novel for f in facts] == [True, False, False, False, False]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_longer_output_than_the_call_ever_gave_is_progress(lazy: bool) -> None:
    short, long = "alpha beta", "alpha beta gamma delta"
    facts = _run([short, long, short, long, long + " epsilon"], lazy=lazy)
    assert [f.progressed for f in facts] == [False, True, False, False, True]
    # From one word to two is progress; two again (other words) is not: the best is two.
    facts = _run(["alpha", "alpha beta", "alpha gamma"], lazy=lazy)
    assert [f.progressed for f in facts] == [False, True, False]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_call_repeated_verbatim_shows_no_progress_and_keeps_its_streak(lazy: bool) -> None:
    facts = _run(["done 40%"] * 4 + ["done 50%"], lazy=lazy)
    assert [f.progressed for f in facts] == [False, False, False, False, True]
    assert [f.novel for f in facts] == [True, False, False, False, True]
    # The same answer once numbers are masked: progress shown, no new answer, no wait ended.
    assert not facts[4].poll_ended


def test_lru_evicts_the_least_recently_used_key() -> None:
    lru = LRU(2)
    assert lru.add(1) is False and lru.add(2) is False
    assert lru.add(1) is True  # 1 is now the most recent: 2 goes first
    assert lru.add(3) is False
    assert list(lru.data) == [1, 3] and len(lru) == 2
    lru.put(4, "four")
    assert list(lru.data) == [3, 4]
    assert lru.get(3) is None and list(lru.data) == [4, 3]  # present, its value None
    assert lru.get(4) == "four" and list(lru.data) == [3, 4]
    assert lru.get(5) is None and 5 not in lru.data
    assert lru.pop(3) is None and list(lru.data) == [4]
    lru.put(6, "six")
    assert lru.get(4) == "four" and list(lru.data) == [6, 4]  # get made 4 the most recent
    lru.put(7, "seven")
    assert list(lru.data) == [4, 7]
    lru.clear()
    assert len(lru) == 0
    assert LRU(0).capacity == 1


def test_chain_map_evicts_like_the_lru_it_extends() -> None:
    from otel_semloop.detectors.progress import _ChainMap

    facts = StepFacts(Step(StepKind.TOOL, "t"), 0)
    chains = _ChainMap(2)
    assert chains.advance(1, 0, facts) is None and chains.advance(2, 0, facts) is None
    first = chains.advance(1, 0, facts)  # a second occurrence: a chain, now the most recent
    assert first is not None and first.count == 2 and chains.chain(1) is first
    assert chains.advance(3, 0, facts) is None  # a third key: 2, the least recent, goes
    assert list(chains.data) == [1, 3] and chains.chain(2) is None
    assert chains.advance(2, 0, facts) is None  # forgotten: it starts again (and 1 goes)
    assert list(chains.data) == [3, 2]
    assert chains.advance(3, 1, facts) is None  # the epoch moved on: a new chain
    chains.clear()
    assert len(chains) == 0


def test_the_failing_calls_are_kept_in_an_lru_bounded_by_seen_capacity() -> None:
    from otel_semloop.detectors.failures import FailureDetector

    detector = FailureDetector(DetectorConfig(seen_capacity=3))
    assert isinstance(detector._failing, LRU) and detector._failing.capacity == 3
    detector.reset()  # emptied in place, bound kept
    assert isinstance(detector._failing, LRU) and detector._failing.capacity == 3


def test_a_replay_counts_no_words_of_a_result_no_later_call_compares() -> None:
    fingerprinter = Fingerprinter(DetectorConfig())
    fingerprinter.lazy = True
    once = Step(StepKind.TOOL, "read", tool_arguments={"path": "a"}, tool_result="alpha beta gamma")
    fingerprinter.facts(once, 0)
    assert fingerprinter._reads["alpha beta gamma"]._size == -1  # not counted
    again = Step(StepKind.TOOL, "read", tool_arguments={"path": "a"}, tool_result="alpha beta")
    assert not fingerprinter.facts(again, 1).progressed  # counted now: 2 words after 3
    assert fingerprinter._reads["alpha beta gamma"].size == 3
