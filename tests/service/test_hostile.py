"""Hostile senders against ``otel-semloop serve`` over loopback: connection slots held by
idle gRPC connections, gRPC calls whose message never comes, HTTP bodies that trickle in.
Each is bounded by time, not only by count: a legitimate client gets through once the
bound passes, with every slot taken by the attack."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest

from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import EXPORT, ServeProcess, grpc_export, running, wait_for
from tests.service.traffic import agent_spans, request_of, trace_id_of

SLOTS = 8
#: An HTTP/2 client preface and an empty SETTINGS frame: a connection that then sends nothing.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ServeProcess, GrpcOtlpReceiver]]:
    with GrpcOtlpReceiver() as downstream:
        process = ServeProcess(
            "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-endpoint", downstream.endpoint,
            "--grace-seconds", "0.1", "--max-connections", str(SLOTS),
            env={"SEMLOOP_HEADER_TIMEOUT": "1.0", "SEMLOOP_BODY_TIMEOUT": "1.0",
                 "SEMLOOP_KEEPALIVE_TIMEOUT": "1.0"},
        )  # fmt: skip
        try:
            process.wait_listening()
            yield process, downstream
        finally:
            process.stop()


def _until_accepted(send: object, within: float) -> float:
    """Seconds until ``send()`` succeeds, retrying as an exporter does; fails past ``within``."""
    started = time.monotonic()
    while True:
        try:
            send()  # type: ignore[operator]
            return time.monotonic() - started
        except (grpc.RpcError, httpx.HTTPError) as error:
            if time.monotonic() - started > within:
                raise AssertionError(f"no legitimate request got through in {within} s: {error}") from None
            time.sleep(0.1)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


def test_idle_grpc_connections_holding_every_slot_are_closed_and_a_client_gets_in(
    served: tuple[ServeProcess, GrpcOtlpReceiver],
) -> None:
    process, downstream = served
    grpc_port = (process.ports or (0, 0))[0]
    held = []
    for _ in range(SLOTS):
        sock = socket.create_connection(("127.0.0.1", grpc_port))
        sock.sendall(PREFACE)
        held.append(sock)
    time.sleep(0.2)
    spans = agent_spans(trace_id_of(41, 0), 2, loop=False)
    took = _until_accepted(lambda: grpc_export(grpc_port, request_of(spans), timeout=1), within=8)
    assert took < 8
    assert all(_closed_within(sock, 5) for sock in held), "an idle connection outlived keepalive_timeout"
    wait_for(lambda: any(s.trace_id == trace_id_of(41, 0).hex() for s in downstream.spans), 10, "the trace")
    for sock in held:
        sock.close()


def test_a_grpc_call_whose_message_never_comes_ends_at_the_body_timeout(
    served: tuple[ServeProcess, GrpcOtlpReceiver],
) -> None:
    process, _ = served
    grpc_port = (process.ports or (0, 0))[0]
    release = threading.Event()

    def never() -> Iterator[bytes]:
        release.wait(30)
        yield b""

    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        call = channel.stream_unary(EXPORT, request_serializer=None, response_deserializer=None)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as raised:
            call(never(), timeout=20)
        took = time.monotonic() - started
        release.set()
    assert raised.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert "no request message within body_timeout=1 s" in (raised.value.details() or "")
    assert took < 5


def test_http_bodies_trickling_in_on_every_slot_are_cut_and_a_client_gets_in(
    served: tuple[ServeProcess, GrpcOtlpReceiver],
) -> None:
    process, _ = served
    http_port = (process.ports or (0, 0))[1]
    trickling = []
    for _ in range(SLOTS):
        sock = socket.create_connection(("127.0.0.1", http_port))
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 1000000\r\n\r\n"
        )
        trickling.append(sock)
    stop = threading.Event()

    def trickle() -> None:  # a byte per connection every 0.3 s: under the 1 s chunk timeout
        while not stop.wait(0.3):
            for sock in trickling:
                with contextlib.suppress(OSError):
                    sock.sendall(b"x")

    sender = threading.Thread(target=trickle)
    sender.start()
    try:
        body = request_of(agent_spans(trace_id_of(42, 0), 2, loop=False)).SerializeToString()

        def post() -> None:
            response = httpx.post(
                f"http://127.0.0.1:{http_port}/v1/traces",
                content=body,
                headers={"Content-Type": "application/x-protobuf"},
                timeout=1,
            )
            response.raise_for_status()

        assert _until_accepted(post, within=8) < 8
        answers = []
        for sock in trickling:
            sock.settimeout(5)
            try:
                answers.append(sock.recv(4096).split(b"\r\n", 1)[0])
            except OSError:
                answers.append(b"")
    finally:
        stop.set()
        sender.join()
        for sock in trickling:
            sock.close()
    assert answers == [b"HTTP/1.1 408 Request Timeout"] * SLOTS


def test_a_grpc_call_without_the_token_is_refused_before_its_message() -> None:
    release = threading.Event()

    def never() -> Iterator[bytes]:
        release.wait(30)
        yield b""

    with (
        GrpcOtlpReceiver() as downstream,
        running(downstream, auth_token="s3cret-token", body_timeout=20.0) as service,
        grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel,
    ):
        call = channel.stream_unary(EXPORT, request_serializer=None, response_deserializer=None)
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as raised:
            call(never(), timeout=15)
        took = time.monotonic() - started
        release.set()
    assert raised.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert took < 5  # not the 20 s body timeout: the token is checked on the call's headers


def test_the_health_endpoint_answers_probes_without_the_token_as_documented() -> None:
    with (
        GrpcOtlpReceiver() as downstream,
        running(downstream, auth_token="s3cret-token", health="127.0.0.1:0") as service,
    ):
        url = f"http://127.0.0.1:{service.service.health_port}"
        assert httpx.get(f"{url}/health/ready").status_code == 200
        refused = httpx.post(f"http://127.0.0.1:{service.http_port}/v1/traces", content=b"")
        assert refused.status_code == 401  # the receivers still want it
