"""Hostile and unlucky requests against ``otel-semloop serve`` as a process (its memory is
measured on its own): oversized bodies and gzip bombs are refused (413 /
RESOURCE_EXHAUSTED) without being inflated, malformed bodies get a precise 400 /
INVALID_ARGUMENT without a traceback in the log, slow clients are disconnected, surplus
connections are closed (on both receivers), and a normal request still goes through
afterwards."""

from __future__ import annotations

import socket
import time
import zlib
from collections.abc import Iterator

import grpc
import httpx
import pytest

from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import ServeProcess, grpc_export, wait_for
from tests.service.traffic import agent_spans, request_of, trace_id_of

psutil = pytest.importorskip("psutil")

MAX_REQUEST = 2 << 20
MAX_INFLATED = 4 << 20
MIB = 1 << 20


def _gzip_bomb(inflated: int) -> bytes:
    """gzip of ``inflated`` zero bytes (about 1000:1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(MIB)
    parts = [packer.compress(chunk) for _ in range(inflated // MIB)]
    parts.append(packer.flush())
    return b"".join(parts)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ServeProcess, GrpcOtlpReceiver]]:
    with GrpcOtlpReceiver() as downstream:
        process = ServeProcess(
            "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--health", "off",
            "--export-endpoint", downstream.endpoint, "--grace-seconds", "0.1",
            "--max-request-bytes", str(MAX_REQUEST), "--max-decompressed-bytes", str(MAX_INFLATED),
            "--max-connections", "8",
            env={"SEMLOOP_HEADER_TIMEOUT": "1.0", "SEMLOOP_BODY_TIMEOUT": "1.0"},
        )  # fmt: skip
        try:
            process.wait_listening()
            yield process, downstream
        finally:
            process.stop()


def _rss(process: ServeProcess) -> int:
    return int(psutil.Process(process.process.pid).memory_info().rss)


def test_oversized_bodies_and_gzip_bombs_are_refused_without_inflating(
    served: tuple[ServeProcess, GrpcOtlpReceiver],
) -> None:
    process, _ = served
    grpc_port, http_port = process.ports or (0, 0)
    url = f"http://127.0.0.1:{http_port}/v1/traces"
    protobuf = {"Content-Type": "application/x-protobuf"}
    before = _rss(process)

    big = httpx.post(url, content=bytes(MAX_REQUEST + 1), headers=protobuf)
    assert big.status_code == 413 and "max_request_bytes" in big.text
    # A declared length past the limit is refused on the headers, before any body is read.
    with socket.create_connection(("127.0.0.1", http_port)) as declared:
        declared.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Length: {MAX_REQUEST + 1}\r\n\r\n".encode()
        )
        declared.settimeout(5)
        answer = b""
        while b"max_request_bytes" not in answer and (chunk := declared.recv(4096)):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ") and f"body of {MAX_REQUEST + 1} bytes".encode() in answer
    # Without a Content-Length (chunked), the limit is enforced while reading.
    chunked = httpx.post(url, content=iter([bytes(MIB)] * 3), headers=protobuf)
    assert chunked.status_code == 413

    bomb = _gzip_bomb(128 * MIB)  # 128 MiB inflated, about 130 KiB on the wire
    assert len(bomb) < MAX_REQUEST
    response = httpx.post(url, content=bomb, headers={**protobuf, "Content-Encoding": "gzip"})
    assert response.status_code == 413 and "max_decompressed_bytes" in response.text
    json_bomb = httpx.post(
        url, content=bomb, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    assert json_bomb.status_code == 413 and json_bomb.json()["code"] == 8  # RESOURCE_EXHAUSTED

    with pytest.raises(grpc.RpcError) as grpc_big:
        grpc_export(grpc_port, bytes(MAX_INFLATED + 1))
    assert grpc_big.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(grpc.RpcError) as grpc_bomb:  # gzip-compressed gRPC message
        grpc_export(grpc_port, bytes(12 * MIB), compression=grpc.Compression.Gzip, timeout=60)
    assert grpc_bomb.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED

    growth = _rss(process) - before
    assert growth < 48 * MIB, f"RSS grew {growth / MIB:.0f} MiB refusing bombs of 128 and 12 MiB"


def test_malformed_requests_get_precise_errors_and_no_traceback(
    served: tuple[ServeProcess, GrpcOtlpReceiver],
) -> None:
    process, _ = served
    grpc_port, http_port = process.ports or (0, 0)
    for _ in range(20):
        with pytest.raises(grpc.RpcError) as bad:
            grpc_export(grpc_port, b"\xff\xff\xff not protobuf")
        assert bad.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "not a protobuf ExportTraceServiceRequest" in (bad.value.details() or "")
    url = f"http://127.0.0.1:{http_port}/v1/traces"
    text = httpx.post(url, content=b"\xff\xff", headers={"Content-Type": "application/x-protobuf"})
    assert text.status_code == 400 and text.headers["content-type"].startswith("text/plain")
    as_json = httpx.post(url, content=b"{oops", headers={"Content-Type": "application/json"})
    assert (
        as_json.status_code == 400 and as_json.json()["code"] == 3 and "not JSON" in as_json.json()["message"]
    )
    time.sleep(0.2)
    assert "Traceback" not in process.log
    assert process.log.count("\n") < 10  # no log line per bad request


def test_slow_and_surplus_connections_are_closed_and_service_continues(
    served: tuple[ServeProcess, GrpcOtlpReceiver],
) -> None:
    process, downstream = served
    grpc_port, http_port = process.ports or (0, 0)
    slow = []
    for _ in range(8):  # fill max_connections with clients that never finish their headers
        sock = socket.create_connection(("127.0.0.1", http_port))
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        slow.append(sock)
    time.sleep(0.1)
    surplus = socket.create_connection(("127.0.0.1", http_port))
    surplus.settimeout(2)
    assert _closed(surplus), "a connection past max_connections must be closed at once"
    started = time.monotonic()
    for sock in slow:  # the header deadline (1 s) closes them
        sock.settimeout(5)
        assert _closed(sock)
    assert time.monotonic() - started < 4
    # gRPC: the same cap, and the handshake deadline for clients that never speak HTTP/2.
    silent = [socket.create_connection(("127.0.0.1", grpc_port)) for _ in range(8)]
    time.sleep(0.1)
    extra = socket.create_connection(("127.0.0.1", grpc_port))
    extra.settimeout(0.6)  # well before the 1 s handshake deadline
    assert _ends(extra), "a gRPC connection past max_connections must be closed at once"
    started = time.monotonic()
    for sock in silent:
        sock.settimeout(8)
        assert _ends(sock)
    assert time.monotonic() - started < 8
    # A body that stalls gets 408.
    stalled = socket.create_connection(("127.0.0.1", http_port))
    stalled.sendall(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: 100\r\n\r\n0123"
    )
    stalled.settimeout(5)
    assert b" 408 " in stalled.recv(4096).split(b"\r\n", 1)[0] + b" "
    # The service still works, on both receivers.
    spans = agent_spans(trace_id_of(21, 0), 2, loop=False)
    grpc_export(grpc_port, request_of(spans))
    body = request_of(agent_spans(trace_id_of(21, 1), 2, loop=False)).SerializeToString()
    ok = httpx.post(
        f"http://127.0.0.1:{http_port}/v1/traces",
        content=body,
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert ok.status_code == 200
    wanted = {trace_id_of(21, 0).hex(), trace_id_of(21, 1).hex()}
    wait_for(lambda: sum(s.trace_id in wanted for s in downstream.spans) >= 10, 10, "both traces")
    for sock in (*slow, surplus, *silent, extra, stalled):
        sock.close()


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _ends(sock: socket.socket) -> bool:
    """The peer closes (after whatever it sent first: gRPC sends its HTTP/2 settings)."""
    try:
        while sock.recv(1024):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True
