"""Agent traces as OTLP file-exporter lines for the rescore tests: looping and healthy
agent runs (GenAI conventions), a plain HTTP trace, and writers for every input format."""

from __future__ import annotations

import gzip
import resource
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from bench.deepeval_tree import tree_to_spans
from otel_semloop.batch.inputs import read_records
from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import records_from_json, records_to_traces_json
from otel_semloop.otlp.codec import json_to_traces

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "agent_traces.otlp.jsonl"


def looping_tree(tool: str = "grep") -> dict[str, Any]:
    return {
        "type": "agent",
        "name": "engineer",
        "input": "Fix the failing build",
        "output": "",
        "children": [
            child
            for _ in range(6)
            for child in (
                {
                    "type": "llm",
                    "name": "reason",
                    "output": "I will grep for the error again.",
                    "children": [],
                },
                {
                    "type": "tool",
                    "name": tool,
                    "input": {"pattern": "Error"},
                    "output": "no matches",
                    "children": [],
                },
            )
        ],
    }


def healthy_tree() -> dict[str, Any]:
    return {
        "type": "agent",
        "name": "reporter",
        "input": "Summarise the three files",
        "output": "done",
        "children": [
            {
                "type": "tool",
                "name": "read_file",
                "input": {"path": f"f{i}.py"},
                "output": f"contents {i}",
                "children": [],
            }
            for i in range(3)
        ],
    }


def agent_lines(n_traces: int = 6, per_line: int = 7) -> list[dict[str, Any]]:
    """TracesData dicts holding ``n_traces`` agent traces (every other one loops), their
    spans in end order, ``per_line`` spans a line, so traces straddle lines."""
    spans = []
    for i in range(n_traces):
        tree = looping_tree() if i % 2 == 0 else healthy_tree()
        records = tree_to_spans(tree, f"t{i}", start_ns=1_767_225_600_000_000_000 + i * 10**9)
        spans.extend(sorted(records, key=lambda r: r.end_ns))
    return [records_to_traces_json(spans[i : i + per_line]) for i in range(0, len(spans), per_line)]


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def proto_bytes(lines: list[dict[str, Any]]) -> bytes:
    out = b""
    for line in lines:
        data = json_to_traces(line).SerializeToString()
        out += len(data).to_bytes(4, "big") + data
    return out


def compress(data: bytes, how: str) -> bytes:
    if how == "gzip":
        return gzip.compress(data)
    if how == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    return data


def spans_of(path: Path) -> list[Any]:
    """Every span record of an output file (JSON lines or length-prefixed protobuf); a JSON
    line whose spans do not decode (an AnyValue nested past the decoder's bound) is
    skipped."""
    data = path.read_bytes()
    if data[:1] != b"{":
        return read_records(path)
    records = []
    for line in data.splitlines():
        try:
            records.extend(records_from_json(orjson.loads(line)))
        except OTLPDecodeError:
            continue
    return records


def roots(path: Path) -> dict[str, Any]:
    return {r.trace_id: r for r in spans_of(path) if not r.parent_span_id}


def labels(path: Path) -> dict[str, str]:
    return {
        tid: r.attributes["semloop.label"]
        for tid, r in roots(path).items()
        if "semloop.label" in r.attributes
    }


def traces_data(line: dict[str, Any]) -> TracesData:
    return json_to_traces(line)


def file_size_limited(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` for a child process: writing a regular file past ``limit`` bytes
    fails with EFBIG (as on a full disk) instead of killing the process with SIGXFSZ."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply
