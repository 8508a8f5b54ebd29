"""Policy: findings in, an action, a label and a score out.

Evidence then policy (LoopGuard's split): detectors only say what they saw and how close
it came to their threshold (severity); this module alone decides what that means.

Action per finding (configurable; defaults in brackets)
    * severity below ``warn_at`` (0.5): continue;
    * from ``warn_at`` up to 1.0, the pattern is forming: ``on_warning`` [warn];
    * conclusive (1.0 or more), with a per-signal override in ``signal_actions`` first
      [budgets pause], then: a permanent error, ``on_permanent`` [stop]; repetition with
      no progress (the same results, nothing novel), ``on_no_progress`` [stop];
      repetition alone (progress unknown), ``on_repetition`` [warn], escalated to
      ``on_escalation`` [replan] from ``escalate_at`` (2.0) times the threshold: a nudge
      first, a firmer one if the agent keeps going, as Gemini CLI does.

    The trace's action is the strongest action of its findings.

Label (what the trace *is*, independent of the configured actions)
    * ``loop``: a conclusive finding with no progress or a permanent error;
    * ``suspected``: conclusive findings, but none of them proves a lack of progress
      (results not recorded, transient retries, a retry storm, a spent budget);
    * ``no_loop``: nothing conclusive (warnings may still have been given).

Score (deepeval polarity: 1.0 healthy, a loop below ``threshold`` 0.5), banded so it
always agrees with the label and falls as the evidence grows:
    * ``loop``: ``0.45 / s`` where ``s`` is the strongest loop finding's severity (0.45 at
      the threshold, 0.225 at twice it);
    * ``suspected``: ``0.5 + 0.2 / s`` over the strongest conclusive finding, in (0.5, 0.7];
    * ``no_loop``: ``1 - 0.25 * w`` where ``w`` is the strongest warning's severity, in
      [0.75, 1.0]; exactly 1.0 with no warning.

``in_loop`` span ids are the evidence of the findings that decided the label (the loop
findings for ``loop``, the conclusive ones for ``suspected``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from otel_semloop.verdict import Action, Finding, Label, LexicalResult, Verdict

__all__ = ["DEFAULT_SIGNAL_ACTIONS", "Decision", "Policy"]

#: Spending a budget is not proof of a loop: pause for a person to decide.
DEFAULT_SIGNAL_ACTIONS: Mapping[str, Action] = {
    "budget_steps": Action.PAUSE,
    "budget_tool_calls": Action.PAUSE,
    "budget_tokens": Action.PAUSE,
    "budget_cost": Action.PAUSE,
    "budget_wall_time": Action.PAUSE,
}

#: Score bands (see the module doc). A loop at exactly its threshold scores this much, so
#: every loop is clearly below the 0.5 line rather than on it.
LOOP_SCORE_AT_THRESHOLD = 0.45
SUSPECTED_SCORE_SPAN = 0.2
WARNING_SCORE_SPAN = 0.25
NO_LOOP_REASON = "No loop patterns detected."

_PREFIXES = {Label.LOOP: "Loop", Label.SUSPECTED: "Suspected loop", Label.NO_LOOP: "Warning"}
#: Findings quoted in the reason text; the rest are in the findings and attributes.
REASON_FINDINGS = 3


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do now, and the finding that says why."""

    action: Action
    finding: Finding

    def describe(self) -> str:
        return f"{self.action.value}: {self.finding.describe()}"


@dataclass(frozen=True, slots=True)
class Policy:
    """Turns findings into actions and a :class:`~otel_semloop.verdict.Verdict` (see module doc)."""

    warn_at: float = 0.5
    on_warning: Action = Action.WARN
    on_repetition: Action = Action.WARN
    escalate_at: float | None = 2.0
    on_escalation: Action = Action.REPLAN
    on_no_progress: Action = Action.STOP
    on_permanent: Action = Action.STOP
    signal_actions: Mapping[str, Action] = field(default_factory=lambda: dict(DEFAULT_SIGNAL_ACTIONS))
    threshold: float = 0.5

    def action_for(self, finding: Finding) -> Action:
        """The action one finding calls for."""
        if finding.severity < self.warn_at:
            return Action.CONTINUE
        if not finding.conclusive:
            return self.on_warning
        override = self.signal_actions.get(finding.signal)
        if override is not None:
            return override
        if finding.permanent:
            return self.on_permanent
        if finding.no_progress:
            return self.on_no_progress
        if self.escalate_at is not None and finding.severity >= self.escalate_at:
            return max(self.on_repetition, self.on_escalation, key=lambda a: a.rank)
        return self.on_repetition

    @staticmethod
    def is_loop_evidence(finding: Finding) -> bool:
        """Conclusive, and proof that nothing is being achieved."""
        return finding.conclusive and (finding.no_progress or finding.permanent)

    def decide(self, findings: Iterable[Finding]) -> Decision | None:
        """The strongest action among ``findings`` (ties: the most severe), or None when
        all of them say continue."""
        best: Decision | None = None
        for finding in findings:
            action = self.action_for(finding)
            if action is Action.CONTINUE:
                continue
            if (
                best is None
                or action.rank > best.action.rank
                or (action is best.action and finding.severity > best.finding.severity)
            ):
                best = Decision(action, finding)
        return best

    def verdict(
        self,
        findings: Iterable[Finding],
        *,
        lexical: LexicalResult | None = None,
        partial: bool = False,
        calibration: Mapping[str, float] | None = None,
    ) -> Verdict:
        """The verdict for a trace with these findings (warnings and above are kept)."""
        kept = sorted(
            (f for f in findings if f.severity >= self.warn_at),
            key=lambda f: (f.started_step if f.started_step is not None else -1, f.signal),
        )
        loops = [f for f in kept if self.is_loop_evidence(f)]
        conclusive = [f for f in kept if f.conclusive]
        if loops:
            label = Label.LOOP
            deciding = loops
            score = LOOP_SCORE_AT_THRESHOLD / max(f.severity for f in loops)
        elif conclusive:
            label = Label.SUSPECTED
            deciding = conclusive
            score = 0.5 + SUSPECTED_SCORE_SPAN / max(f.severity for f in conclusive)
        else:
            label = Label.NO_LOOP
            deciding = []
            strongest = max((f.severity for f in kept), default=0.0)
            score = 1.0 - WARNING_SCORE_SPAN * min(strongest, 1.0)
        decision = self.decide(kept)
        in_loop = frozenset(span for f in deciding for span in f.span_ids)
        return Verdict(
            label=label,
            score=round(score, 4),
            action=decision.action if decision else Action.CONTINUE,
            reason=self._reason(label, deciding or kept),
            findings=tuple(kept),
            lexical=lexical,
            in_loop_span_ids=in_loop,
            partial=partial,
            calibration=dict(calibration or {}),
            threshold=self.threshold,
        )

    def _reason(self, label: Label, findings: list[Finding]) -> str:
        if not findings:
            return NO_LOOP_REASON
        ranked = sorted(findings, key=lambda f: (self.action_for(f).rank, f.severity), reverse=True)
        text = "; ".join(f.describe() for f in ranked[:REASON_FINDINGS])
        more = len(ranked) - REASON_FINDINGS
        if more > 0:
            text += f"; and {more} more finding{'s' if more > 1 else ''}"
        prefix = _PREFIXES[label]
        return f"{prefix}: {text}."
