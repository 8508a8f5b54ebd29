"""Score one trace: detectors, then policy, then a :class:`~otel_semloop.verdict.Verdict`.

This is the one core every front door calls (the span processor, the collector service,
``otel-semloop rescore``). It reads no clock and holds no state between traces, so it can
run on any thread and be bounded by its caller's time budget.

Two modes
    ``"default"``: the deterministic detectors (:mod:`otel_semloop.detectors.suite`) and
    the :class:`~otel_semloop.policy.Policy` decide the label, score and action.
    ``"lexical"``: deepeval's ``AgentLoopDetectionMetric`` alone decides, as deepeval
    would (kept for comparison: the benchmark prints both columns).

In both modes the deepeval-compatible lexical result is computed and kept on
``verdict.lexical`` (written as ``semloop.deepeval.*``), so results stay comparable with
deepeval. Cost: linear in the trace's size for both (see ``bench/detector_speed.py``).

The scorer interface
    Front doors take any :class:`Scorer`: an object with ``score(trace) -> Verdict``. A
    scorer that can refine a first verdict (a cheap deterministic verdict first, then a
    remote judge's) is a :class:`StagedScorer`: ``score_stages(trace)`` yields verdicts,
    each better than the last; a front door with a time budget writes back the latest one
    yielded before the budget ran out (marked ``semloop.budget_exceeded=true`` when it
    was cut). :func:`stages_of` is how callers iterate either kind. Scorers are called
    from scoring threads, several traces at once: keep no per-trace state on the object.
    :class:`DetectorScorer` is the default (``Scorer()`` still builds one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, Protocol, runtime_checkable

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.lexical import LexicalDetector
from otel_semloop.detectors.suite import DetectorSuite
from otel_semloop.errors import ConfigError
from otel_semloop.model import Trace
from otel_semloop.policy import Policy
from otel_semloop.verdict import Action, Label, Verdict

__all__ = ["DetectorScorer", "Scorer", "ScorerMode", "StagedScorer", "stages_of"]

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

    __slots__ = ("config", "lexical", "mode", "policy")

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

    def score(self, trace: Trace) -> Verdict:
        if not trace.steps:
            return Verdict.unscored("no agent steps in trace", partial=trace.partial)
        lexical = self.lexical.evaluate(trace.tree_view())
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
        suite = DetectorSuite(self.config)
        findings = suite.detect(trace)
        return self.policy.verdict(
            findings,
            lexical=lexical,
            partial=trace.partial,
            calibration=suite.calibration if self.config.calibration else None,
        )
