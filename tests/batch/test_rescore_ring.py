"""Chunks and job payloads handed to forked workers through shared rings: no chunk in
flight is ever overwritten, a worker reads exactly the bytes put in, and the output is the
same as through the pipe."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.batch import ring as ring_module
from otel_semloop.batch.ring import Ring, shared
from otel_semloop.batch.tasks import JOB_RING_BYTES
from otel_semloop.cli import main
from tests.batch.rescore_data import agent_lines, labels, write_jsonl

_SIZE = 1 << 14


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.integers(0, 6000), min_size=1, max_size=3)), max_size=40))
def test_the_ring_never_hands_out_the_space_of_a_chunk_in_flight(ops):
    # None: the oldest chunk's result is back; a list: a chunk of lines of those sizes
    ring = Ring(_SIZE)
    live: list[tuple[list[int], list[bytes]]] = []
    fill = 0
    try:
        for op in ops:
            if op is None:
                if live:
                    ring.release(live.pop(0)[0][0])
                continue
            raws = []
            for n in op:
                fill += 1
                raws.append(bytes([fill % 251]) * n)
            offsets = ring.put(raws)
            total = sum(map(len, raws))
            if offsets is None:
                # refused only when it cannot fit beside the chunks in flight
                assert total == 0 or total > _SIZE or live
                continue
            assert offsets[0] >= 0 and offsets[-1] <= _SIZE and offsets[-1] - offsets[0] == total
            live.append((offsets, raws))
            for places, lines in live:  # nothing in flight was overwritten
                for k, raw in enumerate(lines):
                    assert ring.map[places[k] : places[k + 1]] == raw
    finally:
        ring.close()


def test_an_empty_ring_takes_any_chunk_that_fits_and_refuses_a_larger_one():
    ring = Ring(_SIZE)
    try:
        assert ring.put([b"x" * _SIZE]) == [0, _SIZE]
        assert ring.put([b"y"]) is None  # full
        ring.release(0)
        assert ring.put([b"y" * 10, b"z"]) == [0, 10, 11]
        ring.release(0)
        assert ring.put([b"x" * (_SIZE + 1)]) is None
        assert ring.put([]) is None
    finally:
        ring.close()


def test_a_chunk_placed_after_a_wrap_fits_before_the_oldest_chunk_in_flight_or_waits():
    ring = Ring(_SIZE)
    try:
        ring.put([b"a" * 10_000])
        second = ring.put([b"b" * 5_000])
        ring.release(0)  # the oldest, at 0, is back: the second is at 10,000
        assert ring.put([b"c" * 8_000]) == [0, 8_000]  # no room after the second: wraps
        assert ring.put([b"d" * 3_000]) is None  # 8,000 to 11,000 would overwrite the second
        assert ring.put([b"d" * 2_000]) == [8_000, 10_000]
        assert second is not None and ring.map[second[0] : second[1]] == b"b" * 5_000
    finally:
        ring.close()


def test_a_worker_reads_the_lines_put_in_and_the_ring_keeps_them_after():
    ring = Ring(_SIZE)
    try:
        ring.put([b"a" * 5000])
        offsets = ring.put([b"first", b"", b"x" * 6000])
        assert offsets is not None
        metas = [("json", "f:1"), None, ("proto", "f message 2"), ("json", "f:3")]
        got = shared(ring.key, offsets, metas)
        assert got == [
            ("json", b"first", "f:1"),
            None,
            ("proto", b"", "f message 2"),
            ("json", b"x" * 6000, "f:3"),
        ]
        assert type(got[0][1]) is bytes
        # the worker dropped its view of the pages; a shared mapping keeps their contents
        assert ring.map[offsets[0] : offsets[-1]] == b"first" + b"x" * 6000
        assert ring.map[:5000] == b"a" * 5000
    finally:
        ring.close()


def test_chunks_and_jobs_through_the_rings_write_the_bytes_they_write_through_the_pipe(tmp_path, monkeypatch):
    import threading

    if threading.active_count() != 1:  # workers are forked only from a single-threaded process
        return
    source = write_jsonl(tmp_path / "in.jsonl", agent_lines(n_traces=12, per_line=3))
    command = ["rescore", str(source), "-q", "--workers", "2", "--chunk-mb", str(5_000 / (1 << 20))]
    placed: list[tuple[int, bool]] = []
    put = Ring.put

    def counting(self, raws):
        offsets = put(self, raws)
        placed.append((self.size, offsets is not None))
        return offsets

    monkeypatch.setattr(Ring, "put", counting)
    ringed, piped = tmp_path / "ringed.jsonl", tmp_path / "piped.jsonl"
    assert main([*command, "-o", str(ringed)]) == 0
    # chunks (the larger ring) and the jobs of the traces they cut (the job ring)
    chunks = [ok for size, ok in placed if size != JOB_RING_BYTES]
    assert len(chunks) >= 5 and all(chunks)  # the chunk ring has room for every chunk in flight
    assert sum(ok for size, ok in placed if size == JOB_RING_BYTES) >= 2
    monkeypatch.setattr(Ring, "put", lambda self, raws: None)  # every chunk through the pipe
    assert main([*command, "-o", str(piped)]) == 0
    assert ringed.read_bytes() == piped.read_bytes()
    assert sorted(labels(ringed).values()) == ["loop"] * 6 + ["no_loop"] * 6
    assert not ring_module._MAPS  # closed with the engine


def test_without_room_for_a_ring_chunks_go_through_the_pipe(tmp_path, monkeypatch):
    import threading

    from otel_semloop.batch import worker

    if threading.active_count() != 1:
        return
    made = []

    def failing(size):
        if made:
            raise OSError("no memory")
        made.append(size)
        return real(size)

    real = worker.Ring
    monkeypatch.setattr(worker, "Ring", failing)
    pool, rings = worker.start_workers(2, worker.ScorerSpec(), (1 << 20, 1 << 20))
    pool.shutdown()
    assert rings == [] and len(made) == 1
    assert not ring_module._MAPS  # the first ring, made before the second failed, was closed
    source = write_jsonl(tmp_path / "in.jsonl", agent_lines(n_traces=4, per_line=3))
    out = tmp_path / "out.jsonl"
    assert (
        main(
            [
                "rescore",
                str(source),
                "-q",
                "--workers",
                "2",
                "--chunk-mb",
                str(5_000 / (1 << 20)),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert sorted(labels(out).values()) == ["loop"] * 2 + ["no_loop"] * 2


def test_space_given_back_out_of_order_is_refused_and_nothing_is_freed():
    ring = Ring(_SIZE)
    try:
        first = ring.put([b"a" * 100])
        second = ring.put([b"b" * (_SIZE - 100)])  # the ring is full
        assert first is not None and second is not None
        with pytest.raises(RuntimeError, match="out of order"):
            ring.release(second[0])
        # the first chunk is still in flight: its space is not handed out again
        assert ring.put([b"c" * 100]) is None
        ring.release(first[0])
        ring.release(second[0])
        with pytest.raises(RuntimeError, match="out of order"):
            ring.release(0)  # nothing in flight
    finally:
        ring.close()


def test_a_ring_sized_to_the_chunk_and_its_slack_takes_every_chunk_in_flight(tmp_path, monkeypatch):
    # the ring has room for the workers + 1 chunks in flight only: a chunk that does not
    # fit waits for the oldest chunk's result (which gives its room back), not the pipe
    import threading

    from otel_semloop.batch import tasks

    if threading.active_count() != 1:
        return
    monkeypatch.setattr(tasks, "RING_SLACK", 2_000)  # a chunk ends within a line (< 1,900 bytes) past 5,000
    source = write_jsonl(tmp_path / "in.jsonl", agent_lines(n_traces=12, per_line=3))
    ringed: list[bool] = []
    sizes: list[int] = []
    parse = tasks.Pool.parse

    def recording(self, *args, **kwargs):
        task = parse(self, *args, **kwargs)
        ringed.append(task.ring is not None)  # placed in the ring, not sent through the pipe
        sizes.append(self._chunks.size)
        return task

    monkeypatch.setattr(tasks.Pool, "parse", recording)
    out = tmp_path / "out.jsonl"
    command = ["rescore", str(source), "-q", "--workers", "2", "--chunk-mb", str(5_000 / (1 << 20))]
    assert main([*command, "-o", str(out)]) == 0
    assert len(ringed) >= 8 and all(ringed)
    assert set(sizes) == {3 * 7_000}
    assert sorted(labels(out).values()) == ["loop"] * 6 + ["no_loop"] * 6
