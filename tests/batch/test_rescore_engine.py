"""The streaming engine: bounded memory by spilling open traces to disk, input order kept,
the same bytes whether or not it spilled."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from otel_semloop.cli import main
from tests.batch.rescore_data import REPO, agent_lines, file_size_limited, labels, spans_of, write_jsonl


def _rootless_first(lines: list[dict]) -> list[dict]:
    """The lines with every root moved to one final line: no trace completes before the
    end, so everything is held and the engine must spill to stay in budget."""
    lines = copy.deepcopy(lines)
    roots = []
    for line in lines:
        spans = line["resourceSpans"][0]["scopeSpans"][0]["spans"]
        roots += [s for s in spans if not s.get("parentSpanId")]
        spans[:] = [s for s in spans if s.get("parentSpanId")]
    tail = copy.deepcopy(lines[0])
    tail["resourceSpans"][0]["scopeSpans"][0]["spans"] = roots
    return [*lines, tail]


def test_spilling_to_disk_gives_the_same_bytes_as_holding_everything(tmp_path):
    lines = _rootless_first(agent_lines(n_traces=30, per_line=6))
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    held, spilled = tmp_path / "held.jsonl", tmp_path / "spilled.jsonl"
    assert main(["rescore", str(source), "-o", str(held), "-q", "--workers", "1"]) == 0
    summary = tmp_path / "summary.json"
    budget = str(4096 / (1 << 20))  # 4 KiB of held lines: spill almost at once
    assert (
        main(
            [
                "rescore",
                str(source),
                "-o",
                str(spilled),
                "-q",
                "--memory-budget",
                budget,
                "--summary",
                str(summary),
            ]
        )
        == 0
    )
    assert json.loads(summary.read_text())["spilled_traces"] > 10
    assert spilled.read_bytes() == held.read_bytes()
    assert sorted(labels(spilled).values()) == ["loop"] * 15 + ["no_loop"] * 15
    assert len(spans_of(spilled)) == len(spans_of(source))


def test_a_span_arriving_after_its_trace_was_decided_is_kept_and_counted_late(tmp_path):
    lines = agent_lines(n_traces=8, per_line=5)
    late_line = copy.deepcopy(lines[0])
    late_line["resourceSpans"][0]["scopeSpans"][0]["spans"] = [
        dict(lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0], spanId="00000000000000aa")
    ]
    source = write_jsonl(tmp_path / "in.jsonl", [*lines, *lines[:0], late_line])
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    assert (
        main(["rescore", str(source), "-o", str(out), "-q", "--window", "1", "--summary", str(summary)]) == 0
    )
    assert json.loads(summary.read_text())["late_spans"] == 1
    assert out.read_bytes().splitlines()[-1] == json.dumps(late_line, separators=(",", ":")).encode()
    assert len(spans_of(out)) == len(spans_of(source))


def test_the_worker_processes_write_the_bytes_scoring_in_process_writes(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", agent_lines(n_traces=8, per_line=2))
    pooled, alone = tmp_path / "pooled.jsonl", tmp_path / "alone.jsonl"
    summary = tmp_path / "summary.json"
    small = str(20_000 / (1 << 20))  # an input larger than this uses the worker processes
    command = ["rescore", str(source), "-q", "--chunk-mb", small]
    assert main([*command, "--workers", "2", "-o", str(pooled), "--summary", str(summary)]) == 0
    assert json.loads(summary.read_text())["workers"] == 2
    assert main([*command, "--workers", "1", "-o", str(alone)]) == 0
    assert pooled.read_bytes() == alone.read_bytes()
    assert sorted(labels(pooled).values()) == ["loop"] * 4 + ["no_loop"] * 4


def _rescore_with_files_up_to(limit: int, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``otel-semloop`` in a child process whose regular files cannot grow past ``limit``."""
    return subprocess.run(
        [sys.executable, "-m", "otel_semloop", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=file_size_limited(limit),
    )


def test_a_full_spill_directory_is_one_line_and_the_output_error_status(tmp_path):
    lines = _rootless_first(agent_lines(n_traces=60, per_line=6))
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    out = tmp_path / "out.jsonl"
    argv = ["rescore", str(source), "-o", str(out), "-q", "--workers", "1"]
    argv += ["--memory-budget", str(4096 / (1 << 20)), "--spill-dir", str(spill_dir)]
    done = _rescore_with_files_up_to(8192, argv)
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [
        f"otel-semloop: cannot spill to {spill_dir}: File too large (held lines passed "
        "--memory-budget; free space there or give --spill-dir another place)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "spill"]  # no partial output
    assert list(spill_dir.iterdir()) == []


def test_the_same_spill_within_the_file_size_limit_succeeds(tmp_path):
    lines = _rootless_first(agent_lines(n_traces=6, per_line=6))
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out.jsonl"
    argv = ["rescore", str(source), "-o", str(out), "-q", "--workers", "1"]
    argv += ["--memory-budget", str(1024 / (1 << 20)), "--spill-dir", str(tmp_path)]
    argv += ["--summary", str(tmp_path / "summary.json")]
    done = _rescore_with_files_up_to(1 << 20, argv)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "summary.json").read_text())["spilled_traces"] > 0
    assert len(spans_of(out)) == len(spans_of(source))
