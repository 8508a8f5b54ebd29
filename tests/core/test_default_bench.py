"""The default detector set on the public semloop benchmark: every verdict right, no judge.

Rows go through real GenAI-convention spans (``bench.deepeval_tree``), as the
benchmark script does, minus the OTLP file and the subprocess.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bench.deepeval_tree import trace_from_bench_row
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label
from tests.support.repo_data import BENCH, read_jsonl


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return read_jsonl(BENCH)


@pytest.fixture(scope="module")
def traces(rows):
    return [(row, trace_from_bench_row(row)) for row in rows]


def test_the_default_verdict_is_right_on_all_sixty_traces(traces):
    scorer = Scorer()
    wrong = [row["trace_id"] for row, trace in traces if scorer.score(trace).loop_detected != row["loop"]]
    assert wrong == []


def test_no_healthy_benchmark_trace_gets_even_a_conclusive_finding(traces):
    scorer = Scorer()
    flagged = [
        row["trace_id"]
        for row, trace in traces
        if not row["loop"] and scorer.score(trace).label is not Label.NO_LOOP
    ]
    assert flagged == []


def test_healthy_families_stay_far_from_every_threshold(traces):
    """Calibration: legitimate repetition (template, boilerplate, retry) peaks well below a warning."""
    scorer = Scorer(config=DetectorConfig(calibration=True))
    peaks = [
        max(scorer.score(trace).calibration.values(), default=0.0) for row, trace in traces if not row["loop"]
    ]
    assert max(peaks) < 0.5


def test_the_lexical_mode_keeps_deepevals_published_figure(traces):
    scorer = Scorer(mode="lexical")
    right = Counter(scorer.score(trace).loop_detected == row["loop"] for row, trace in traces)
    assert right[True] == 36


def test_the_default_verdict_still_carries_the_deepeval_score(traces):
    _, trace = traces[0]
    default, lexical = Scorer().score(trace), Scorer(mode="lexical").score(trace)
    assert default.lexical == lexical.lexical and default.lexical is not None


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown scorer mode"):
        Scorer(mode="judge")  # type: ignore[arg-type]
