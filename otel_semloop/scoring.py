"""Score one trace: detectors, then policy, then a :class:`~otel_semloop.verdict.Verdict`.

This is the one core every front door calls (the span processor, the collector service,
``otel-semloop rescore``). It reads no clock and holds no state between traces, so it can
run on any thread and be bounded by its caller's time budget.
"""

from __future__ import annotations

from otel_semloop.detectors.lexical import LexicalDetector
from otel_semloop.model import Trace
from otel_semloop.verdict import Action, Label, Verdict


class Scorer:
    """Turns a :class:`Trace` into a :class:`Verdict`.

    The deepeval-compatible lexical score is always computed and kept beside the verdict
    (``semloop.deepeval.score``) so results stay comparable with deepeval.
    """

    def __init__(self, *, lexical: LexicalDetector | None = None) -> None:
        self.lexical = lexical or LexicalDetector()

    def score(self, trace: Trace) -> Verdict:
        if not trace.steps:
            return Verdict.unscored("no agent steps in trace", partial=trace.partial)
        lexical = self.lexical.evaluate(trace.tree_view())
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
