"""Throughput and memory of ``otel-semloop rescore``, side by side with another revision's.

Run from the repository root: ``python bench/rescore_throughput.py [--against main]
[--sizes 300,1200] [--rounds 3]``.

For each size it writes an OTLP JSON lines file into a temp dir, shaped like a Collector
file exporter's output of agent traffic: 50-span agent traces with GenAI attributes
(``invoke_agent`` root, ``chat`` spans with message JSON and tool calls, ``execute_tool``
spans with arguments and results), about 64 traces open at once, spans in end order (the
root last), 512 spans a line, one trace in four a tool loop. Then, in one run, each round
runs ``otel-semloop rescore FILE -o OUT -q --summary FILE`` as a user runs it (default
detectors, default workers) from this checkout and from ``--against`` (its
``otel_semloop/`` extracted from git), each in a subprocess whose peak RSS (process and
children, summed, sampled every 50 ms) is recorded, the order alternating between rounds.

Prints MB/s of both (input bytes / wall time), the ratio this / against (target: at least
two thirds), peak RSS (target: under 1 GiB, flat from the smallest size to the largest),
the CPU seconds of each (process and workers; the reading process alone) and the load
average; the medians over the rounds. On a shared machine wall time depends on the load:
read the CPU seconds beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.checkout import extract

ROOT = Path(__file__).resolve().parent.parent
SPANS_PER_TRACE = 50
OPEN_TRACES = 64
SPANS_PER_LINE = 512
LOOP_EVERY = 4

TOOLS = ["read_file", "search_code", "run_tests", "edit_file", "list_dir", "web_search", "shell"]
WORDS = """the agent reads the repository layout then plans a fix for the failing test and checks
whether the function handles empty input correctly before editing the module again""".split()  # noqa: SIM905


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def _kv(key: str, value: object) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def make_trace(rng: random.Random, looping: bool, t0: int) -> list[dict]:
    """One agent trace: root + (chat, tool) pairs, 50 spans, in end order (root last)."""
    trace_id = f"{rng.getrandbits(128):032x}"
    root_id = f"{rng.getrandbits(64):016x}"
    goal = "Fix the failing test in parser.py: " + _text(rng, 20, 60)
    spans = []
    t = t0
    stuck_tool, stuck_args, stuck_result = (
        "read_file",
        json.dumps({"path": "src/parser.py"}),
        "def parse(x): ...",
    )
    while len(spans) < SPANS_PER_TRACE - 1:
        if looping and len(spans) >= 10:
            tool, args, result = stuck_tool, stuck_args, stuck_result
            thought = "Let me read the parser again to find the bug."
        else:
            tool = rng.choice(TOOLS)
            args = json.dumps(
                {"path": f"src/{rng.choice('abcdefgh')}{rng.randint(0, 99)}.py", "q": _text(rng, 2, 6)}
            )
            result = _text(rng, 5, 120)
            thought = _text(rng, 10, 40)
        out_msgs = [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": thought},
                    {
                        "type": "tool_call",
                        "name": tool,
                        "id": f"call_{rng.getrandbits(40):x}",
                        "arguments": args,
                    },
                ],
            }
        ]
        start = t
        t += rng.randint(50_000_000, 2_000_000_000)
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{rng.getrandbits(64):016x}",
                "parentSpanId": root_id,
                "flags": 256,
                "name": "chat gpt-4o",
                "kind": 3,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(t),
                "attributes": [
                    _kv("gen_ai.operation.name", "chat"),
                    _kv("gen_ai.system", "openai"),
                    _kv("gen_ai.request.model", "gpt-4o"),
                    _kv("gen_ai.response.model", "gpt-4o-2024-08-06"),
                    _kv("gen_ai.usage.input_tokens", rng.randint(500, 30_000)),
                    _kv("gen_ai.usage.output_tokens", rng.randint(20, 2_000)),
                    _kv("gen_ai.response.finish_reasons", "tool_calls"),
                    _kv("gen_ai.output.messages", json.dumps(out_msgs)),
                ],
                "status": {},
            }
        )
        start = t
        t += rng.randint(1_000_000, 500_000_000)
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{rng.getrandbits(64):016x}",
                "parentSpanId": root_id,
                "flags": 256,
                "name": f"execute_tool {tool}",
                "kind": 1,
                "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(t),
                "attributes": [
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", tool),
                    _kv("gen_ai.tool.call.id", f"call_{rng.getrandbits(40):x}"),
                    _kv("gen_ai.tool.type", "function"),
                    _kv("gen_ai.tool.call.arguments", args),
                    _kv("gen_ai.tool.call.result", result),
                ],
                "status": {},
            }
        )
    del spans[SPANS_PER_TRACE - 1 :]
    spans.append(
        {
            "traceId": trace_id,
            "spanId": root_id,
            "flags": 256,
            "name": "invoke_agent coder",
            "kind": 1,
            "startTimeUnixNano": str(t0 - 1_000_000),
            "endTimeUnixNano": str(t + 1_000_000),
            "attributes": [
                _kv("gen_ai.operation.name", "invoke_agent"),
                _kv("gen_ai.agent.name", "coder"),
                _kv("gen_ai.system", "openai"),
                _kv("gen_ai.request.model", "gpt-4o"),
                _kv(
                    "gen_ai.input.messages",
                    json.dumps([{"role": "user", "parts": [{"type": "text", "content": goal}]}]),
                ),
            ],
            "status": {},
        }
    )
    return spans


def write_file(path: Path, target_bytes: int, seed: int = 7) -> int:
    """Write the file; returns the number of spans. Traces are instances of 256 generated
    templates (a new trace id each), so writing a gigabyte takes seconds, not minutes."""
    rng = random.Random(seed)
    t0 = 1_767_225_600_000_000_000
    templates = []
    for k in range(256):
        spans = make_trace(rng, k % LOOP_EVERY == 0, t0 + k * 1_000_000_000)
        templates.append((spans[0]["traceId"].encode(), [orjson.dumps(s) for s in spans]))
    resource = orjson.dumps(
        {"attributes": [_kv("service.name", "coding-agent"), _kv("telemetry.sdk.language", "python")]}
    )
    head = (
        b'{"resourceSpans":[{"resource":' + resource + b',"scopeSpans":[{"scope":{"name":"agent"},"spans":['
    )
    tail = b"]}]}]}\n"
    made = 0
    active: list[list[bytes]] = []
    written = 0
    spans_total = 0
    line: list[bytes] = []

    def emit(fp, chunk: list[bytes]) -> int:
        data = head + b",".join(chunk) + tail
        fp.write(data)
        return len(data)

    with open(path, "wb") as fp:
        while written < target_bytes:
            while len(active) < OPEN_TRACES:
                old_id, spans = templates[made % len(templates)]
                new_id = f"{rng.getrandbits(128):032x}".encode()
                active.append([s.replace(old_id, new_id) for s in spans])
                made += 1
            i = rng.randrange(len(active))
            line.append(active[i].pop(0))
            if not active[i]:
                active.pop(i)
            if len(line) == SPANS_PER_LINE:
                written += emit(fp, line)
                spans_total += len(line)
                line = []
        rest = line + [s for trace in active for s in trace]  # finish the open traces
        for i in range(0, len(rest), SPANS_PER_LINE):
            emit(fp, rest[i : i + SPANS_PER_LINE])
            spans_total += len(rest[i : i + SPANS_PER_LINE])
    return spans_total


@dataclasses.dataclass
class Run:
    """One rescore run: wall and CPU seconds (process and children, user + system; the
    reading process alone), peak RSS (MiB, process + children) and its summary line."""

    seconds: float
    cpu: float
    reader_cpu: float
    peak_mib: float
    said: str


def rescore(code: Path, path: Path, out: Path, extra: list[str]) -> Run:
    """``otel-semloop rescore`` of the package in ``code``, in a subprocess; its summary
    JSON written to a file beside ``out`` (a revision may write it by renaming a temporary
    file over the path, which a device such as ``/dev/stdout`` must not be)."""
    env = dict(os.environ, PYTHONPATH=str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    summary_path = out.with_name(out.name + ".summary.json")
    cmd = [sys.executable, "-m", "otel_semloop", "rescore", str(path), "-o", str(out), *extra]
    cmd += ["--summary", str(summary_path)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=code)
    ps = psutil.Process(proc.pid)
    peak = 0
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        rss = 0
        try:
            tree = [ps, *ps.children(recursive=True)]
        except psutil.Error:
            tree = []
        for p in tree:
            try:
                rss += p.memory_info().rss
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system  # last sample before it exits
            except psutil.Error:
                pass
        peak = max(peak, rss)
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    _, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"rescore failed ({proc.returncode}): {stderr.decode()[-2000:]}")
    summary = json.loads(summary_path.read_text())
    summary_path.unlink()
    said = f"{summary['agent_traces_scored']} scored, {summary['loops']} loops, {summary['workers']} workers"
    return Run(seconds, sum(cpu.values()), cpu.get(proc.pid, 0.0), peak / (1 << 20), said)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", default="main", help="the git revision to compare with (default main)")
    parser.add_argument("--sizes", default="300,1200", help="input sizes in MB (default 300,1200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds at the first size (larger sizes: 1)")
    parser.add_argument("--dir", default=None, help="where to write the files (default: a temp dir)")
    parser.add_argument("--rescore-args", default="", help="extra rescore arguments, e.g. '--workers 1'")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    extra = ["-q", *args.rescore_args.split()]
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()}; rescore {' '.join(extra)}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="rescore-bench-", dir=args.dir) as tmp:
        against = Path(tmp) / "against"
        against.mkdir()
        extract(args.against, against)
        codes = {"this": ROOT, args.against: against}
        for n, size in enumerate(sizes):
            path = Path(tmp) / f"agents-{size}mb.jsonl"
            t = time.perf_counter()
            spans = write_file(path, size * 1_000_000)
            mb = path.stat().st_size / 1e6
            print(
                f"\n{mb:.0f} MB, {spans:,} spans ({spans // SPANS_PER_TRACE:,} traces), "
                f"written in {time.perf_counter() - t:.0f} s",
                flush=True,
            )
            runs: dict[str, list[Run]] = {name: [] for name in codes}
            for r in range(args.rounds if n == 0 else 1):
                order = list(codes) if r % 2 == 0 else list(reversed(codes))
                for name in order:
                    run = rescore(codes[name], path, Path(tmp) / "scored.jsonl", extra)
                    runs[name].append(run)
                    os.unlink(Path(tmp) / "scored.jsonl")
                    print(
                        f"  round {r + 1} {name:>8}: {mb / run.seconds:6.1f} MB/s   CPU s {run.cpu:5.1f} "
                        f"(reader {run.reader_cpu:4.1f})   peak RSS {run.peak_mib:5.0f} MiB   "
                        f"load {os.getloadavg()[0]:.1f}   ({run.said})",
                        flush=True,
                    )
            this, base = runs["this"], runs[args.against]
            this_mbs = statistics.median(mb / run.seconds for run in this)
            base_mbs = statistics.median(mb / run.seconds for run in base)
            this_peak = statistics.median(run.peak_mib for run in this)
            base_peak = statistics.median(run.peak_mib for run in base)
            cpu_base = statistics.median(run.cpu for run in base)
            cpu_ratio = cpu_base / statistics.median(run.cpu for run in this)
            results.append((mb, this_mbs, base_mbs, this_peak, base_peak))
            print(
                f"  median: this {this_mbs:.1f} MB/s, {args.against} {base_mbs:.1f} MB/s = "
                f"{this_mbs / base_mbs:.0%} (target >= 67%); CPU {args.against} / this {cpu_ratio:.0%}; "
                f"peak RSS {this_peak:.0f} MiB ({args.against} {base_peak:.0f}; target < 1024)",
                flush=True,
            )
            os.unlink(path)
    print(f"\nsize MB   this MB/s   {args.against} MB/s   ratio   peak RSS MiB (this, {args.against})")
    for mb, this_mbs, base_mbs, this_peak, base_peak in results:
        print(
            f"{mb:7.0f}   {this_mbs:9.1f}   {base_mbs:{len(args.against) + 5}.1f}   "
            f"{this_mbs / base_mbs:5.0%}   {this_peak:6.0f} {base_peak:6.0f}"
        )
    if len(results) > 1:
        print(
            f"peak RSS from {results[0][0]:.0f} MB to {results[-1][0]:.0f} MB: "
            f"{results[0][3]:.0f} -> {results[-1][3]:.0f} MiB (target < 1024, flat)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
