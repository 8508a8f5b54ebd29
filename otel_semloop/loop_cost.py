"""What a loop cost: the spend from the step where the loop began to the end of the trace.

"Is it looping?" is followed by "what did it cost, and what would stopping it have
saved?". :func:`loop_cost` answers from a scored trace: the *onset* is the earliest step of
the findings that decided the label (those whose steps get ``semloop.in_loop``), and
everything from it on is what the loop burned. Every front door writes the answer on the
root span (:meth:`LoopCost.attributes`), counts it in its metrics and totals it in
``rescore``'s summary, from this one computation.

What is counted:

* **Model calls** are LLM steps. When some LLM steps record token usage, only those count:
  frameworks wrap a model call in extra LLM spans without usage (LlamaIndex's
  ``_prepare_chat_with_tool``), and an LLM step inside another counted one is the same call
  seen twice.
* **Tokens and cost** are summed over the counted model calls only (agent spans often carry
  the run's aggregate usage, which would count every token twice), from the usage fields
  :mod:`otel_semloop.conventions` reads into a step. Tokens are written only when some
  model call records them, cost likewise: an absent figure is not a zero.
* **Wall time** runs from the onset step's start to the end of the trace's last span.

The onset is 1-based (the first step is step 1). One pass over the steps, no clock, no text.

While an agent runs, :class:`RunningSpend` keeps the same figures step by step for the live
guard's ``on_loop``. It sees each step once, as its span ends, so it counts every LLM step
as a model call and reads tokens and cost from LLM steps only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.verdict import Finding, Label, Verdict

__all__ = ["LoopCost", "RunningSpend", "Usage", "loop_cost"]


@dataclass(frozen=True, slots=True)
class Usage:
    """The spend of a run of steps. ``input_tokens``/``output_tokens``/``cost`` are None when
    no model call in the trace records them."""

    steps: int = 0
    model_calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    duration_s: float = 0.0

    @property
    def tokens(self) -> int:
        """Input and output tokens together (0 when none are recorded)."""
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class LoopCost:
    """Where a loop began (``onset_step``, 1-based; ``onset_ns``, Unix nanoseconds, 0 when
    the step has no time), what it burned from there to the end of the trace (``loop``) and
    what the whole trace spent (``trace``), so a share saved can be computed."""

    onset_step: int
    onset_ns: int
    loop: Usage
    trace: Usage
    #: The agent the loop ran in (the onset step's enclosing agent, else the trace's root
    #: agent; "" when no agent step names one) and the signal that decided it (the most
    #: severe deciding finding's): what the loop metrics count it under.
    agent: str = ""
    signal: str = ""

    def attributes(self) -> dict[str, int | float | str]:
        """The ``semloop.loop.*`` and ``semloop.trace.*`` root-span attributes (the contract
        in docs/architecture.md and the README's reference table). A figure an attribute
        cannot carry (an int past signed 64 bits, a float that is not finite: hostile or
        broken usage values) is left out rather than written wrong."""
        attrs: dict[str, int | float | str] = {"semloop.loop.onset_step": self.onset_step}
        if self.agent:
            attrs["semloop.loop.agent"] = self.agent
        attrs["semloop.loop.signal"] = self.signal
        figures: dict[str, int | float | None] = {"semloop.loop.onset_time_unix_nano": self.onset_ns or None}
        for prefix, usage in (("semloop.loop.", self.loop), ("semloop.trace.", self.trace)):
            figures[prefix + "steps"] = usage.steps
            figures[prefix + "model_calls"] = usage.model_calls
            figures[prefix + "input_tokens"] = usage.input_tokens
            figures[prefix + "output_tokens"] = usage.output_tokens
            figures[prefix + "cost"] = usage.cost
            figures[prefix + "duration_s"] = usage.duration_s
        attrs.update((key, value) for key, value in figures.items() if _carried(value))
        return attrs


def _carried(value: int | float | None) -> bool:
    """Whether an OTLP attribute carries ``value`` as it is (int64, or a finite double)."""
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def loop_cost(trace: Trace, verdict: Verdict) -> LoopCost | None:
    """What the loop in ``trace`` cost, or None when the verdict names no loop (a label other
    than ``loop`` or ``suspected``, or no step where it began)."""
    if verdict.label not in (Label.LOOP, Label.SUSPECTED) or not trace.steps:
        return None
    deciding = _deciding(verdict)
    onset = _onset_index(trace, verdict, deciding)
    if onset is None:
        return None
    steps = trace.steps
    calls = _model_calls(trace)
    recorded = (
        any(s.input_tokens is not None for s in calls),
        any(s.output_tokens is not None for s in calls),
        any(s.cost is not None for s in calls),
    )
    spans = trace.spans.values()
    end_ns = max(max((s.end_ns or s.start_ns for s in spans), default=0), _last_ns(steps))
    first_ns = min((s.start_ns for s in spans if s.start_ns), default=0) or min(
        (s.start_ns for s in steps if s.start_ns), default=0
    )
    onset_ns = steps[onset].start_ns or 0
    counted = {id(s) for s in calls}
    root = trace.root
    strongest = max(deciding, key=lambda f: (f.severity, -(f.started_step or 0)), default=None)
    fired = verdict.fired_signals
    return LoopCost(
        onset_step=onset + 1,
        onset_ns=onset_ns,
        loop=_usage(steps[onset:], counted, recorded, onset_ns, end_ns),
        trace=_usage(steps, counted, recorded, first_ns, end_ns),
        agent=steps[onset].agent or (root.name if root is not None and root.kind is StepKind.AGENT else ""),
        signal=strongest.signal if strongest is not None else (fired[0] if fired else "unspecified"),
    )


def _onset_index(trace: Trace, verdict: Verdict, deciding: list[Finding]) -> int | None:
    """The 0-based index of the first step of the loop: the earliest start of the findings
    that decided the label, else the first step marked ``semloop.in_loop``."""
    starts = [f.started_step for f in deciding if f.started_step is not None]
    if starts:
        return min(max(0, min(starts)), len(trace.steps) - 1)
    in_loop = verdict.in_loop_span_ids
    for index, step in enumerate(trace.steps):
        if step.span_id in in_loop:
            return index
    return None


def _deciding(verdict: Verdict) -> list[Finding]:
    """The findings that decided the label (as the policy picks them): the conclusive ones
    with no progress or a permanent error for ``loop``, the conclusive ones for ``suspected``."""
    conclusive = [f for f in verdict.findings if f.conclusive]
    if verdict.label is Label.LOOP:
        return [f for f in conclusive if f.no_progress or f.permanent] or conclusive
    return conclusive


def _model_calls(trace: Trace) -> list[Step]:
    """The LLM steps counted as model calls, in step order (see the module doc)."""
    llm = [s for s in trace.steps if s.kind is StepKind.LLM and not s.synthetic]
    chosen = [s for s in llm if _records_usage(s)] or llm
    chosen_spans = {s.span_id for s in chosen if s.span_id}
    parent_of = {span_id: record.parent_span_id for span_id, record in trace.spans.items()}
    for step in trace.steps:  # (a trace built from steps alone has no span records)
        parent_of.setdefault(step.span_id, step.parent_span_id)
    return [s for s in chosen if not _inside(s.span_id, chosen_spans, parent_of)]


def _inside(span_id: str, chosen_spans: set[str], parent_of: dict[str, str]) -> bool:
    """Whether a span above ``span_id`` is one of ``chosen_spans``."""
    seen = {span_id}
    parent = parent_of.get(span_id, "")
    while parent and parent not in seen:
        if parent in chosen_spans:
            return True
        seen.add(parent)
        parent = parent_of.get(parent, "")
    return False


def _records_usage(step: Step) -> bool:
    return step.input_tokens is not None or step.output_tokens is not None or step.cost is not None


def _last_ns(steps: list[Step]) -> int:
    return max((s.end_ns or s.start_ns or 0 for s in steps), default=0)


def _usage(
    steps: list[Step], counted: set[int], recorded: tuple[bool, bool, bool], start_ns: int, end_ns: int
) -> Usage:
    """The spend of ``steps``: ``counted`` holds the ids of the model calls, ``recorded``
    whether the trace records input tokens, output tokens and cost at all."""
    calls = [s for s in steps if id(s) in counted]
    has_inputs, has_outputs, has_cost = recorded
    duration = (end_ns - start_ns) / 1e9 if start_ns and end_ns > start_ns else 0.0
    return Usage(
        steps=len(steps),
        model_calls=len(calls),
        input_tokens=sum(s.input_tokens or 0 for s in calls) if has_inputs else None,
        output_tokens=sum(s.output_tokens or 0 for s in calls) if has_outputs else None,
        cost=round(sum(s.cost or 0.0 for s in calls), 9) if has_cost else None,
        duration_s=round(duration, 6),
    )


class RunningSpend:
    """The spend of a running trace, fed one step at a time in the order the steps end;
    :meth:`since` is what was spent from a step on (the live guard's loop onset). Keeps
    seven numbers per step and no text: cumulative model calls, input tokens, output
    tokens and cost, whether each was recorded yet, and the step's start."""

    __slots__ = ("_end_ns", "_starts", "_totals")

    def __init__(self) -> None:
        self._totals: list[tuple[int, int, int, float, bool, bool, bool]] = []
        self._starts: list[int] = []
        self._end_ns = 0

    def add(self, step: Step) -> None:
        calls, inputs, outputs, cost, has_in, has_out, has_cost = (
            self._totals[-1] if self._totals else (0, 0, 0, 0.0, False, False, False)
        )
        if step.kind is StepKind.LLM:
            calls += 1
            inputs += step.input_tokens or 0
            outputs += step.output_tokens or 0
            cost += step.cost or 0.0
            has_in = has_in or step.input_tokens is not None
            has_out = has_out or step.output_tokens is not None
            has_cost = has_cost or step.cost is not None
        self._totals.append((calls, inputs, outputs, cost, has_in, has_out, has_cost))
        self._starts.append(step.start_ns or 0)
        self._end_ns = max(self._end_ns, step.end_ns or step.start_ns or 0)

    def since(self, index: int) -> Usage:
        """What the steps from ``index`` (0-based, in the order they were added) spent."""
        if not self._totals:
            return Usage()
        index = min(max(0, index), len(self._totals) - 1)
        calls, inputs, outputs, cost, has_in, has_out, has_cost = self._totals[-1]
        before = self._totals[index - 1] if index > 0 else (0, 0, 0, 0.0, False, False, False)
        start = self._starts[index]
        duration = (self._end_ns - start) / 1e9 if start and self._end_ns > start else 0.0
        return Usage(
            steps=len(self._totals) - index,
            model_calls=calls - before[0],
            input_tokens=inputs - before[1] if has_in else None,
            output_tokens=outputs - before[2] if has_out else None,
            cost=round(cost - before[3], 9) if has_cost else None,
            duration_s=round(duration, 6),
        )
