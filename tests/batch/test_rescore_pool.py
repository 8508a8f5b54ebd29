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


@pytest.mark.parametrize("layout", ["in_order", "interleaved"])
def test_each_chunk_reaches_its_worker_with_the_traces_of_the_chunks_before(tmp_path, monkeypatch, layout):
    # interleaved, one line a chunk: traces with spans in chunks N-2 and N but not N-1
    import json
    import threading

    from otel_semloop.batch import chunks, tasks
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
    real = chunks.parse_chunk

    def recording(units, window, spec=None, carried=frozenset()):
        with open(record, "a") as fp:  # in the worker (forked after the patch)
            fp.write(json.dumps([[u[2] for u in units if u], sorted(carried)]) + "\n")
        return real(units, window, spec, carried)

    monkeypatch.setattr(tasks, "parse_chunk", recording)  # chunks through the pipe
    monkeypatch.setattr(chunks, "parse_chunk", recording)  # and through the ring
    out = tmp_path / "out.jsonl"
    command = ["rescore", str(source), "-q", "--workers", "2", "--chunk-mb", str(chunk / (1 << 20))]
    assert main([*command, "-o", str(out)]) == 0
    recorded = [json.loads(line) for line in record.read_text().splitlines()]
    chunks = sorted(recorded, key=lambda c: int(c[0][0].split(":")[-1]))
    assert len(chunks) >= 5

    def trace_ids(line: bytes) -> set[str]:
        doc = json.loads(line)
        return {
            span["traceId"] for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]
        }

    raws = source.read_bytes().splitlines()
    seen: list[set[str]] = []
    found = 0
    for wheres, carried in chunks:
        ids = set().union(*(trace_ids(raws[int(w.split(":")[-1]) - 1]) for w in wheres))
        expected = ids & set().union(*seen[-2:])
        assert carried == sorted(expected)
        found += bool(expected)
        seen.append(ids)
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
