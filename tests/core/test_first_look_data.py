"""The first-look batches in the repository are what their generator makes, and keep their promises.

Nothing here scores a trace: a first-look batch is scored once, by the detection side, after
its labels are fixed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.corpus.generate import generate_batch, load_batch
from bench.corpus.runs import CONVENTIONS
from bench.corpus.shapes import ALL_CONVENTIONS
from bench.corpus.situations import SITUATIONS

ROOT = Path(__file__).resolve().parents[2]
FIRST_LOOK = ROOT / "bench" / "corpus" / "first_look"
BATCHES = sorted(p for p in FIRST_LOOK.glob("batch*") if (p / "situations.py").is_file())
VARIANTS = 8


def _known() -> dict:
    """Every situation a look-alike may name: the corpus's and every batch's."""
    known = dict(SITUATIONS)
    for batch in BATCHES:
        known.update(load_batch(batch).SITUATIONS)
    return known


def test_there_are_batches_to_check() -> None:
    assert BATCHES, "bench/corpus/first_look/batchN/situations.py"


@pytest.mark.parametrize("batch", BATCHES, ids=lambda p: p.name)
def test_regenerating_a_batch_reproduces_its_committed_files(batch: Path, tmp_path: Path) -> None:
    generate_batch(batch, VARIANTS, out=tmp_path)
    made = sorted(p.name for p in tmp_path.iterdir())
    conventions = load_batch(batch).CONVENTIONS
    assert made == sorted(["README.md", "labels.jsonl", *(f"{c}.otlp.jsonl.gz" for c in conventions)])
    for name in made:
        assert (tmp_path / name).read_bytes() == (batch / name).read_bytes(), name


@pytest.mark.parametrize("batch", BATCHES, ids=lambda p: p.name)
def test_labels_cover_each_situation_in_every_convention_and_variant(batch: Path) -> None:
    module = load_batch(batch)
    situations = module.SITUATIONS
    rows = [json.loads(line) for line in (batch / "labels.jsonl").read_text().splitlines()]
    seen = {(r["situation"], r["convention"], r["variant"]) for r in rows}
    assert seen == {(s, c, v) for s in situations for c in module.CONVENTIONS for v in range(VARIANTS)}
    assert len({r["trace_id"] for r in rows}) == len(rows)
    assert all(r["label"] == situations[r["situation"]].label for r in rows)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda p: p.name)
def test_a_batch_has_ten_situations_with_both_labels_and_named_look_alikes(batch: Path) -> None:
    situations = load_batch(batch).SITUATIONS
    assert len(situations) >= 10
    labels = [s.label for s in situations.values()]
    assert labels.count("loop") >= 4 and labels.count("healthy") >= 4
    for s in situations.values():
        assert s.sources and s.why
        if s.label == "healthy":
            assert s.lookalike_of, f"{s.id} names the loops it resembles"
            for other in s.lookalike_of:
                assert _known()[other].label == "loop", (s.id, other)


def test_situation_ids_are_unique_across_batches() -> None:
    ids = [i for batch in BATCHES for i in load_batch(batch).SITUATIONS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("batch", BATCHES, ids=lambda p: p.name)
def test_a_batch_cites_no_thread_the_corpus_or_another_batch_cites(batch: Path) -> None:
    own = {url for s in load_batch(batch).SITUATIONS.values() for url in s.sources}
    others = {url for s in SITUATIONS.values() for url in s.sources}
    for other in BATCHES:
        if other != batch:
            others |= {url for s in load_batch(other).SITUATIONS.values() for url in s.sources}
    assert not own & others


@pytest.mark.parametrize("batch", BATCHES, ids=lambda p: p.name)
def test_a_batch_renders_the_corpus_conventions_and_a_shape_the_corpus_does_not_use(batch: Path) -> None:
    conventions = load_batch(batch).CONVENTIONS
    assert set(CONVENTIONS) <= set(conventions) <= set(ALL_CONVENTIONS)
    assert set(conventions) - set(CONVENTIONS)


@pytest.mark.parametrize("batch", BATCHES, ids=lambda p: p.name)
def test_readme_says_when_and_that_it_was_written_blind(batch: Path) -> None:
    text = (batch / "README.md").read_text()
    assert re.search(r"Written \d{4}-\d{2}-\d{2}, written blind", text)
