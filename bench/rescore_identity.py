"""``otel-semloop rescore`` output compared byte for byte with another revision's.

Run from the repository root: ``python bench/rescore_identity.py --against REV``.

Extracts ``REV``'s ``otel_semloop/`` into a temporary directory, writes a set of inputs (the example
file, the corpus files, a generated file several chunks long, and the same spans as
length-prefixed protobuf, zstd, one pretty-printed request, an already scored file and a
file with a malformed line), then runs ``rescore`` from both checkouts, each in its own
subprocess, over every input with each option set (output format and compression, mode,
window, memory budget small enough to spill, workers, evaluations only) and compares the
output bytes, the ``--table csv`` rows and the exit status. Prints one line per
difference and the count; exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.checkout import extract  # noqa: E402
from bench.rescore_throughput import write_file  # noqa: E402

#: (name, extra arguments, output file name)
OPTION_SETS: list[tuple[str, list[str], str]] = [
    ("json", [], "out.jsonl"),
    ("proto", [], "out.pb"),
    ("gzip", [], "out.jsonl.gz"),
    ("zstd", [], "out.pb.zst"),
    ("lexical", ["--mode", "lexical"], "out.jsonl"),
    ("window-1", ["--window", "1"], "out.jsonl"),
    ("spill", ["--memory-budget", "0.05"], "out.jsonl"),
    ("spill-proto", ["--memory-budget", "0.05", "--format", "proto"], "out.bin"),
    ("one-worker", ["--workers", "1"], "out.jsonl"),
    ("pool", ["--workers", "2", "--chunk-mb", "0.05"], "out.jsonl"),
    ("evaluations", ["--emit", "evaluations"], "out.jsonl"),
    ("evaluation-spans", ["--emit", "evaluations", "--evaluations-as", "spans"], "out.pb"),
]


def _rescore(checkout: Path, inputs: list[Path], out: Path, extra: list[str]) -> tuple[int, bytes, bytes]:
    args = [sys.executable, "-m", "otel_semloop", "rescore", *map(str, inputs), "-o", str(out), "-q"]
    args += ["--table", "csv", "--skip-invalid", *extra]
    env = dict(os.environ, PYTHONPATH=str(checkout) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(args, cwd=checkout, capture_output=True, check=False, env=env)
    data = out.read_bytes() if out.exists() else b""
    return done.returncode, data, done.stdout


def _inputs(base: Path, work: Path, generated_mb: float) -> dict[str, list[Path]]:
    """The inputs, some made with ``base``'s rescore (the protobuf and scored copies)."""
    example = ROOT / "examples" / "agent_traces.otlp.jsonl"
    corpus = sorted((ROOT / "bench" / "corpus" / "data").glob("*.otlp.jsonl.gz"))
    generated = work / "generated.jsonl"
    write_file(generated, int(generated_mb * 1e6))
    proto = work / "example.pb"
    scored = work / "scored.jsonl"
    for target in (proto, scored):
        _rescore(base, [example], target, [])
    zstd = work / "example.jsonl.zst"
    try:
        import zstandard

        zstd.write_bytes(zstandard.ZstdCompressor().compress(example.read_bytes()))
    except ImportError:
        zstd = work / "example.jsonl.gz"
        zstd.write_bytes(gzip.compress(example.read_bytes()))
    pretty = work / "request.json"
    first = orjson.loads(example.read_bytes().splitlines()[0])
    pretty.write_text(json.dumps(first, indent=2))
    malformed = work / "malformed.jsonl"
    lines = example.read_bytes().splitlines()
    malformed.write_bytes(b"\n".join([*lines[:3], b'{"resourceSpans": [', *lines[3:]]) + b"\n")
    return {
        "example": [example],
        "corpus": corpus,
        "generated": [generated],
        "proto": [proto],
        "zstd": [zstd],
        "request": [pretty],
        "scored": [scored],
        "malformed": [malformed],
        "mixed": [example, proto],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", required=True, help="the revision to compare with (e.g. main)")
    parser.add_argument("--generated-mb", type=float, default=40.0, help="size of the generated input")
    parser.add_argument("--only", default="", help="comma-separated input names to run (default: all)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rescore-identity-"))
    base = work / "base"
    base.mkdir()
    extract(args.against, base)
    try:
        inputs = _inputs(base, work, args.generated_mb)
        wanted = set(filter(None, args.only.split(",")))
        differ = runs = 0
        for name, paths in inputs.items():
            if wanted and name not in wanted:
                continue
            for option, extra, out_name in OPTION_SETS:
                results = []
                for side, checkout in (("base", base), ("new", ROOT)):
                    out = work / side / name / option / out_name
                    out.parent.mkdir(parents=True, exist_ok=True)
                    results.append(_rescore(checkout, paths, out, extra))
                runs += 1
                (code_a, out_a, table_a), (code_b, out_b, table_b) = results
                what = [
                    label
                    for label, same in (
                        ("exit status", code_a == code_b),
                        ("output", out_a == out_b),
                        ("table", table_a == table_b),
                    )
                    if not same
                ]
                if what:
                    differ += 1
                    print(
                        f"DIFFER {name} {option}: {', '.join(what)} (exit {code_a} vs {code_b}, "
                        f"{len(out_a)} vs {len(out_b)} bytes)"
                    )
                else:
                    print(f"same   {name} {option}: exit {code_a}, {len(out_a)} bytes")
        print(f"{runs} runs, {differ} differ")
        return 1 if differ else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
