"""Thresholds chosen by cross-validation by situation, and the figures of the held-out folds.

Used by ``bench/corpus_report.py`` (which prints them beside the in-sample figures). Each
threshold family has a small grid of candidate settings (the default in the middle). For
each situation held out, every family's setting is chosen on the *other* situations
(fewest misses plus :data:`FP_WEIGHT` times the healthy runs flagged: precision first;
ties go to the default), the chosen settings are combined and the held-out situation's
traces are scored with them. The held-out verdicts are the leave-situation-out figures:
what a setting chosen without a situation does on it. Never are all situations used at
once to choose.

Fast: each candidate is scored once over the whole corpus (one family changed, the others
at their defaults), and the folds choose from those predictions; only the held-out rows
are scored again, once per distinct combination of choices.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.suite import DetectorSuite
from otel_semloop.model import Trace
from otel_semloop.policy import Policy
from otel_semloop.verdict import Label

#: A healthy run flagged costs this many missed loops when a setting is chosen.
FP_WEIGHT = 4

#: Per family of thresholds, the candidate settings (overrides of the defaults); ``{}``
#: is the default. Families are chosen independently, each with the others at default.
FAMILIES: dict[str, Sequence[dict[str, Any]]] = {
    "cycles": (
        {"identical_repeats": 3, "cycle_repeats": 2},
        {},
        {"identical_repeats": 5, "cycle_repeats": 4},
    ),
    "no_progress": (
        {
            "repeated_result_repeats": 3,
            "near_duplicate_repeats": 3,
            "same_answer_repeats": 3,
            "rewrite_repeats": 2,
        },
        {},
        {
            "repeated_result_repeats": 5,
            "near_duplicate_repeats": 5,
            "same_answer_repeats": 5,
            "rewrite_repeats": 4,
        },
    ),
    "stale": (
        {"stale_steps": 10, "stale_window": 12},
        {},
        {"stale_steps": 16, "stale_window": 24},
    ),
    "failures": (
        {"repeated_error_repeats": 2, "transient_error_repeats": 4, "retry_storm_failures": 5},
        {},
        {"repeated_error_repeats": 4, "transient_error_repeats": 6, "retry_storm_failures": 8},
    ),
    "text": (
        {"monologue_repeats": 2, "restatement_repeats": 3},
        {},
        {"monologue_repeats": 4, "restatement_repeats": 6},
    ),
}


def _describe(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in overrides.items()) if overrides else "default"


class CrossValidation:
    """Leave-situation-out predictions for rows of ``(trace_id, situation, loop)``."""

    def __init__(
        self,
        rows: Sequence[Any],
        traces: dict[str, Trace],
        default_predictions: dict[str, bool],
        base: DetectorConfig | None = None,
    ) -> None:
        self.rows = rows
        self.traces = traces
        self.base = base or DetectorConfig()
        self.default = default_predictions
        #: (family, candidate index) -> trace id -> flagged as loop.
        self.candidates: dict[tuple[str, int], dict[str, bool]] = {}
        #: Per family, how often each candidate was chosen over the folds.
        self.choices: dict[str, Counter[int]] = {family: Counter() for family in FAMILIES}
        self.held_out: dict[str, bool] = {}

    def _score(self, overrides: dict[str, Any], trace_ids: Sequence[str]) -> dict[str, bool]:
        """``loop`` or not under these thresholds: the detectors and the policy alone (the
        lexical metric and the unscored check never make a trace ``loop``)."""
        suite, policy = DetectorSuite(replace(self.base, **overrides)), Policy()
        out = {}
        for tid in trace_ids:
            trace = self.traces[tid]
            out[tid] = bool(trace.steps) and policy.verdict(suite.detect(trace)).label is Label.LOOP
            suite.release()
        return out

    def run(self, progress: Callable[[str], None] | None = None) -> dict[str, bool]:
        everyone = [row.trace_id for row in self.rows]
        for family, grid in FAMILIES.items():
            for index, overrides in enumerate(grid):
                if overrides:
                    if progress:
                        progress(f"scoring {family}: {_describe(overrides)}")
                    self.candidates[family, index] = self._score(overrides, everyone)
                else:
                    self.candidates[family, index] = self.default
        by_situation: dict[str, list[Any]] = defaultdict(list)
        for row in self.rows:
            by_situation[row.situation].append(row)
        # Per family and candidate, the cost on each situation (summed over the others).
        cost: dict[tuple[str, int], Counter[str]] = {}
        for key, predictions in self.candidates.items():
            per_situation: Counter[str] = Counter()
            for row in self.rows:
                flagged = predictions[row.trace_id]
                if flagged and not row.loop:
                    per_situation[row.situation] += FP_WEIGHT
                elif row.loop and not flagged:
                    per_situation[row.situation] += 1
            cost[key] = per_situation
        totals = {key: sum(c.values()) for key, c in cost.items()}
        combined: dict[tuple[tuple[str, int], ...], dict[str, bool]] = {}
        for situation, held in by_situation.items():
            chosen: list[tuple[str, int]] = []
            for family, grid in FAMILIES.items():
                default_index = next(i for i, o in enumerate(grid) if not o)

                best = min(
                    range(len(grid)),
                    key=lambda i, f=family, d=default_index, s=situation: (
                        totals[f, i] - cost[f, i][s],
                        i != d,
                    ),
                )
                self.choices[family][best] += 1
                if best != default_index:
                    chosen.append((family, best))
            key = tuple(chosen)
            ids = [row.trace_id for row in held]
            if not chosen:
                predictions = {tid: self.default[tid] for tid in ids}
            else:
                overrides: dict[str, Any] = {}
                for family, index in chosen:
                    overrides.update(FAMILIES[family][index])
                predictions = self._score(overrides, ids)
                combined.setdefault(key, {}).update(predictions)
            self.held_out.update(predictions)
        return self.held_out

    def choice_lines(self) -> list[str]:
        """Per family, which setting the folds chose and how often."""
        lines = []
        for family, grid in FAMILIES.items():
            counts = self.choices[family]
            folds = sum(counts.values())
            parts = [f"{_describe(grid[i])}: {counts[i]}/{folds}" for i in range(len(grid)) if counts[i]]
            lines.append(f"  {family:12} {'; '.join(parts)}")
        return lines
