"""Every threshold of the deterministic detectors, in one frozen dataclass.

Each default says where it comes from (``docs/peers.md`` lists what peers use) and
which way it errs. A threshold is the count (or amount) at which a signal's severity
reaches 1.0, i.e. becomes conclusive; severity is the count divided by it, so every
signal warns from half its threshold. Budgets are off (``None``) by default: a budget
is a product decision, not loop evidence. A value that cannot work (a count below 1, a
negative budget) raises :class:`~otel_semloop.errors.ConfigError` at construction.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.errors import ConfigError
from otel_semloop.normalize import DEFAULT_POSITION_ARGS, DEFAULT_VOLATILE_ARGS


@dataclass(frozen=True, slots=True)
class DetectorConfig:
    """Thresholds and knobs of the default detector set (see each field's comment)."""

    # --- action cycles (cycles.py) -----------------------------------------------------
    #: Longest cycle looked for. Gemini CLI looks for periods 1-5; a longer rotation is
    #: left to the no-novelty window (``stale_steps``), so the bound errs toward no loop
    #: only for rotations that also evade that window.
    max_period: int = 5
    #: Repeats of a period-1 (action, result) pair that are conclusive: OpenHands' 4
    #: identical action/observation pairs. Three is one retry plus one check, too common
    #: in healthy runs to stop on (LoopGuard warns there; so do we, at 0.75).
    identical_repeats: int = 4
    #: Repeats of a longer cycle that are conclusive: OpenHands' A-B alternation 3 times
    #: (6 actions wasted). Gemini CLI waits for 5 repeats; 3 catches the alternating loop
    #: two rounds earlier and still needs at least 6 identical (action, result) pairs.
    cycle_repeats: int = 3

    # --- no progress (progress.py) -----------------------------------------------------
    #: Same action, same normalised result, with nothing novel in between: conclusive at
    #: OpenHands' 4 (the chain may be interleaved with other repeated actions).
    repeated_result_repeats: int = 4
    #: Consecutive calls of one tool whose arguments differ only cosmetically and whose
    #: results are the same: as many as identical calls need (4), since a cosmetic change
    #: is no change.
    near_duplicate_repeats: int = 4
    #: Identical calls (same tool, same canonical arguments) with no new call in between,
    #: whatever their results: the absolute ceiling that still applies when results change
    #: or report progress. 30 polls at a typical 10-30 s interval is 5-15 minutes; a
    #: higher ceiling errs toward no loop for slow pollers.
    call_ceiling: int = 30
    #: Tool actions in a row that each repeat an earlier (action, result) pair: LoopGuard's
    #: 12-event window. Catches rotations too long or too shuffled for the cycle tracker.
    stale_steps: int = 12
    #: Seconds without a novel tool action, when spans carry times. Ten minutes is longer
    #: than any poll interval an agent should sit through silently; errs toward no loop
    #: for slow but real work (which is novel and resets the clock anyway).
    stale_seconds: float | None = 600.0
    #: How many distinct (action, result) digests are remembered to judge novelty. Past
    #: it the least recently seen is forgotten and counts as new when it returns: the
    #: bound errs toward no loop.
    seen_capacity: int = 4096
    #: Per-tool argument names that identify a request rather than an action (``"*"``
    #: applies to every tool); merged with ``DEFAULT_VOLATILE_ARGS``; matched
    #: case-insensitively.
    volatile_args: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: Argument names that position a read (page, offset, cursor): never a cosmetic change.
    position_args: frozenset[str] = DEFAULT_POSITION_ARGS

    # --- failures (failures.py) --------------------------------------------------------
    #: The same call failing with the same error class: OpenHands' 3 identical actions
    #: ending in errors.
    repeated_error_repeats: int = 3
    #: A permanent error (401, 403, 404, invalid arguments) repeated by the same call:
    #: LoopGuard stops at the 2nd; the same request cannot start succeeding.
    permanent_error_repeats: int = 2
    #: A transient error (429, 5xx, timeout) repeated by the same call without success:
    #: Cline's hard limit of 5. A retry that ends in success is dropped from the verdict.
    transient_error_repeats: int = 5
    #: Consecutive failed LLM or tool calls with no completed step between: twice a
    #: typical client retry budget (2-3 retries). Errs toward no loop for short blips.
    retry_storm_failures: int = 6

    # --- text (text.py) ----------------------------------------------------------------
    #: Near-identical assistant messages in a row with no tool call between: OpenHands'
    #: 3 identical agent messages.
    monologue_repeats: int = 3
    #: Occurrences of one normalised line or sentence inside one LLM output: Gemini CLI's
    #: 10 repeats of a chunk. Lines in code blocks, lists and tables never count.
    chant_repeats: int = 10
    #: Shorter normalised units ("ok", "done") are never chanting: too common to mean
    #: anything. Errs toward no loop for very short chants.
    chant_min_chars: int = 12

    # --- agents (agents.py) ------------------------------------------------------------
    #: Longest hand-off cycle looked for (A-B is 2, A-B-C is 3).
    handoff_max_period: int = 4
    #: Repeats of a hand-off cycle with nothing new: as for action cycles (OpenHands'
    #: alternation 3 times); period 1 (the same agent re-invoked) needs ``identical_repeats``.
    handoff_repeats: int = 3

    # --- budgets (budgets.py): off by default --------------------------------------------
    max_steps: int | None = None
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    max_wall_seconds: float | None = None

    # --- reporting -----------------------------------------------------------------------
    #: Severity from which a finding is reported at all (a warning). Lower peaks are only
    #: kept as calibration figures.
    report_at: float = 0.5
    #: Span ids kept as evidence per finding. A longer loop keeps its first ones: enough
    #: to mark the loop in a backend, bounded for a 100k-step runaway.
    max_evidence_spans: int = 1000
    #: Record per-signal calibration figures (peak severity, also below ``report_at``) on
    #: the verdict, written as ``semloop.calibration.<signal>``.
    calibration: bool = False

    def __post_init__(self) -> None:
        """Refuse thresholds that cannot work, at construction (never later, in a hook)."""
        for name in _COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"DetectorConfig.{name} must be an integer >= 1, got {value!r}")
        for name in _OPTIONAL_AMOUNTS:
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0
            ):
                raise ConfigError(f"DetectorConfig.{name} must be a positive number or None, got {value!r}")
        if not 0.0 < self.report_at <= 1.0:
            raise ConfigError(f"DetectorConfig.report_at must be in (0, 1], got {self.report_at!r}")
        if self.max_evidence_spans < 0:
            raise ConfigError(
                f"DetectorConfig.max_evidence_spans must be >= 0, got {self.max_evidence_spans!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> DetectorConfig:
        """Defaults, overridden by ``SEMLOOP_DETECT_<FIELD>`` variables in ``environ``
        (default ``os.environ``), overridden by ``overrides``.

        Every count and amount above can be set this way, e.g.
        ``SEMLOOP_DETECT_IDENTICAL_REPEATS=5``, ``SEMLOOP_DETECT_MAX_STEPS=200`` (``none``
        turns a budget off again), ``SEMLOOP_DETECT_REPORT_AT=0.6``,
        ``SEMLOOP_DETECT_CALIBRATION=true``. A bad value raises :class:`ConfigError`
        naming the variable.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in (*_COUNTS, *_OPTIONAL_AMOUNTS, "report_at", "max_evidence_spans", "calibration"):
            variable = ENV_PREFIX + name.upper()
            raw = env.get(variable, "").strip()
            if raw:
                values[name] = _parse_env(name, raw, variable)
                try:  # validate alone, so the error names the variable that set it
                    cls(**{name: values[name]})
                except ConfigError as error:
                    raise ConfigError(f"{variable}={raw!r}: {error}") from None
        values.update(overrides)
        return cls(**values)

    def volatile_for(self, tool: str) -> frozenset[str]:
        """Volatile argument names for ``tool`` (lower-cased)."""
        extra = self.volatile_args.get(tool, frozenset()) | self.volatile_args.get("*", frozenset())
        if not extra:
            return DEFAULT_VOLATILE_ARGS
        return DEFAULT_VOLATILE_ARGS | {name.lower() for name in extra}


_COUNTS = (
    "max_period",
    "identical_repeats",
    "cycle_repeats",
    "repeated_result_repeats",
    "near_duplicate_repeats",
    "call_ceiling",
    "stale_steps",
    "seen_capacity",
    "repeated_error_repeats",
    "permanent_error_repeats",
    "transient_error_repeats",
    "retry_storm_failures",
    "monologue_repeats",
    "chant_repeats",
    "chant_min_chars",
    "handoff_max_period",
    "handoff_repeats",
)
_OPTIONAL_AMOUNTS = (
    "stale_seconds",
    "max_steps",
    "max_tool_calls",
    "max_tokens",
    "max_cost",
    "max_wall_seconds",
)

#: Prefix of the environment variables read by :meth:`DetectorConfig.from_env`.
ENV_PREFIX = "SEMLOOP_DETECT_"


def _parse_env(name: str, raw: str, variable: str) -> Any:
    try:
        if name == "calibration":
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(raw)
            return lowered in ("true", "1", "yes", "on")
        if name in _OPTIONAL_AMOUNTS:
            return None if raw.lower() in ("none", "off") else float(raw)
        if name == "report_at":
            return float(raw)
        return int(raw)
    except ValueError:
        raise ConfigError(f"{variable}={raw!r} is not a valid value for DetectorConfig.{name}") from None
