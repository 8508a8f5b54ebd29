"""Where ``otel-semloop rescore``'s CPU goes, phase by phase, on bench-shaped input.

Run from the repository root: ``python bench/rescore_profile.py [--mb 32]``.

Writes a file like ``bench/rescore_throughput.py`` does, then runs the whole batch path in
one process (``--workers 1``: the same functions a worker and the reading process run)
under ``cProfile.Profile(time.process_time)`` and splits the CPU seconds into: read,
parse (``orjson.loads`` of each line + the id scan, and of each trace's spans again when
it is scored), serialise (span bytes and the bytes around them, re-serialising patched
spans), group (the trace buffer), decode (span dicts to records), build (records to a
trace), score (detectors and policy), write-back (verdict to patches and summary rows,
patches applied) and write. Then the floor (``orjson.loads`` + ``orjson.dumps`` of every
line) without the profiler. The profiler inflates Python-heavy phases (build, score) more
than C ones (parse): read the split as where the time goes, and the unprofiled total
beside the floor for the ratio.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rescore_throughput import write_file
from otel_semloop.cli import main

#: phase -> functions whose cumulative time it is (by file and function name); a phase's
#: own time excludes the phases nested inside it (listed in NESTED)
PHASES = {
    "read": [("inputs.py", "iter_units")],
    "parse": [("spans.py", "load_json"), ("scan.py", "scan_json"), ("worker.py", "score_job")],
    "serialise": [("spans.py", "dump_json")],
    "group": [("grouping.py", "end"), ("grouping.py", "expire")],
    "decode": [("spans.py", "record")],
    "build": [("builder.py", "build_trace")],
    "score": [("scoring.py", "score")],
    "write-back": [
        ("writeback.py", "release_patches"),
        ("worker.py", "_row"),
        ("pending.py", "patch_spans"),
    ],
    "write": [("writer.py", "write_unit")],
}
NESTED = {"parse": ["decode", "build", "score", "write-back"], "write": ["serialise"]}


def _cumulative(stats: pstats.Stats, file: str, name: str) -> float:
    total = 0.0
    for (path, _line, func), (_cc, _nc, _tt, ct, callers) in stats.stats.items():  # type: ignore[attr-defined]
        # only calls from outside the function itself (recursion counted once)
        if (
            func == name
            and path.endswith(file)
            and not any(c[2] == name and c[0].endswith(file) for c in callers)
        ):
            total += ct
    return total


def main_() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=32, help="input size in MB (default 32)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rescore-profile-") as tmp:
        path = Path(tmp) / "agents.jsonl"
        write_file(path, args.mb * 1_000_000)
        lines = path.read_bytes().splitlines()
        cpu = time.process_time()
        for line in lines:
            orjson.dumps(orjson.loads(line))
        floor = time.process_time() - cpu
        command = ["rescore", str(path), "-o", str(Path(tmp) / "out.jsonl"), "-q", "--workers", "1"]
        cpu = time.process_time()
        main(command)
        plain = time.process_time() - cpu
        profile = cProfile.Profile(time.process_time)
        profile.enable()
        main(command)
        profile.disable()
        stats = pstats.Stats(profile)
        total = sum(tt for (_, _, tt, _, _) in stats.stats.values())  # type: ignore[attr-defined]
        phases = {phase: sum(_cumulative(stats, f, n) for f, n in funcs) for phase, funcs in PHASES.items()}
        for outer, inner in NESTED.items():
            phases[outer] = max(0.0, phases[outer] - sum(phases[p] for p in inner))
        phases["other"] = max(0.0, total - sum(phases.values()))
    mb = sum(len(line) + 1 for line in lines) / 1e6
    print(f"{mb:.0f} MB, {len(lines)} lines; CPU seconds (cProfile with time.process_time, one process)")
    profiled = sum(phases.values())
    for phase, seconds in phases.items():
        print(f"  {phase:11s} {seconds:7.2f}  {seconds / profiled:5.1%}")
    print(f"  {'total':11s} {profiled:7.2f}")
    print(
        f"without the profiler: rescore {plain:.2f} s, floor (loads + dumps) {floor:.2f} s: "
        f"floor / rescore = {floor / plain:.1%} of one core"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main_())
