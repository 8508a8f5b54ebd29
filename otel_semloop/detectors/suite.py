"""The default detector set, run together over one shared fingerprinter.

:class:`DetectorSuite` computes each step's facts once (digests, failure class, novelty)
and hands them to every detector, so the cost of a step is one normalisation plus each
detector's O(1) or O(max_period) update. It is what the CLI, the collector service and
:class:`~otel_semloop.processor.live.LiveMonitor` run. Not thread-safe: one suite per
trace, fed by one thread at a time.

Dispatch by step kind
    A detector class may declare ``kinds``, the :class:`~otel_semloop.model.StepKind` values
    whose steps its ``observe_facts`` reads; it then promises that a step of any other kind
    changes nothing and reports nothing. The suite keeps one list of detectors per kind
    and calls only those (an LLM step reaches 5 of the 12 default detectors, not all).
    A detector without ``kinds`` gets every step; a subclass inherits its parent's (declare
    it again if it reads more). The lists are made when the suite is built: detectors added
    to ``detectors`` afterwards are not called. ``tests/detectors/test_dispatch.py``
    holds each default detector to its declaration: fed every step, or only the steps of
    its kinds, it reports the same findings and calibration after every step.
    A detector class that reads tool steps may also declare ``plain_tool_steps = False``:
    it reads hand-offs (``step.handoff_to``) and final-answer tools
    (:func:`~otel_semloop.detectors.text.is_answer_tool`) alone, and a plain tool call
    (:func:`plain_tool_step`: most steps of most traces) changes nothing for it and reports
    nothing; the suite keeps a list of the readers of plain tool calls too (10 of 12).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from otel_semloop.detectors.agents import HandoffCycleDetector
from otel_semloop.detectors.base import IncrementalDetector
from otel_semloop.detectors.budgets import BudgetDetector
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.cycles import ActionCycleDetector
from otel_semloop.detectors.facts import Fingerprinter, StepFacts
from otel_semloop.detectors.failures import FailureDetector, RetryStormDetector
from otel_semloop.detectors.progress import (
    CallCeilingDetector,
    NearDuplicateDetector,
    RepeatedResultDetector,
    SameAnswerDetector,
)
from otel_semloop.detectors.stale import StaleDetector
from otel_semloop.detectors.text import (
    ChantingDetector,
    MonologueDetector,
    RestatementDetector,
    is_answer_tool,
)
from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.verdict import Finding

__all__ = [
    "DetectorSuite",
    "default_detectors",
    "kinds_read",
    "plain_tool_step",
    "reads_plain_tool_calls",
    "reads_step",
]


def kinds_read(detector: IncrementalDetector) -> frozenset[StepKind]:
    """The step kinds ``detector`` declares it reads (its class's ``kinds``), every kind
    when it declares none."""
    declared = getattr(type(detector), "kinds", None)
    return frozenset(StepKind) if declared is None else frozenset(declared)


def plain_tool_step(step: Step) -> bool:
    """A tool call that is neither a hand-off nor a final-answer tool (see the module doc)."""
    return step.kind is StepKind.TOOL and not step.handoff_to and not is_answer_tool(step.name)


def reads_plain_tool_calls(detector: IncrementalDetector) -> bool:
    """Whether ``detector`` reads tool steps and its class does not declare
    ``plain_tool_steps = False`` (see the module doc)."""
    return StepKind.TOOL in kinds_read(detector) and getattr(type(detector), "plain_tool_steps", True)


def reads_step(detector: IncrementalDetector, step: Step) -> bool:
    """Whether the suite hands ``step`` to ``detector``."""
    if plain_tool_step(step):
        return reads_plain_tool_calls(detector)
    return step.kind in kinds_read(detector)


def default_detectors(config: DetectorConfig | None = None) -> list[IncrementalDetector]:
    """One of each default detector; the budget detector only when a budget is set."""
    config = config or DetectorConfig()
    detectors: list[IncrementalDetector] = [
        ActionCycleDetector(config),
        RepeatedResultDetector(config),
        NearDuplicateDetector(config),
        SameAnswerDetector(config),
        CallCeilingDetector(config),
        StaleDetector(config),
        FailureDetector(config),
        RetryStormDetector(config),
        MonologueDetector(config),
        RestatementDetector(config),
        ChantingDetector(config),
        HandoffCycleDetector(config),
    ]
    budgets = BudgetDetector(config)
    if budgets.enabled:
        detectors.append(budgets)
    return detectors


class DetectorSuite:
    """Several incremental detectors fed from one :class:`Fingerprinter`.

    ``observe`` per step, ``detect`` for a whole trace, ``findings`` and ``calibration``
    for the state so far. Detectors passed in must share this suite's ``config``.
    """

    def __init__(
        self,
        config: DetectorConfig | None = None,
        detectors: Sequence[IncrementalDetector] | None = None,
    ) -> None:
        self.config = config or DetectorConfig()
        self.detectors: list[IncrementalDetector] = (
            list(detectors) if detectors is not None else default_detectors(self.config)
        )
        self._fingerprinter = Fingerprinter(self.config)
        # Per step kind, the bound ``observe_facts`` of the detectors that read it, in the
        # suite's order (findings keep the order they would have without dispatch).
        self._observers: dict[StepKind, tuple[Callable[[StepFacts, Step], list[Finding]], ...]] = {
            kind: tuple(d.observe_facts for d in self.detectors if kind in kinds_read(d)) for kind in StepKind
        }
        #: The same for a plain tool call (:func:`plain_tool_step`).
        self._plain_tool_observers = tuple(
            d.observe_facts for d in self.detectors if reads_plain_tool_calls(d)
        )

    def release(self) -> None:
        """Forget the novelty state (digests and the text references a replay keeps), not
        the detectors' findings: for a caller done with the trace that keeps the suite."""
        self._fingerprinter.reset()

    def reset(self) -> None:
        self._fingerprinter.reset()
        for detector in self.detectors:
            detector.reset()

    def observe(self, step: Step, index: int) -> list[Finding]:
        """Feed one step; the findings that just reached a new level (see ``IncrementalDetector``)."""
        facts = self._fingerprinter.facts(step, index)
        out: list[Finding] = []
        observers = self._plain_tool_observers if plain_tool_step(step) else self._observers[step.kind]
        for observe in observers:
            found = observe(facts, step)
            if found:
                out.extend(found)
        return out

    def detect(self, trace: Trace) -> list[Finding]:
        """All findings of a finished trace (one per episode, at its peak)."""
        fingerprinter = self._fingerprinter
        lazy, fingerprinter.lazy = fingerprinter.lazy, True  # the trace holds the text anyway
        detectors = self.detectors
        reporting = [getattr(detector, "reporting", True) for detector in detectors]
        for detector in detectors:
            detector.reporting = False  # the per-step findings are not collected: not built
        try:
            # ``replay(self, trace)``, with the per-step findings (which a replay drops) not
            # collected: the same calls in the same order.
            self.reset()
            facts_of, by_kind, plain = fingerprinter.facts, self._observers, self._plain_tool_observers
            for index, step in enumerate(trace.steps):
                facts = facts_of(step, index)
                kind = step.kind
                # ``plain_tool_step(step)`` written out (a call per step saved).
                if kind is StepKind.TOOL and not step.handoff_to and not is_answer_tool(step.name):
                    observers = plain
                else:
                    observers = by_kind[kind]
                for observe in observers:
                    observe(facts, step)
            return self.findings()
        finally:
            fingerprinter.lazy = lazy
            for detector, was in zip(detectors, reporting, strict=True):
                detector.reporting = was

    def findings(self) -> list[Finding]:
        return [finding for detector in self.detectors for finding in detector.findings()]

    @property
    def calibration(self) -> dict[str, float]:
        """Per signal, the peak severity reached so far, also below a warning."""
        merged: dict[str, float] = {}
        for detector in self.detectors:
            for signal, peak in detector.calibration.items():
                merged[signal] = max(peak, merged.get(signal, 0.0))
        return merged
