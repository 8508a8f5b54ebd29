"""Every threshold of the deterministic detectors, in one frozen dataclass.

Each default says where it comes from (``docs/peers.md`` lists what peers use) and
which way it errs. A threshold is the count (or amount) at which a signal's severity
reaches 1.0, i.e. becomes conclusive; severity is the count divided by it, so every
signal warns from half its threshold. Budgets are off (``None``) by default: a budget
is a product decision, not loop evidence. A value that cannot work (a count below 1, a
negative budget) raises :class:`~otel_semloop.errors.ConfigError` at construction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.detectors.call_identity import DEFAULT_POSITION_ARGS, DEFAULT_VOLATILE_ARGS
from otel_semloop.settings import load, setting, validate


@dataclass(frozen=True, slots=True)
class DetectorConfig:
    """Thresholds and knobs of the default detector set (see each field's comment)."""

    # --- action cycles (cycles.py) -----------------------------------------------------
    #: Longest cycle looked for. Gemini CLI looks for periods 1-5; a longer rotation is
    #: left to the no-novelty window (``stale_steps``), so the bound errs toward no loop
    #: only for rotations that also evade that window.
    max_period: int = setting(5, kind="int", minimum=1)
    #: Repeats of a period-1 (action, result) pair that are conclusive: OpenHands' 4
    #: identical action/observation pairs. Three is one retry plus one check, too common
    #: in healthy runs to stop on (LoopGuard warns there; so do we, at 0.75).
    identical_repeats: int = setting(4, kind="int", minimum=1)
    #: Repeats of a longer cycle that are conclusive: OpenHands' A-B alternation 3 times
    #: (6 actions wasted). Gemini CLI waits for 5 repeats; 3 catches the alternating loop
    #: two rounds earlier and still needs at least 6 identical (action, result) pairs.
    cycle_repeats: int = setting(3, kind="int", minimum=1)
    #: Repeats of a cycle of three or more different calls that are conclusive: twice.
    #: A-B-C-A-B-C with the same results already repeats three (action, result) pairs,
    #: as many as the conclusive period-1 and period-2 cycles waste (3 and 4); a rotation
    #: through several tools rarely runs a third full round before the run is cut off.
    long_cycle_repeats: int = setting(2, kind="int", minimum=1)

    # --- no progress (progress.py) -----------------------------------------------------
    #: Same action, same normalised result, with nothing novel in between: conclusive at
    #: OpenHands' 4 (the chain may be interleaved with other repeated actions).
    repeated_result_repeats: int = setting(4, kind="int", minimum=1)
    #: The same call of a tool that sets a value (``set_email``, ``save_draft``: see
    #: :func:`~otel_semloop.detectors.arguments.sets_value`), acknowledged again and again
    #: with nothing new between: one fewer than ``repeated_result_repeats``, since a write
    #: waits on nothing (a status read may be a poll; the same value set a third time
    #: cannot change anything the first did not).
    rewrite_repeats: int = setting(3, kind="int", minimum=1)
    #: Consecutive calls of one tool whose arguments differ only cosmetically and whose
    #: results are the same: as many as identical calls need (4), since a cosmetic change
    #: is no change.
    near_duplicate_repeats: int = setting(4, kind="int", minimum=1)
    #: Calls of one tool with *different* arguments that all get the same non-trivial
    #: answer (the same text, the same empty list, the same "not found"), with no new
    #: result anywhere between: a reworded query, toggled flags, an edited URL or date
    #: range that changes nothing. As many as identical calls need (4): the arguments
    #: changed, the answer did not. Acknowledgements ("ok", "saved") never count (batch
    #: work), nor do calls about something no call of the chain asked about (no word in
    #: common), and a later new answer from the same tool resolves it (the search
    #: finally worked).
    same_answer_repeats: int = setting(4, kind="int", minimum=1)
    #: Identical calls (same tool, same canonical arguments) with no new call in between,
    #: whatever their results: the absolute ceiling that still applies when results change
    #: or report progress. 30 polls at a typical 10-30 s interval is 5-15 minutes; a
    #: higher ceiling errs toward no loop for slow pollers.
    call_ceiling: int = setting(30, kind="int", minimum=1)
    #: Tool actions in a row that each repeat an earlier (action, result) pair: LoopGuard's
    #: 12-event window. Catches rotations too long or too shuffled for the cycle tracker.
    stale_steps: int = setting(12, kind="int", minimum=1)
    #: Sliding window of recent tool steps over which novelty is measured: a run rotating
    #: through trivial commands has a little novelty now and then, which resets a count
    #: of stale steps in a row but not a window. Measured on the corpus: 24 (twice
    #: ``stale_steps``) missed rotations of 14-26 steps; 16 caught them with no healthy run
    #: flagged.
    stale_window: int = setting(16, kind="int", minimum=2)
    #: Novel steps allowed in a full window that is still stale: one in four (at least
    #: one stale step is always needed, whatever the two values). Explicit
    #: progress (a rising figure, growing counts) and a poll that ends clear the window.
    stale_window_novel: int = setting(4, kind="int", minimum=0)
    #: Seconds without a novel tool action, when spans carry times. Ten minutes is longer
    #: than any poll interval an agent should sit through silently; errs toward no loop
    #: for slow but real work (which is novel and resets the clock anyway).
    stale_seconds: float | None = setting(600.0, kind="float", above=0, optional=True)
    #: How many distinct (action, result) digests are remembered to judge novelty. Past
    #: it the least recently seen is forgotten and counts as new when it returns: the
    #: bound errs toward no loop.
    seen_capacity: int = setting(4096, kind="int", minimum=1)
    #: Per-tool argument names that identify a request rather than an action (``"*"``
    #: applies to every tool); merged with ``DEFAULT_VOLATILE_ARGS``; matched
    #: case-insensitively.
    volatile_args: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: Argument names that position a read (page, offset, cursor): never a cosmetic change.
    position_args: frozenset[str] = DEFAULT_POSITION_ARGS

    # --- failures (failures.py) --------------------------------------------------------
    #: The same call failing with the same error class: OpenHands' 3 identical actions
    #: ending in errors.
    repeated_error_repeats: int = setting(3, kind="int", minimum=1)
    #: A permanent error (401, 403, 404, invalid arguments) repeated by the same call:
    #: LoopGuard stops at the 2nd; the same request cannot start succeeding.
    permanent_error_repeats: int = setting(2, kind="int", minimum=1)
    #: A transient error (429, 5xx, timeout) repeated by the same call without success:
    #: Cline's hard limit of 5. A retry that ends in success is dropped from the verdict.
    transient_error_repeats: int = setting(5, kind="int", minimum=1)
    #: Consecutive failed LLM or tool calls with no completed step between: twice a
    #: typical client retry budget (2-3 retries). Errs toward no loop for short blips.
    retry_storm_failures: int = setting(6, kind="int", minimum=1)

    # --- text (text.py) ----------------------------------------------------------------
    #: Near-identical assistant messages in a row with no tool call between: OpenHands'
    #: 3 identical agent messages.
    monologue_repeats: int = setting(3, kind="int", minimum=1)
    #: Occurrences of one normalised line or sentence inside one LLM output: Gemini CLI's
    #: 10 repeats of a chunk. Lines in code blocks, lists and tables never count.
    chant_repeats: int = setting(10, kind="int", minimum=1)
    #: Consecutive assistant messages asserting the same figures and names in new words,
    #: with no action between (``restated_conclusion``): one more than identical messages
    #: need (``monologue_repeats``), since the wording changed. A double-check that
    #: confirms an answer once or twice stays below it.
    restatement_repeats: int = setting(4, kind="int", minimum=1)
    #: Shorter normalised units ("ok", "done") are chanting only when repeated short units
    #: make up most of the output (see ``text.SHORT_CHANT_SHARE``): among real sentences
    #: they are too common to mean anything.
    chant_min_chars: int = setting(12, kind="int", minimum=1)

    # --- agents (agents.py) ------------------------------------------------------------
    #: Longest hand-off cycle looked for (A-B is 2, A-B-C is 3).
    handoff_max_period: int = setting(4, kind="int", minimum=1)
    #: Repeats of a hand-off cycle with nothing new: as for action cycles (OpenHands'
    #: alternation 3 times); period 1 (the same agent re-invoked) needs ``identical_repeats``.
    handoff_repeats: int = setting(3, kind="int", minimum=1)

    # --- budgets (budgets.py): off by default --------------------------------------------
    max_steps: int | None = setting(None, kind="int", above=0, optional=True)
    max_tool_calls: int | None = setting(None, kind="int", above=0, optional=True)
    max_tokens: int | None = setting(None, kind="int", above=0, optional=True)
    max_cost: float | None = setting(None, kind="float", above=0, optional=True)
    max_wall_seconds: float | None = setting(None, kind="float", above=0, optional=True)

    # --- reporting -----------------------------------------------------------------------
    #: Severity from which a finding is reported at all (a warning). Lower peaks are only
    #: kept as calibration figures.
    report_at: float = setting(0.5, kind="float", above=0, maximum=1)
    #: Span ids kept as evidence per finding. A longer loop keeps its first ones: enough
    #: to mark the loop in a backend, bounded for a 100k-step runaway.
    max_evidence_spans: int = setting(1000, kind="int", minimum=0)
    #: Record per-signal calibration figures (peak severity, also below ``report_at``) on
    #: the verdict, written as ``semloop.calibration.<signal>``.
    calibration: bool = setting(False, kind="bool")

    def __post_init__(self) -> None:
        """Refuse thresholds that cannot work, at construction (never later, in a hook)."""
        validate(self, "DetectorConfig.")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> DetectorConfig:
        """Defaults, overridden by ``SEMLOOP_DETECT_<FIELD>`` variables in ``environ``
        (default ``os.environ``), overridden by ``overrides``.

        Every count and amount above can be set this way, e.g.
        ``SEMLOOP_DETECT_IDENTICAL_REPEATS=5``, ``SEMLOOP_DETECT_MAX_STEPS=200`` (``none``
        turns a budget off again), ``SEMLOOP_DETECT_REPORT_AT=0.6``,
        ``SEMLOOP_DETECT_CALIBRATION=true``. A bad value raises :class:`ConfigError`
        naming the variable. Read by :mod:`otel_semloop.settings`, like the front doors'
        settings.
        """
        return load(cls, prefix=ENV_PREFIX, environ=environ, layers=[("DetectorConfig.", overrides)])

    def volatile_for(self, tool: str) -> frozenset[str]:
        """Volatile argument names for ``tool`` (lower-cased)."""
        extra = self.volatile_args.get(tool, frozenset()) | self.volatile_args.get("*", frozenset())
        if not extra:
            return DEFAULT_VOLATILE_ARGS
        return DEFAULT_VOLATILE_ARGS | {name.lower() for name in extra}


#: Prefix of the environment variables read by :meth:`DetectorConfig.from_env`.
ENV_PREFIX = "SEMLOOP_DETECT_"
