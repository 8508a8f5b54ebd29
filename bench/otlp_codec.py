"""Benchmark of the OTLP JSON lines codec behind ``otel-semloop rescore``.

Run from the repository root: ``python bench/otlp_codec.py [--spans N] [--rounds R]``.

It writes a realistic OTLP JSON lines file (agent-shaped traces: an ``invoke_agent`` root,
LLM ``chat`` spans with message JSON, ``execute_tool`` spans with arguments and results,
8-15 attributes a span, some long string values, ~500 spans a line) into a temp dir, then
measures in one process, alternating, for several rounds:

a) ours: parse (bytes -> ``orjson.loads`` -> ``records_from_json`` for every span) and
   write (``apply_patch_json`` on ~5% of the spans, then ``orjson.dumps`` every line);
b) ``google.protobuf.json_format``: ``Parse`` into ``TracesData`` and ``MessageToJson``.
   It rejects hex ids (proto3 JSON wants base64 for bytes), so its copy of the input has
   the ids converted to base64; being ~50x slower, it runs on a sample of the lines;
c) the floor: a plain ``orjson.loads`` + ``orjson.dumps`` pass over the same lines.

"Write" encodes every line to bytes and discards them (no file I/O, the same for all).

Prints the median MB/s of each (input bytes / time) and the ratios ours vs json_format
(target >= 10x) and ours vs floor (target >= 40%).
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from otel_semloop.model import EventRecord
from otel_semloop.otlp import apply_patch_json, records_from_json
from otel_semloop.writeback import SpanPatch

TOOLS = ["read_file", "search_code", "run_tests", "edit_file", "list_dir", "web_search", "shell"]
WORDS = [
    "the",
    "agent",
    "reads",
    "the",
    "repository",
    "layout",
    "then",
    "plans",
    "a",
    "fix",
    "for",
    "the",
    "failing",
    "test",
    "and",
    "checks",
    "whether",
    "the",
    "function",
    "handles",
    "empty",
    "input",
    "correctly",
    "before",
    "editing",
    "the",
    "module",
    "again",
]


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


def _span(rng, trace_id, span_id, parent, name, kind, start, attrs, *, error=False, events=()):
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "flags": 256,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + rng.randint(1_000_000, 900_000_000)),
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "status": {"code": 2, "message": "tool failed"} if error else {},
    }
    if parent:
        span["parentSpanId"] = parent
    if events:
        span["events"] = list(events)
    return span


def make_trace(rng: random.Random, n_spans: int) -> list[dict]:
    trace_id = f"{rng.getrandbits(128):032x}"
    ids = iter(f"{rng.getrandbits(64):016x}" for _ in range(n_spans + 1))
    root = next(ids)
    t = 1_700_000_000_000_000_000 + rng.getrandbits(40)
    goal = (
        "Fix the failing test in "
        + rng.choice(["parser.py", "cli.py", "store.py"])
        + ": "
        + _text(rng, 20, 60)
    )
    spans = [
        _span(
            rng,
            trace_id,
            root,
            "",
            "invoke_agent coder",
            1,
            t,
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "coder",
                "gen_ai.agent.id": f"agent-{rng.getrandbits(32):08x}",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": goal}]}]
                ),
                "session.id": f"s-{rng.getrandbits(48):012x}",
                "user.id": f"u{rng.randint(1, 999)}",
            },
        )
    ]
    while len(spans) < n_spans:
        t += rng.randint(10_000_000, 2_000_000_000)
        tool = rng.choice(TOOLS)
        args = json.dumps({"path": f"src/{rng.choice(['a', 'b', 'c'])}.py", "query": _text(rng, 2, 6)})
        out_msgs = [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": _text(rng, 10, 50)},
                    {
                        "type": "tool_call",
                        "name": tool,
                        "id": f"call_{rng.getrandbits(40):x}",
                        "arguments": args,
                    },
                ],
            }
        ]
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.usage.input_tokens": rng.randint(500, 30_000),
            "gen_ai.usage.output_tokens": rng.randint(20, 2_000),
            "gen_ai.response.finish_reasons": "tool_calls",
            "gen_ai.output.messages": json.dumps(out_msgs),
        }
        if rng.random() < 0.5:
            attrs["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": _text(rng, 30, 200)}]}]
            )
        spans.append(_span(rng, trace_id, next(ids), root, "chat gpt-4o", 3, t, attrs))
        if len(spans) >= n_spans:
            break
        t += rng.randint(1_000_000, 500_000_000)
        error = rng.random() < 0.1
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": f"call_{rng.getrandbits(40):x}",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": args,
            "gen_ai.tool.call.result": _text(rng, 5, 400),
            "code.function": tool,
            "tool.retry": rng.random() < 0.05,
        }
        if error:
            attrs["error.type"] = "ToolError"
        events = ()
        if error:
            events = (
                {
                    "timeUnixNano": str(t + 5_000),
                    "name": "exception",
                    "attributes": [
                        _kv("exception.type", "ToolError"),
                        _kv("exception.message", _text(rng, 5, 20)),
                    ],
                },
            )
        spans.append(
            _span(
                rng,
                trace_id,
                next(ids),
                root,
                f"execute_tool {tool}",
                1,
                t,
                attrs,
                error=error,
                events=events,
            )
        )
    return spans


def make_lines(n_spans: int, per_line: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    spans: list[dict] = []
    while len(spans) < n_spans:
        spans.extend(make_trace(rng, rng.randint(10, 60)))
    del spans[n_spans:]
    resource = {
        "attributes": [
            _kv("service.name", "coding-agent"),
            _kv("service.version", "1.4.2"),
            _kv("telemetry.sdk.language", "python"),
            _kv("telemetry.sdk.name", "opentelemetry"),
            _kv("telemetry.sdk.version", "1.45.0"),
        ]
    }
    lines = []
    for i in range(0, len(spans), per_line):
        doc = {
            "resourceSpans": [
                {
                    "resource": resource,
                    "scopeSpans": [
                        {
                            "scope": {"name": "opentelemetry.instrumentation.openai_v2", "version": "2.1b0"},
                            "spans": spans[i : i + per_line],
                        }
                    ],
                }
            ]
        }
        lines.append(orjson.dumps(doc))
    return lines


def to_json_format_copy(line: bytes) -> str:
    """The same line with hex ids as base64, which proto3 JSON (json_format) wants."""
    doc = orjson.loads(line)
    for rs in doc.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return orjson.dumps(doc).decode()


PATCH = SpanPatch(
    attributes={
        "semloop.loop.detected": True,
        "semloop.score": 0.31,
        "semloop.label": "loop",
        "semloop.deepeval.score": 0.42,
    },
    events=[
        EventRecord(
            "gen_ai.evaluation.result",
            1_700_000_100_000_000_000,
            {
                "gen_ai.evaluation.name": "semloop.agent_loop",
                "gen_ai.evaluation.score.value": 0.31,
                "gen_ai.evaluation.score.label": "loop",
                "gen_ai.evaluation.explanation": "read_file called 6 times with the same result",
            },
        )
    ],
)


def _noop() -> None:
    pass


#: Called after each parsed line; ``gc.freeze`` under ``--gc freeze`` (see main).
AFTER_LINE = _noop


def ours(lines: list[bytes]) -> tuple[float, float, int]:
    after_line = AFTER_LINE
    t0 = time.perf_counter()
    objs = []
    n = 0
    for i, line in enumerate(lines, 1):
        obj = orjson.loads(line)
        records = records_from_json(obj, f"bench.jsonl:{i}")
        n += len(records)
        objs.append((obj, records))
        after_line()
    t1 = time.perf_counter()
    written = 0
    for obj, records in objs:
        for record in records[::20]:
            apply_patch_json(record.source, PATCH)
        written += len(orjson.dumps(obj)) + 1
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, n


def floor(lines: list[bytes]) -> tuple[float, float]:
    after_line = AFTER_LINE
    t0 = time.perf_counter()
    objs = []
    for line in lines:
        objs.append(orjson.loads(line))
        after_line()
    t1 = time.perf_counter()
    written = 0
    for obj in objs:
        written += len(orjson.dumps(obj)) + 1
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def protobuf_json_format(lines: list[str]) -> tuple[float, float]:
    after_line = AFTER_LINE
    t0 = time.perf_counter()
    msgs = []
    for line in lines:
        msg = TracesData()
        json_format.Parse(line, msg)
        msgs.append(msg)
        after_line()
    t1 = time.perf_counter()
    written = 0
    for m in msgs:
        written += len(json_format.MessageToJson(m, indent=None, use_integers_for_enums=True).encode()) + 1
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def _settle() -> None:
    gc.unfreeze()
    gc.collect()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spans", type=int, default=100_000)
    ap.add_argument("--per-line", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sample-lines", type=int, default=12, help="lines json_format runs on each round")
    ap.add_argument(
        "--gc",
        choices=("freeze", "on"),
        default="freeze",
        help="freeze: gc.freeze() after each parsed line, for all three contestants, as a rescore that "
        "holds every batch until write-back should do (the documents are acyclic, refcounting still "
        "frees them); on: the interpreter default, where collections rescan everything held so far",
    )
    args = ap.parse_args()
    global AFTER_LINE
    if args.gc == "freeze":
        AFTER_LINE = gc.freeze

    with tempfile.TemporaryDirectory(prefix="semloop-bench-") as tmp:
        path = os.path.join(tmp, "traces.jsonl")
        t = time.perf_counter()
        lines = make_lines(args.spans, args.per_line)
        with open(path, "wb") as fp:
            for line in lines:
                fp.write(line + b"\n")
        with open(path, "rb") as fp:
            lines = [line.rstrip(b"\n") for line in fp]
        size = sum(len(x) + 1 for x in lines)
        sample = lines[: args.sample_lines]
        jf_sample = [to_json_format_copy(x) for x in sample]
        jf_size = sum(len(x.encode()) + 1 for x in jf_sample)
        print(
            f"input: {args.spans} spans in {len(lines)} lines, {size / 1e6:.1f} MB "
            f"(generated in {time.perf_counter() - t:.1f}s at {path})"
        )
        print(
            f"json_format side: ids converted hex -> base64 (proto3 JSON bytes), "
            f"first {len(sample)} lines = {jf_size / 1e6:.1f} MB per round"
        )

        res: dict[str, list[float]] = {
            k: [] for k in ("ours_p", "ours_w", "floor_p", "floor_w", "jf_p", "jf_w")
        }
        n_records = 0
        mode = " (gc.freeze() after each parsed line, all contestants)" if args.gc == "freeze" else ""
        print(f"GC mode: {args.gc}{mode}")
        for r in range(args.rounds):
            _settle()
            p, w, n_records = ours(lines)
            res["ours_p"].append(size / p / 1e6)
            res["ours_w"].append(size / w / 1e6)
            _settle()
            p, w = protobuf_json_format(jf_sample)
            res["jf_p"].append(jf_size / p / 1e6)
            res["jf_w"].append(jf_size / w / 1e6)
            _settle()
            p, w = floor(lines)
            res["floor_p"].append(size / p / 1e6)
            res["floor_w"].append(size / w / 1e6)
            print(
                f"round {r + 1}: ours {res['ours_p'][-1]:.0f}/{res['ours_w'][-1]:.0f}  "
                f"json_format {res['jf_p'][-1]:.1f}/{res['jf_w'][-1]:.1f}  "
                f"floor {res['floor_p'][-1]:.0f}/{res['floor_w'][-1]:.0f} MB/s (parse/write)"
            )
        assert n_records == args.spans, n_records

    med = {k: statistics.median(v) for k, v in res.items()}

    def both(p: float, w: float) -> float:  # MB/s of a parse + write round trip
        return 1.0 / (1.0 / p + 1.0 / w)

    ours_rt = both(med["ours_p"], med["ours_w"])
    jf_rt = both(med["jf_p"], med["jf_w"])
    floor_rt = both(med["floor_p"], med["floor_w"])
    print()
    print("median MB/s            parse    write   parse+write")
    print(f"ours (records+patch) {med['ours_p']:7.1f}  {med['ours_w']:7.1f}  {ours_rt:7.1f}")
    print(f"json_format          {med['jf_p']:7.1f}  {med['jf_w']:7.1f}  {jf_rt:7.1f}")
    print(f"floor (orjson only)  {med['floor_p']:7.1f}  {med['floor_w']:7.1f}  {floor_rt:7.1f}")
    print()
    vs_jf = ours_rt / jf_rt
    vs_floor = ours_rt / floor_rt
    print(
        f"ours vs json_format: {vs_jf:.1f}x (parse {med['ours_p'] / med['jf_p']:.1f}x, "
        f"write {med['ours_w'] / med['jf_w']:.1f}x)  target >= 10x  {'OK' if vs_jf >= 10 else 'MISSED'}"
    )
    print(
        f"ours vs floor:       {vs_floor:.0%} (parse {med['ours_p'] / med['floor_p']:.0%}, "
        f"write {med['ours_w'] / med['floor_w']:.0%})  target >= 40%  {'OK' if vs_floor >= 0.4 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
