"""One settings mechanism for every configuration: field metadata and one reader.

A configuration is a frozen dataclass whose tunable fields are declared with
:func:`setting` (type, bounds, environment variable, former names), read the same way for
every front door:

* :func:`load`: defaults, then environment variables (``<prefix><FIELD>``, e.g.
  ``SEMLOOP_GRACE_SECONDS``), then each layer of explicit values in order (a config file,
  constructor options, flags). Text is parsed by type; a former name is accepted with a
  ``DeprecationWarning``; an unknown name raises.
* :func:`validate`, from ``__post_init__``: every field is checked against its bounds and
  normalised (``5`` seconds becomes ``5.0``, ``"warn"`` the enum member), so a config
  built directly is held to the same rules.

A bad value raises :class:`~otel_semloop.errors.ConfigError` naming where it came from (the
variable, the option or the file key), at construction. Both buffering front doors share
:class:`BufferingSettings`: the same names, so the same ``SEMLOOP_*`` variables.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from otel_semloop.errors import ConfigError

__all__ = [
    "BufferingSettings",
    "Spec",
    "environment_variables",
    "load",
    "setting",
    "setting_default",
    "specs",
    "validate",
]

T = TypeVar("T")
Kind = Literal["bool", "int", "float", "str", "choice"]

_KEY = "otel_semloop.setting"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_NONE = frozenset({"none", "off", ""})


@dataclass(frozen=True, slots=True)
class Spec:
    """How one field is read and checked."""

    kind: Kind
    #: Inclusive lower bound, or exclusive when ``above`` is set instead.
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    #: None is a valid value (text ``none``/``off``).
    optional: bool = False
    #: For ``choice``: an enum class or the allowed strings.
    choices: type[enum.Enum] | tuple[str, ...] | None = None
    #: The environment variable; None: ``<prefix><FIELD NAME>``; ``""``: none.
    env: str | None = None
    #: Former names, still accepted as option keys with a DeprecationWarning.
    old_names: tuple[str, ...] = ()


def setting(default: Any = dataclasses.MISSING, *, secret: bool = False, **spec: Any) -> Any:
    """A dataclass field with its :class:`Spec` (``spec``: the Spec's fields) in the
    metadata. A ``secret`` is left out of the dataclass ``repr``."""
    return dataclasses.field(default=default, metadata={_KEY: Spec(**spec)}, repr=not secret)


def setting_default(base: type, name: str, default: Any) -> Any:
    """The setting ``name`` of ``base`` with another default (a front door whose workload
    wants a different default redeclares the shared field with this)."""
    (spec,) = [f.metadata[_KEY] for f in dataclasses.fields(base) if f.name == name]
    return dataclasses.field(default=default, metadata={_KEY: spec})


def specs(cls: type) -> dict[str, Spec]:
    """The declared settings of a config class, by field name, in field order."""
    return {f.name: f.metadata[_KEY] for f in dataclasses.fields(cls) if _KEY in f.metadata}


def environment_variables(cls: type, prefix: str) -> dict[str, str]:
    """``{field name: environment variable}`` for every setting that has one."""
    out = {}
    for name, spec in specs(cls).items():
        variable = _variable(name, spec, prefix)
        if variable:
            out[name] = variable
    return out


def load(
    cls: type[T],
    *,
    prefix: str,
    environ: Mapping[str, str] | None = None,
    layers: Iterable[tuple[str, Mapping[str, Any]]] = (),
    under_env: Iterable[tuple[str, Mapping[str, Any]]] = (),
    unknown: type[Exception] = ConfigError,
    label: str = "",
    former_names: bool = True,
) -> T:
    """Build ``cls`` from its defaults, the environment (``environ``, default
    ``os.environ``; variables ``prefix + FIELD``), then each ``(source, values)`` layer in
    order (later wins); ``under_env`` layers go below the ``prefix`` variables (other
    environment conventions, e.g. ``OTEL_EXPORTER_OTLP_*``). ``source`` prefixes the name
    in error messages (``"--"`` for flags, ``"config.toml: "`` for a file, ``""`` for
    options). A key that names no
    setting raises ``unknown``; a former name warns and counts as the new one."""
    declared = specs(cls)
    other_fields = {f.name for f in dataclasses.fields(cls) if f.init and f.name not in declared}
    renamed = {old: name for name, spec in declared.items() for old in spec.old_names} if former_names else {}
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}

    def apply(source: str, layer: Mapping[str, Any]) -> None:
        bad = []
        for key, value in layer.items():
            name = key.replace("-", "_")
            if name in renamed:
                new = renamed[name]
                spelled = new.replace("_", "-") if source == "--" else new
                warnings.warn(
                    f"{label}{source}{key} is deprecated: use {source}{spelled}",
                    DeprecationWarning,
                    stacklevel=4,
                )
                name = new
            if name in declared:
                values[name] = parse(declared[name], value, f"{source}{key}")
            elif name in other_fields:
                values[name] = value
            else:
                bad.append(key)
        if bad:
            raise unknown(f"{label}unknown option(s): {', '.join(sorted(bad))}")

    for source, layer in under_env:
        apply(source, layer)
    for name, spec in declared.items():
        variable = _variable(name, spec, prefix)
        raw = env.get(variable) if variable else None
        for old in spec.old_names if former_names and raw is None and spec.env is None else ():
            if env.get(prefix + old.upper()) is not None:
                message = f"{label}{prefix}{old.upper()} is deprecated: use {variable}"
                warnings.warn(message, DeprecationWarning, stacklevel=3)
                variable, raw = prefix + old.upper(), env[prefix + old.upper()]
        if raw is not None and (raw.strip() != "" or (spec.optional and spec.kind == "str")):
            values[name] = parse(spec, raw, variable)
    for source, layer in layers:
        apply(source, layer)
    return cls(**values)


def validate(instance: Any, label: str = "") -> None:
    """Check and normalise every declared setting of a (frozen) dataclass instance."""
    for name, spec in specs(type(instance)).items():
        value = getattr(instance, name)
        object.__setattr__(instance, name, parse(spec, value, f"{label}{name}"))


def parse(spec: Spec, value: Any, where: str) -> Any:
    """``value`` (text, or already typed) as the setting's type, within its bounds."""
    if isinstance(value, str) and spec.kind not in ("str", "choice"):
        value = _from_text(spec, value, where)
    elif isinstance(value, str) and spec.optional and value.strip().lower() in _NONE:
        value = None
    if value is None:
        if spec.optional:
            return None
        raise ConfigError(f"{where}=None: a value is required")
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}={value!r}: expected true or false")
        return value
    if spec.kind == "choice":
        return _choice(spec, value, where)
    if spec.kind == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{where}={value!r}: expected text")
        return value
    if spec.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}={value!r}: expected an integer")
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{where}={value!r}: expected a finite number")
    _check_bounds(spec, value, where)
    return float(value) if spec.kind == "float" else value


def _variable(name: str, spec: Spec, prefix: str) -> str:
    return spec.env if spec.env is not None else prefix + name.upper()


def _from_text(spec: Spec, raw: str, where: str) -> Any:
    text = raw.strip()
    if spec.optional and text.lower() in _NONE:
        return None
    if spec.kind == "bool":
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ConfigError(f"{where}={raw!r}: expected true or false")
    try:
        return int(text) if spec.kind == "int" else float(text)
    except ValueError:
        expected = "an integer" if spec.kind == "int" else "a number"
        raise ConfigError(f"{where}={raw!r}: expected {expected}") from None


def _choice(spec: Spec, value: Any, where: str) -> Any:
    choices = spec.choices
    if isinstance(choices, type) and issubclass(choices, enum.Enum):
        if isinstance(value, choices):
            return value
        try:
            return choices(value.strip().lower() if isinstance(value, str) else value)
        except ValueError:
            allowed = "|".join(str(m.value) for m in choices)
            raise ConfigError(f"{where}={value!r}: expected one of {allowed}") from None
    allowed_values = tuple(choices or ())
    if value not in allowed_values:
        raise ConfigError(f"{where}={value!r}: expected one of {', '.join(allowed_values)}")
    return value


def _check_bounds(spec: Spec, value: float, where: str) -> None:
    if spec.minimum is not None and value < spec.minimum:
        raise ConfigError(f"{where}={value!r}: must be at least {spec.minimum:g}")
    if spec.above is not None and value <= spec.above:
        raise ConfigError(f"{where}={value!r}: must be greater than {spec.above:g}")
    if spec.maximum is not None and value > spec.maximum:
        raise ConfigError(f"{where}={value!r}: must be at most {spec.maximum:g}")


@dataclass(frozen=True, slots=True)
class BufferingSettings:
    """The settings both buffering front doors share (the span processor's
    :class:`~otel_semloop.processor.config.Config` and the service's
    :class:`~otel_semloop.service.config.ServiceConfig` extend this class): how traces are
    grouped and when they are released (:mod:`otel_semloop.grouping`), and how they are
    scored (:mod:`otel_semloop.pool`). Defaults are the span processor's; the service
    redeclares a few with :func:`setting_default`."""

    #: Wait after a trace completes (local root ended, no span open) for stragglers:
    #: spans started elsewhere that end just after. Longer delays export; shorter
    #: turns a straggler into a late span (forwarded marked ``semloop.late``).
    grace_seconds: float = setting(0.5, kind="float", minimum=0, old_names=("grace",))
    #: A trace with no span started or ended for this long is released as partial.
    #: Generous because an agent may wait minutes on one model call with spans open.
    idle_seconds: float = setting(120.0, kind="float", minimum=0.001, old_names=("idle",))
    #: A trace held this long since its first span is released as partial, even if busy.
    max_age_seconds: float = setting(1800.0, kind="float", minimum=0.001, old_names=("max_age",))
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
    scoring_budget_seconds: float = setting(5.0, kind="float", minimum=0.001, old_names=("scoring_budget",))
    #: Threads that run detectors. One suits the deterministic detectors (the GIL
    #: serialises them anyway); more lets a remote judge's waits overlap (the processor
    #: uses at least two when a judge is configured).
    scoring_threads: int = setting(1, kind="int", minimum=1)
    #: A scoring thread past its budget cannot be killed in Python; it is abandoned and
    #: replaced, up to this many abandoned threads alive at once. Past that, traces are
    #: released unscored ("scorers stuck") until one returns.
    max_stuck_scorers: int = setting(2, kind="int", minimum=0)
    #: How often held traces' deadlines are checked (release, budget).
    tick_seconds: float = setting(0.1, kind="float", minimum=0.001, old_names=("tick",))
    #: Shutdown (or SIGTERM): time to score and forward everything held.
    shutdown_timeout_seconds: float = setting(30.0, kind="float", minimum=0, old_names=("drain_timeout",))
    #: GenAI log records (message content emitted as logs) held in all for the traces
    #: being grouped, to be put on their spans before scoring; past it the oldest is
    #: dropped from the hold and counted (never from forwarding: the service forwards
    #: every log record as it arrives).
    max_log_events: int = setting(10_000, kind="int", minimum=1)
    #: Agent names the loop metrics (``semloop.loops`` and the others counted by
    #: ``gen_ai.agent.name``) keep apart: the first this many seen; later ones count as
    #: ``other``, so a misbehaving sender cannot grow a metric's series without bound.
    metric_agent_names: int = setting(20, kind="int", minimum=0)

    def buffer_limits(self) -> Any:
        """The :class:`~otel_semloop.grouping.BufferLimits` these settings describe."""
        from otel_semloop.grouping import BufferLimits  # grouping is below settings in the core

        return BufferLimits(
            grace=self.grace_seconds,
            idle=self.idle_seconds,
            max_age=self.max_age_seconds,
            max_traces=self.max_traces,
            max_spans_per_trace=self.max_spans_per_trace,
            max_spans=self.max_spans,
            recent=self.recent_traces,
        )
