"""Throughput and memory of ``otel-semloop rescore`` against a plain orjson floor.

Run from the repository root: ``python bench/rescore_throughput.py [--sizes 300,1200] [--rounds 3]``.

For each size it writes an OTLP JSON lines file into a temp dir, shaped like a Collector
file exporter's output of agent traffic: 50-span agent traces with GenAI attributes
(``invoke_agent`` root, ``chat`` spans with message JSON and tool calls, ``execute_tool``
spans with arguments and results), about 64 traces open at once, spans in end order (the
root last), 512 spans a line, one trace in four a tool loop. Then, alternating, in one run:

a) the floor: read the file, ``orjson.loads`` + ``orjson.dumps`` every line, write it out;
b) ``otel-semloop rescore FILE -o OUT -q`` as a user runs it (default detectors, default
   workers), in a subprocess whose peak RSS (process and children, summed, sampled every
   50 ms) is recorded.

Prints MB/s of each (input bytes / wall time; medians over rounds), the ratio rescore /
floor (target >= 40%), and rescore's peak RSS at each size (target < 1 GB, flat from the
smallest size to the largest). On a shared machine wall time depends on the load, so it
also prints the CPU seconds of each (rescore: the process and its workers, and the
reading process alone) and the load average: floor CPU / rescore CPU times the number of
cores is the ratio idle cores would give.
"""

from __future__ import annotations

import argparse
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


def floor(path: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the parse-and-dump pass."""
    start, cpu = time.perf_counter(), time.process_time()
    with open(path, "rb") as src, open(out, "wb") as dst:
        for line in src:
            dst.write(orjson.dumps(orjson.loads(line)) + b"\n")
    return time.perf_counter() - start, time.process_time() - cpu


def rescore(path: Path, out: Path, extra: list[str]) -> tuple[float, float, float, str, float]:
    """Wall seconds, CPU seconds (process and children, user + system), peak RSS (MiB,
    process + children), the summary line, and the CPU seconds of the reading process
    alone (the rest is its workers and the fork server)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "otel_semloop", "rescore", str(path), "-o", str(out), *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
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
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"rescore failed ({proc.returncode}): {stderr.decode()[-2000:]}")
    summary = json.loads(stdout) if stdout.strip() else {}
    said = (
        f"{summary.get('agent_traces_scored', 0)} scored, {summary.get('loops', 0)} loops, "
        f"{summary.get('workers', 0)} workers"
    )
    return seconds, sum(cpu.values()), peak / (1 << 20), said, cpu.get(proc.pid, 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="300,1200", help="input sizes in MB (default 300,1200)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds at the first size (larger sizes: 1)")
    parser.add_argument("--dir", default=None, help="where to write the files (default: a temp dir)")
    parser.add_argument("--rescore-args", default="", help="extra rescore arguments, e.g. '--workers 1'")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    extra = ["--summary", "/dev/stdout", "-q", *args.rescore_args.split()]
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()}; rescore {' '.join(extra)}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="rescore-bench-", dir=args.dir) as tmp:
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
            floors, rescores, peaks, cpu_ratios = [], [], [], []
            for r in range(args.rounds if n == 0 else 1):
                f, f_cpu = floor(path, Path(tmp) / "floor.jsonl")
                s, s_cpu, peak, summary, reader_cpu = rescore(path, Path(tmp) / "scored.jsonl", extra)
                floors.append(mb / f)
                rescores.append(mb / s)
                peaks.append(peak)
                cpu_ratios.append(f_cpu / s_cpu)
                print(
                    f"  round {r + 1}: floor {mb / f:6.1f} MB/s   rescore {mb / s:6.1f} MB/s "
                    f"({mb / s / (mb / f):.0%})   CPU s floor {f_cpu:.1f} rescore {s_cpu:.1f} "
                    f"(reader {reader_cpu:.1f})   "
                    f"peak RSS {peak:6.0f} MiB   load {os.getloadavg()[0]:.1f}   ({summary})",
                    flush=True,
                )
                os.unlink(Path(tmp) / "floor.jsonl")
                os.unlink(Path(tmp) / "scored.jsonl")
            fl, rs, pk = statistics.median(floors), statistics.median(rescores), statistics.median(peaks)
            results.append((mb, fl, rs, pk))
            print(
                f"  median: floor {fl:.1f} MB/s, rescore {rs:.1f} MB/s = {rs / fl:.0%} of the floor "
                f"(target >= 40%); peak RSS {pk:.0f} MiB; floor CPU / rescore CPU "
                f"{statistics.median(cpu_ratios):.1%} (x{os.cpu_count()} cores: what wall time on idle "
                "cores would give)",
                flush=True,
            )
            os.unlink(path)
    print("\nsize MB   floor MB/s   rescore MB/s   ratio   peak RSS MiB")
    for mb, fl, rs, pk in results:
        print(f"{mb:7.0f}   {fl:10.1f}   {rs:12.1f}   {rs / fl:5.0%}   {pk:12.0f}")
    if len(results) > 1:
        print(
            f"peak RSS from {results[0][0]:.0f} MB to {results[-1][0]:.0f} MB: "
            f"{results[0][3]:.0f} -> {results[-1][3]:.0f} MiB (target < 1024, flat)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
