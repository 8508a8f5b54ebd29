"""The streaming engine: bounded memory by spilling open traces to disk, input order kept,
the same bytes whether or not it spilled."""

from __future__ import annotations

import copy
import json

from otel_semloop.batch.engine import Engine, EngineOptions
from otel_semloop.batch.inputs import ReadState, Source, iter_units
from otel_semloop.batch.units import Spool
from otel_semloop.batch.writer import Output
from otel_semloop.cli import main
from tests.batch.rescore_data import agent_lines, labels, spans_of, write_jsonl


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


def _rescored(units: list, out_path, left, monkeypatch) -> tuple[bytes, int]:
    """Rescore ``units`` with two workers and 20 KB chunks; ``left(i)`` is what the reader
    would say is left of the input after unit ``i`` (or None)."""
    from otel_semloop.batch import engine as engine_module

    monkeypatch.setattr(engine_module, "MIN_TAIL_CHUNK_BYTES", 1_000)
    output = Output(str(out_path), "json")
    output.open()
    engine = Engine(EngineOptions(workers=2, chunk_bytes=20_000, window=2), output.write_unit)
    try:
        for i, unit in enumerate(units):
            engine.feed(unit, left(i))
        stats = engine.finish()
    finally:
        engine.close()
    output.commit()
    return out_path.read_bytes(), stats.chunks


def test_chunks_shrink_as_an_input_of_known_size_runs_out_with_the_same_bytes(tmp_path, monkeypatch):
    # the last big chunk would keep one worker busy while the other waits: near the end
    # of an input whose size is known, chunks get smaller; the output must not change
    source = write_jsonl(tmp_path / "in.jsonl", agent_lines(n_traces=24, per_line=3))
    units = list(iter_units([Source(str(source))], ReadState([], Spool())))
    sizes = [len(u.raw) + 1 for u in units]
    total = sum(sizes)
    read = [sum(sizes[: i + 1]) for i in range(len(units))]
    fixed, fixed_chunks = _rescored(units, tmp_path / "a.jsonl", lambda i: None, monkeypatch)
    units = list(iter_units([Source(str(source))], ReadState([], Spool())))
    left = [1 - r / total for r in read]
    tapered, tapered_chunks = _rescored(units, tmp_path / "b.jsonl", left.__getitem__, monkeypatch)
    assert total > 4 * 20_000
    assert tapered == fixed
    assert tapered_chunks > fixed_chunks + 2


def test_a_chunk_verdict_waits_for_the_window_however_small_the_chunks(tmp_path):
    # One trace a line and chunks of about one line: the engine's window closes each
    # trace several chunks after the worker scored it. The worker's verdict must still be
    # used then (each trace scored once), with the same bytes as without chunks.
    from bench.deepeval_tree import tree_to_spans
    from otel_semloop.otlp import records_to_traces_json
    from tests.batch.rescore_data import healthy_tree, looping_tree

    lines = []
    for i in range(10):
        tree = looping_tree() if i % 2 == 0 else healthy_tree()
        records = tree_to_spans(tree, f"w{i}", start_ns=1_767_225_600_000_000_000 + i * 10**9)
        lines.append(records_to_traces_json(sorted(records, key=lambda r: r.end_ns)))
    source = write_jsonl(tmp_path / "in.jsonl", lines)

    def rescored(chunk_bytes: int, out_path):
        output = Output(str(out_path), "json")
        output.open()
        engine = Engine(EngineOptions(workers=1, chunk_bytes=chunk_bytes, window=4), output.write_unit)
        try:
            for unit in iter_units([Source(str(source))], ReadState([], Spool())):
                engine.feed(unit)
            stats = engine.finish()
        finally:
            engine.close()
        output.commit()
        return out_path.read_bytes(), stats

    whole, whole_stats = rescored(1 << 30, tmp_path / "a.jsonl")
    small, small_stats = rescored(
        min(len(line) for line in source.read_bytes().splitlines()), tmp_path / "b.jsonl"
    )
    assert small_stats.chunks >= 10 and whole_stats.chunks == 1
    assert small_stats.traces == whole_stats.traces == 10
    assert small_stats.scored_in_chunk == whole_stats.scored_in_chunk == 10
    assert small == whole


def test_workers_forked_or_started_by_a_fork_server_write_the_same_bytes(tmp_path, monkeypatch):
    # workers are forked from the reading process when it runs no other thread (they
    # start at once with the scoring stack imported), else started by a fork server,
    # since forking a process that runs threads can deadlock; the output must not change
    import threading

    from otel_semloop.batch import worker

    source = write_jsonl(tmp_path / "in.jsonl", agent_lines(n_traces=8, per_line=2))
    command = ["rescore", str(source), "-q", "--workers", "2", "--chunk-mb", str(20_000 / (1 << 20))]
    forked, served = tmp_path / "forked.jsonl", tmp_path / "served.jsonl"

    def method() -> str:
        pool = worker.start_pool(2, worker.ScorerSpec())
        pool.shutdown()
        return pool._mp_context.get_start_method()

    if threading.active_count() == 1:  # as in the command line's process
        assert method() == "fork"
    assert main([*command, "-o", str(forked)]) == 0
    monkeypatch.setattr(worker.threading, "active_count", lambda: 2)
    assert method() == "forkserver"
    assert main([*command, "-o", str(served)]) == 0
    assert served.read_bytes() == forked.read_bytes()
    assert sorted(labels(forked).values()) == ["loop"] * 4 + ["no_loop"] * 4
