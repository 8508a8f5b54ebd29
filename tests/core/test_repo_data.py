"""The benchmark and golden files are in the repository, unchanged, with their provenance."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys

import pytest

from tests.support.repo_data import BENCH, DATA, GOLDEN, ROOT, read_jsonl


def _recorded_checksums() -> dict[str, str]:
    table = (DATA / "README.md").read_text(encoding="utf-8")
    return {m[1]: m[2] for m in re.finditer(r"\| `([\w-]+/)` \| `[\w.]+` \| \d+ \| `([0-9a-f]{64})`", table)}


@pytest.mark.parametrize(("path", "lines"), [(BENCH, 60), (GOLDEN, 78)], ids=["semloop-bench", "golden"])
def test_data_file_is_present_complete_and_unchanged(path, lines):
    assert len(read_jsonl(path)) == lines
    assert (path.parent / "README.md").is_file(), "each data file keeps the README that says where it is from"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert _recorded_checksums()[path.parent.name + "/"] == digest


def test_a_missing_data_file_raises_instead_of_skipping(tmp_path):
    with pytest.raises(FileNotFoundError, match="part of the repository"):
        read_jsonl(tmp_path / "absent.jsonl")


def test_the_benchmark_script_runs_on_the_copy_in_the_repository():
    script = ROOT / "bench" / "semloop_bench.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    total = next(line for line in done.stdout.splitlines() if line.startswith("total"))
    assert total.split()[1:5] == ["24/60", "36/60", "60/60", "0"]
