"""The live guard: stop a looping agent while it runs, from its own spans.

A trace is scored after it ends, too late to save the tokens a loop burns. With
``live_guard="warn"`` or ``"stop"`` (``SEMLOOP_LIVE_GUARD``), the processor also feeds
every agent, LLM and tool span, as it ends, to an incremental
:class:`~otel_semloop.processor.live.LiveMonitor` for its trace. When the monitor's policy
reaches a decision (a finding just became conclusive, or doubled):

* ``on_loop(finding, action)`` is called on the thread that ended the span (its exceptions
  are swallowed and counted) and a warning is logged. A callback that takes a ``spend``
  keyword also gets what the loop has spent so far (a :class:`~otel_semloop.loop_cost.Usage`
  from the finding's first step: :class:`~otel_semloop.loop_cost.RunningSpend`);
* in ``stop`` mode, :meth:`LoopGuard.check` (or the module-level :func:`check`) raises
  :class:`~otel_semloop.errors.LoopDetected` in the agent's thread once the trace has a
  decision at or above ``stop_at`` (the policy's ``stop`` by default). The agent calls it
  between steps, where stopping is safe::

      processor = SemloopSpanProcessor(BatchSpanProcessor(exporter), live_guard="stop")
      while not done:
          processor.guard.check()        # raises LoopDetected when the policy says stop
          step = agent.next_step()

  Nothing is raised from a span processor hook: the SDK would pass it to the code that
  ended the span, at an arbitrary point.

Cost, on the application thread and only with the guard on: each ended span is
classified; an LLM or tool span is read into a step and observed by the detectors, at a
cost that grows with its messages. The monitor keeps digests and counts, not content;
a trace's state is dropped at its release, and at most ``max_traces`` are tracked.
"""

from __future__ import annotations

import inspect
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from opentelemetry import trace as trace_api

from otel_semloop.conventions import read_step, step_kind
from otel_semloop.errors import LoopDetected
from otel_semloop.loop_cost import RunningSpend, Usage
from otel_semloop.model import StepKind
from otel_semloop.processor.config import GuardMode
from otel_semloop.processor.sdk import span_to_record
from otel_semloop.redact import safe_text
from otel_semloop.verdict import Action

__all__ = ["LoopGuard", "check"]

_logger = logging.getLogger(__name__)

#: Agent spans too: agents handing work back and forth (sibling or nested agent spans, as
#: well as hand-off tool calls) are a loop the guard must see while it runs. An agent span
#: ends after its own work, which the hand-off detector allows for (see
#: :mod:`otel_semloop.detectors.agents`).
_WATCHED = (StepKind.AGENT, StepKind.LLM, StepKind.TOOL)
_GUARDS: weakref.WeakSet[LoopGuard] = weakref.WeakSet()


def _default_monitor() -> Any:
    from otel_semloop.processor.live import LiveMonitor

    return LiveMonitor()


class _TraceState:
    __slots__ = ("decisions", "lock", "monitor", "spend", "stop")

    def __init__(self, monitor: Any) -> None:
        self.lock = threading.Lock()
        self.monitor = monitor
        self.decisions: list[Any] = []
        self.stop: Any = None
        self.spend = RunningSpend()


class LoopGuard:
    """Runs the incremental detectors per trace and turns decisions into callbacks and,
    in stop mode, into :class:`LoopDetected` raised by :meth:`check`.

    ``monitor_factory`` makes one monitor per trace (default
    :class:`~otel_semloop.processor.live.LiveMonitor`; anything with
    ``observe(step) -> Decision | None``). ``on_error(where)`` is told about swallowed
    callback errors (the processor counts them in its metrics). Thread-safe; monitors of
    different traces run concurrently.
    """

    def __init__(
        self,
        mode: GuardMode | str = GuardMode.STOP,
        *,
        on_loop: Callable[..., None] | None = None,
        stop_at: Action = Action.STOP,
        max_traces: int = 10_000,
        monitor_factory: Callable[[], Any] = _default_monitor,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.mode = GuardMode(mode)
        self.on_loop = on_loop
        self._wants_spend = _takes_keyword(on_loop, "spend")
        self.stop_at = Action(stop_at)
        self._max_traces = max(1, max_traces)
        self._factory = monitor_factory
        self._on_error = on_error
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, _TraceState] = OrderedDict()
        self._counts = {"steps": 0, "decisions": 0, "callback_errors": 0, "stops_raised": 0}
        _GUARDS.add(self)

    # -- fed by the span processor (application thread) --------------------------------

    def observe_span(self, span: Any) -> Any:
        """Feed an ended span; returns the decision it triggered, if any. Spans that are
        not agent, LLM or tool steps cost one classification and are otherwise ignored."""
        attributes = span.attributes
        if not attributes:
            return None
        kind = step_kind(attributes)
        if kind not in _WATCHED:
            return None
        context = span.context
        if context is None:
            return None
        step = read_step(span_to_record(span), kind)
        state = self._state(context.trace_id, create=True)
        assert state is not None
        spend = None
        with state.lock:
            decision = state.monitor.observe(step)
            state.spend.add(step)
            if decision is not None:
                state.decisions.append(decision)
                if state.stop is None and decision.action.rank >= self.stop_at.rank:
                    state.stop = decision
                if self._wants_spend:
                    # Findings number steps from 1; the running spend counts from 0.
                    spend = state.spend.since((decision.finding.started_step or 1) - 1)
        with self._lock:
            self._counts["steps"] += 1
            if decision is not None:
                self._counts["decisions"] += 1
        if decision is not None:
            self._notify(decision, spend)
        return decision

    def forget(self, trace_id: Any) -> None:
        """Drop a trace's state (its spans were released: the run is over)."""
        with self._lock:
            self._traces.pop(trace_id, None)

    def at_fork_reinit(self) -> None:
        """A forked child starts with no trace state and a fresh lock."""
        self._lock = threading.Lock()
        self._traces = OrderedDict()

    def close(self) -> None:
        with self._lock:
            self._traces.clear()
        _GUARDS.discard(self)

    # -- called by agent code -----------------------------------------------------------

    def check(self, trace_id: int | None = None) -> None:
        """Raise :class:`LoopDetected` if this trace (default: the current span's) has a
        stop decision and the guard is in stop mode; otherwise return at once."""
        if self.mode is not GuardMode.STOP:
            return
        decision = self.stop_decision(trace_id)
        if decision is not None:
            with self._lock:
                self._counts["stops_raised"] += 1
            raise LoopDetected(decision.finding, decision.action)

    def stop_decision(self, trace_id: int | None = None) -> Any:
        """The first decision at or above ``stop_at`` for the trace, if any."""
        state = self._state(_current_trace_id() if trace_id is None else trace_id, create=False)
        return state.stop if state is not None else None

    def decisions(self, trace_id: int | None = None) -> list[Any]:
        """Every decision so far for the trace (default: the current span's)."""
        state = self._state(_current_trace_id() if trace_id is None else trace_id, create=False)
        if state is None:
            return []
        with state.lock:
            return list(state.decisions)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {**self._counts, "traces": len(self._traces)}

    # -- internals ------------------------------------------------------------------------

    def _state(self, trace_id: int | None, *, create: bool) -> _TraceState | None:
        if not trace_id:
            return None
        with self._lock:
            state = self._traces.get(trace_id)
            if state is None and create:
                state = _TraceState(self._factory())
                self._traces[trace_id] = state
                if len(self._traces) > self._max_traces:
                    self._traces.popitem(last=False)
            return state

    def _notify(self, decision: Any, spend: Usage | None) -> None:
        # The description quotes tool names: one log line, secrets redacted, controls escaped.
        _logger.warning("otel-semloop live guard: %s", safe_text(decision.describe()))
        callback = self.on_loop
        if callback is None:
            return
        try:
            if spend is not None:
                callback(decision.finding, decision.action, spend=spend)
            else:
                callback(decision.finding, decision.action)
        except Exception:
            with self._lock:
                self._counts["callback_errors"] += 1
            _logger.exception("otel-semloop: on_loop callback raised (swallowed)")
            if self._on_error is not None:
                self._on_error("on_loop")


def check() -> None:
    """Raise :class:`LoopDetected` if any live guard in stop mode has a stop decision for
    the current trace. For agent code that does not hold the processor (zero-code setup)."""
    for guard in list(_GUARDS):
        guard.check()


def _takes_keyword(callback: Callable[..., Any] | None, name: str) -> bool:
    """Whether ``callback`` accepts the keyword argument ``name`` (by name or ``**kwargs``)."""
    if callback is None:
        return False
    try:
        parameters = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: called as before
        return False
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == name and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in parameters
    )


def _current_trace_id() -> int:
    context = trace_api.get_current_span().get_span_context()
    return context.trace_id if context.is_valid else 0
