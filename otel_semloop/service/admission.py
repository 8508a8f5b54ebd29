"""How far scoring is behind, so that the receivers push back before traces run out of budget.

A trace accepted now is released ``grace`` seconds after its last span, then waits behind
every span already queued for a scorer; if that wait exceeds the scoring budget it leaves
unscored. So the service refuses new requests (retryably) once the *predicted* wait passes
a share of the budget:

    wait = (spans queued for scoring + agent share x spans accepted in the last grace)
           / spans the scorers get through per second

``queued`` counts spans handed to the scorers and not yet delivered; the intake of the last
``grace`` seconds is scaled by the share of released spans that needed a scorer (traces
without agent steps cost nothing); ``rate`` is spans delivered per second of *busy* time
(a release queued or being scored), an EWMA, so it measures what the scorers can do even
while admission keeps them fed only part of the time. It starts from a low guess, so that
a burst at start is refused rather than queued past its budget, and is measured within the
first tenth of a second of busy time.

Loop-thread only. O(1) per call; the intake window holds one entry per request of the last
``grace`` seconds.
"""

from __future__ import annotations

import collections

__all__ = ["ScoringLoad"]

#: Spans a second one scorer is assumed to get through before the first measurement: low
#: (real scorers do thousands), so that the burst a service meets at start is refused
#: rather than queued past its budget; measured within the first 0.1 s of busy time.
INITIAL_RATE_PER_SCORER = 200.0
#: Busy seconds before the first measurement, then seconds per sample; a new sample's weight.
FIRST_SAMPLE_SECONDS = 0.1
SAMPLE_SECONDS = 0.5
_ALPHA = 0.3


class ScoringLoad:
    """The measured scoring backlog (see the module docstring). Times are the caller's
    monotonic seconds."""

    def __init__(self, grace: float, scorers: int) -> None:
        self._grace = grace
        self.rate = INITIAL_RATE_PER_SCORER * max(1, scorers)
        self.measured = False
        #: Spans handed to scorers and not yet delivered.
        self.queued = 0
        #: Share of released spans that needed a scorer (EWMA).
        self.agent_share = 1.0
        self._intake: collections.deque[tuple[float, int]] = collections.deque()
        self._intake_spans = 0
        self._window_start: float | None = None
        self._busy_since: float | None = None
        self._busy = 0.0
        self._scored = 0
        self._released = 0
        self._to_scorers = 0

    def accepted(self, now: float, spans: int) -> None:
        """A request's spans were accepted."""
        self._intake.append((now, spans))
        self._intake_spans += spans

    def released(self, now: float, spans: int, to_scorers: bool) -> None:
        """A release left the buffer: to a scorer, or straight out (no agent steps)."""
        self._released += spans
        if to_scorers and spans:
            self._to_scorers += spans
            if self.queued == 0:
                self._busy_since = now
            self.queued += spans

    def delivered(self, now: float, spans: int, scored: bool) -> None:
        """A release handed to the scorers left (``scored``: by a scorer, not the budget)."""
        self.queued = max(0, self.queued - spans)
        if scored:
            self._scored += spans
        if self.queued == 0 and self._busy_since is not None:
            self._busy += now - self._busy_since
            self._busy_since = None

    def wait(self, now: float) -> float:
        """Predicted seconds a trace accepted now waits for a scorer once released."""
        intake = self._intake
        horizon = now - self._grace
        while intake and intake[0][0] < horizon:
            self._intake_spans -= intake.popleft()[1]
        return (self.queued + self.agent_share * self._intake_spans) / self.rate

    def sample(self, now: float) -> None:
        """Update the rate and the agent share (call on the tick)."""
        if self._window_start is None:
            self._window_start = now
            return
        busy = self._busy
        if self._busy_since is not None:
            busy += now - self._busy_since
        enough = busy >= FIRST_SAMPLE_SECONDS and self._scored > 0
        if now - self._window_start < SAMPLE_SECONDS and not (enough and not self.measured):
            return  # the first measurement is taken as soon as there is one
        if enough:
            observed = self._scored / busy
            self.rate = observed if not self.measured else (1 - _ALPHA) * self.rate + _ALPHA * observed
            self.measured = True
        if self._released:
            share = self._to_scorers / self._released
            self.agent_share = (1 - _ALPHA) * self.agent_share + _ALPHA * share
        self._window_start = now
        self._released = self._to_scorers = 0
        if not self.measured:
            # Busy time adds up across windows until the first measurement: while the low
            # guess admits only short bursts, no single window holds enough of it.
            return
        self._scored = 0
        self._busy = 0.0
        if self._busy_since is not None:
            self._busy_since = now
