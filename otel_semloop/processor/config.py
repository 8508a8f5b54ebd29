"""Configuration of :class:`~otel_semloop.processor.SemloopSpanProcessor`.

Every knob has a constructor argument and a ``SEMLOOP_*`` environment variable, like the
SDK's ``OTEL_BSP_*`` knobs. Precedence: constructor argument, then environment variable,
then the default below. A bad value raises :class:`~otel_semloop.errors.ConfigError`
naming the argument or the variable, at construction time (never later, inside a hook).

=====================================  ==================================  =========
argument                               environment variable                default
=====================================  ==================================  =========
``enabled``                            ``SEMLOOP_ENABLED``                 true
``grace_seconds``                      ``SEMLOOP_GRACE_SECONDS``           0.5
``idle_seconds``                       ``SEMLOOP_IDLE_SECONDS``            120
``max_age_seconds``                    ``SEMLOOP_MAX_AGE_SECONDS``         1800
``max_traces``                         ``SEMLOOP_MAX_TRACES``              10000
``max_spans_per_trace``                ``SEMLOOP_MAX_SPANS_PER_TRACE``     10000
``max_spans``                          ``SEMLOOP_MAX_SPANS``               100000
``recent_traces``                      ``SEMLOOP_RECENT_TRACES``           16384
``scoring_budget_seconds``             ``SEMLOOP_SCORING_BUDGET_SECONDS``  5
``scoring_threads``                    ``SEMLOOP_SCORING_THREADS``         1
``max_stuck_scorers``                  ``SEMLOOP_MAX_STUCK_SCORERS``       2
``tick_seconds``                       ``SEMLOOP_TICK_SECONDS``            0.1
``shutdown_timeout_seconds``           ``SEMLOOP_SHUTDOWN_TIMEOUT_SECONDS``  30
``live_guard``                         ``SEMLOOP_LIVE_GUARD``              off
=====================================  ==================================  =========
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otel_semloop.errors import ConfigError


class GuardMode(str, enum.Enum):
    """What the live guard does when a loop becomes conclusive.

    ``off``: nothing runs on the application thread beyond the processor's bookkeeping.
    ``warn``: the incremental detectors run as each LLM/tool span ends; ``on_loop`` is
    called and a warning logged, the agent is never stopped.
    ``stop``: as warn, and :meth:`~otel_semloop.processor.guard.LoopGuard.check` raises
    :class:`~otel_semloop.errors.LoopDetected` in the agent's thread once the policy says stop.
    """

    OFF = "off"
    WARN = "warn"
    STOP = "stop"


@dataclass(frozen=True, slots=True)
class Config:
    """Every option of the span processor; build it with :meth:`from_env`.

    Bounds err toward releasing spans early (scored as partial, marked and counted)
    rather than holding memory or the application: a span is never dropped.
    """

    #: Off turns the processor into a pass-through to the downstream processor.
    enabled: bool = True
    #: Wait after a trace completes (local root ended, no span open) for stragglers:
    #: spans started elsewhere that end just after. Longer delays export; shorter
    #: turns a straggler into a late span (forwarded marked ``semloop.late``).
    grace_seconds: float = 0.5
    #: A trace with no span started or ended for this long is released as partial.
    #: Generous because an agent may wait minutes on one model call with spans open.
    idle_seconds: float = 120.0
    #: A trace held this long since its first span is released as partial, even if busy.
    max_age_seconds: float = 1800.0
    #: Traces held at once; on overflow the oldest is released (never dropped).
    max_traces: int = 10_000
    #: Spans held for one trace; at the limit the held spans are released as a partial
    #: chunk and the trace keeps being grouped, so a huge trace costs bounded memory.
    max_spans_per_trace: int = 10_000
    #: Spans held across all traces (the memory bound: agent spans are a few KB each);
    #: on overflow the oldest trace is released.
    max_spans: int = 100_000
    #: Released trace ids remembered so that a late span is recognised and marked.
    #: Past it a late span starts a new group instead, released later as partial: the
    #: bound errs toward an extra partial verdict, never toward a lost span.
    recent_traces: int = 16_384
    #: Time from a trace's release to its verdict (queueing included). Past it the trace
    #: is forwarded unscored, marked ``semloop.unscored.reason="scoring budget exceeded"``.
    scoring_budget_seconds: float = 5.0
    #: Threads that run detectors. One suits the deterministic detectors (the GIL
    #: serialises them anyway); more lets a remote judge's waits overlap.
    scoring_threads: int = 1
    #: A scoring thread past its budget cannot be killed in Python; it is abandoned and
    #: replaced, up to this many abandoned threads alive at once. Past that, traces are
    #: released unscored ("scorers stuck") until one returns.
    max_stuck_scorers: int = 2
    #: How often the worker wakes to release completed traces. The application thread
    #: never wakes the worker: wake-ups are batched to keep it off the GIL.
    tick_seconds: float = 0.1
    #: How long :meth:`shutdown` may take to score and forward what is held.
    shutdown_timeout_seconds: float = 30.0
    #: Live guard mode (see :class:`GuardMode`).
    live_guard: GuardMode = GuardMode.OFF

    def __post_init__(self) -> None:
        for spec in _SPECS:
            # Normalise in place (ints to float seconds, "warn" to GuardMode.WARN).
            object.__setattr__(self, spec.name, _coerce(spec, getattr(self, spec.name), spec.name))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Config:
        """Defaults, overridden by ``SEMLOOP_*`` variables in ``environ`` (default
        ``os.environ``), overridden by ``options`` (argument names as above).

        Raises :class:`ConfigError` for a bad value and :class:`TypeError` for an
        unknown option name.
        """
        env = os.environ if environ is None else environ
        known = {spec.name for spec in _SPECS}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unknown otel-semloop option(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for spec in _SPECS:
            raw = env.get(spec.env)
            if raw is not None and raw.strip() != "":
                values[spec.name] = _parse(spec, raw.strip(), spec.env)
        for name, value in options.items():
            spec = _BY_NAME[name]
            values[name] = _parse(spec, value, name) if isinstance(value, str) else _coerce(spec, value, name)
        return cls(**values)

    def replace(self, **options: Any) -> Config:
        """A copy with ``options`` changed (validated like the constructor)."""
        return dataclasses.replace(self, **{k: _coerce(_BY_NAME[k], v, k) for k, v in options.items()})


@dataclass(frozen=True, slots=True)
class _Spec:
    name: str
    env: str
    kind: str  # "bool", "seconds", "count", "mode"
    minimum: float = 0.0


_SPECS = (
    _Spec("enabled", "SEMLOOP_ENABLED", "bool"),
    _Spec("grace_seconds", "SEMLOOP_GRACE_SECONDS", "seconds"),
    _Spec("idle_seconds", "SEMLOOP_IDLE_SECONDS", "seconds", 0.001),
    _Spec("max_age_seconds", "SEMLOOP_MAX_AGE_SECONDS", "seconds", 0.001),
    _Spec("max_traces", "SEMLOOP_MAX_TRACES", "count", 1),
    _Spec("max_spans_per_trace", "SEMLOOP_MAX_SPANS_PER_TRACE", "count", 1),
    _Spec("max_spans", "SEMLOOP_MAX_SPANS", "count", 1),
    _Spec("recent_traces", "SEMLOOP_RECENT_TRACES", "count", 0),
    _Spec("scoring_budget_seconds", "SEMLOOP_SCORING_BUDGET_SECONDS", "seconds", 0.001),
    _Spec("scoring_threads", "SEMLOOP_SCORING_THREADS", "count", 1),
    _Spec("max_stuck_scorers", "SEMLOOP_MAX_STUCK_SCORERS", "count", 0),
    _Spec("tick_seconds", "SEMLOOP_TICK_SECONDS", "seconds", 0.001),
    _Spec("shutdown_timeout_seconds", "SEMLOOP_SHUTDOWN_TIMEOUT_SECONDS", "seconds"),
    _Spec("live_guard", "SEMLOOP_LIVE_GUARD", "mode"),
)
_BY_NAME = {spec.name: spec for spec in _SPECS}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parse(spec: _Spec, raw: str, where: str) -> Any:
    """A value from its text (environment variables, or strings passed as options)."""
    text = raw.strip()
    if spec.kind == "bool":
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ConfigError(f"{where}={raw!r}: expected true or false")
    if spec.kind == "mode":
        try:
            return GuardMode(text.lower())
        except ValueError:
            choices = "|".join(m.value for m in GuardMode)
            raise ConfigError(f"{where}={raw!r}: expected one of {choices}") from None
    try:
        number: float = int(text) if spec.kind == "count" else float(text)
    except ValueError:
        expected = "an integer" if spec.kind == "count" else "a number of seconds"
        raise ConfigError(f"{where}={raw!r}: expected {expected}") from None
    return _coerce(spec, number, where)


def _coerce(spec: _Spec, value: Any, where: str) -> Any:
    if isinstance(value, str):
        return _parse(spec, value, where)
    _check(spec, value, where)
    if spec.kind == "seconds":
        return float(value)
    if spec.kind == "mode":
        return GuardMode(value)
    return value


def _check(spec: _Spec, value: Any, where: str) -> None:
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}={value!r}: expected a bool")
    elif spec.kind == "mode":
        if isinstance(value, GuardMode):
            return
        try:
            GuardMode(value)
        except ValueError:
            choices = "|".join(m.value for m in GuardMode)
            raise ConfigError(f"{where}={value!r}: expected one of {choices}") from None
    elif spec.kind == "count":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}={value!r}: expected an integer")
        if value < spec.minimum:
            raise ConfigError(f"{where}={value!r}: must be at least {int(spec.minimum)}")
    else:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{where}={value!r}: expected a finite number of seconds")
        if value < spec.minimum:
            raise ConfigError(f"{where}={value!r}: must be at least {spec.minimum:g}")
