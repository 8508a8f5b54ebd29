"""The evaluation corpus and its report stay usable: the committed files load, every label
has its spans, the specs keep their promises (30+ situations, 300+ traces, a healthy
look-alike for every loop, a public source for each), and the report runs on a slice."""

from __future__ import annotations

import json
import re

import pytest

from bench import corpus_report
from bench.corpus.generate import seed_for
from bench.corpus.kit import Kit
from bench.corpus.runs import CONVENTIONS, render
from bench.corpus.situations import SITUATIONS
from otel_semloop.model import Step, StepKind
from tests.support.traces import flat_trace

LABELS = corpus_report.CORPUS / "data" / "synthetic.labels.jsonl"


def _labels() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]


def test_corpus_specs_keep_their_promises() -> None:
    loops = {s.id for s in SITUATIONS.values() if s.label == "loop"}
    healthy = [s for s in SITUATIONS.values() if s.label == "healthy"]
    assert len(SITUATIONS) >= 30
    covered = {target for s in healthy for target in s.lookalike_of}
    assert covered <= set(SITUATIONS), covered - set(SITUATIONS)
    for s in SITUATIONS.values():
        assert s.sources and all(
            re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/issues/\d+", u) for u in s.sources
        )
        assert len(s.why) > 40
    # every loop situation has a healthy look-alike on record
    assert loops <= covered, loops - covered


def test_labels_cover_every_situation_in_every_convention() -> None:
    rows = _labels()
    assert len(rows) >= 300
    assert len({r["trace_id"] for r in rows}) == len(rows)
    seen = {(r["situation"], r["convention"]) for r in rows}
    assert seen == {(s, c) for s in SITUATIONS for c in CONVENTIONS}
    for r in rows:
        assert r["label"] == SITUATIONS[r["situation"]].label


def test_committed_data_matches_the_generator() -> None:
    """Regenerating a variant gives the trace ids the labels file records (the data
    was not edited by hand and the specs did not drift from it)."""
    import random

    rows = {(r["situation"], r["variant"], r["convention"]): r["trace_id"] for r in _labels()}
    for sid in ("exact-repeat-listing", "poll-numeric-progress"):
        seed = seed_for(sid, 1)
        run = SITUATIONS[sid].build(Kit(seed))
        for conv in CONVENTIONS:
            rng = random.Random(f"{seed}:{conv}")
            trace_id = f"{rng.getrandbits(128):032x}"
            spans = render(run, conv, trace_id, rng, 0)
            assert spans and rows[(sid, 1, conv)] == trace_id


def _tool(name: str, args: object, result: object) -> Step:
    return Step(StepKind.TOOL, name, tool_arguments=args, tool_result=result)


def test_exact_repeat_rule_needs_three_identical_triples() -> None:
    same = [_tool("ls", {"path": "."}, "a\nb") for _ in range(3)]
    assert corpus_report.exact_repeat_rule(flat_trace(same))
    assert not corpus_report.exact_repeat_rule(flat_trace(same[:2]))
    changing = [_tool("ls", {"path": "."}, f"a\nb{i}") for i in range(5)]
    assert not corpus_report.exact_repeat_rule(flat_trace(changing))
    args_order = [
        _tool("get", {"a": 1, "b": 2}, "x"),
        _tool("get", {"b": 2, "a": 1}, "x"),
        _tool("get", {"a": 1, "b": 2}, "x"),
    ]
    assert corpus_report.exact_repeat_rule(flat_trace(args_order))


def test_report_runs_on_a_slice(capsys: pytest.CaptureFixture[str]) -> None:
    picked = {"exact-repeat-listing", "batch-writes-short-ok", "handoff-delegation"}
    rows, figures = corpus_report.run("synthetic", variants=2, situations=picked)
    out = capsys.readouterr().out
    assert len(rows) == 2 * 3 * len(picked)
    assert {r.convention for r in rows} == set(CONVENTIONS)
    assert figures["unscored"] == 0
    by = {(r.situation, r.convention, r.variant): r for r in rows}
    for conv in CONVENTIONS:
        for v in range(2):
            assert by[("exact-repeat-listing", conv, v)].predictions["exact"]
            assert not by[("batch-writes-short-ok", conv, v)].predictions["exact"]
    for col in corpus_report.COLUMNS:
        assert 0.0 <= figures[col]["accuracy"] <= 1.0
    assert "## Per convention" in out and "## Per signal" in out
    for sid in picked:
        assert sid in out
