"""Read a judge's answers into sub-scores, findings and attributes.

Answers become deepeval-shaped sub-scores:

* reasoning stagnation: per pair question, P(stagnant) is ``1 - P(yes)`` for ``progress``
  and ``P(yes)`` for ``revisit``. The worst pair decides: from ``severe`` (0.85) the
  sub-score is 0.0, from ``mild`` (0.60) 0.5, else 1.0. A ``revisit`` over a step whose
  tool call had a new outcome does not count (a check re-run after each edit verifies new
  work).
* tool repetition: a ``tool_repeat`` answer with P(same action) >= 0.5 counts the tool's
  calls as repeats: 0.5 from ``repetition_threshold`` calls, 0.0 from twice that; the
  lower of this and deepeval's exact-match sub-score is kept.
* call-graph cycles: deepeval's, unchanged.

Undecided band (``undecided``, 0.4-0.6): when nothing cleared the bar and the closest
answer is in the band, or every pair answer is missing, the deterministic evidence decides
instead. A tool answer in the band is ignored.

The judged score combines the three with deepeval's weights (0.40/0.35/0.25, loop below
0.5) and becomes findings for the policy: ``judge_loop`` (conclusive, no progress) when the
judge saw a chain of severe stagnation and the judged score is below the threshold, or the
trace made no tool call at all (meaning is all the evidence there is); else a
``judge_stagnation`` / ``judge_tool_repeat`` warning for a sub-signal that fired. They join
the detectors' findings, so a judge adds detections but never hides one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from otel_semloop.detectors.lexical import WEIGHTS
from otel_semloop.judges.base import Answer
from otel_semloop.judges.questions import QuestionSet, parse_question_id
from otel_semloop.verdict import Finding, LexicalResult

__all__ = ["AssessConfig", "Assessment", "assess"]


@dataclass(frozen=True, slots=True)
class AssessConfig:
    severe: float = 0.85
    mild: float = 0.60
    undecided: tuple[float, float] = (0.40, 0.60)
    repetition_threshold: int = 3
    threshold: float = 0.5
    #: Stagnant pairs quoted in the reason.
    quoted: int = 3


@dataclass(frozen=True, slots=True)
class PairVerdict:
    kind: str
    i: int
    j: int
    stagnation: float

    def describe(self) -> str:
        if self.kind == "progress":
            return f"step {self.j} made no progress over step {self.i} (p={self.stagnation:.2f})"
        return f"step {self.j} revisits step {self.i} (p={self.stagnation:.2f})"


@dataclass(frozen=True, slots=True)
class Assessment:
    """What the answers say about one trace."""

    breakdown: Mapping[str, float]
    score: float
    undecided: bool
    findings: tuple[Finding, ...]
    reason: str
    missing: int
    stagnation_level: float | None = None


def _returns_over_nothing_new(pairs: list[PairVerdict], question_set: QuestionSet) -> list[PairVerdict]:
    """``pairs`` without the revisits over new work: a step that goes back to an earlier
    attempt is no cycle when a step between made a tool call with an outcome not seen
    before in the trace (lint, edit, lint, edit, lint: each check verifies a new edit).
    An A-B-A-B cycle of calls repeats both halves, and model turns carry no new work."""
    seen: set[str] = set()
    new_work: set[int] = set()
    for judged in question_set.steps:
        for action in judged.actions:
            outcome = action.error_message if action.is_error else action.tool_result
            if outcome is None:
                continue
            key = repr((action.name, action.tool_arguments, outcome))
            if key not in seen:
                seen.add(key)
                new_work.add(judged.index)
    return [
        pair for pair in pairs if pair.kind != "revisit" or not any(pair.i < k < pair.j for k in new_work)
    ]


def _combine(breakdown: Mapping[str, float]) -> float:
    weights = total = 0.0
    for name, weight in WEIGHTS:
        weights += weight
        total += breakdown[name] * weight
    return total / weights


def assess(
    question_set: QuestionSet,
    answers: Mapping[str, Answer],
    lexical: LexicalResult,
    config: AssessConfig | None = None,
) -> Assessment:
    """Sub-scores, findings and a reason from ``answers`` (see the module doc)."""
    config = config or AssessConfig()
    low, high = config.undecided
    pairs: list[PairVerdict] = []
    asked_pairs = 0
    missing = 0
    for qid in question_set.questions:
        if qid == "stagnation":
            continue
        if qid not in answers:
            missing += 1
    for qid in question_set.questions:
        parsed = parse_question_id(qid)
        if parsed is None:
            continue
        asked_pairs += 1
        answer = answers.get(qid)
        if answer is None or answer.type != "noul":
            continue
        kind, i, j = parsed
        p_yes = float(answer.value)
        pairs.append(PairVerdict(kind, i, j, 1.0 - p_yes if kind == "progress" else p_yes))

    pairs = _returns_over_nothing_new(pairs, question_set)

    lexical_stagnation = float(lexical.breakdown.get("reasoning_stagnation", 1.0))
    stagnation = 1.0
    undecided = False
    stagnant: list[PairVerdict] = []
    reasons: list[str] = []
    if pairs:
        worst = max(pairs, key=lambda p: p.stagnation)
        if worst.stagnation >= config.severe:
            stagnation = 0.0
        elif worst.stagnation >= config.mild:
            stagnation = 0.5
        stagnant = sorted((p for p in pairs if p.stagnation >= config.mild), key=lambda p: -p.stagnation)
        undecided = stagnation == 1.0 and low <= worst.stagnation <= high
    elif asked_pairs:
        undecided = True  # asked, but no usable answer came back
    if undecided:
        stagnation = min(stagnation, lexical_stagnation)
        reasons.append("the judge was undecided on progress, so the deterministic evidence decided")
    if stagnant:
        reasons.append("; ".join(p.describe() for p in stagnant[: config.quoted]))

    judged_repetition = 1.0
    repeated_tool = ""
    for qid in question_set.questions:
        name = question_set.tool_name(qid)
        answer = answers.get(qid)
        if name is None or answer is None or answer.type != "noul":
            continue
        p_same = float(answer.value)
        if p_same < 0.5 or low <= p_same < high:
            continue
        count = question_set.tool_counts.get(name, 0)
        value = (
            0.0
            if count >= 2 * config.repetition_threshold
            else (0.5 if count >= config.repetition_threshold else 1.0)
        )
        if value < judged_repetition:
            judged_repetition, repeated_tool = (
                value,
                f"tool {name!r} called {count} times as one action (p={p_same:.2f})",
            )
    if repeated_tool:
        reasons.append(repeated_tool)
    breakdown = {
        "tool_repetition": min(judged_repetition, float(lexical.breakdown.get("tool_repetition", 1.0))),
        "reasoning_stagnation": stagnation,
        "call_graph_cycles": float(lexical.breakdown.get("call_graph_cycles", 1.0)),
    }
    score = _combine(breakdown)

    span_ids: list[str] = []
    by_index = question_set.step_by_index
    for pair in stagnant:
        for index in (pair.i, pair.j):
            judged = by_index.get(index)
            if judged is not None:
                span_ids.extend(s for s in judged.span_ids if s not in span_ids)
    first = min((p.i for p in stagnant), default=None)
    last = max((p.j for p in stagnant), default=None)
    description = "; ".join(reasons) or "no stagnation judged"
    findings: list[Finding] = []
    # Only what the judge itself said counts as its finding: deepeval's lexical sub-scores
    # folded into the judged score are the detectors' evidence, already in their findings.
    judge_said = (stagnation < 1.0 and not undecided) or judged_repetition < 1.0
    # A conclusive loop needs the judge's own evidence that nothing new was said, and said
    # again: a chain of severely stagnant pairs (a step repeating one that repeated another).
    # One duplicated step that the run then moves on from is waste, not a loop; repeated
    # tool calls alone are the detectors' to weigh (they see whether a repeat recurs).
    severe = [p for p in pairs if p.stagnation >= config.severe]
    chained = any(p.j == q.i for p in severe for q in severe)
    saw_stagnation = stagnation == 0.0 and not undecided and chained
    # With no tool call in the trace (model turns only) the tool and call-graph sub-scores
    # have nothing to say, and the meaning of the turns is all the evidence there is.
    by_meaning_alone = saw_stagnation and not question_set.tool_counts
    if saw_stagnation and (score < config.threshold or by_meaning_alone):
        severity = (1.0 - score) / (1.0 - config.threshold)
        findings.append(
            Finding(
                "judge_loop",
                severity=round(max(severity, 1.0) if by_meaning_alone else severity, 4),
                description=f"the judge found no progress: {description}",
                span_ids=tuple(span_ids),
                started_step=first,
                detected_step=last,
                no_progress=True,
            )
        )
    elif judge_said:
        # One judged sub-signal alone is a warning, as in deepeval: it cannot fail a trace.
        if stagnation < 1.0 and not undecided:
            findings.append(
                Finding(
                    "judge_stagnation",
                    severity=0.75 if stagnation == 0.0 else 0.5,
                    description=f"the judge saw steps that got nowhere: {description}",
                    span_ids=tuple(span_ids),
                    started_step=first,
                    detected_step=last,
                )
            )
        if judged_repetition < 1.0:
            findings.append(
                Finding(
                    "judge_tool_repeat",
                    severity=0.75 if judged_repetition == 0.0 else 0.5,
                    description=f"the judge saw one action repeated: {repeated_tool}",
                )
            )
    level = answers.get("stagnation")
    return Assessment(
        breakdown=breakdown,
        score=score,
        undecided=undecided,
        findings=tuple(findings),
        reason=description,
        missing=missing,
        stagnation_level=float(level.value) if level is not None and level.type == "score" else None,
    )
