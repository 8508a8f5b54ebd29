"""No progress over a stretch: tool steps none of which is novel, by count, time and window.

"Novel" is the fingerprinter's: a tool step whose (action, result) pair was not seen
before in the run, or whose result shows explicit progress beyond anything the same call
returned before (:mod:`otel_semloop.detectors.facts`). The detectors of the same call or
result repeated are :mod:`otel_semloop.detectors.progress`; this one asks only how long
nothing new has happened, whatever was repeated.

Signals
    ``stale_steps`` / ``stale_time`` / ``stale_window``
        A stretch of tool steps none of which is novel: conclusive at ``stale_steps`` (12)
        such steps in a row, or, when spans carry times, ``stale_seconds`` (600) since the
        last novel tool step ended. ``stale_window`` measures novelty over a sliding
        window of the last ``stale_window`` (16) tool steps: conclusive when all but
        ``stale_window_novel`` (4) of them repeated earlier actions and results, which
        catches a run rotating through trivial commands with a little novelty now and
        then. Explicit progress clears the window. ``no_progress``. A poll that ends
        (the call's first new answer after repeating itself) resolves the open stale
        episodes.

Kept
    Counters, the time of the last novel tool step, and a window of ``stale_window``
    flags. Never arguments or results.

Cost
    O(1) per tool step; memory O(stale_window).
"""

from __future__ import annotations

from collections import deque
from typing import ClassVar

from otel_semloop.detectors.base import Episode, IncrementalDetector
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = ["STALE_STEPS", "STALE_TIME", "STALE_WINDOW", "StaleDetector"]

STALE_STEPS = "stale_steps"
STALE_TIME = "stale_time"
STALE_WINDOW = "stale_window"


class StaleDetector(IncrementalDetector):
    """``stale_steps`` / ``stale_time``: tool steps with nothing novel, by count and by time."""

    signals = (STALE_STEPS, STALE_TIME, STALE_WINDOW)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool steps alone.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL})

    def reset(self) -> None:
        super().reset()
        self._run = 0
        self._last_novel_ns: int | None = None
        self._steps_episode: Episode | None = None
        self._time_episode: Episode | None = None
        window: deque[bool] | None = getattr(self, "_window", None)
        if window is None:
            self._window = deque(maxlen=self.config.stale_window)
        else:
            window.clear()
        self._window_stale = 0
        self._window_episode: Episode | None = None
        config = self.config
        #: Stale steps in the window at which the window's severity is 1.0, and at which
        #: it is worth a warning (fixed by the config: computed once).
        self._window_threshold = max(1, config.stale_window - config.stale_window_novel)
        self._window_warning = config.report_at * self._window_threshold

    def _slide(self, facts: StepFacts, out: list[Finding]) -> None:
        """Move the novelty window on by one tool step and track its staleness."""
        config = self.config
        window = self._window
        if facts.progressed or facts.poll_ended:
            window.clear()
            self._window_stale = 0
            self._window_episode = None
            return
        stale = not facts.novel
        if len(window) == window.maxlen and window[0]:
            self._window_stale -= 1
        window.append(stale)
        self._window_stale += stale
        if self._window_stale < self._window_warning:
            self._window_episode = None
            return
        if self._window_episode is None:
            self._window_episode = Episode(
                STALE_WINDOW,
                self._window_threshold,
                facts,
                description=(
                    f"{{count}} of the last {config.stale_window} tool steps repeated earlier "
                    "actions and results"
                ),
                config=config,
                no_progress=True,
            )
        if stale:
            self._window_episode.add(facts.span_id)
        self._track(self._window_episode, self._window_stale, facts, out)

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        if not facts.is_action:
            return []
        out: list[Finding] = []
        if facts.poll_ended:
            # The stale stretch was a wait that ended with a new answer to the same call.
            for episode in (self._steps_episode, self._time_episode, self._window_episode):
                if episode is not None:
                    episode.resolved = True
        self._slide(facts, out)
        if facts.novel:
            self._run = 0
            # ``facts.time_ns`` written out (a property: a call on most tool steps).
            end_ns = facts.end_ns
            self._last_novel_ns = end_ns if end_ns is not None else facts.start_ns
            self._steps_episode = self._time_episode = None
            return out
        self._run += 1
        config = self.config
        if self._steps_episode is None:
            self._steps_episode = Episode(
                STALE_STEPS,
                config.stale_steps,
                facts,
                description="{count} tool steps in a row repeated earlier actions and results",
                config=config,
                no_progress=True,
            )
        self._steps_episode.add(facts.span_id)
        self._track(self._steps_episode, self._run, facts, out)
        now, since = facts.end_ns, self._last_novel_ns
        if now is None:
            now = facts.start_ns  # (``facts.time_ns`` written out)
        if config.stale_seconds and now is not None and since is not None and now > since:
            if self._time_episode is None:
                self._time_episode = Episode(
                    STALE_TIME,
                    config.stale_seconds,
                    facts,
                    description="no new tool action or result for {count} s",
                    config=config,
                    no_progress=True,
                )
            self._time_episode.add(facts.span_id)
            self._track(self._time_episode, (now - since) / 1e9, facts, out, repeats=self._run)
        return out
