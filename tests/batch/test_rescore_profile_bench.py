"""The budget lines of ``bench/rescore_profile.py`` time the scoring core over the same
traces rescore scores, with the same verdicts: otherwise its multiples of the floor would
describe some other work."""

from __future__ import annotations

import json
from collections import Counter

from bench import rescore_throughput
from bench.rescore_profile import stage_seconds
from otel_semloop.cli import main


def test_the_stage_budget_scores_every_trace_rescore_scores_with_the_same_labels(tmp_path):
    path = tmp_path / "agents.jsonl"
    rescore_throughput.write_file(path, 400_000)
    times, labels = stage_seconds(path.read_bytes().splitlines(), runs=1)

    summary = tmp_path / "summary.json"
    assert (
        main(["rescore", str(path), "-o", str(tmp_path / "out.jsonl"), "-q", "--summary", str(summary)]) == 0
    )
    said = json.loads(summary.read_text())

    assert set(times) == {"decode", "build", "score"}
    assert all(seconds >= 0 for seconds in times.values())
    assert len(labels) == said["agent_traces_scored"]
    assert Counter(labels) == Counter(said["by_label"])
    assert labels.count("loop") > 0 and labels.count("no_loop") > 0
