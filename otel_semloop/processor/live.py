"""The live guard's core: decide, span by span, whether a running agent should be stopped.

    monitor = LiveMonitor()                  # one per trace (agent run)
    decision = monitor.observe(step)         # as each tool or LLM span ends
    if decision is not None:                 # a finding just became conclusive
        act_on(decision.action, decision.finding.describe())

:meth:`LiveMonitor.observe` runs the default incremental detectors (the code the offline
verdict replays, so live and offline agree) and the policy, and returns a
:class:`~otel_semloop.policy.Decision` when a finding becomes conclusive and again each
time it doubles (warn, then replan); else None: warnings are kept (``findings()``), not
returned, so a caller acting on decisions never interrupts healthy work.

Contract: feed steps in the order the agent took them (the order spans end is fine); no
clock is read (durations come from the steps); digests and counts are kept, never text,
bounded by ``DetectorConfig.seen_capacity``; a step costs one normalisation plus
O(max_period) per detector; not thread-safe (one monitor per trace, one thread at a time).
"""

from __future__ import annotations

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.suite import DetectorSuite
from otel_semloop.model import Step
from otel_semloop.policy import Decision, Policy
from otel_semloop.verdict import Finding, Verdict

__all__ = ["Decision", "LiveMonitor"]


class LiveMonitor:
    """Incremental detectors plus policy for one running trace (see module doc)."""

    __slots__ = ("_index", "_suite", "policy")

    def __init__(self, config: DetectorConfig | None = None, policy: Policy | None = None) -> None:
        self._suite = DetectorSuite(config)
        self.policy = policy or Policy()
        self._index = 0

    @property
    def steps_seen(self) -> int:
        return self._index

    def observe(self, step: Step) -> Decision | None:
        """Feed the step that just ended; a decision when a finding just became conclusive
        (or doubled), else None. Steps are numbered from 1, as in a verdict, where step 0
        is the run's own root span (which ends last, so the guard never sees it first)."""
        self._index += 1
        findings = self._suite.observe(step, self._index)
        if not findings:
            return None
        return self.policy.decide(f for f in findings if f.conclusive)

    def findings(self) -> list[Finding]:
        """Everything found so far, warnings included (one per episode, at its peak)."""
        return self._suite.findings()

    def verdict(self) -> Verdict:
        """The verdict on the run so far, marked partial (the run has not finished)."""
        return self.policy.verdict(self._suite.findings(), partial=True)

    def reset(self) -> None:
        """Start over for a new run."""
        self._suite.reset()
        self._index = 0
