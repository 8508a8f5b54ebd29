"""The durable queue: spans acknowledged to a sender survive ``kill -9`` and are delivered
after the restart, scored, exactly once; with the downstream up during the kill, nothing
acknowledged is lost and only the batch in flight may arrive twice (same ids)."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from collections import Counter
from pathlib import Path

import grpc
import pytest

from otel_semloop.service.durable import DurableQueue
from otel_semloop.service.held import Held, prepare
from otel_semloop.telemetry import LOG_LIMITER
from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import ServeProcess, grpc_export, wait_for
from tests.service.traffic import mixed_traces, request_of


def _dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _serve(queue: Path, endpoint: str) -> ServeProcess:
    process = ServeProcess(
        "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--health", "off",
        "--export-endpoint", endpoint, "--durable-queue", str(queue), "--grace-seconds", "0.2",
        env={"SEMLOOP_RETRY_INITIAL_BACKOFF": "0.05", "SEMLOOP_RETRY_MAX_BACKOFF": "0.2",
             "SEMLOOP_EXPORT_BATCH_SPANS": "64"},
    )  # fmt: skip
    process.wait_listening()
    return process


class _Intake:
    """What a replay feeds: the pipeline's own ``prepare`` (which applies ``skip``),
    keeping the spans it would hold."""

    def __init__(self) -> None:
        self.held: list[Held] = []

    def receive(
        self, request: object, size: int = 0, ticket: int = 0, skip: object = None, signal: str = "traces"
    ) -> object:
        prepared = prepare(request, size, ticket, skip)
        self.held.extend(held for _, _, held in prepared.spans)
        return prepared.result


def _keys(held: list[Held]) -> list[bytes]:
    return [h.key for h in held]


def test_a_replay_sends_only_the_spans_of_a_request_not_yet_delivered(tmp_path: Path) -> None:
    path = tmp_path / "queue.db"
    _, _, spans = next(mixed_traces(seed=33, count=1))
    body = request_of(spans).SerializeToString()

    async def first_run() -> list[Held]:
        queue = DurableQueue(path, 1 << 20)
        queue.replay(_Intake())
        ticket = await queue.append(body)
        intake = _Intake()
        intake.receive(request_of(spans), len(body), ticket)
        queue.track(ticket, len(intake.held))
        delivered = intake.held[:3]
        settled = queue.settle(delivered)
        assert settled is not None
        await settled
        await queue.close()
        return intake.held

    held = asyncio.run(first_run())
    assert len(held) == len(spans) > 3

    async def second_run() -> list[Held]:
        queue = DurableQueue(path, 1 << 20)
        intake = _Intake()
        queue.replay(intake)
        await queue.close()
        return intake.held

    assert _keys(asyncio.run(second_run())) == _keys(held[3:])


def test_spans_acknowledged_before_kill_9_are_delivered_once_after_restart(tmp_path: Path) -> None:
    queue = tmp_path / "queue.db"
    traces = list(mixed_traces(seed=31, count=30))
    expected = {(t.hex(), s.span_id.hex()) for t, _, spans in traces for s in spans}
    first = _serve(queue, _dead_endpoint())  # the downstream is down: nothing can leave
    try:
        grpc_port = (first.ports or (0, 0))[0]
        for i in range(0, len(traces), 3):  # three traces per request, each acknowledged
            grpc_export(grpc_port, request_of(s for _, _, spans in traces[i : i + 3] for s in spans))
    finally:
        first.stop(signal.SIGKILL)
    with GrpcOtlpReceiver() as downstream:
        second = _serve(queue, downstream.endpoint)
        try:
            wait_for(lambda: len(downstream.spans) >= len(expected), 20, "every acknowledged span")
        finally:
            assert second.stop() == 0, second.log
        counts = Counter((s.trace_id, s.span_id) for s in downstream.spans)
        assert set(counts) == expected
        assert max(counts.values()) == 1, "a span was delivered twice"
        labels = Counter(s.attributes.get("semloop.label") for s in downstream.spans if s.is_root)
        assert labels == {"loop": 10, "no_loop": 10, None: 10}  # rescored after the restart
        assert "durable queue" in second.log and "replayed" in second.log


def test_a_kill_9_under_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    queue = tmp_path / "queue.db"
    traces = list(mixed_traces(seed=32, count=600))
    acked: set[tuple[str, str]] = set()
    with GrpcOtlpReceiver() as downstream:
        process = _serve(queue, downstream.endpoint)
        grpc_port = (process.ports or (0, 0))[0]
        stop = threading.Event()

        def send() -> None:
            for i in range(0, len(traces), 2):
                if stop.is_set():
                    return
                batch = traces[i : i + 2]
                while not stop.is_set():
                    try:
                        grpc_export(
                            grpc_port, request_of(s for _, _, spans in batch for s in spans), timeout=5
                        )
                        break
                    except grpc.RpcError as exc:
                        if exc.code() is not grpc.StatusCode.UNAVAILABLE:
                            return  # not acknowledged (the kill): the sender would retry elsewhere
                        time.sleep(0.05)  # backpressure: retry, as an SDK exporter does
                else:
                    return
                acked.update((t.hex(), s.span_id.hex()) for t, _, spans in batch for s in spans)

        sender = threading.Thread(target=send)
        sender.start()
        wait_for(lambda: len(downstream.spans) >= 300, 30, "traffic flowing")
        process.stop(signal.SIGKILL)
        stop.set()
        sender.join(10)
        assert len(acked) > 300
        restarted = _serve(queue, downstream.endpoint)
        try:
            wait_for(
                lambda: acked <= {(s.trace_id, s.span_id) for s in downstream.spans},
                30,
                "every acknowledged span downstream",
            )
        finally:
            assert restarted.stop() == 0, restarted.log
        counts = Counter((s.trace_id, s.span_id) for s in downstream.spans)
        # At least once for the batch in flight at the kill (same ids: de-duplicable);
        # exactly once for everything else.
        duplicated = sum(n - 1 for n in counts.values())
        assert duplicated <= 2 * 64, f"{duplicated} duplicates: more than the batches in flight"


def _killed_with_requests(queue: Path, seed: int) -> None:
    """A queue left by a service killed with acknowledged requests on it."""
    process = _serve(queue, _dead_endpoint())
    try:
        grpc_port = (process.ports or (0, 0))[0]
        for _, _, spans in mixed_traces(seed=seed, count=3):
            grpc_export(grpc_port, request_of(spans))
    finally:
        process.stop(signal.SIGKILL)


def _truncate(queue: Path, other: Path) -> str:
    queue.write_bytes(b"")
    return "is empty (0 bytes)"


def _delete_the_log(queue: Path, other: Path) -> str:
    Path(f"{queue}-wal").unlink()
    return "its write-ahead log queue.db-wal is missing"


def _write_garbage(queue: Path, other: Path) -> str:
    queue.write_bytes(b"not a database, " * 4096)
    for suffix in ("-wal", "-shm"):  # else SQLite reads the pages the log still holds
        Path(f"{queue}{suffix}").unlink(missing_ok=True)
    return "cannot be read (file is not a database)"


def _replace_by_another_queue(queue: Path, other: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{queue}{suffix}").unlink(missing_ok=True)
        if Path(f"{other}{suffix}").exists():
            Path(f"{queue}{suffix}").write_bytes(Path(f"{other}{suffix}").read_bytes())
    return "is another queue than"


def _delete_the_queue(queue: Path, other: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{queue}{suffix}").unlink(missing_ok=True)
    return "is missing but"


@pytest.mark.parametrize(
    "damage", [_truncate, _delete_the_log, _write_garbage, _replace_by_another_queue, _delete_the_queue]
)
def test_a_queue_that_lost_what_it_held_is_refused_in_one_line_with_exit_2(tmp_path: Path, damage) -> None:
    queue, other = tmp_path / "queue.db", tmp_path / "other" / "queue.db"
    _killed_with_requests(queue, seed=34)
    _killed_with_requests(other, seed=35)
    expected = damage(queue, other)
    process = ServeProcess(
        "--grpc", "127.0.0.1:0", "--http", "off", "--export-endpoint", _dead_endpoint(),
        "--durable-queue", str(queue),
    )  # fmt: skip
    code = process.process.wait(30)
    process.stop()
    assert code == 2, process.log
    assert len(process.lines) == 1 and expected in process.lines[0], process.log
    assert "move the queue's files away to start a new queue" in process.lines[0] or (
        "move it away to start a new queue" in process.lines[0]
    )


def test_a_full_disk_refuses_intake_says_so_once_and_recovers_with_the_delivery_marks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The disk fills (SQLite's max_page_count: writes fail as on a full disk), then has
    room again."""
    path = tmp_path / "queue.db"
    _, _, spans = next(mixed_traces(seed=36, count=1))
    small = request_of(spans).SerializeToString()
    big = b"\x0a" + b"\x00" * 200_000  # a request no page left can hold

    async def run() -> tuple[int, bool, list[Held]]:
        queue = DurableQueue(path, max_bytes=len(small) + 2 * len(big))
        queue.replay(_Intake())
        ticket = await queue.append(small)
        intake = _Intake()
        intake.receive(request_of(spans), len(small), ticket)
        queue.track(ticket, len(intake.held))
        pages = queue._db.execute("PRAGMA page_count").fetchone()[0]
        queue._db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
        refused = 0
        for _ in range(10):
            try:
                await queue.append(big)
            except Exception:
                refused += 1
        settled = queue.settle(intake.held[:2])  # delivered while the disk is full
        assert settled is not None
        await asyncio.wait_for(settled, 5)  # delivery does not wait for the disk
        full_after = queue.full(1)
        queue._db.execute("PRAGMA max_page_count = 1073741823")  # room again
        await asyncio.wait_for(queue.append(big), 10)
        await queue.close()
        return refused, full_after, intake.held

    LOG_LIMITER.reset()
    with caplog.at_level("ERROR", logger="otel_semloop.service"):
        refused, full_after, held = asyncio.run(run())
    assert refused == 10
    assert not full_after, "refused requests still counted against durable_queue_bytes"
    assert len([r for r in caplog.records if "write failed" in r.getMessage()]) == 1

    async def replay() -> list[Held]:
        queue = DurableQueue(path, 1 << 30)
        intake = _Intake()
        queue.replay(intake)
        await queue.close()
        return intake.held

    assert _keys([h for h in asyncio.run(replay()) if h.key]) == _keys(held[2:])
