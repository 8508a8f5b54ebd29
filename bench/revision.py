"""Another revision's package beside this one, for side-by-side benchmarks and checks:
``extract(ref, into)`` puts ``otel_semloop/`` of git ref ``ref`` into ``into``; run it with
``into`` first on ``PYTHONPATH`` (or as the working directory)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def extract(ref: str, into: Path) -> None:
    """``otel_semloop/`` of git ref ``ref`` into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "otel_semloop"],
        check=True,
        capture_output=True,
    ).stdout
    tar_path = into / "code.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        try:
            tar.extractall(into, filter="data")
        except TypeError:  # a Python without extraction filters (our own archive: trusted)
            tar.extractall(into)
