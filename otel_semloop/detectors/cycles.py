"""Action cycles: the same (tool, arguments, result) pattern repeating at the tail.

Signal ``action_cycle``
    Each tool step is fingerprinted as (tool name, digest of canonical arguments, digest of
    the normalised result). A cycle of period ``p`` (1 <= p <= ``max_period``) repeated
    ``R`` times at the tail is conclusive when ``R >= identical_repeats`` (4) for period 1,
    ``R >= cycle_repeats`` (3) for period 2 and ``R >= long_cycle_repeats`` (2) for longer
    periods (each wastes at least three identical (action, result) pairs); severity is
    ``R`` over that threshold. Only primitive periods are reported (A-A-A-A is period 1, not period 2
    twice). Repeating the result too means nothing was learned: ``no_progress`` is set,
    unless a step in the cycle had no result on its span (then the cycle is repetition
    alone).

    Not counted: LLM and agent steps (they sit between tool calls without breaking the
    pattern) and transient failures (a 429 is not an action). A tool step that could not
    be compared (no arguments, no result) or that shows explicit progress (a rising
    percentage or n/m, a longer output than the same call ever returned) breaks the cycle.

Kept
    The last ``max_period`` fingerprints (digests), one match counter per period, and the
    span ids of the last ``2 * max_period`` tool steps for evidence. Never arguments or
    results.

Cost
    O(max_period * d) per tool step, d being the number of divisors of a period (at most 3
    for periods up to 6); O(max_period) memory plus the evidence of an open cycle.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from typing import ClassVar

from otel_semloop.detectors.base import Episode, IncrementalDetector
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = ["ACTION_CYCLE", "ActionCycleDetector", "CycleTracker", "TailCycles"]

ACTION_CYCLE = "action_cycle"


@functools.lru_cache(maxsize=16)
def _divisors(max_period: int) -> dict[int, tuple[int, ...]]:
    """Per period up to ``max_period``, its proper divisors (shared: never modified)."""
    return {p: tuple(d for d in range(1, p) if p % d == 0) for p in range(1, max_period + 1)}


class CycleTracker:
    """Which periods the tail of a stream of fingerprints repeats with, and for how long.

    For each period ``p`` it keeps ``match[p]``: how many of the latest items equal the
    item ``p`` positions before them, consecutively. The tail is then periodic with period
    ``p`` over ``match[p] + p`` items. O(max_period) per item for the counters.
    """

    __slots__ = ("_count", "_divisors", "_history", "_match", "_matching", "_max_period")

    def __init__(self, max_period: int) -> None:
        self._max_period = max(1, max_period)
        self._divisors = _divisors(self._max_period)
        self.reset()

    def reset(self) -> None:
        try:
            history, match = self._history, self._match
        except AttributeError:  # the first reset (from ``__init__``)
            self._history: list[int | None] = [None] * self._max_period
            self._match = [0] * (self._max_period + 1)
        else:
            if self._count:
                history[:] = [None] * self._max_period
            if self._matching:
                match[:] = [0] * (self._max_period + 1)
        self._matching = False  # some counter is not zero
        self._count = 0

    def push(self, item: int) -> list[tuple[int, int]]:
        """Add ``item``; return ``(period, tail length)`` for each primitive period whose
        pattern now repeats at least twice at the tail."""
        size = self._max_period
        history, match, n = self._history, self._match, self._count
        if item not in history:
            # The ring holds the latest ``max_period`` items (None before there are that
            # many): an item none of them equals matches at no period, so every counter
            # falls to zero. The usual case, decided by one scan in C.
            if self._matching:
                match[:] = [0] * (size + 1)
                self._matching = False
            history[n % size] = item
            self._count = n + 1
            return []
        self._matching = True
        for period in range(1, size + 1):
            if n >= period and history[(n - period) % size] == item:
                match[period] += 1
            else:
                match[period] = 0
        history[n % size] = item
        self._count = n + 1
        found = []
        for period in range(1, size + 1):
            tail = match[period] + period
            if match[period] < period:
                continue  # fewer than two full repeats
            if any(match[d] + d >= tail for d in self._divisors[period]):
                continue  # a shorter period explains the same tail
            found.append((period, tail))
        return found


class TailCycles:
    """A :class:`CycleTracker` plus the episode bookkeeping for one kind of cycle.

    Shared by action cycles and agent hand-off cycles: both feed one fingerprint per item
    and report the best primitive period (highest severity, the shortest on ties).
    """

    __slots__ = (
        "_describe",
        "_episode",
        "_evidence",
        "_long_repeats",
        "_names",
        "_period_one",
        "_repeats",
        "_signal",
        "closed",
        "config",
        "tracker",
    )

    def __init__(
        self,
        signal: str,
        config: DetectorConfig,
        max_period: int,
        period_one_repeats: int,
        repeats: int,
        describe: Callable[[list[str], bool], str],
        long_repeats: int | None = None,
    ) -> None:
        self._signal = signal
        self.config = config
        self.tracker = CycleTracker(max_period)
        self._period_one = max(1, period_one_repeats)
        self._repeats = max(1, repeats)
        #: Repeats of a period of three or more (None: ``repeats``).
        self._long_repeats = self._repeats if long_repeats is None else max(1, long_repeats)
        self._describe = describe
        # (facts, result known) of the latest 2P items (facts: span id, index, start, name).
        self._evidence: deque[tuple[StepFacts, bool]] = deque(maxlen=2 * max(1, max_period))
        self._episode: Episode | None = None
        self._names: frozenset[str] = frozenset()
        #: The latest cycle episode that ended, with the names of the steps it repeated.
        self.closed: tuple[Episode, frozenset[str]] | None = None

    def reset(self) -> None:
        self.tracker.reset()
        self._evidence.clear()
        self._episode = None
        self.closed = None

    def threshold(self, period: int) -> int:
        if period == 1:
            return self._period_one
        return self._repeats if period == 2 else self._long_repeats

    def push(
        self,
        fingerprint: int,
        facts: StepFacts,
        known: bool,
        detector: IncrementalDetector,
        out: list[Finding],
    ) -> None:
        """Add one item; update (or open, or close) the current cycle episode."""
        self._evidence.append((facts, known))
        candidates = self.tracker.push(fingerprint)
        if not candidates:
            if self._episode is not None:
                self.closed = (self._episode, self._names)
            self._episode = None
            return
        period, tail = max(candidates, key=lambda c: ((c[1] // c[0]) / self.threshold(c[0]), -c[0]))
        repeats = tail // period
        episode = self._episode
        if episode is None or episode.period != period:
            recent = list(self._evidence)[-tail:]
            first = recent[0]
            names = [item[0].name for item in recent[-period:]]
            self._names = frozenset(names)
            no_progress = all(item[1] for item in recent)
            episode = Episode(
                self._signal,
                self.threshold(period),
                facts,
                description=self._describe(names, no_progress),
                config=self.config,
                period=period,
                no_progress=no_progress,
                span_ids=[item[0].span_id for item in recent],
                started_step=first[0].index,
                started_ns=first[0].start_ns,
            )
            self._episode = episode
        else:
            episode.add(facts.span_id)
            if not known and episode.no_progress:
                episode.no_progress = False
                names = [item[0].name for item in list(self._evidence)[-period:]]
                episode.description = self._describe(names, False)
        detector._track(episode, repeats, facts, out)


def _describe_actions(names: list[str], no_progress: bool) -> str:
    shown = " -> ".join(names) if names else "the same tool calls"
    outcome = (
        "with the same results every time"
        if no_progress
        else "(results not recorded, so progress is unknown)"
    )
    return f"{shown} repeated {{count}} times {outcome} (period {{period}})"


def renewed_tail_cycles(
    cycles: TailCycles | None,
    signal: str,
    config: DetectorConfig,
    max_period: int,
    period_one_repeats: int,
    repeats: int,
    describe: Callable[[list[str], bool], str],
    long_repeats: int | None = None,
) -> TailCycles:
    """A detector's :class:`TailCycles` at its reset: ``cycles`` emptied when there is one
    (a detector's settings never change, so it is reused), else a new one."""
    if cycles is None:
        return TailCycles(signal, config, max_period, period_one_repeats, repeats, describe, long_repeats)
    cycles.reset()
    return cycles


class ActionCycleDetector(IncrementalDetector):
    """``action_cycle``: a (tool, arguments, result) pattern repeating at the tail (see module doc)."""

    signals = (ACTION_CYCLE,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool steps alone.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL})

    def reset(self) -> None:
        super().reset()
        config = self.config
        self._cycles = renewed_tail_cycles(
            getattr(self, "_cycles", None),
            ACTION_CYCLE,
            config,
            config.max_period,
            config.identical_repeats,
            config.cycle_repeats,
            _describe_actions,
            config.long_cycle_repeats,
        )
        self._progress_marks = 0
        #: The cycle episodes that ended, with the names of the calls they repeated.
        self._closed: list[tuple[Episode, frozenset[str]]] = []

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        if not facts.is_action:
            return []
        out: list[Finding] = []
        fingerprint = facts.action
        if facts.progressed:
            # Explicit progress (a rising percentage, a longer output) is a new item even
            # when the masked result repeats: it breaks any cycle it would have extended.
            self._progress_marks += 1
            fingerprint = ~self._progress_marks
        cycles = self._cycles
        cycles.push(fingerprint, facts, facts.result is not None, self, out)
        closed = cycles.closed
        if (
            closed is not None
            and closed[0].registered
            and (not self._closed or self._closed[-1][0] is not closed[0])
        ):
            self._closed.append(closed)
        if facts.poll_ended:
            # A poll that ended: the same call finally answered anew, so every cycle it
            # was repeated in was the wait, however other calls came between.
            for episode, names in self._closed:
                if facts.name in names:
                    episode.resolved = True
        return out
