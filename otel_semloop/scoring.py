"""Score one trace: detectors, then policy, then a :class:`~otel_semloop.verdict.Verdict`.

The one core every front door calls. It reads no clock and keeps no state between
traces, so it runs on any thread under its caller's time budget.

Two modes
    ``"default"``: the deterministic detectors (:mod:`otel_semloop.detectors.suite`) and
    the :class:`~otel_semloop.policy.Policy` decide label, score and action.
    ``"lexical"``: deepeval's ``AgentLoopDetectionMetric`` alone decides, as deepeval
    would. Either way its result is kept on ``verdict.lexical`` (``semloop.deepeval.*``).

A trace whose LLM and tool steps all lack readable content (content capture off, or a
form the conventions do not read) is not passed as healthy: when nothing conclusive is
found it is ``unscored``, ``step content not readable (N steps)`` (:func:`unreadable_steps`).

The scorer interface
    Front doors take any :class:`Scorer` (``score(trace) -> Verdict``). A
    :class:`StagedScorer` also yields verdicts in stages (``score_stages``, each better
    than the last: a deterministic verdict, then a judge's); a front door writes back the
    latest one yielded within its budget (``semloop.budget_exceeded=true`` when cut).
    :func:`stages_of` iterates either kind. Scorers run on several threads at once: keep
    no per-trace state on the object. :class:`DetectorScorer` is the default.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Literal, Protocol, runtime_checkable

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.lexical import LexicalDetector
from otel_semloop.detectors.suite import DetectorSuite
from otel_semloop.errors import ConfigError
from otel_semloop.model import StepKind, Trace
from otel_semloop.policy import Policy
from otel_semloop.verdict import Action, Label, Verdict

__all__ = [
    "UNREADABLE_REASON",
    "DetectorScorer",
    "Scorer",
    "ScorerMode",
    "StagedScorer",
    "collector_paused",
    "stages_of",
    "unreadable_steps",
]

ScorerMode = Literal["default", "lexical"]
_MODES = ("default", "lexical")


@runtime_checkable
class Scorer(Protocol):
    """Anything that turns a :class:`Trace` into a :class:`Verdict`.

    ``score`` runs on a scoring thread and may raise (the trace then leaves unscored,
    ``semloop.unscored.reason="scoring failed: <error type>"``). A trace without agent
    steps never reaches it from a front door.

    Calling ``Scorer(...)`` itself builds the default :class:`DetectorScorer` (kept for
    code written before this became a protocol).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is Scorer:
            return DetectorScorer(*args, **kwargs)
        return super().__new__(cls)

    def score(self, trace: Trace) -> Verdict: ...


@runtime_checkable
class StagedScorer(Scorer, Protocol):
    """A scorer whose verdict improves in stages: ``score_stages`` yields a first verdict
    quickly, then refined ones (e.g. after a remote judge answered). Front doors keep the
    latest yielded verdict; past their budget they write it back and stop waiting.
    ``score(trace)`` must return the final verdict (the last stage)."""

    def score_stages(self, trace: Trace) -> Iterator[Verdict]: ...


def stages_of(scorer: Scorer, trace: Trace) -> Iterator[Verdict]:
    """The verdicts of ``scorer`` for ``trace`` in order: every stage of a
    :class:`StagedScorer`, or the one verdict of ``score``."""
    stages = getattr(type(scorer), "score_stages", None)
    if stages is not None:
        yield from scorer.score_stages(trace)  # type: ignore[attr-defined]
    else:
        yield scorer.score(trace)


class DetectorScorer:
    """The default scorer: turns a :class:`Trace` into a :class:`Verdict`.

    ``config`` holds the detector thresholds (:class:`DetectorConfig`; by default the
    documented defaults overridden by any ``SEMLOOP_DETECT_*`` variables), ``policy`` the
    actions and label rules. A scorer keeps no
    per-trace state: one instance may score traces from many threads.
    """

    __slots__ = ("_local", "config", "lexical", "mode", "policy")

    def __init__(
        self,
        *,
        mode: ScorerMode = "default",
        config: DetectorConfig | None = None,
        policy: Policy | None = None,
        lexical: LexicalDetector | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ConfigError(f"unknown scorer mode {mode!r}; expected one of {', '.join(_MODES)}")
        self.mode = mode
        self.config = config if config is not None else DetectorConfig.from_env()
        self.policy = policy or Policy()
        self.lexical = lexical or LexicalDetector()
        # One detector suite per scoring thread, reset for each trace (building the twelve
        # detectors costs more than resetting them).
        self._local = threading.local()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its settings (process pools); the per-thread suites are not state."""
        return (_detector_scorer, (self.mode, self.config, self.policy, self.lexical))

    def _suite(self) -> DetectorSuite:
        suite: DetectorSuite | None = getattr(self._local, "suite", None)
        if suite is None:
            suite = self._local.suite = DetectorSuite(self.config)
        return suite

    def score(self, trace: Trace) -> Verdict:
        if not trace.steps:
            return Verdict.unscored("no agent steps in trace", partial=trace.partial)
        # Read from the steps (no tree view built): an LLM step's input (its whole message
        # history) is decoded only if the lexical walk needs its label (a type:name
        # collision on the ancestry path).
        lexical = self.lexical.evaluate_trace(trace)
        if self.mode == "lexical":
            loop = lexical.loop
            return Verdict(
                label=Label.LOOP if loop else Label.NO_LOOP,
                score=lexical.score,
                action=Action.STOP if loop else Action.CONTINUE,
                reason=lexical.reason,
                lexical=lexical,
                partial=trace.partial,
                threshold=lexical.threshold,
            )
        suite = self._suite()
        try:
            findings = suite.detect(trace)
            calibration = suite.calibration if self.config.calibration else None
        finally:
            # Replaying a trace keeps references to its text until a repeat needs it: let
            # go of them now rather than at the next trace (the novelty state alone).
            suite.release()
        verdict = self.policy.verdict(
            findings, lexical=lexical, partial=trace.partial, calibration=calibration
        )
        if verdict.label is Label.NO_LOOP:
            unread = unreadable_steps(trace)
            if unread:
                return replace(
                    Verdict.unscored(f"{UNREADABLE_REASON} ({unread} steps)", partial=trace.partial),
                    lexical=lexical,
                )
        return verdict


def _detector_scorer(
    mode: ScorerMode, config: DetectorConfig, policy: Policy, lexical: LexicalDetector
) -> DetectorScorer:
    return DetectorScorer(mode=mode, config=config, policy=policy, lexical=lexical)


#: The unscored reason of a trace whose LLM and tool steps carry nothing the detectors can
#: compare: content capture off, or messages in a form the convention layer does not read.
UNREADABLE_REASON = "step content not readable"


def unreadable_steps(trace: Trace) -> int:
    """How many LLM and tool steps ``trace`` has when *none* of them carries content the
    detectors can compare (messages, tool calls, arguments, results), else 0.

    Such a trace cannot be told healthy: without content every tool call is new by
    construction. It is reported unscored (:data:`UNREADABLE_REASON`), so it is counted
    and visible rather than passing as healthy; a trace whose failures alone prove a loop
    (a retry storm read from span status) keeps that verdict."""
    count = 0
    for step in trace.steps:
        if step.kind is StepKind.LLM:
            if step.output_text or step.tool_calls or step.input is not None:
                return 0
        elif step.kind is StepKind.TOOL:
            if step.tool_arguments is not None or step.tool_result is not None or step.output_text:
                return 0
        else:
            continue
        count += 1
    return count


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """CPython's cyclic garbage collector paused for one unit of batch work (a rescore
    chunk, a batch of traces in a scoring process), then resumed as it was.

    Why: parsing and scoring allocate many container objects (every JSON dict and list,
    every step and fact) and almost none of them form cycles, yet the collector walks them
    again and again as they pile up. Reference counting frees everything as before; the
    few cycles wait until the collector runs after the unit, so memory stays bounded by
    the unit's size."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
