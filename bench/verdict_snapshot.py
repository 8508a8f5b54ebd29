"""Proof that a change to the scoring code changed no verdict: a snapshot of every verdict.

    python bench/verdict_snapshot.py --write FILE          # snapshot this tree's verdicts
    python bench/verdict_snapshot.py --check FILE          # compare this tree with FILE
    python bench/verdict_snapshot.py --against main        # compare this tree with a git ref

Every trace of the evaluation corpus (``bench/corpus``: the synthetic OTLP files in three
conventions and every framework recording, labelled or not), every row of the semloop
benchmark and of deepeval's golden file (as GenAI spans, ``bench.deepeval_tree``) and the
generated agent runs of ``bench/detector_speed.py`` (10 to 1,000 steps, several seeds) is
built and scored four ways:

* ``default``: ``Scorer()``, written as its per-span patches (``patches_for``: every
  ``semloop.*`` attribute, the evaluation event, ``semloop.in_loop`` flags) plus every
  finding in full (signal, severity, description, repeats, period, span ids, steps, times);
* ``calibration``: the same with calibration on (each detector's peak severities, also
  below a warning: a change inside a detector shows here before it reaches a label);
* ``lexical``: ``Scorer(mode="lexical")``;
* ``live``: the default detector suite fed one step at a time (``DetectorSuite.observe``,
  as the live guard does), with the findings each step raised.

The snapshot maps ``source/trace id/way`` to that record (canonical JSON, floats exact),
so ``--check`` names the first traces whose records differ. ``--against REF`` extracts
``otel_semloop/`` of the git ref REF into a temporary directory, scores the same inputs
with it in a subprocess and compares: the inputs (corpus, data files, generators) come
from this tree for both sides. Exit status 1 when anything differs.

When a detection change is *meant* to change verdicts (a new signal), regenerate the
reference from the branch that made it; this script is for changes that must not.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]


def _code_root() -> Path:
    """Where ``otel_semloop`` is imported from: ``--code DIR`` (set before imports), else here."""
    if "--code" in sys.argv:
        return Path(sys.argv[sys.argv.index("--code") + 1]).resolve()
    return ROOT


sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(_code_root()))
sys.path.append(str(Path(__file__).resolve().parent))  # bench/, also when imported as a module

from checkout import extract  # noqa: E402

#: Sizes and seeds of the generated agent runs (``bench/detector_speed.genai_records``).
GENERATED = ((10, 3), (50, 6), (100, 3), (1000, 1))


def inputs() -> Iterator[tuple[str, list[Any]]]:
    """(key, span records) of every trace scored, in a fixed order."""
    from bench.deepeval_tree import tree_to_spans
    from bench.detector_speed import genai_records
    from otel_semloop.otlp import records_from_json

    corpus = ROOT / "bench" / "corpus"
    files = sorted(corpus.glob("data/*.otlp.jsonl*")) + sorted(corpus.glob("recordings/**/*.otlp.jsonl*"))
    for path in files:
        by_trace: dict[str, list[Any]] = {}
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as fp:
            lines = [line for line in fp.read().splitlines() if line.strip()]
        for no, line in enumerate(lines, 1):  # a reader both compared trees have
            for record in records_from_json(orjson.loads(line), f"{path}:{no}"):
                by_trace.setdefault(record.trace_id, []).append(record)
        name = path.relative_to(corpus).as_posix()
        for trace_id, records in by_trace.items():
            yield f"corpus:{name}/{trace_id}", records
    for line in (ROOT / "data" / "semloop-bench" / "dataset.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            yield f"semloop-bench/{row['trace_id']}", tree_to_spans(row["root"], str(row["trace_id"]))
    for line in (ROOT / "data" / "deepeval-golden" / "golden.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if isinstance(row.get("trace"), dict):
                yield f"golden/{row['case']}", tree_to_spans(row["trace"], str(row["case"]))
    for size, seeds in GENERATED:
        for seed in range(seeds):
            yield f"generated/{size}/{seed}", genai_records(size, seed=seed)


def _finding(finding: Any) -> list[Any]:
    return [
        finding.signal,
        finding.severity,
        finding.description,
        finding.repeats,
        finding.period,
        list(finding.span_ids),
        finding.started_step,
        finding.detected_step,
        finding.started_ns,
        finding.detected_ns,
        finding.no_progress,
        finding.permanent,
    ]


def _patches(patches: dict[str, Any]) -> dict[str, Any]:
    return {
        span_id: {
            "attributes": patch.attributes,
            "events": [[e.name, e.time_ns, dict(e.attributes)] for e in patch.events],
        }
        for span_id, patch in sorted(patches.items())
    }


def _verdict(trace: Any, verdict: Any) -> dict[str, Any]:
    from otel_semloop.writeback import patches_for

    return {
        "label": verdict.label.value,
        "score": verdict.score,
        "action": verdict.action.value,
        "reason": verdict.reason,
        "findings": [_finding(f) for f in verdict.findings],
        "in_loop": sorted(verdict.in_loop_span_ids),
        "patches": _patches(patches_for(trace, verdict)),
    }


def snapshot() -> dict[str, Any]:
    """Every input's records, by ``key#way`` (see the module doc)."""
    from otel_semloop.builder import build_trace
    from otel_semloop.detectors.config import DetectorConfig
    from otel_semloop.detectors.suite import DetectorSuite
    from otel_semloop.scoring import DetectorScorer

    base = DetectorConfig()
    calibrated = dataclasses.replace(base, calibration=True)
    scorers = {
        "default": DetectorScorer(config=base),
        "calibration": DetectorScorer(config=calibrated),
        "lexical": DetectorScorer(mode="lexical", config=base),
    }
    out: dict[str, Any] = {}
    for key, records in inputs():
        trace = build_trace(records)
        if not trace.steps:
            out[f"{key}#steps"] = 0
            continue
        for way, scorer in scorers.items():
            out[f"{key}#{way}"] = _verdict(trace, scorer.score(trace))
        suite = DetectorSuite(base)
        suite.reset()
        live = []
        for index, step in enumerate(trace.steps):
            for finding in suite.observe(step, index):
                live.append([index, *_finding(finding)])
        out[f"{key}#live"] = live
    return out


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=repr)


def digest_of(snap: dict[str, Any]) -> str:
    return hashlib.sha256(_canonical(snap)).hexdigest()


def compare(reference: dict[str, Any], current: dict[str, Any], shown: int = 10) -> int:
    """Print the differences; the number of records that differ."""
    keys = sorted(set(reference) | set(current))
    differ = [k for k in keys if _canonical(reference.get(k)) != _canonical(current.get(k))]
    traces = {k.rsplit("#", 1)[0] for k in current}
    print(f"{len(traces)} traces, {len(current)} records; {len(differ)} records differ")
    for key in differ[:shown]:
        print(f"- {key}\n    reference: {_canonical(reference.get(key))[:600]!r}")
        print(f"    current:   {_canonical(current.get(key))[:600]!r}")
    return len(differ)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="write this tree's snapshot to FILE")
    group.add_argument("--check", type=Path, help="compare this tree's verdicts with the snapshot FILE")
    group.add_argument("--against", metavar="REF", help="compare this tree with the git ref REF")
    parser.add_argument("--code", type=Path, help=argparse.SUPPRESS)  # read before the imports
    args = parser.parse_args()
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            extract(args.against, Path(tmp))
            reference_file = Path(tmp) / "reference.json"
            env = {k: v for k, v in os.environ.items() if not k.startswith("SEMLOOP_")}
            subprocess.run(
                [sys.executable, __file__, "--write", str(reference_file), "--code", tmp], check=True, env=env
            )
            reference = orjson.loads(reference_file.read_bytes())
    elif args.check:
        reference = orjson.loads(args.check.read_bytes())
    import otel_semloop

    current = snapshot()
    print(f"snapshot digest {digest_of(current)} (code: {Path(otel_semloop.__file__).parent})")
    if args.write:
        args.write.write_bytes(_canonical(current))
        return 0
    print(f"reference digest {digest_of(reference)}")
    return 1 if compare(reference, current) else 0


if __name__ == "__main__":
    sys.exit(main())
