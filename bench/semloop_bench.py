"""The public semloop benchmark, end to end through OTLP files and the CLI.

    python bench/semloop_bench.py [--dataset data/semloop-bench/dataset.jsonl] [--keep DIR]

1. Each of the 60 traces of ``data/semloop-bench/dataset.jsonl`` (in this repository; its
   provenance is ``data/semloop-bench/README.md``) becomes real spans in the
   OpenTelemetry GenAI conventions (``otel_semloop.deepeval_tree``), written as OTLP JSON
   lines the way the Collector's file exporter writes them: export batches of 7 spans, so
   traces straddle lines, as they do in real exports.
2. ``otel-semloop rescore`` scores the file in a subprocess, exactly as a user would run it.
3. The scored file is read back and every trace's root-span attributes are compared with the
   dataset's labels, per family:

   * lexical stagnation: ``semloop.deepeval.reasoning_stagnation < 1`` exactly when the row
     says ``stagnation`` (published: 24/60);
   * lexical verdict: ``semloop.deepeval.score < 0.5`` exactly when the row says ``loop``
     (published: 36/60);
   * default verdict: ``semloop.loop.detected`` exactly when the row says ``loop``, with the
     false positives (flagged healthy traces) counted separately.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "data" / "semloop-bench" / "dataset.jsonl"
sys.path.insert(0, str(ROOT))

from otel_semloop.deepeval_tree import tree_to_spans  # noqa: E402
from otel_semloop.otlp import iter_json_lines, records_to_traces_json  # noqa: E402

SPANS_PER_LINE = 7


def write_bench_file(rows: list[dict], path: Path) -> None:
    records = [record for row in rows for record in tree_to_spans(row["root"], row["trace_id"])]
    with path.open("wb") as fp:
        for start in range(0, len(records), SPANS_PER_LINE):
            chunk = records[start : start + SPANS_PER_LINE]
            fp.write(orjson.dumps(records_to_traces_json(chunk, service_name="semloop-bench")) + b"\n")


def read_root_attributes(path: Path) -> dict[str, dict]:
    roots = {}
    for batch in iter_json_lines(path):
        if batch.error is not None:
            raise batch.error
        for record in batch.records:
            if not record.parent_span_id:
                roots[record.trace_id] = dict(record.attributes)
    return roots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET, help="the benchmark JSON lines file")
    parser.add_argument("--keep", type=Path, help="keep the input and scored files in this folder")
    args = parser.parse_args()
    if not args.dataset.is_file():
        print(
            f"semloop_bench: {args.dataset} not found (it ships in the repository: data/README.md)",
            file=sys.stderr,
        )
        return 2
    rows = [
        json.loads(line) for line in args.dataset.read_text(encoding="utf-8").splitlines() if line.strip()
    ]

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="semloop-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    source, scored = workdir / "bench.otlp.jsonl", workdir / "bench.scored.otlp.jsonl"
    write_bench_file(rows, source)
    command = [sys.executable, "-m", "otel_semloop.cli", "rescore", str(source), "-o", str(scored), "-q"]
    subprocess.run(command, check=True, cwd=ROOT)
    roots = read_root_attributes(scored)

    by_trace_id = {tree_to_spans(row["root"], row["trace_id"])[0].trace_id: row for row in rows}
    families: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for trace_id, row in by_trace_id.items():
        attrs = roots[trace_id]
        tally = families[row["family"]]
        tally["n"] += 1
        stagnation = attrs["semloop.deepeval.reasoning_stagnation"] < 1.0
        tally["lex_stag"] += stagnation == row["stagnation"]
        tally["lex_verdict"] += (attrs["semloop.deepeval.score"] < 0.5) == row["loop"]
        flagged = attrs["semloop.loop.detected"]
        tally["default"] += flagged == row["loop"]
        tally["fp"] += flagged and not row["loop"]
        tally["loops"] += row["loop"]

    header = (
        f"{'family':24} {'loop?':>5} {'lexical stag':>12} {'lexical verdict':>15} {'default':>8} {'FP':>3}"
    )
    print(f"semloop public benchmark: {len(rows)} traces -> {len(roots)} scored by `otel-semloop rescore`")
    print(header)
    print("-" * len(header))
    totals: dict[str, int] = defaultdict(int)
    for family in sorted(families):
        t = families[family]
        for key, value in t.items():
            totals[key] += value
        loop = "yes" if t["loops"] == t["n"] else ("no" if t["loops"] == 0 else "mixed")
        print(
            f"{family:24} {loop:>5} {t['lex_stag']:>8}/{t['n']:<3} {t['lex_verdict']:>11}/{t['n']:<3}"
            f" {t['default']:>4}/{t['n']:<3} {t['fp']:>3}"
        )
    print("-" * len(header))
    n = totals["n"]
    print(
        f"{'total':24} {'':>5} {totals['lex_stag']:>8}/{n:<3} {totals['lex_verdict']:>11}/{n:<3}"
        f" {totals['default']:>4}/{n:<3} {totals['fp']:>3}"
    )
    print("published lexical figures: stagnation 24/60, verdict 36/60")
    if args.keep:
        print(f"files kept in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
