"""`otel-semloop rescore` with the Collector file exporter's logs files beside its traces
files: an agent whose messages and tool calls are GenAI log records (as
``opentelemetry-instrumentation-openai-v2`` emits them) is scored with them, whatever the
logs file's format and compression; logs are never written to the traces output."""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_semloop.batch.inputs import read_records
from otel_semloop.cli import main
from otel_semloop.otlp.codec import logs_to_json, traces_to_json
from tests.support.log_record_agent import ROUNDS, SPANS, Recorded, record_agent


def json_line(message: Any, to_json: Callable[[Any], dict[str, Any]]) -> bytes:
    return orjson.dumps(to_json(message)) + b"\n"


def proto_message(message: Any) -> bytes:
    data = message.SerializeToString()
    return struct.pack(">I", len(data)) + data


def zstd(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(data)


LOGS_FORMATS: dict[str, Callable[[Any], bytes]] = {
    "json": lambda logs: json_line(logs, logs_to_json),
    "json-gzip": lambda logs: gzip.compress(json_line(logs, logs_to_json)),
    "proto": proto_message,
    "proto-gzip": lambda logs: gzip.compress(proto_message(logs)),
    "proto-zstd": lambda logs: zstd(proto_message(logs)),
}


def write(tmp_path: Path, run: Recorded, logs_format: str = "json") -> tuple[Path, Path]:
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(json_line(run.spans, traces_to_json))
    logs = tmp_path / "logs.out"  # a name that says nothing: the content does
    logs.write_bytes(LOGS_FORMATS[logs_format](run.logs))
    return traces, logs


def root_of(path: Path) -> dict[str, Any]:
    roots = [r for r in read_records(path) if not r.parent_span_id]
    assert len(roots) == 1
    return dict(roots[0].attributes)


@pytest.mark.parametrize("logs_format", sorted(LOGS_FORMATS))
def test_a_loop_whose_content_is_in_a_logs_file_is_flagged(tmp_path: Path, logs_format: str) -> None:
    run = record_agent()
    traces, logs = write(tmp_path, run, logs_format)
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(traces), str(logs), "-o", str(out), "--fail-on-loop"]) == 1
    root = root_of(out)
    assert root["semloop.label"] == "loop", root
    assert "search_logs" in root["semloop.reason"]


def test_protobuf_traces_are_scored_with_their_logs(tmp_path: Path) -> None:
    run = record_agent()
    _, logs = write(tmp_path, run)
    traces = tmp_path / "traces.pb"
    traces.write_bytes(proto_message(run.spans))
    out = tmp_path / "scored.jsonl"  # the protobuf spans are scored as read, then written as JSON
    assert main(["rescore", str(traces), str(logs), "-o", str(out), "--fail-on-loop"]) == 1
    assert root_of(out)["semloop.label"] == "loop"


def test_the_logs_file_may_come_first_and_is_not_written_to_the_output(tmp_path: Path) -> None:
    run = record_agent()
    traces, logs = write(tmp_path, run)
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(logs), str(traces), "-o", str(out)]) == 0
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert all("resourceSpans" in line and "resourceLogs" not in line for line in lines)
    assert len(read_records(out)) == SPANS
    assert root_of(out)["semloop.label"] == "loop"


def test_without_the_logs_file_the_same_trace_is_unscored(tmp_path: Path) -> None:
    traces, _ = write(tmp_path, record_agent())
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(traces), "-o", str(out)]) == 0
    root = root_of(out)
    assert root["semloop.label"] == "unscored"
    assert root["semloop.unscored.reason"] == f"step content not readable ({ROUNDS} steps)"


@pytest.mark.parametrize("workers", [1, 2])
def test_in_process_and_in_worker_processes_the_logs_are_joined(tmp_path: Path, workers: int) -> None:
    traces, logs = write(tmp_path, record_agent())
    out, summary = tmp_path / "scored.jsonl", tmp_path / "summary.json"
    tiny = str(1 / (1 << 20))  # an input larger than this is scored in the worker processes
    argv = ["rescore", str(traces), str(logs), "-o", str(out), "--summary", str(summary)]
    assert main([*argv, "--workers", str(workers), "--chunk-mb", tiny]) == 0
    assert orjson.loads(summary.read_bytes())["workers"] == workers
    assert root_of(out)["semloop.label"] == "loop"


def test_a_trace_spilled_to_disk_is_scored_with_its_logs(tmp_path: Path) -> None:
    traces, logs = write(tmp_path, record_agent())
    out, summary = tmp_path / "scored.jsonl", tmp_path / "summary.json"
    tiny = str(1 / (1 << 20))  # every held line is past the budget: its trace is spilled
    argv = ["rescore", str(traces), str(logs), "-o", str(out), "--summary", str(summary)]
    assert main([*argv, "--memory-budget", tiny, "--spill-dir", str(tmp_path)]) == 0
    assert orjson.loads(summary.read_bytes())["spilled_traces"] == 1
    assert root_of(out)["semloop.label"] == "loop"


def test_a_logs_file_alone_is_an_input_error_that_says_so(tmp_path: Path, capsys: Any) -> None:
    _, logs = write(tmp_path, record_agent(rounds=1))
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(logs), "-o", str(out)]) == 2
    message = capsys.readouterr().err
    assert "only OTLP logs given" in message and str(logs) in message
    assert not out.exists()


def test_a_broken_line_in_a_logs_file_is_an_input_problem_and_the_rest_is_read(
    tmp_path: Path, capsys: Any
) -> None:
    run = record_agent()
    traces, logs = write(tmp_path, run)
    logs.write_bytes(
        logs.read_bytes() + b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"spanId": 7}]}]}]}\n'
    )
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(traces), str(logs), "-o", str(out)]) == 2
    assert f"{logs}:2" in capsys.readouterr().err
    assert root_of(out)["semloop.label"] == "loop"


def test_logs_files_with_the_dask_engine_are_an_input_error_that_says_so(tmp_path: Path, capsys: Any) -> None:
    traces, logs = write(tmp_path, record_agent(rounds=1))
    out = tmp_path / "scored.jsonl"
    assert main(["rescore", str(traces), str(logs), "-o", str(out), "--engine", "dask"]) == 2
    assert "logs files are read with --engine local only" in capsys.readouterr().err
    assert not out.exists()
