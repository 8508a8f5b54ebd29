"""What every deterministic detector shares: the protocols, the detector base, episodes.

Two ways to run a detector
    Trace level: ``detect(trace) -> list[Finding]`` scores a finished trace (the CLI, the
    collector service). Incremental: ``observe(step, index) -> list[Finding]`` takes one
    step at a time, in the order the agent took them, and returns the findings whose
    severity just rose a level; ``reset()`` starts over. ``detect`` is nothing but a reset
    and a replay of ``observe``, so the offline verdict and the live guard cannot disagree.

No clock
    Nothing here reads a clock. Times come from ``step.start_ns``/``step.end_ns`` (Unix
    nanoseconds, possibly absent); tests and replays are exact.

Facts
    Detectors read each step through its :class:`~otel_semloop.detectors.facts.StepFacts`
    (digests, failure class, novelty), computed once per step by a
    :class:`~otel_semloop.detectors.facts.Fingerprinter` (:mod:`otel_semloop.detectors.facts`).

Episodes
    An :class:`Episode` is one occurrence of one pattern (one chain of repeats, one cycle,
    one storm) from the step that started it to the step that ended it. It tracks the
    severity (count / threshold), reports a finding each time the severity reaches a new
    level (warning at ``report_at``, conclusive at 1.0, then at 2, 4, 8... times the
    threshold) and keeps up to ``max_evidence_spans`` span ids. At the end of a trace each
    episode that reached a warning yields one finding, at its peak.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar, Protocol, runtime_checkable

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.facts import Fingerprinter, StepFacts
from otel_semloop.model import Step, Trace
from otel_semloop.verdict import Finding

__all__ = [
    "UNREPORTED",
    "Detector",
    "Episode",
    "Incremental",
    "IncrementalDetector",
    "replay",
]


@runtime_checkable
class Detector(Protocol):
    """Anything that scores a finished trace."""

    def detect(self, trace: Trace) -> list[Finding]: ...


class Incremental(Protocol):
    """Anything that scores a run step by step (a detector, a suite of them)."""

    def reset(self) -> None: ...

    def observe(self, step: Step, index: int) -> list[Finding]: ...

    def findings(self) -> list[Finding]: ...


def replay(scorer: Incremental, trace: Trace) -> list[Finding]:
    """``detect`` of an incremental scorer: a reset, ``observe`` on each step of ``trace``
    in order, then the findings (one per episode, at its peak)."""
    scorer.reset()
    for index, step in enumerate(trace.steps):
        scorer.observe(step, index)
    return scorer.findings()


class Episode:
    """One occurrence of a pattern: its count, severity, evidence and reporting level.

    ``threshold`` is the count at which severity is 1.0. ``update`` is O(1) except when it
    reports (a bounded number of times per episode: the levels are ``report_at``, 1, 2, 4,
    ... times the threshold), when building the finding copies the evidence span ids.
    """

    __slots__ = (
        "_level",
        "_peak_count",
        "_peak_ns",
        "_peak_repeats",
        "_peak_spans",
        "_peak_step",
        "count",
        "description",
        "detected_ns",
        "detected_step",
        "max_spans",
        "no_progress",
        "peak",
        "period",
        "permanent",
        "registered",
        "repeats",
        "report_at",
        "resolved",
        "signal",
        "span_ids",
        "started_ns",
        "started_step",
        "threshold",
    )

    def __init__(
        self,
        signal: str,
        threshold: float,
        facts: StepFacts,
        *,
        description: str,
        config: DetectorConfig,
        period: int = 0,
        no_progress: bool = False,
        permanent: bool = False,
        span_ids: Iterable[str] = (),
        started_step: int | None = None,
        started_ns: int | None = None,
    ) -> None:
        self.signal = signal
        self.threshold = float(threshold)
        self.description = description
        self.period = period
        self.no_progress = no_progress
        self.permanent = permanent
        self.max_spans = config.max_evidence_spans
        self.report_at = config.report_at
        self.span_ids: list[str] = [s for s in span_ids if s][: self.max_spans]
        self.started_step = facts.index if started_step is None else started_step
        self.started_ns = facts.start_ns if started_step is None else started_ns
        self.detected_step = facts.index
        self.detected_ns = facts.time_ns
        self.count: float = 0
        self.repeats = 0
        self.peak = 0.0
        self.resolved = False
        self.registered = False
        self._level = 0
        self._peak_count: float = 0
        self._peak_repeats = 0
        self._peak_step = facts.index
        self._peak_ns = facts.time_ns
        self._peak_spans = 0

    def add(self, span_id: str) -> None:
        """Add one step's span id to the evidence (bounded)."""
        if span_id and len(self.span_ids) < self.max_spans:
            self.span_ids.append(span_id)

    @property
    def severity(self) -> float:
        return self.count / self.threshold if self.threshold > 0 else 0.0

    def update(self, count: float, facts: StepFacts, repeats: int | None = None) -> Finding | None:
        """Set the count as of ``facts``' step; return a finding when a new level is reached.

        ``count`` is what the threshold measures (repeats, seconds, tokens); ``repeats``
        is what the finding reports as repeats when that differs from ``count``.
        """
        return self.finding() if self.rise(count, facts, repeats) else None

    def rise(self, count: float, facts: StepFacts, repeats: int | None = None) -> bool:
        """:meth:`update` without building the finding: whether a new level was reached."""
        # (``severity`` and ``facts.time_ns`` written out: a stuck run updates several
        # episodes on every step, and each property read is a call.)
        self.count = count
        if repeats is None:
            repeats = int(count)
        self.repeats = repeats
        index = facts.index
        time_ns = facts.end_ns
        if time_ns is None:
            time_ns = facts.start_ns
        self.detected_step = index
        self.detected_ns = time_ns
        threshold = self.threshold
        severity = count / threshold if threshold > 0 else 0.0
        if severity >= self.peak:
            self.peak = severity
            self._peak_count = count
            self._peak_repeats = repeats
            self._peak_step = index
            self._peak_ns = time_ns
            self._peak_spans = len(self.span_ids)
        if severity < self.report_at:
            return False
        level = 1 if severity < 1.0 else 2 + int(math.log2(severity))
        if level <= self._level:
            return False
        self._level = level
        return True

    def finding(self) -> Finding:
        """The finding at the episode's peak severity so far."""
        return Finding(
            signal=self.signal,
            severity=round(self.peak, 4),
            description=self.description.replace("{count}", _figure(self._peak_count)).replace(
                "{period}", str(self.period)
            ),
            repeats=self._peak_repeats,
            period=self.period,
            span_ids=tuple(self.span_ids[: self._peak_spans]),
            started_step=self.started_step,
            detected_step=self._peak_step,
            started_ns=self.started_ns,
            detected_ns=self._peak_ns,
            no_progress=self.no_progress,
            permanent=self.permanent,
        )


class IncrementalDetector(ABC):
    """Base of the deterministic detectors: the incremental protocol and its bookkeeping.

    Subclasses implement :meth:`observe_facts` (and extend :meth:`reset`), create
    :class:`Episode` objects for the patterns they track and pass every count change
    through :meth:`_track`, which keeps calibration peaks and the reported episodes.
    """

    #: The signal names this detector can report.
    signals: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: DetectorConfig | None = None) -> None:
        self.config = config or DetectorConfig()
        self._fingerprinter: Fingerprinter | None = None
        #: Whether ``observe`` returns the findings that just rose a level (it always
        #: records them for :meth:`findings`). A replay that drops them turns it off
        #: (building a finding copies the evidence and writes its description): ``observe``
        #: then returns :data:`UNREPORTED` in their place.
        self.reporting = True
        #: Every signal at 0.0: what :meth:`reset` copies into ``_peaks`` (a copy costs
        #: about a third of ``dict.fromkeys``, and a scorer resets for every trace).
        self._no_peaks: dict[str, float] = dict.fromkeys(self.signals, 0.0)
        self.reset()

    def reset(self) -> None:
        """Forget everything: the next step starts a new run.

        A scorer resets its detectors for every trace, so a reset empties what it can in
        place rather than building it again (nothing outside a detector holds its
        containers: :meth:`findings` and :attr:`calibration` hand out new ones).
        Subclasses extend it the same way."""
        try:
            self._episodes.clear()
        except AttributeError:  # the first reset (from ``__init__``)
            self._episodes: list[Episode] = []
        self._peaks: dict[str, float] = self._no_peaks.copy()
        if self._fingerprinter is not None:
            self._fingerprinter.reset()

    def observe(self, step: Step, index: int) -> list[Finding]:
        """Feed one step (``index`` is its position in the run); return the findings whose
        severity just reached a new level (warning, conclusive, then each doubling)."""
        if self._fingerprinter is None:
            self._fingerprinter = Fingerprinter(self.config)
        return self.observe_facts(self._fingerprinter.facts(step, index), step)

    @abstractmethod
    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        """Like :meth:`observe`, with the facts computed by a shared fingerprinter."""

    def detect(self, trace: Trace) -> list[Finding]:
        """All findings of a finished trace: one per episode that reached a warning, at its peak."""
        reporting, self.reporting = self.reporting, False  # (the per-step findings are dropped)
        try:
            return replay(self, trace)
        finally:
            self.reporting = reporting

    def findings(self) -> list[Finding]:
        """One finding per reported episode so far, at its peak; resolved episodes left out."""
        episodes = self._episodes
        if not episodes:  # (most detectors of most traces: no comprehension to run)
            return []
        return [episode.finding() for episode in episodes if not episode.resolved]

    @property
    def calibration(self) -> dict[str, float]:
        """Per signal, the highest severity reached so far (also below a warning)."""
        return {signal: round(peak, 4) for signal, peak in self._peaks.items()}

    def _track(
        self, episode: Episode, count: float, facts: StepFacts, out: list[Finding], repeats: int | None = None
    ) -> None:
        """Update ``episode`` to ``count``; when it rises a level, record it for
        :meth:`findings` and append its finding to ``out`` (when not :attr:`reporting`,
        :data:`UNREPORTED` in its place: a detector may test whether anything rose)."""
        if episode.rise(count, facts, repeats):
            if not episode.registered:
                episode.registered = True
                self._episodes.append(episode)
            out.append(episode.finding() if self.reporting else UNREPORTED)  # type: ignore[arg-type]
        if episode.peak > self._peaks.get(episode.signal, 0.0):
            self._peaks[episode.signal] = episode.peak


#: What a detector that is not :attr:`~IncrementalDetector.reporting` appends to its
#: step's findings for an episode that rose a level (its caller drops them unread).
UNREPORTED = object()


def _figure(value: float) -> str:
    """A count for a sentence: integers as such, amounts with up to two decimals."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")
