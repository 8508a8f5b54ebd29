"""Where ``otel-semloop rescore``'s CPU goes, phase by phase, on bench-shaped input.

Run from the repository root: ``python bench/rescore_profile.py [--mb 32]``.

Writes a file like ``bench/rescore_throughput.py`` does, then runs the whole batch path in
one process (``--workers 1``: the same functions a worker and the reading process run)
under ``cProfile.Profile(time.process_time)`` and splits the CPU seconds into: read,
parse (``orjson.loads`` of each line + the id scan, and of each trace's spans again when
it is scored), serialise (span bytes and the bytes around them, re-serialising patched
spans, joining lines), group (the completion window), decode (span dicts to records),
build (records to a trace), score (detectors and policy), write-back (verdict to patches
and summary rows) and write. Then it measures what crossing a process boundary costs
(pickling a chunk's result both ways; its input goes through a shared ring), and the floor
(``orjson.loads`` + ``orjson.dumps`` of every line) without the profiler. The
profiler inflates Python-heavy phases (build, score) more than C ones (parse): read the
split as where the time goes, and the unprofiled total beside the floor for the ratio.

Last, the budget: rescore's workers share the machine's cores, so on N busy cores its MB/s
is at most N x (floor CPU / rescore CPU) of the floor's, and the issue's 40% allows
rescore at most N / 0.40 times the floor's CPU, every stage and process included. The
decode, build and score stages are timed again without the profiler, each over every
trace of the file (spans grouped by trace id, as a worker gets them), and printed as
multiples of the floor's CPU beside that allowance. Steps are built lazily (an LLM step's
message history is decoded when first read), so some decoding lands in the score stage:
the three together are the figure to read.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pickle
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rescore_throughput import write_file
from otel_semloop.batch.chunks import parse_chunk
from otel_semloop.builder import build_trace
from otel_semloop.cli import main
from otel_semloop.otlp.records import records_from_json
from otel_semloop.scoring import DetectorScorer, collector_paused

#: phase -> functions whose cumulative time it is (by file and function name); a phase's
#: own time excludes the phases nested inside it (listed in NESTED)
PHASES = {
    "read": [("inputs.py", "iter_units")],
    "parse": [
        ("spans.py", "load_json"),
        ("spans.py", "scan_json"),
        ("spans.py", "scan_json_columns"),
        ("chunks.py", "_load_spans"),
    ],
    "serialise": [
        ("chunks.py", "_whole"),
        ("chunks.py", "_compact_bounds"),
        ("chunks.py", "_gaps"),
        ("chunks.py", "render_json"),
        ("spans.py", "dump_json"),
    ],
    "group": [("engine.py", "_group"), ("engine.py", "_close_idle"), ("chunks.py", "_groups")],
    "decode": [("worker.py", "_records")],
    "build": [("builder.py", "build_trace")],
    "score": [("scoring.py", "score")],
    "write-back": [
        ("writeback.py", "patches_for"),
        ("worker.py", "_row"),
        ("spans.py", "apply_json"),
    ],
    "write": [("writer.py", "write_unit")],
}
NESTED = {"group": ["build", "score", "decode", "write-back", "serialise", "write"]}


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


def stage_seconds(lines: list[bytes], runs: int = 3) -> tuple[dict[str, float], list[str]]:
    """Unprofiled CPU seconds (median of ``runs``) of decoding, building and scoring every
    trace in ``lines``, each stage on the previous stage's output; and the label of every
    trace scored (the work timed is rescore's: the same traces, the same verdicts)."""
    by_trace: dict[str, list[dict]] = {}
    for line in lines:
        for resource in orjson.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    by_trace.setdefault(span["traceId"], []).append(span)
    groups = [{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]} for spans in by_trace.values()]
    scorer = DetectorScorer()
    times: dict[str, list[float]] = {"decode": [], "build": [], "score": []}
    labels: list[str] = []
    for _ in range(runs):
        with collector_paused():  # as in a worker: see scoring.collector_paused
            labels = _time_stages(groups, scorer, times)
    return {stage: statistics.median(seconds) for stage, seconds in times.items()}, labels


def _time_stages(groups: list[dict], scorer: DetectorScorer, times: dict[str, list[float]]) -> list[str]:
    cpu = time.process_time()
    records = [records_from_json(group, json_types=True) for group in groups]
    times["decode"].append(time.process_time() - cpu)
    cpu = time.process_time()
    traces = [build_trace(r) for r in records]
    times["build"].append(time.process_time() - cpu)
    cpu = time.process_time()
    verdicts = [scorer.score(trace) for trace in traces]
    times["score"].append(time.process_time() - cpu)
    return [verdict.label.value for verdict in verdicts]


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
        work = [("json", line, f"x:{i}") for i, line in enumerate(lines[:64])]
        cpu = time.process_time()
        result = parse_chunk(work, 16)
        chunk_cpu = time.process_time() - cpu
        cpu = time.process_time()
        # forked workers get a chunk's lines through a shared ring (batch/ring.py): only
        # the result is pickled
        pickle.loads(pickle.dumps(result, pickle.HIGHEST_PROTOCOL))
        transfer = time.process_time() - cpu
        stages, labels = stage_seconds(lines)
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
    print(
        f"process boundary: pickling a 64-line chunk's result both ways {transfer:.3f} s, "
        f"{transfer / chunk_cpu:.1%} of the chunk's own CPU ({chunk_cpu:.2f} s)"
    )
    cores = os.cpu_count() or 1
    print(
        f"budget: on {cores} busy cores, 40% of the floor's MB/s allows rescore "
        f"{cores / 0.40:.1f}x the floor's CPU in all (now {plain / floor:.1f}x); "
        f"without the profiler, as multiples of the floor's CPU ({len(labels)} traces, "
        f"{labels.count('loop')} loops):"
    )
    for stage, seconds in stages.items():
        print(f"  {stage:11s} {seconds:7.2f} s  {seconds / floor:5.1f}x")
    inner = sum(stages.values())
    print(f"  {'together':11s} {inner:7.2f} s  {inner / floor:5.1f}x, besides the floor's own 1.0x")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
