"""What rescore promises about its output: safe to run twice, byte-identical where nothing
changed, one exit status per kind of outcome, nothing partial left behind."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import subprocess
import sys
import threading

import orjson
import pytest

from bench.deepeval_tree import tree_to_spans
from otel_semloop.cli import main
from otel_semloop.otlp import records_to_traces_json
from tests.batch.rescore_data import (
    EXAMPLE,
    agent_lines,
    file_size_limited,
    healthy_tree,
    labels,
    roots,
    spans_of,
    write_jsonl,
)

LINES = agent_lines()


def _rescore(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "otel_semloop", "rescore", *args], capture_output=True, check=False
    )


def test_output_that_is_an_input_is_refused_and_the_input_is_untouched(tmp_path, capsys):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    before = source.read_bytes()
    assert main(["rescore", str(source), "-o", str(source)]) == 2
    assert "is also an input" in capsys.readouterr().err
    assert source.read_bytes() == before


def test_rescoring_a_scored_file_gives_the_same_bytes_and_one_evaluation_event(tmp_path):
    first, second = tmp_path / "once.jsonl", tmp_path / "twice.jsonl"
    assert main(["rescore", str(EXAMPLE), "-o", str(first), "-q"]) == 0
    assert main(["rescore", str(first), "-o", str(second), "-q"]) == 0
    assert second.read_bytes() == first.read_bytes()
    for root in roots(second).values():
        events = [e for e in root.events if e.name == "gen_ai.evaluation.result"]
        assert len(events) == (1 if "semloop.label" in root.attributes else 0)


def test_identical_input_gives_identical_output_bytes_with_or_without_a_pool(tmp_path):
    many = agent_lines(n_traces=90, per_line=11)  # enough traces for the pool to start
    source = write_jsonl(tmp_path / "in.jsonl", many)
    single, pooled = tmp_path / "single.jsonl", tmp_path / "pooled.jsonl"
    assert main(["rescore", str(source), "-o", str(single), "-q", "--workers", "1"]) == 0
    assert (
        main(
            [
                "rescore",
                str(source),
                "-o",
                str(pooled),
                "-q",
                "--workers",
                "2",
                "--chunk-mb",
                "0.004",  # many chunks: traces cut by chunk edges, the pool started
                "--summary",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "s.json").read_text())["workers"] == 2
    assert pooled.read_bytes() == single.read_bytes()


def test_lines_written_by_another_tool_that_gain_nothing_are_copied_byte_for_byte(tmp_path):
    # The stdlib's default spacing, key order as another exporter wrote it: not orjson's bytes.
    foreign = [json.dumps(line, indent=None, sort_keys=True).encode() for line in LINES]
    plain_http = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "GET /health",
                                "kind": 2,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000000100000000",
                                "attributes": [{"key": "http.route", "value": {"stringValue": "/health"}}],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    untouched = json.dumps(plain_http, indent=None).encode()
    source = tmp_path / "foreign.jsonl"
    source.write_bytes(b"\n".join([untouched, *foreign, untouched]) + b"\n")
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 0
    written = out.read_bytes().split(b"\n")
    assert written[0] == untouched and written[-2] == untouched
    changed = [i for i, (a, b) in enumerate(zip(foreign, written[1:-2], strict=True)) if a != b]
    assert changed, "lines holding a scored root are rewritten"
    for i, (a, b) in enumerate(zip(foreign, written[1:-2], strict=True)):
        if b"semloop." not in b:
            assert a == b, f"line {i + 2} gained nothing but was re-serialised"


def test_a_malformed_line_fails_the_run_with_its_place_but_is_copied_through(tmp_path, capsys):
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(
        orjson.dumps(LINES[0]) + b"\n{not json\n" + b"".join(orjson.dumps(x) + b"\n" for x in LINES[1:])
    )
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 2
    assert "mixed.jsonl:2: invalid JSON" in capsys.readouterr().err
    assert out.read_bytes().split(b"\n")[1] == b"{not json"
    assert (
        main(
            [
                "rescore",
                str(source),
                "-o",
                str(out),
                "-q",
                "--skip-invalid",
                "--summary",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().err == ""
    assert json.loads((tmp_path / "s.json").read_text())["malformed_units"] == 1


def test_fail_on_loop_is_a_ci_gate(tmp_path):
    looping = write_jsonl(tmp_path / "loop.jsonl", LINES)
    healthy = write_jsonl(
        tmp_path / "ok.jsonl",
        [records_to_traces_json(tree_to_spans(healthy_tree(), f"h{i}")) for i in range(3)],
    )
    assert main(["rescore", str(looping), "-o", str(tmp_path / "o1.jsonl"), "-q", "--fail-on-loop"]) == 1
    assert main(["rescore", str(looping), "-o", str(tmp_path / "o2.jsonl"), "-q"]) == 0
    assert main(["rescore", str(healthy), "-o", str(tmp_path / "o3.jsonl"), "-q", "--fail-on-loop"]) == 0


def test_an_output_that_is_a_directory_is_an_output_error(tmp_path, capsys):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    assert main(["rescore", str(source), "-o", str(tmp_path)]) == 3
    assert "is a directory" in capsys.readouterr().err


def test_an_unwritable_output_is_an_output_error(tmp_path, capsys):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    assert main(["rescore", str(source), "-o", str(source / "under-a-file.jsonl")]) == 3
    assert "cannot write" in capsys.readouterr().err


def test_a_full_disk_is_an_output_error(tmp_path, capsys):
    source = write_jsonl(tmp_path / "a.jsonl", LINES * 40)
    assert main(["rescore", str(source), "-o", "/dev/full", "-q"]) == 3
    assert "No space left on device" in capsys.readouterr().err


def test_a_write_failing_half_way_leaves_the_previous_output_and_no_temporary_file(tmp_path):
    source = write_jsonl(tmp_path / "a.jsonl", agent_lines(n_traces=60, per_line=5))
    out = tmp_path / "out" / "scored.jsonl"
    out.parent.mkdir()
    out.write_bytes(b"previous run\n")

    done = subprocess.run(
        [sys.executable, "-m", "otel_semloop", "rescore", str(source), "-o", str(out), "-q"],
        capture_output=True,
        check=False,
        preexec_fn=file_size_limited(20_000),
    )
    assert done.returncode == 3, done.stderr
    assert b"cannot write" in done.stderr and b"Traceback" not in done.stderr
    assert out.read_bytes() == b"previous run\n"
    assert os.listdir(out.parent) == ["scored.jsonl"]


def test_a_closed_stdout_pipe_is_a_clear_output_error(tmp_path):
    source = write_jsonl(tmp_path / "a.jsonl", LINES * 200)
    reader = subprocess.Popen(["head", "-c", "100"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    done = subprocess.run(
        [sys.executable, "-m", "otel_semloop", "rescore", str(source), "-o", "-", "-q"],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        check=False,
    )
    reader.stdin.close()
    reader.wait(10)
    assert done.returncode == 3, done.stderr
    assert b"broken pipe" in done.stderr
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr


def test_summary_json_table_csv_and_only_loops(tmp_path, capsys):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    summary = tmp_path / "summary.json"
    assert (
        main(
            [
                "rescore",
                str(source),
                "-o",
                str(tmp_path / "o.jsonl"),
                "-q",
                "--table",
                "csv",
                "--only-loops",
                "--summary",
                str(summary),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3 and {r["label"] for r in rows} == {"loop"}
    assert all(r["tools"] == "grep" and r["agent"] == "engineer" for r in rows)
    data = json.loads(summary.read_text())
    assert data["agent_traces_scored"] == 6 and data["loops"] == 3
    assert data["by_label"] == {"loop": 3, "no_loop": 3}
    assert data["top_looping_agents"] == [{"agent": "engineer", "loops": 3, "traces": 3}]
    assert data["top_looping_tools"] == [{"tool": "grep", "loops": 3}]
    assert set(data["by_signal"]) >= {"action_cycle"}


def test_a_summary_to_a_fifo_is_written_through_it_and_the_fifo_stays(tmp_path):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    fifo = tmp_path / "summary.pipe"
    os.mkfifo(fifo)
    read: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as fp:
            read.append(fp.read())

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        argv = ["rescore", str(source), "-o", str(tmp_path / "o.jsonl"), "-q", "--summary", str(fifo)]
        assert main(argv) == 0
    finally:
        reader.join(10)
    assert json.loads(read[0])["agent_traces_scored"] == 6
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl", "o.jsonl", "summary.pipe"]


def test_the_summary_is_printed_and_the_terminal_never_sees_control_characters(tmp_path, capsys):
    line = orjson.loads(orjson.dumps(LINES[0]))
    for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["name"] = "evil\x1b[2Jname"
    source = write_jsonl(tmp_path / "a.jsonl", [line, *LINES[1:]])
    assert main(["rescore", str(source), "-o", str(tmp_path / "o.jsonl"), "--table", "text"]) == 0
    out, err = capsys.readouterr()  # the table on stdout, the summary beside it on stderr
    assert "6 agent traces scored, 3 loops" in err
    assert "\x1b" not in out and "\x1b" not in err


def test_no_progress_bar_when_piped(tmp_path):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    done = _rescore(str(source), "-o", str(tmp_path / "o.jsonl"))
    assert done.returncode == 0
    assert done.stderr == b""
    assert b"agent traces scored" in done.stdout


@pytest.mark.parametrize("stdout", [True])
def test_output_to_stdout_keeps_the_summary_off_it(tmp_path, stdout):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    done = _rescore(str(source), "-o", "-")
    assert done.returncode == 0
    assert done.stdout.count(b"\n") == len(LINES)
    assert b"agent traces scored" in done.stderr
    (tmp_path / "o.jsonl").write_bytes(done.stdout)
    assert sorted(labels(tmp_path / "o.jsonl").values()) == ["loop"] * 3 + ["no_loop"] * 3
    assert len(spans_of(tmp_path / "o.jsonl")) == sum(
        len(x["resourceSpans"][0]["scopeSpans"][0]["spans"]) for x in LINES
    )


def test_a_progress_bar_is_drawn_on_a_terminal(tmp_path):
    import pty

    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    main_fd, tty_fd = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "otel_semloop", "rescore", str(source), "-o", str(tmp_path / "o.jsonl")],
            stdout=subprocess.PIPE,
            stderr=tty_fd,
            check=False,
            timeout=120,
        )
        os.close(tty_fd)
        drawn = b""
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(main_fd)
    assert done.returncode == 0
    assert b"spans/s" in drawn and b"traces" in drawn and b"loops" in drawn


def test_a_compressed_output_gets_the_same_bytes_as_a_plain_one(tmp_path):
    import gzip

    source = write_jsonl(tmp_path / "in.jsonl", LINES)
    plain, packed = tmp_path / "out.jsonl", tmp_path / "out.jsonl.gz"
    assert main(["rescore", str(source), "-o", str(plain), "-q"]) == 0
    assert main(["rescore", str(source), "-o", str(packed), "-q"]) == 0
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()


def _summary_under_a_file_size_limit(tmp_path, summary):
    source = write_jsonl(tmp_path / "a.jsonl", LINES)
    argv = ["rescore", str(source), "-o", os.devnull, "-q", "--summary", str(summary)]
    return subprocess.run(
        [sys.executable, "-m", "otel_semloop", *argv],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=file_size_limited(64),
    )


def test_a_summary_that_cannot_be_written_leaves_no_file_and_one_line(tmp_path):
    summary = tmp_path / "out" / "summary.json"
    summary.parent.mkdir()
    done = _summary_under_a_file_size_limit(tmp_path, summary)
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [f"otel-semloop: cannot write {summary}: File too large"]
    assert os.listdir(summary.parent) == []


def test_a_summary_that_cannot_be_written_leaves_the_previous_one(tmp_path):
    summary = tmp_path / "out" / "summary.json"
    summary.parent.mkdir()
    summary.write_text('{"previous": true}\n')
    done = _summary_under_a_file_size_limit(tmp_path, summary)
    assert done.returncode == 3, done.stderr
    assert summary.read_text() == '{"previous": true}\n'
    assert os.listdir(summary.parent) == ["summary.json"]
