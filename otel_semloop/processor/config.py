"""Configuration of :class:`~otel_semloop.processor.SemloopSpanProcessor`.

Every field of :class:`Config` (those of :class:`~otel_semloop.settings.BufferingSettings`
and the two below) is a constructor argument and a ``SEMLOOP_<FIELD>`` environment
variable (``SEMLOOP_GRACE_SECONDS``), like the SDK's ``OTEL_BSP_*``; the README lists them
with their defaults. Precedence: argument, then variable, then default. A bad value raises
:class:`~otel_semloop.errors.ConfigError` naming the argument or the variable, at
construction (never later, inside a hook).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from otel_semloop.settings import BufferingSettings, load, setting, validate


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
class Config(BufferingSettings):
    """Every option of the span processor; build it with :meth:`from_env`.

    Bounds err toward releasing spans early (scored as partial, marked and counted)
    rather than holding memory or the application: a span is never dropped. The
    grouping, scoring and shutdown settings are shared with the service
    (:class:`~otel_semloop.settings.BufferingSettings`: same names, same ``SEMLOOP_*``
    variables); read and checked by :mod:`otel_semloop.settings`.
    """

    #: Off turns the processor into a pass-through to the downstream processor.
    enabled: bool = setting(True, kind="bool")
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
        return load(
            cls,
            prefix=ENV_PREFIX,
            environ=environ,
            layers=[("", options)],
            unknown=TypeError,
            former_names=False,
        )


#: Prefix of the processor's (and the service's) environment variables.
ENV_PREFIX = "SEMLOOP_"
