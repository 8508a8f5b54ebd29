"""Failures: the same call failing the same way, and retry storms.

A step failed when its span says so (status ERROR, ``error.type``, an ``exception``
event) or, for a tool, when its result text starts with ``error``/``exception``/
``traceback``/``fatal``. Each failure gets a kind and a class label from
:func:`otel_semloop.detectors.failure_class.classify_failure`.

Signals
    ``permanent_error``
        The same call (tool and canonical arguments, or LLM name and input) failing twice
        with the same permanent class (401, 403, 404, invalid arguments), with no novel
        tool step between: conclusive at ``permanent_error_repeats`` (2), as LoopGuard
        stops at the 2nd. The same request cannot start succeeding. ``permanent`` and
        ``no_progress``. A novel successful tool step afterwards *resolves* it (as it
        does ``repeated_error``): the agent gave up on the failing call and moved on (a
        missing path, then listing the folder and reading the right file). Live, the stop
        has been advised by then; a long failing run stays a loop through the repetition
        signals (``repeated_result``, ``action_cycle``), which no later success resolves.
    ``repeated_error``
        The same call failing with the same other class (a compile error, a failed
        command), nothing novel between: conclusive at ``repeated_error_repeats`` (3),
        OpenHands' 3 identical actions ending in errors. ``no_progress``.
    ``transient_error``
        The same call failing with a transient class (429, 5xx, timeouts) again and again:
        conclusive at ``transient_error_repeats`` (5). Retrying a transient error is what
        clients should do, so this is repetition alone (not ``no_progress``), and once the
        same call succeeds the episode is *resolved*: it stays out of the trace's findings
        (transient errors that end in success are not a loop). Live, the warning has
        already been given by then, which is right: nobody knew it would recover.
    ``retry_storm``
        Consecutive failed LLM or tool calls, of any call and any class: conclusive at
        ``retry_storm_failures`` (6). A completed tool call ends the storm, and so does an
        LLM answer that asks for no tool call when only LLM calls were failing; an LLM call
        that only asks for the next attempt (it requests tool calls), the agent speaking
        while a tool keeps failing, and a sleep between attempts do not. A storm that
        ends in successful work is *resolved* and stays out of the verdict (the failures
        stopped). A storm the run ends inside never recovered: at the end of the trace its
        finding is ``no_progress`` (a stuck run, ``loop``). Live, the storm is repetition
        alone until then: nobody knows yet whether the next call works.

Kept
    Per failing call digest: its class label, count, epoch and episode, in an LRU bounded
    by ``seen_capacity``; the current storm's length. Never messages or results.

Cost
    O(1) per step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import ClassVar

from otel_semloop.detectors.base import Episode, IncrementalDetector
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.detectors.failure_class import FailureKind
from otel_semloop.detectors.lru import LRU
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = [
    "PERMANENT_ERROR",
    "REPEATED_ERROR",
    "RETRY_STORM",
    "TRANSIENT_ERROR",
    "FailureDetector",
    "RetryStormDetector",
]

PERMANENT_ERROR = "permanent_error"
REPEATED_ERROR = "repeated_error"
TRANSIENT_ERROR = "transient_error"
RETRY_STORM = "retry_storm"

_LLM, _TOOL = StepKind.LLM, StepKind.TOOL

_SIGNAL = {
    FailureKind.PERMANENT: PERMANENT_ERROR,
    FailureKind.OTHER: REPEATED_ERROR,
    FailureKind.TRANSIENT: TRANSIENT_ERROR,
}


class _Failing:
    __slots__ = ("count", "episode", "epoch", "first", "label")

    def __init__(self, label: str, epoch: int, first: StepFacts) -> None:
        self.label = label
        self.epoch = epoch
        self.first = first
        self.count = 1
        self.episode: Episode | None = None


class FailureDetector(IncrementalDetector):
    """``permanent_error``, ``repeated_error``, ``transient_error`` (see module doc)."""

    signals = (PERMANENT_ERROR, REPEATED_ERROR, TRANSIENT_ERROR)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool and LLM calls.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL, StepKind.LLM})

    def reset(self) -> None:
        super().reset()
        failing: LRU | None = getattr(self, "_failing", None)
        if failing is None:
            self._failing = LRU(self.config.seen_capacity)
            # Permanent / repeated-error episodes not yet resolved (bounded like the digests).
            self._open: deque[Episode] = deque(maxlen=self.config.seen_capacity)
        else:
            failing.clear()
            self._open.clear()

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        kind = step.kind  # (not ``facts.kind``: see ``suite``, dispatch by step kind)
        if (kind is not _TOOL and kind is not _LLM) or facts.unanswered:
            return []
        failure = facts.failure
        failing = self._failing
        if failure is None:
            # ``facts.call`` is read only when some call is failing: for an LLM step it may
            # be computed on first read (the digest of the whole input).
            done: _Failing | None = failing.pop(facts.call) if failing.data else None  # type: ignore[assignment]
            if done is not None and done.episode is not None and done.episode.signal == TRANSIENT_ERROR:
                done.episode.resolved = True  # the retry worked: not a loop
            if self._open and kind is _TOOL and facts.novel:
                # New successful work after the failures: the agent gave up on the failing
                # call and moved on (a missing path, then listing the folder and reading
                # the right file). A long failing run is still caught by the repetition
                # signals, which no later success resolves.
                for episode in self._open:
                    episode.resolved = True
                self._open.clear()
            return []
        record: _Failing | None = failing.pop(facts.call)  # type: ignore[assignment]
        if record is not None and record.label == failure.label and record.epoch == facts.epoch:
            record.count += 1
        else:
            record = _Failing(failure.label, facts.epoch, facts)
        failing.put(facts.call, record)
        if record.count < 2:
            return []
        config = self.config
        if record.episode is None:
            if failure.kind is FailureKind.PERMANENT:
                threshold, what = config.permanent_error_repeats, "a permanent error"
            elif failure.kind is FailureKind.TRANSIENT:
                threshold, what = config.transient_error_repeats, "a transient error"
            else:
                threshold, what = config.repeated_error_repeats, "the same error"
            record.episode = Episode(
                _SIGNAL[failure.kind],
                threshold,
                record.first,
                description=f"{facts.name} failed {{count}} times in a row with {what} ({failure.label})",
                config=config,
                period=1,
                no_progress=failure.kind is not FailureKind.TRANSIENT,
                permanent=failure.kind is FailureKind.PERMANENT,
                span_ids=(record.first.span_id,),
            )
            if failure.kind is not FailureKind.TRANSIENT:
                self._open.append(record.episode)
        record.episode.add(facts.span_id)
        out: list[Finding] = []
        self._track(record.episode, record.count, facts, out)
        return out


class RetryStormDetector(IncrementalDetector):
    """``retry_storm``: failed LLM or tool calls in a row with nothing completed between."""

    signals = (RETRY_STORM,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool and LLM calls.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL, StepKind.LLM})

    def reset(self) -> None:
        super().reset()
        self._run = 0
        self._episode: Episode | None = None
        #: The current storm holds a failed tool call: only a completed tool call ends it.
        self._tools_failing = False

    def findings(self) -> list[Finding]:
        """As for every detector; a storm still open (the run ended inside it) never
        recovered, so its finding proves no progress."""
        found = super().findings()
        open_storm = self._episode
        if open_storm is None or not open_storm.registered or open_storm.resolved:
            return found
        last = open_storm.finding()
        stuck = replace(
            last,
            no_progress=True,
            description=last.description + " and the run ended inside the storm",
        )
        return [stuck if finding == last else finding for finding in found]

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        kind = step.kind  # (not ``facts.kind``: see ``suite``, dispatch by step kind)
        if kind is not _TOOL and kind is not _LLM:
            return []
        if facts.failure is None:
            if facts.wait or facts.unanswered:
                return []  # a sleep between attempts, a call with no outcome: the storm goes on
            if kind is _LLM and (facts.has_tool_calls or self._tools_failing):
                # The agent asking for its next attempt, or speaking while a tool keeps
                # failing: neither is the failing call working again.
                return []
            if self._episode is not None and self._episode.registered:
                self._episode.resolved = True  # the failures stopped: not a stuck run
            self._run = 0
            self._episode = None
            self._tools_failing = False
            return []
        self._run += 1
        if kind is _TOOL:
            self._tools_failing = True
        if self._episode is None:
            self._episode = Episode(
                RETRY_STORM,
                self.config.retry_storm_failures,
                facts,
                description="{count} LLM or tool calls failed in a row with nothing completed between",
                config=self.config,
                span_ids=(facts.span_id,),
            )
        else:
            self._episode.add(facts.span_id)
        out: list[Finding] = []
        self._track(self._episode, self._run, facts, out)
        return out
