"""The judged scorer: deterministic verdict first, the judge's reading second.

:class:`JudgedScorer` wraps the default :class:`~otel_semloop.scoring.Scorer` and scores in
stages (``score_stages``), which every front door's scoring pool understands:

1. the deterministic verdict, at once; when the trace will be judged it carries
   ``semloop.judge.status=error`` and ``semloop.judge.error=timeout``, so if the budget
   ends while the judge is out, the verdict that goes out says why the judge is missing;
2. the judged verdict once the judge answers: its findings
   (:mod:`otel_semloop.judges.assess`) join the detectors' and the policy decides. A judge
   failure yields the deterministic verdict with ``semloop.judge.error``: a span is never
   lost or held past its budget for a judge.

:mod:`otel_semloop.judges.escalation` decides which traces are sent; the others get
``semloop.judge.status=skipped``. In ``lexical`` mode the judged deepeval-weighted score
decides the verdict.

Root span attributes (``semloop.judge.*``): ``backend``, ``model``, ``status`` (judged,
cached, skipped, no_questions, error), ``error``, ``input_tokens``, ``output_tokens``,
``cost_usd``, ``latency_ms``, ``score`` and the judged sub-scores ``tool_repetition``,
``reasoning_stagnation``, ``call_graph_cycles``, ``undecided``, ``questions``,
``missing_answers``, ``stagnation_level``, ``truncated``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Iterator, Sequence
from typing import Any

from otel_semloop.judges.assess import AssessConfig, Assessment, assess
from otel_semloop.judges.base import JudgeError, JudgeRequest, JudgeResponse, JudgeTimeout
from otel_semloop.judges.escalation import Escalation
from otel_semloop.judges.judge import Judge
from otel_semloop.judges.questions import QuestionConfig, QuestionSet, build_question_set
from otel_semloop.model import Trace
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Action, Label, Verdict

__all__ = ["JudgedScorer"]

_LABEL_RANK = {Label.UNSCORED: 0, Label.NO_LOOP: 1, Label.SUSPECTED: 2, Label.LOOP: 3}
#: Kept back from a front door's budget so the verdict is ready before its cut: a quarter of
#: the budget, at least this many seconds and at most one.
BUDGET_MARGIN = 0.05


class JudgedScorer:
    """A :class:`~otel_semloop.scoring.Scorer` with a judge (see the module doc).

    ``budget_seconds`` bounds each trace's wait for the judge (front doors set it to their
    scoring budget); by default the judge's own timeout. Thread-safe: one instance serves
    every scoring thread.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        base: Scorer | None = None,
        escalate: Escalation | str | float = "undecided",
        questions: QuestionConfig | None = None,
        assess_config: AssessConfig | None = None,
        budget_seconds: float | None = None,
    ) -> None:
        self.judge = judge
        self.base = base or Scorer()
        self.escalation = escalate if isinstance(escalate, Escalation) else Escalation.parse(escalate)
        self.questions = questions or QuestionConfig()
        self.assess_config = assess_config or AssessConfig(threshold=self.base.policy.threshold)
        self.budget_seconds = budget_seconds

    # -- the Scorer interface -------------------------------------------------------------

    def score(self, trace: Trace) -> Verdict:
        stages = list(self.score_stages(trace))
        return stages[-1]

    def score_stages(self, trace: Trace, deadline: float | None = None) -> Iterator[Verdict]:
        deadline = deadline if deadline is not None else self._deadline()  # the budget runs from now
        deterministic = self.base.score(trace)
        prepared = self._prepare(trace, deterministic)
        if isinstance(prepared, Verdict):
            yield prepared
            return
        question_set, request = prepared
        yield self._with_attributes(deterministic, self._pending_attributes())
        future = self.judge.submit(request, deadline)
        yield self._finish(deterministic, question_set, future, deadline)

    def score_batch(self, traces: Sequence[Trace]) -> list[Verdict]:
        """Every trace's final verdict, with all judge requests in flight together (the
        judge's concurrency limit applies), for scoring a corpus at once."""
        pending: list[Any] = []
        for trace in traces:
            deterministic = self.base.score(trace)
            prepared = self._prepare(trace, deterministic)
            if isinstance(prepared, Verdict):
                pending.append(prepared)
                continue
            question_set, request = prepared
            pending.append((deterministic, question_set, self.judge.submit(request)))
        return [item if isinstance(item, Verdict) else self._finish(*item, None) for item in pending]

    # -- steps ---------------------------------------------------------------------------

    def _deadline(self) -> float:
        if self.budget_seconds is None:
            return time.monotonic() + self.judge.timeout
        budget = self.budget_seconds
        margin = min(1.0, max(BUDGET_MARGIN, 0.25 * budget))
        return time.monotonic() + max(0.001, min(self.judge.timeout, budget - margin))

    def _identity(self) -> dict[str, Any]:
        return {"semloop.judge.backend": self.judge.name, "semloop.judge.model": self.judge.model}

    def _pending_attributes(self) -> dict[str, Any]:
        return {**self._identity(), "semloop.judge.status": "error", "semloop.judge.error": JudgeTimeout.kind}

    def _prepare(self, trace: Trace, deterministic: Verdict) -> Verdict | tuple[QuestionSet, JudgeRequest]:
        if deterministic.label is Label.UNSCORED:
            return deterministic
        if not self.escalation.should_judge(trace.trace_id, deterministic):
            self.judge.count_saved()
            return self._with_attributes(
                deterministic, {**self._identity(), "semloop.judge.status": "skipped"}
            )
        question_set = build_question_set(trace, self.questions)
        if not question_set.questions:
            return self._with_attributes(
                deterministic, {**self._identity(), "semloop.judge.status": "no_questions"}
            )
        request = JudgeRequest(
            state=question_set.state, questions=question_set.questions, trace_id=trace.trace_id
        )
        return question_set, request

    def _finish(
        self,
        deterministic: Verdict,
        question_set: QuestionSet,
        future: concurrent.futures.Future[JudgeResponse],
        deadline: float | None,
    ) -> Verdict:
        try:
            # Batch (no deadline): the judge's own timeout bounds each request once it runs.
            wait = None if deadline is None else max(0.0, deadline - time.monotonic()) + BUDGET_MARGIN
            response = future.result(timeout=wait)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return self._with_attributes(deterministic, self._pending_attributes())
        except JudgeError as exc:
            attrs = {**self._identity(), "semloop.judge.status": "error", "semloop.judge.error": exc.kind}
            return self._with_attributes(deterministic, attrs)
        assessment = assess(
            question_set, response.answers, deterministic.lexical or _no_lexical(), self.assess_config
        )
        return self._merge(deterministic, question_set, response, assessment)

    def _merge(
        self,
        deterministic: Verdict,
        question_set: QuestionSet,
        response: JudgeResponse,
        assessment: Assessment,
    ) -> Verdict:
        attrs: dict[str, Any] = {
            **self._identity(),
            "semloop.judge.status": "cached" if response.cached else "judged",
            "semloop.judge.input_tokens": int(response.input_tokens),
            "semloop.judge.output_tokens": int(response.output_tokens),
            "semloop.judge.cost_usd": 0.0 if response.cached else float(response.cost_usd),
            "semloop.judge.latency_ms": 0.0 if response.cached else round(float(response.latency_ms), 3),
            "semloop.judge.score": round(float(assessment.score), 4),
            "semloop.judge.undecided": assessment.undecided,
            "semloop.judge.questions": len(question_set.questions),
            "semloop.judge.missing_answers": assessment.missing,
            "semloop.judge.truncated": bool(question_set.omitted_steps or question_set.dropped_questions),
        }
        if response.model:
            attrs["semloop.judge.model"] = response.model
        for name, value in assessment.breakdown.items():
            attrs[f"semloop.judge.{name}"] = float(value)
        if assessment.stagnation_level is not None:
            attrs["semloop.judge.stagnation_level"] = float(assessment.stagnation_level)

        if self.base.mode == "lexical":
            loop = assessment.score < self.assess_config.threshold
            judged = dataclasses.replace(
                deterministic,
                label=Label.LOOP if loop else Label.NO_LOOP,
                score=round(min(float(assessment.score), deterministic.score), 4),
                action=Action.STOP if loop else Action.CONTINUE,
                reason=f"{deterministic.reason} Judge: {assessment.reason}.",
            )
            if _LABEL_RANK[judged.label] < _LABEL_RANK[deterministic.label]:
                judged = deterministic
            return self._with_attributes(judged, attrs)

        if not assessment.findings:
            return self._with_attributes(deterministic, attrs)
        judge_findings = list(assessment.findings)
        if deterministic.label is Label.NO_LOOP and deterministic.findings and question_set.tool_counts:
            # Tool calls whose repetition the detectors weighed and found short of a loop
            # (a poll that ended, duplicates the run moved on from): the judge's reading
            # of them warns but cannot make the trace a loop on its own. A loop no
            # fingerprint sees (no finding at all) and model turns only are the judge's.
            judge_findings = [
                dataclasses.replace(f, severity=min(f.severity, WARNING_CAP)) for f in judge_findings
            ]
        policy = self.base.policy
        judged = policy.verdict(
            [*deterministic.findings, *judge_findings],
            lexical=deterministic.lexical,
            partial=deterministic.partial,
            calibration=deterministic.calibration,
        )
        # The more severe wins: a judge adds detections, never hides one.
        if _LABEL_RANK[judged.label] < _LABEL_RANK[deterministic.label] or (
            judged.label is deterministic.label and judged.score > deterministic.score
        ):
            judged = deterministic
        return self._with_attributes(judged, attrs)

    @staticmethod
    def _with_attributes(verdict: Verdict, attrs: dict[str, Any]) -> Verdict:
        return dataclasses.replace(verdict, attributes={**verdict.attributes, **attrs})


#: The highest severity a judge finding keeps when it may only warn (below conclusive).
WARNING_CAP = 0.75


def _no_lexical() -> Any:
    from otel_semloop.verdict import LexicalResult

    return LexicalResult(score=1.0, breakdown={}, reason="")
