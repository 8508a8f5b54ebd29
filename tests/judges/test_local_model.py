"""The local judge with its real model (bundled all-MiniLM-L6-v2, loaded offline): one trace of
each benchmark family read correctly. Marked ``local_model``: CI runs it in its own step."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from otel_semloop.builder import build_trace
from otel_semloop.judges import Judge, JudgedScorer
from otel_semloop.judges.backends.local import LocalBackend
from otel_semloop.writeback import verdict_attributes

try:
    from bench.deepeval_tree import tree_to_spans
except ImportError:  # before the benchmark helpers moved to bench/
    from otel_semloop.deepeval_tree import tree_to_spans  # type: ignore[no-redef]

DATASET = Path(__file__).resolve().parents[2] / "data" / "semloop-bench" / "dataset.jsonl"

pytestmark = pytest.mark.local_model


def test_the_local_judge_reads_one_trace_of_every_family_correctly():
    os.environ["HF_HUB_OFFLINE"] = "1"
    rows = {}
    for line in DATASET.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows.setdefault(row["family"], row)
    backend = LocalBackend()
    assert backend.warm() >= 0.0
    scorer = JudgedScorer(Judge(backend, timeout=120), escalate="always")
    traces = [build_trace(tree_to_spans(row["root"], row["trace_id"])) for row in rows.values()]
    verdicts = scorer.score_batch(traces)
    scorer.judge.close()
    wrong = []
    for row, verdict in zip(rows.values(), verdicts, strict=True):
        attrs = verdict_attributes(verdict)
        assert attrs["semloop.judge.status"] == "judged", attrs
        if (attrs["semloop.judge.reasoning_stagnation"] < 1.0) != row["stagnation"]:
            wrong.append(("stagnation", row["trace_id"]))
        if attrs["semloop.loop.detected"] != row["loop"]:
            wrong.append(("verdict", row["trace_id"]))
    assert wrong == []
