"""The worker pool's process-level set-up: what the reading process does before its workers
fork and undoes when they are gone."""

from __future__ import annotations

import gc

import pytest

from otel_semloop.batch.tasks import Pool
from otel_semloop.batch.worker import ScorerSpec


def test_the_pool_freezes_and_pauses_the_collector_while_it_runs_and_not_in_its_workers():
    before = gc.get_freeze_count()
    assert gc.isenabled()
    pool = Pool(2, ScorerSpec(), 1 << 16)
    try:
        frozen = gc.get_freeze_count()
        assert frozen > before  # the imported stack is out of the collector's reach
        assert not gc.isenabled()  # paused here while the pool runs
        if pool._chunks is not None:  # forked: a worker inherits the frozen objects
            assert pool.executor.submit(gc.get_freeze_count).result() > frozen // 2
            assert pool.executor.submit(gc.isenabled).result()  # and collects
    finally:
        pool.close()
    assert gc.get_freeze_count() == before and gc.isenabled()
    pool.close()  # closing twice unfreezes nothing else
    assert gc.get_freeze_count() == before and gc.isenabled()
    gc.disable()
    try:  # a caller that paused the collector itself keeps it paused
        Pool(2, ScorerSpec(), 1 << 16).close()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_board_gives_each_chunk_its_posted_ids_and_nothing_else():
    from otel_semloop.batch import hints

    board = hints.Board(4)
    try:
        assert board.read(1) is None  # not posted yet
        board.post(1, {b"a" * 32, b"b" * 32})
        assert board.read(1) == {b"a" * 32, b"b" * 32}
        assert board.wait(2, timeout=0.01) == set()  # never posted: no hint
        board.post(5, {b"c" * 32})  # the same slot, four chunks later
        assert board.read(1) is None and board.read(5) == {b"c" * 32}
        board.post(6, set())
        assert board.read(6) == set()
        too_many = {b"%032x" % i for i in range(hints._SLOT // 32)}
        board.post(7, too_many)  # more than a slot holds: posted as no hint
        assert board.read(7) == set()
        # a slot whose ids do not match their checksum (being written) is not taken
        at = (5 % 4) * hints._SLOT + hints._HEAD.size
        board.map[at : at + 1] = b"z"
        assert board.read(5) is None
    finally:
        board.close()
    assert board.key not in hints._BOARDS


@pytest.mark.parametrize("layout", ["in_order", "interleaved"])
def test_forked_workers_find_the_hint_the_reading_process_would(tmp_path, monkeypatch, layout):
    # interleaved, one line a chunk: traces with spans in chunks N-2 and N but not N-1
    import json
    import threading

    from otel_semloop.batch import hints, tasks
    from otel_semloop.cli import main
    from tests.batch.rescore_data import agent_lines, write_jsonl

    if threading.active_count() != 1:  # workers are forked only from a single-threaded process
        return
    lines = agent_lines(n_traces=12, per_line=3)
    chunk = 5_000
    if layout == "interleaved":
        half = len(lines) // 2
        lines = [line for pair in zip(lines[:half], lines[half:], strict=False) for line in pair]
        chunk = 1
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    record = tmp_path / "hints.jsonl"
    real = tasks.parse_chunk

    def recording(units, window, spec=None, carried=frozenset()):
        with open(record, "a") as fp:  # in the worker (forked after the patch)
            fp.write(json.dumps([[u[2] for u in units if u], sorted(carried)]) + "\n")
        return real(units, window, spec, carried)

    monkeypatch.setattr(tasks, "parse_chunk", recording)
    out = tmp_path / "out.jsonl"
    command = ["rescore", str(source), "-q", "--workers", "2", "--chunk-mb", str(chunk / (1 << 20))]
    assert main([*command, "-o", str(out)]) == 0
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    chunks = sorted(recorded, key=lambda c: int(c[0][0].split(":")[-1]))
    assert len(chunks) >= 5
    raws = source.read_bytes().splitlines()
    reader = hints.ReaderHints()
    found = 0
    for wheres, carried in chunks:
        expected = reader.next([("json", raws[int(w.split(":")[-1]) - 1], w) for w in wheres])
        assert carried == sorted(expected)
        found += bool(expected)
    assert found >= 3  # traces cut by the chunks' edges: the hint was not empty


def test_a_job_carries_its_spans_bytes_as_one_json_array_in_their_order():
    from array import array

    from otel_semloop.batch.held import Held, job_for
    from otel_semloop.batch.units import Unit

    def held(raw: bytes, spans: list[tuple[int, int]], sids: str) -> Held:
        h = Held(Unit("x", 1, "json", raw))
        h.bounds = array("q", [x for span in spans for x in span])
        h.spans = None  # the spans are found by their bounds in the line
        h.sids = sids
        return h

    a = held(
        b'{"s":[{"a":1},{"b":2},{"c":3}]}', [(6, 13), (14, 21), (22, 29)], "1" * 16 + "2" * 16 + "3" * 16
    )
    b = held(b'{"s":[{"d":4}]}', [(6, 13)], "4" * 16)
    job = job_for("t", [(a, [0, 2]), (b, [0])], ("root",))
    assert job.payload == b'[{"a":1},{"c":3},{"d":4}]' and job.span_ids == "1" * 16 + "3" * 16 + "4" * 16
    assert job_for("t", [(b, [0])], ()).payload == b'[{"d":4}]'  # one span: both brackets on it
