"""A small builder for agent runs that reads like the trace it produces.

    run = Scenario("fix the failing build")
    run.think("Searching for the handler.").tool("grep", {"pattern": "handler"}, "no matches")
    verdict = run.verdict()

Each call appends one step with span id ``s001``, ``s002``, ... and advances a clock by
``step_seconds`` (default 1 s), so time-based signals see realistic durations; ``wait``
moves the clock without a step. ``trace()`` wraps the steps under a root agent (span id
``root``) the way ``flat_trace(goal=...)`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.suite import DetectorSuite
from otel_semloop.model import Step, StepKind, ToolCall, Trace
from otel_semloop.policy import Policy
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Finding, Verdict
from tests.support.traces import flat_trace

EPOCH_NS = 1_767_225_600_000_000_000
NS = 1_000_000_000


class Scenario:
    """An agent run written step by step (see module doc)."""

    def __init__(
        self, goal: str = "get the job done", *, step_seconds: float = 1.0, timed: bool = True
    ) -> None:
        self.goal = goal
        self.steps: list[Step] = []
        self.step_seconds = step_seconds
        self.timed = timed
        self._clock = EPOCH_NS

    # --- steps ---------------------------------------------------------------------------

    def think(
        self, text: str, *, calls: Iterable[tuple[str, Any]] = (), tokens: int | None = None
    ) -> Scenario:
        """An LLM step that says ``text`` (and requests ``calls``: (tool name, arguments))."""
        step = self._add(StepKind.LLM, "chat")
        step.output = text
        step.output_text = text
        step.tool_calls = tuple(ToolCall(name, args) for name, args in calls)
        step.output_tokens = tokens
        return self

    def tool(self, name: str, args: Any = None, result: Any = None, *, cost: float | None = None) -> Scenario:
        """A tool call with its arguments and result (None: not recorded on the span)."""
        step = self._add(StepKind.TOOL, name)
        step.tool_arguments = args
        step.tool_result = result
        step.input = args
        step.output = result
        step.cost = cost
        return self

    def fail(self, name: str, args: Any = None, error: str = "", *, error_type: str = "") -> Scenario:
        """A tool call whose span ended in error (status ERROR with ``error`` as message)."""
        step = self._add(StepKind.TOOL, name)
        step.tool_arguments = args
        step.input = args
        step.is_error = True
        step.error_type = error_type
        step.error_message = error
        return self

    def llm_fail(self, error: str, *, error_type: str = "", prompt: str = "same prompt") -> Scenario:
        """An LLM call that failed (a provider error)."""
        step = self._add(StepKind.LLM, "chat")
        step.input_text = prompt
        step.is_error = True
        step.error_type = error_type
        step.error_message = error
        return self

    def agent(self, name: str, output: str = "") -> Scenario:
        """An agent invocation (a hand-off to ``name``)."""
        step = self._add(StepKind.AGENT, name)
        step.output = output or None
        step.output_text = output
        step.agent = name
        return self

    def wait(self, seconds: float) -> Scenario:
        """Let time pass with no step (a sleep, a human, a slow backend)."""
        self._clock += int(seconds * NS)
        return self

    def _add(self, kind: StepKind, name: str) -> Step:
        span_id = f"s{len(self.steps) + 1:03d}"
        step = Step(kind, name, span_id=span_id, trace_id="t" * 32, parent_span_id="root")
        if self.timed:
            step.start_ns = self._clock
            self._clock += int(self.step_seconds * NS)
            step.end_ns = self._clock
        self.steps.append(step)
        return step

    # --- results ---------------------------------------------------------------------------

    @property
    def last(self) -> str:
        """Span id of the latest step."""
        return self.steps[-1].span_id

    def trace(self) -> Trace:
        return flat_trace(list(self.steps), trace_id="t" * 32, goal=self.goal)

    def verdict(self, config: DetectorConfig | None = None, policy: Policy | None = None) -> Verdict:
        return Scorer(config=config, policy=policy).score(self.trace())

    def findings(self, config: DetectorConfig | None = None) -> list[Finding]:
        return DetectorSuite(config).detect(self.trace())


def found(verdict_or_findings: Verdict | list[Finding], signal: str) -> Finding | None:
    """The strongest finding of ``signal``, or None."""
    findings = (
        verdict_or_findings.findings if isinstance(verdict_or_findings, Verdict) else verdict_or_findings
    )
    matching = [f for f in findings if f.signal == signal]
    return max(matching, key=lambda f: f.severity) if matching else None


def conclusive(verdict: Verdict) -> list[str]:
    """Signals with a conclusive finding."""
    return sorted({f.signal for f in verdict.findings if f.conclusive})
