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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otel_semloop.settings import load, setting, validate


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
    rather than holding memory or the application: a span is never dropped. Read and
    checked by :mod:`otel_semloop.settings` (the service's shared settings have the same
    names and variables).
    """

    #: Off turns the processor into a pass-through to the downstream processor.
    enabled: bool = setting(True, kind="bool")
    #: Wait after a trace completes (local root ended, no span open) for stragglers:
    #: spans started elsewhere that end just after. Longer delays export; shorter
    #: turns a straggler into a late span (forwarded marked ``semloop.late``).
    grace_seconds: float = setting(0.5, kind="float", minimum=0)
    #: A trace with no span started or ended for this long is released as partial.
    #: Generous because an agent may wait minutes on one model call with spans open.
    idle_seconds: float = setting(120.0, kind="float", minimum=0.001)
    #: A trace held this long since its first span is released as partial, even if busy.
    max_age_seconds: float = setting(1800.0, kind="float", minimum=0.001)
    #: Traces held at once; on overflow the oldest is released (never dropped).
    max_traces: int = setting(10_000, kind="int", minimum=1)
    #: Spans held for one trace; at the limit the held spans are released as a partial
    #: chunk and the trace keeps being grouped, so a huge trace costs bounded memory.
    max_spans_per_trace: int = setting(10_000, kind="int", minimum=1)
    #: Spans held across all traces (the memory bound: agent spans are a few KB each);
    #: on overflow the oldest trace is released.
    max_spans: int = setting(100_000, kind="int", minimum=1)
    #: Released trace ids remembered so that a late span is recognised and marked.
    #: Past it a late span starts a new group instead, released later as partial: the
    #: bound errs toward an extra partial verdict, never toward a lost span.
    recent_traces: int = setting(16_384, kind="int", minimum=0)
    #: Time from a trace's release to its verdict (queueing included). Past it the trace
    #: is forwarded unscored, marked ``semloop.unscored.reason="scoring budget exceeded"``.
    scoring_budget_seconds: float = setting(5.0, kind="float", minimum=0.001)
    #: Threads that run detectors. One suits the deterministic detectors (the GIL
    #: serialises them anyway); more lets a remote judge's waits overlap.
    scoring_threads: int = setting(1, kind="int", minimum=1)
    #: A scoring thread past its budget cannot be killed in Python; it is abandoned and
    #: replaced, up to this many abandoned threads alive at once. Past that, traces are
    #: released unscored ("scorers stuck") until one returns.
    max_stuck_scorers: int = setting(2, kind="int", minimum=0)
    #: How often the worker wakes to release completed traces. The application thread
    #: never wakes the worker: wake-ups are batched to keep it off the GIL.
    tick_seconds: float = setting(0.1, kind="float", minimum=0.001)
    #: How long :meth:`shutdown` may take to score and forward what is held.
    shutdown_timeout_seconds: float = setting(30.0, kind="float", minimum=0)
    #: Live guard mode (see :class:`GuardMode`).
    live_guard: GuardMode = setting(GuardMode.OFF, kind="choice", choices=GuardMode)

    def __post_init__(self) -> None:
        validate(self)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Config:
        """Defaults, overridden by ``SEMLOOP_*`` variables in ``environ`` (default
        ``os.environ``), overridden by ``options`` (argument names as above).

        Raises :class:`ConfigError` for a bad value and :class:`TypeError` for an
        unknown option name.
        """
        return load(cls, prefix=ENV_PREFIX, environ=environ, layers=[("", options)], unknown=TypeError)

    def replace(self, **options: Any) -> Config:
        """A copy with ``options`` changed (validated like the constructor)."""
        return dataclasses.replace(self, **options)


#: Prefix of the processor's (and the service's) environment variables.
ENV_PREFIX = "SEMLOOP_"
