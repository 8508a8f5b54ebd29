"""The public semloop benchmark, end to end through OTLP files and the CLI.

    python bench/semloop_bench.py [--dataset data/semloop-bench/dataset.jsonl] [--keep DIR]
        [--judge oracle|oracle-labels|local|system-one|openai] [--escalate always|undecided|...]

1. Each of the 60 traces of ``data/semloop-bench/dataset.jsonl`` (in this repository; its
   provenance is ``data/semloop-bench/README.md``) becomes real spans in the
   OpenTelemetry GenAI conventions (``bench.deepeval_tree``), written as OTLP JSON
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

4. With ``--judge``, the same spans are scored again with the judge (in-process, all requests
   in flight together, the way ``rescore --judge`` does) and three more columns are printed:
   the judge's stagnation (``semloop.judge.reasoning_stagnation < 1``), its verdict read as
   semloop reads it (``semloop.judge.score < 0.5``, deepeval's weights), and the product's
   verdict with the judge on (``semloop.loop.detected``, judged and deterministic findings
   through the policy), plus judge calls per trace, calls saved and mean latency.
   ``oracle`` is semloop's scripted oracle (published: stagnation 54/60, verdict 54/60);
   ``oracle-labels`` answers from each row's labels; ``local`` is the offline judge.
   ``--escalate undecided,always`` prints one line per mode (calls per trace, accuracy).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "data" / "semloop-bench" / "dataset.jsonl"
sys.path.insert(0, str(ROOT))

from bench.deepeval_tree import tree_to_spans  # noqa: E402
from otel_semloop.batch.inputs import read_records  # noqa: E402
from otel_semloop.otlp import records_to_traces_json  # noqa: E402

SPANS_PER_LINE = 7


def write_bench_file(rows: list[dict], path: Path) -> None:
    records = [record for row in rows for record in tree_to_spans(row["root"], row["trace_id"])]
    with path.open("wb") as fp:
        for start in range(0, len(records), SPANS_PER_LINE):
            chunk = records[start : start + SPANS_PER_LINE]
            fp.write(orjson.dumps(records_to_traces_json(chunk, service_name="semloop-bench")) + b"\n")


def read_root_attributes(path: Path) -> dict[str, dict]:
    roots = {}
    for record in read_records(path):
        if not record.parent_span_id:
            roots[record.trace_id] = dict(record.attributes)
    return roots


def read_traces(path: Path) -> dict[str, object]:
    from otel_semloop.builder import build_trace

    by_trace: dict[str, list] = defaultdict(list)
    for record in read_records(path):
        by_trace[record.trace_id].append(record)
    return {trace_id: build_trace(records) for trace_id, records in by_trace.items()}


def judge_run(
    judge_name: str, escalate: str, source: Path, by_trace_id: dict[str, dict]
) -> tuple[dict, dict]:
    """Score ``source`` with a judge: root attributes per trace id, and run figures."""
    from bench.judge_oracle import oracle_script
    from otel_semloop.judges import Judge, JudgedScorer, JudgeSettings, make_judge
    from otel_semloop.judges.backends.scripted import ScriptedBackend
    from otel_semloop.judges.cache import AnswerCache
    from otel_semloop.writeback import verdict_attributes

    figures: dict[str, float] = {"load_seconds": 0.0}
    if judge_name.startswith("oracle"):
        # No answer cache: the script answers by trace id (the cache assumes answers follow content).
        backend = ScriptedBackend(oracle_script(by_trace_id, judge_name), model=judge_name)
        judge = Judge(backend, cache=AnswerCache(max_entries=0), timeout=60)
    else:
        judge = make_judge(JudgeSettings(judge=judge_name, timeout=120))
        warm = getattr(judge.backend, "warm", None)
        if warm is not None:
            figures["load_seconds"] = warm()
    traces = read_traces(source)
    scorer = JudgedScorer(judge, escalate=escalate)
    started = time.perf_counter()
    verdicts = scorer.score_batch(list(traces.values()))
    figures["wall_seconds"] = time.perf_counter() - started
    stats = judge.stats
    figures.update(
        traces=len(traces),
        calls=stats.calls,
        saved=stats.calls_saved,
        mean_latency_ms=stats.mean_latency_ms,
        cost_usd=stats.cost_usd,
        errors=sum(stats.errors.values()),
    )
    judge.close()
    return {tid: verdict_attributes(v) for tid, v in zip(traces, verdicts, strict=True)}, figures


def judged_tally(attrs: dict, row: dict, tally: dict[str, int]) -> None:
    """Judge columns; a trace the judge did not read keeps its deterministic evidence."""
    stagnation = attrs.get(
        "semloop.judge.reasoning_stagnation", attrs["semloop.deepeval.reasoning_stagnation"]
    )
    tally["j_stag"] += (stagnation < 1.0) == row["stagnation"]
    judged_score = attrs.get("semloop.judge.score", attrs["semloop.deepeval.score"])
    tally["j_verdict"] += (judged_score < 0.5) == row["loop"]
    flagged = attrs["semloop.loop.detected"]
    tally["j_default"] += flagged == row["loop"]
    tally["j_fp"] += flagged and not row["loop"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET, help="the benchmark JSON lines file")
    parser.add_argument("--keep", type=Path, help="keep the input and scored files in this folder")
    parser.add_argument(
        "--judge",
        choices=("none", "oracle", "oracle-labels", "local", "system-one", "openai"),
        default="none",
        help="add the judge's columns (oracle: semloop's scripted oracle; local: the offline judge)",
    )
    parser.add_argument(
        "--escalate",
        default="always",
        help="which traces the judge reads: always, undecided, never or a rate; a comma list "
        "(undecided,always) compares them",
    )
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

    modes = [m.strip() for m in args.escalate.split(",") if m.strip()]
    runs: list[tuple[str, dict]] = []
    if args.judge != "none":
        for mode in modes:
            judged, figures = judge_run(args.judge, mode, source, by_trace_id)
            runs.append((mode, figures))
            if mode == modes[0]:
                for trace_id, row in by_trace_id.items():
                    judged_tally(judged[trace_id], row, families[row["family"]])
            else:
                figures["tally"] = defaultdict(int)
                for trace_id, row in by_trace_id.items():
                    judged_tally(judged[trace_id], row, figures["tally"])
            if mode == modes[0]:
                figures["tally"] = None

    judge_header = ""
    if runs:
        judge_header = (
            f" {args.judge + ' stag':>16} {args.judge + ' verdict':>19} {'with judge':>10} {'FP':>3}"
        )
    header = (
        f"{'family':24} {'loop?':>5} {'lexical stag':>12} {'lexical verdict':>15} {'default':>8} {'FP':>3}"
        + judge_header
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
            f" {t['default']:>4}/{t['n']:<3} {t['fp']:>3}" + _judge_cells(t, bool(runs))
        )
    print("-" * len(header))
    n = totals["n"]
    print(
        f"{'total':24} {'':>5} {totals['lex_stag']:>8}/{n:<3} {totals['lex_verdict']:>11}/{n:<3}"
        f" {totals['default']:>4}/{n:<3} {totals['fp']:>3}" + _judge_cells(totals, bool(runs))
    )
    print("published lexical figures: stagnation 24/60, verdict 36/60")
    if args.judge.startswith("oracle"):
        print("published oracle figures (semloop): stagnation 54/60, verdict 54/60")
    for mode, figures in runs:
        tally = figures["tally"] or totals
        load = f", model load {figures['load_seconds']:.1f} s" if figures["load_seconds"] else ""
        calls_per_trace = figures["calls"] / figures["traces"]
        print(
            f"judge {args.judge}, escalate {mode}: {calls_per_trace:.2f} judge calls per trace "
            f"({figures['calls']} calls, {figures['saved']} saved, {figures['errors']} errors), "
            f"mean latency {figures['mean_latency_ms']:.0f} ms per call{load}, "
            f"cost {figures['cost_usd']:.6f} USD; stagnation {tally['j_stag']}/{n}, "
            f"judged verdict {tally['j_verdict']}/{n}, "
            f"verdict with judge {tally['j_default']}/{n} ({tally['j_fp']} FP)"
        )
    if args.keep:
        print(f"files kept in {workdir}")
    return 0


def _judge_cells(t: dict, on: bool) -> str:
    if not on:
        return ""
    n = t["n"]
    return f" {t['j_stag']:>12}/{n:<3} {t['j_verdict']:>15}/{n:<3} {t['j_default']:>6}/{n:<3} {t['j_fp']:>3}"


if __name__ == "__main__":
    sys.exit(main())
