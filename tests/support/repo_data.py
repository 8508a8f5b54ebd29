"""Where the data the claims rest on lives: ``data/`` in this repository, never outside it.

The benchmark and the deepeval golden file are read by several tests; keeping their location
in one place means a moved file fails every reader loudly instead of skipping some of them.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
DATA = ROOT / "data"
BENCH = DATA / "semloop-bench" / "dataset.jsonl"
GOLDEN = DATA / "deepeval-golden" / "golden.jsonl"


def read_jsonl(path: Path) -> list[dict]:
    """Every non-blank line of a JSON lines file; a missing file raises, it never skips."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: it is part of the repository (see data/README.md)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
