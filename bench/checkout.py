"""A git revision's ``otel_semloop/`` extracted into a temporary directory, for benchmarks
that run this tree side by side with another revision (``--against REV``)."""

from __future__ import annotations

import contextlib
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
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


@contextlib.contextmanager
def extracted(ref: str) -> Iterator[Path]:
    """A temporary directory holding ``otel_semloop/`` of ``ref`` (removed on exit): put
    it first on a subprocess's PYTHONPATH to run that revision."""
    with tempfile.TemporaryDirectory() as tmp:
        extract(ref, Path(tmp))
        yield Path(tmp)
