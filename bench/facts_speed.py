"""CPU per step of the per-step facts (``Fingerprinter.facts``), side by side with a git ref.

    python bench/facts_speed.py [--rounds 9] [--traces 40] [--against main]

The facts are what every detector reads: digests of the call, the normalised result and
the assistant text, the failure class, novelty and the progress figures
(:class:`~otel_semloop.detectors.facts.Fingerprinter`). Measured on ``--traces`` distinct
50-step GenAI agent runs (``bench.detector_speed.genai_records``, one seed each: nothing
is cached across traces, so scoring the same trace again would not be honest), each
trace's steps built once and their inputs read once before timing, then every step fed
to one fingerprinter reset per trace, two ways:

* ``replay``: as ``DetectorSuite.detect`` runs it (``lazy``: figures read when a call
  repeats, results seen again read once);
* ``live``: as the live guard runs it (everything at once, no text kept).

CPU time of this process (``time.process_time``), microseconds per step, median of
``--rounds`` rounds. With ``--against REF`` the package as it is at git ref REF is
extracted into a temporary directory under another name (``otel_semloop_ref``) and timed
in the same process, rounds interleaved (the order alternating), so that the ratio is
not skewed by the machine's load changing between two runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.detector_speed import genai_records  # noqa: E402

STEPS = 50


def extract(ref: str, into: Path, name: str) -> None:
    """``otel_semloop/`` of git ref ``ref`` as package ``name`` under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "otel_semloop"], check=True, capture_output=True
    ).stdout
    with tempfile.TemporaryFile() as raw:
        raw.write(archive)
        raw.seek(0)
        with tarfile.open(fileobj=raw) as tar:
            tar.extractall(into / "_extract", filter="data")
    (into / "_extract" / "otel_semloop").rename(into / name)
    for path in (into / name).rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"\botel_semloop\b", name, text), encoding="utf-8")


def load(package: str, count: int) -> tuple[ModuleType, ModuleType, list[Any]]:
    """(the module holding ``Fingerprinter``, detectors.config, ``count`` traces built by
    that package's builder)."""
    builder = importlib.import_module(f"{package}.builder")
    try:  # the fingerprinter's home since session 5; earlier refs kept it in base.py
        base = importlib.import_module(f"{package}.detectors.facts")
    except ModuleNotFoundError:
        base = importlib.import_module(f"{package}.detectors.base")
    config = importlib.import_module(f"{package}.detectors.config")
    traces = [builder.build_trace(genai_records(STEPS, seed)) for seed in range(count)]
    for trace in traces:
        for step in trace.steps:  # read every input once (builders may defer decoding)
            _ = step.input_text, step.output_text, step.tool_arguments, step.tool_result
    return base, config, traces


def per_step_us(base: ModuleType, config: ModuleType, traces: list[Any], *, lazy: bool) -> float:
    fingerprinter = base.Fingerprinter(config.DetectorConfig())
    fingerprinter.lazy = lazy
    steps = 0
    start = time.process_time()
    for trace in traces:
        fingerprinter.reset()
        for index, step in enumerate(trace.steps):
            fingerprinter.facts(step, index)
        steps += len(trace.steps)
    return (time.process_time() - start) / steps * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (the median is reported)")
    parser.add_argument("--traces", type=int, default=40, help="distinct 50-step traces per round")
    parser.add_argument("--against", metavar="REF", help="also time the package at this git ref")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        packages = {"this tree": "otel_semloop"}
        if args.against:
            extract(args.against, Path(scratch), "otel_semloop_ref")
            sys.path.insert(0, scratch)
            packages = {args.against: "otel_semloop_ref", "this tree": "otel_semloop"}
        loaded = {label: load(package, args.traces) for label, package in packages.items()}
        samples: dict[tuple[str, str], list[float]] = {}
        for mode in ("replay", "live"):
            for base, config, traces in loaded.values():
                per_step_us(base, config, traces, lazy=mode == "replay")  # warm up
            for round_ in range(args.rounds):
                order = list(loaded) if round_ % 2 == 0 else list(reversed(loaded))
                for label in order:
                    base, config, traces = loaded[label]
                    us = per_step_us(base, config, traces, lazy=mode == "replay")
                    samples.setdefault((mode, label), []).append(us)
    print(
        f"Fingerprinter.facts, CPU us per step, median of {args.rounds} rounds of {args.traces} distinct "
        f"{STEPS}-step GenAI traces (load average {os.getloadavg()[0]:.2f})"
    )
    for mode in ("replay", "live"):
        medians = {label: statistics.median(samples[(mode, label)]) for label in loaded}
        line = "  ".join(f"{label}: {us:6.2f}" for label, us in medians.items())
        if args.against:
            line += f"  -> {medians[args.against] / medians['this tree']:.2f}x cheaper"
        print(f"{mode:>7}  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
