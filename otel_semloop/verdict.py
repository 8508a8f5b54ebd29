"""What detectors report (:class:`Finding`) and what a scored trace ends up with
(:class:`Verdict`). Both are plain frozen data so they cross threads and processes freely.

Polarity follows deepeval: ``score`` is 1.0 for a healthy trace and falls toward 0.0 as
the loop evidence grows; a trace is a loop when its score is below the threshold.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field


class Action(str, enum.Enum):
    """What the policy recommends, mildest first (comparisons follow this order)."""

    CONTINUE = "continue"
    WARN = "warn"
    REPLAN = "replan"
    PAUSE = "pause"
    STOP = "stop"

    @property
    def rank(self) -> int:
        return _ACTION_ORDER.index(self)


_ACTION_ORDER = list(Action)


class Label(str, enum.Enum):
    LOOP = "loop"
    SUSPECTED = "suspected"
    NO_LOOP = "no_loop"
    UNSCORED = "unscored"


@dataclass(frozen=True, slots=True)
class Finding:
    """One detector signal with its evidence.

    ``severity`` is the fraction of the signal's threshold reached: 1.0 or more is
    conclusive, from 0.5 it is worth a warning. ``no_progress`` says the evidence
    includes unchanged results (repetition *and* nothing learned), which the default
    policy treats as a stop rather than a warning. ``span_ids`` are the steps that form
    the pattern; ``started_*``/``detected_*`` locate it by step index and, when spans
    carry times, by Unix nanoseconds.
    """

    signal: str
    severity: float
    description: str
    repeats: int = 0
    period: int = 0
    span_ids: tuple[str, ...] = ()
    started_step: int | None = None
    detected_step: int | None = None
    started_ns: int | None = None
    detected_ns: int | None = None
    no_progress: bool = False
    permanent: bool = False

    @property
    def conclusive(self) -> bool:
        return self.severity >= 1.0

    def describe(self) -> str:
        """A sentence a person can act on."""
        where = ""
        if self.started_step is not None and self.detected_step is not None:
            where = f" (steps {self.started_step}-{self.detected_step})"
        return f"{self.signal}: {self.description}{where}"


@dataclass(frozen=True, slots=True)
class LexicalResult:
    """deepeval's AgentLoopDetectionMetric answer: score, sub-scores, reason text."""

    score: float
    breakdown: Mapping[str, float]
    reason: str
    threshold: float = 0.5

    @property
    def loop(self) -> bool:
        return self.score < self.threshold


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome for one trace, ready to be written back onto its spans."""

    label: Label
    score: float
    action: Action = Action.CONTINUE
    reason: str = ""
    findings: tuple[Finding, ...] = ()
    lexical: LexicalResult | None = None
    in_loop_span_ids: frozenset[str] = frozenset()
    partial: bool = False
    unscored_reason: str = ""
    calibration: Mapping[str, float] = field(default_factory=dict)
    threshold: float = 0.5
    #: Extra root-span attributes a scorer adds (the judge's ``semloop.judge.*``).
    attributes: Mapping[str, object] = field(default_factory=dict)

    @property
    def loop_detected(self) -> bool:
        return self.label is Label.LOOP

    @property
    def fired_signals(self) -> tuple[str, ...]:
        """Signals that reached a warning (severity >= 0.5), in first-seen order."""
        return tuple(dict.fromkeys(f.signal for f in self.findings if f.severity >= 0.5))

    @classmethod
    def unscored(cls, reason: str, partial: bool = False) -> Verdict:
        return cls(label=Label.UNSCORED, score=1.0, reason=reason, unscored_reason=reason, partial=partial)
