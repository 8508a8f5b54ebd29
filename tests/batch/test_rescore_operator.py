"""What an operator running ``rescore`` relies on: a ``--table csv`` on stdout is a CSV file and
nothing else, an engine whose extra is missing says what to install (exit 2, no traceback), a
JSON-lines file that is not OTLP in an input directory is reported and kept out of the
output, and output files are created with the mode the umask gives, like any other tool's."""

from __future__ import annotations

import csv
import io
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otel_semloop.batch.run import EXIT_INPUT, EXIT_OK
from otel_semloop.cli import main
from tests.batch.rescore_data import EXAMPLE, spans_of

LOG_LINES = b"".join(b'{"level":"info","msg":"request served","n":%d}\n' % i for i in range(40))


def test_a_csv_table_is_the_only_thing_on_stdout(tmp_path, capsys) -> None:
    assert main(["rescore", str(EXAMPLE), "-o", str(tmp_path / "out.jsonl"), "--table", "csv"]) == EXIT_OK
    out, err = capsys.readouterr()
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][:5] == ["trace", "root", "agent", "steps", "label"]
    assert len(rows) == 1 + 4  # the header and the four agent traces
    assert all(len(row) == len(rows[0]) for row in rows)
    assert "agent traces scored" in err  # the summary went to stderr


def test_without_a_table_the_summary_stays_on_stdout(tmp_path, capsys) -> None:
    assert main(["rescore", str(EXAMPLE), "-o", str(tmp_path / "out.jsonl")]) == EXIT_OK
    out, _ = capsys.readouterr()
    assert "agent traces scored" in out


def test_the_dask_engine_without_its_extra_says_what_to_install(tmp_path, capsys, monkeypatch) -> None:
    for name in ("dask", "dask.bag", "distributed"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it fails
    code = main(["rescore", str(EXAMPLE), "-o", str(tmp_path / "out.jsonl"), "--engine", "dask"])
    _, err = capsys.readouterr()
    assert code == EXIT_INPUT
    (line,) = err.strip().splitlines()
    assert "pip install 'otel-semloop[dask]'" in line and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.fixture
def directory_with_a_log(tmp_path) -> Path:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "traces.otlp.jsonl").write_bytes(EXAMPLE.read_bytes())
    (folder / "app.log.jsonl").write_bytes(LOG_LINES)
    return folder


def test_a_json_lines_file_that_is_not_otlp_is_reported_and_skipped(
    directory_with_a_log, tmp_path, capsys
) -> None:
    out = tmp_path / "out.jsonl"
    code = main(["rescore", str(directory_with_a_log), "-o", str(out), "-q"])
    _, err = capsys.readouterr()
    assert code == EXIT_INPUT
    assert "app.log.jsonl" in err and "not OTLP" in err
    assert b'"level"' not in out.read_bytes()  # no foreign line copied through
    alone = tmp_path / "alone.jsonl"
    assert (
        main(["rescore", str(directory_with_a_log / "traces.otlp.jsonl"), "-o", str(alone), "-q"]) == EXIT_OK
    )
    assert len(spans_of(out)) == len(spans_of(alone))  # the OTLP file beside it read in full


def test_an_otlp_json_file_is_not_taken_for_a_foreign_one(tmp_path, capsys) -> None:
    assert main(["rescore", str(EXAMPLE), "-o", str(tmp_path / "out.jsonl"), "-q"]) == EXIT_OK
    assert "not OTLP" not in capsys.readouterr().err


@pytest.fixture
def umask() -> Iterator[int]:
    previous = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(previous)


def test_output_files_and_the_report_get_the_mode_the_umask_gives(tmp_path, umask) -> None:
    out, report, summary = tmp_path / "out.jsonl.gz", tmp_path / "report.html", tmp_path / "summary.json"
    args = ["rescore", str(EXAMPLE), "-o", str(out), "-q", "--report", str(report), "--summary", str(summary)]
    assert main(args) == EXIT_OK
    for path in (out, report, summary):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask == 0o640, path
