"""Faults against the real ``otel-semloop serve`` on loopback, each scenario in a fresh
service process with a real OTLP/gRPC downstream in another process:

* ``large``: one 18 MB request of 600,000 one-span traces;
* ``burst-sigterm``: 8 senders burst traffic, then SIGTERM at once: the first signal
  must start the drain (no lost signal), everything acknowledged must be forwarded;
* ``slow-clients``: 3,000 connections that never finish their request headers, while a
  normal sender keeps sending: the service keeps forwarding, the slow ones are closed;
* ``slow-downstream``: a downstream slower (3 s a request) than ``export_timeout`` (1 s);
* ``idle-grpc``: every gRPC connection slot held by a preface and SETTINGS, then nothing;
* ``stalled-grpc``: every gRPC slot held by a call whose message never comes;
* ``slow-bodies``: every HTTP slot held by a body that trickles in (re-opened when cut),
  the normal sender on HTTP;
* ``durable-full``: the durable queue's disk fills (the process's file-size limit) and
  then has room again: refused while full, acknowledged = forwarded throughout.

Printed for each: spans acknowledged / forwarded / lost / duplicated, peak RSS, exit
status, notes. Lost must be 0. Duplicated is 0 except for a downstream slower than the
export timeout, where a request that timed out is sent again (at least once, same ids: the
next hop can de-duplicate; see ``otel_semloop/service/exporter.py``).

    python bench/service_faults.py                 # all scenarios
    python bench/service_faults.py large slow-downstream
"""

from __future__ import annotations

import argparse
import resource
import signal
import socket
import sys
import threading
import time
from typing import Any

from service_support import EXPORT, Downstream, Serve, run_senders

MIB = 1 << 20


def _grpc_call(port: int, body: bytes, timeout: float = 600) -> bool:
    import grpc

    with grpc.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)]
    ) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        try:
            call(body, timeout=timeout)
            return True
        except grpc.RpcError as exc:
            print(f"    refused: {exc.code().name}: {exc.details()}")
            return False


def _report(
    name: str, acked: int, got: dict[str, Any], serve: Serve, code: int, notes: str = ""
) -> dict[str, Any]:
    lost = max(0, acked - got["unique"])
    row = {
        "scenario": name,
        "acked": acked,
        "forwarded": got["unique"],
        "lost": lost,
        "duplicated": got["duplicated"],
        "peak_rss_mb": serve.peak_rss() / MIB,
        "exit": code,
        "notes": notes,
    }
    print(
        f"{name:<16} acked {acked:>8}  forwarded {got['unique']:>8}  lost {lost:>6}  "
        f"duplicated {got['duplicated']:>6}  peak RSS {row['peak_rss_mb']:>6.0f} MB  exit {code}  {notes}",
        flush=True,
    )
    return row


def large() -> dict[str, Any]:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2

    request = trace_service_pb2.ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    for i in range(600_000):
        ss.spans.append(
            trace_pb2.Span(trace_id=(i + 1).to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"))
        )
    body = request.SerializeToString()
    downstream = Downstream()
    serve = Serve(
        [
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "off",
            "--export-endpoint",
            downstream.endpoint,
            "--grace-seconds",
            "0.2",
        ]
    )
    acked = 600_000 if _grpc_call(serve.grpc_port, body) else 0
    deadline = time.monotonic() + 600
    while downstream.snapshot()["unique"] < acked and time.monotonic() < deadline:
        time.sleep(0.5)
    code = serve.stop()
    return _report(
        "large", acked, downstream.stop(), serve, code, f"one request of {len(body) / MIB:.1f} MiB"
    )


def burst_sigterm() -> dict[str, Any]:
    downstream = Downstream()
    serve = Serve(
        [
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "off",
            "--export-endpoint",
            downstream.endpoint,
            "--grace-seconds",
            "2",
        ]
    )
    sent = run_senders(serve.grpc_port, senders=8, duration=4.0, traces_per_request=16, rounds=2)
    started = time.monotonic()
    serve.process.send_signal(signal.SIGTERM)  # once, right after the burst
    try:
        code = serve.process.wait(60)
    except Exception:
        code = -1
    took = time.monotonic() - started
    serve.stop()
    lost_signal = "Exception ignored when trying to write to the signal wakeup fd" in serve.log
    notes = f"exited {took:.1f} s after one SIGTERM" + ("; SIGNAL LOST" if lost_signal else "")
    return _report("burst-sigterm", sent["acked"], downstream.stop(), serve, code, notes)


def slow_clients() -> dict[str, Any]:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))
    downstream = Downstream()
    serve = Serve(
        ["--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-endpoint", downstream.endpoint],
        env={"SEMLOOP_HEADER_TIMEOUT": "5"},
    )
    http_port = 0
    for line in serve.lines:
        if "http 127.0.0.1:0 (port " in line:
            http_port = int(line.split("http 127.0.0.1:0 (port ")[1].split(")")[0])
    sockets: list[socket.socket] = []
    stop = threading.Event()

    def attack() -> None:
        while not stop.is_set() and len(sockets) < 3000:
            try:
                sock = socket.create_connection(("127.0.0.1", http_port), timeout=2)
                sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
                sockets.append(sock)
            except OSError:
                time.sleep(0.01)

    deadline = time.monotonic() + 10
    while "options:" not in serve.log and time.monotonic() < deadline:
        time.sleep(0.05)  # the start-up lines are not the attack's
    attacker = threading.Thread(target=attack)
    attacker.start()
    log_before = len(serve.log)
    sent = run_senders(serve.grpc_port, senders=2, duration=10.0, traces_per_request=8, rounds=2)
    stop.set()
    attacker.join()
    open_left = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            if sock.recv(1) != b"":
                open_left += 1
        except BlockingIOError:
            open_left += 1
        except OSError:
            pass
        sock.close()
    log_bytes = len(serve.log) - log_before
    code = serve.stop()
    notes = f"{len(sockets)} slow connections, {open_left} still open after 10 s; {log_bytes} bytes logged"
    return _report("slow-clients", sent["acked"], downstream.stop(), serve, code, notes)


def slow_downstream() -> dict[str, Any]:
    downstream = Downstream(delay=3.0)
    serve = Serve(
        [
            "--grpc", "127.0.0.1:0", "--http", "off", "--export-endpoint", downstream.endpoint,
            "--grace-seconds", "0.2", "--export-timeout", "1", "--shutdown-timeout-seconds", "60",
        ],
        env={"SEMLOOP_RETRY_MAX_BACKOFF": "1", "SEMLOOP_EXPORT_QUEUE_SPANS": "2000"},
    )  # fmt: skip
    sent = run_senders(serve.grpc_port, senders=2, duration=8.0, traces_per_request=4, rounds=2)
    code = serve.stop()
    time.sleep(4)  # requests the downstream is still processing
    got = downstream.stop()
    notes = "export_timeout 1 s < downstream 3 s: timed-out requests are resent (at least once, same ids)"
    return _report("slow-downstream", sent["acked"], got, serve, code, notes)


#: An HTTP/2 client preface and an empty SETTINGS frame: a connection that then sends nothing.
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
#: Connection slots per receiver in the hostile-sender scenarios (every one taken by the attack).
_SLOTS = 64


def _still_open(sockets: list[socket.socket]) -> int:
    left = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            while sock.recv(65536):
                pass
        except BlockingIOError:
            left += 1
        except OSError:
            pass
        sock.close()
    return left


def idle_grpc() -> dict[str, Any]:
    """Every gRPC slot held by a connection that sent a preface and SETTINGS, then nothing
    (no call, no token), while a normal sender keeps sending."""
    downstream = Downstream()
    serve = Serve(
        ["--grpc", "127.0.0.1:0", "--http", "off", "--export-endpoint", downstream.endpoint],
        env={"SEMLOOP_MAX_CONNECTIONS": str(_SLOTS), "SEMLOOP_KEEPALIVE_TIMEOUT": "2"},
    )
    held = []
    for _ in range(_SLOTS):
        sock = socket.create_connection(("127.0.0.1", serve.grpc_port))
        sock.sendall(_PREFACE)
        held.append(sock)
    sent = run_senders(serve.grpc_port, senders=2, duration=10.0, traces_per_request=8, rounds=2)
    open_left = _still_open(held)
    code = serve.stop()
    notes = (
        f"{_SLOTS} idle connections on {_SLOTS} slots, {open_left} still open after 10 s; "
        f"{sent['refused']} refusals retried"
    )
    return _report("idle-grpc", sent["acked"], downstream.stop(), serve, code, notes)


def stalled_grpc_calls() -> dict[str, Any]:
    """Every gRPC slot held by a call whose message never comes."""
    import grpc

    downstream = Downstream()
    serve = Serve(
        ["--grpc", "127.0.0.1:0", "--http", "off", "--export-endpoint", downstream.endpoint],
        env={"SEMLOOP_MAX_CONNECTIONS": str(_SLOTS), "SEMLOOP_BODY_TIMEOUT": "2"},
    )
    release = threading.Event()
    ended: list[str] = []

    def never() -> Any:
        release.wait(60)
        yield b""

    def stall() -> None:
        options = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own
        with grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}", options=options) as channel:
            call = channel.stream_unary(EXPORT, request_serializer=None, response_deserializer=None)
            try:
                call(never(), timeout=60)
                ended.append("OK")
            except grpc.RpcError as exc:
                ended.append(exc.code().name)

    stallers = [threading.Thread(target=stall, daemon=True) for _ in range(_SLOTS)]
    for thread in stallers:
        thread.start()
    time.sleep(0.5)
    sent = run_senders(serve.grpc_port, senders=2, duration=10.0, traces_per_request=8, rounds=2)
    release.set()
    code = serve.stop()
    codes = {name: ended.count(name) for name in sorted(set(ended))}
    notes = f"{_SLOTS} calls without a message: ended {codes}; {sent['refused']} refusals retried"
    return _report("stalled-grpc", sent["acked"], downstream.stop(), serve, code, notes)


def _http_sender(port: int, duration: float, seed: int) -> dict[str, int]:
    """A normal OTLP/HTTP sender: retries a refusal or a dropped connection, as SDK exporters do."""
    import httpx

    from tests.service.traffic import agent_spans, request_of, trace_id_of

    acked = retried = 0
    stop_at = time.monotonic() + duration
    n = 0
    while time.monotonic() < stop_at:
        spans = [s for i in range(4) for s in agent_spans(trace_id_of(seed, n * 4 + i), 2, loop=False)]
        body = request_of(spans).SerializeToString()
        n += 1
        while time.monotonic() < stop_at:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/v1/traces",
                    content=body,
                    headers={"Content-Type": "application/x-protobuf"},
                    timeout=5,
                )
            except httpx.HTTPError:
                retried += 1
                time.sleep(0.1)
                continue
            if response.status_code == 200:
                acked += len(spans)
                break
            retried += 1
            time.sleep(0.1)
    return {"acked": acked, "retried": retried}


def slow_bodies() -> dict[str, Any]:
    """Every HTTP slot held by a body declared 1 MB that arrives a byte every 0.5 s (each
    chunk within the chunk timeout), while a normal HTTP sender keeps sending."""
    downstream = Downstream()
    serve = Serve(
        ["--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-endpoint", downstream.endpoint],
        env={"SEMLOOP_MAX_CONNECTIONS": str(_SLOTS), "SEMLOOP_BODY_TIMEOUT": "2"},
    )
    http_port = 0
    for line in serve.lines:
        if "http 127.0.0.1:0 (port " in line:
            http_port = int(line.split("http 127.0.0.1:0 (port ")[1].split(")")[0])
    stop = threading.Event()
    trickling: list[socket.socket] = []
    cut = 0

    def attack() -> None:
        nonlocal cut
        while not stop.is_set():
            while len(trickling) < _SLOTS:  # the attacker comes back as soon as it is cut
                try:
                    sock = socket.create_connection(("127.0.0.1", http_port), timeout=2)
                    sock.sendall(
                        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                        b"Content-Length: 1000000\r\n\r\n"
                    )
                    trickling.append(sock)
                except OSError:
                    break
            for sock in list(trickling):
                try:
                    sock.sendall(b"x")
                except OSError:
                    trickling.remove(sock)
                    sock.close()
                    cut += 1
            stop.wait(0.5)

    attacker = threading.Thread(target=attack)
    attacker.start()
    time.sleep(1)
    sent = _http_sender(http_port, 10.0, seed=71)
    stop.set()
    attacker.join()
    for sock in trickling:
        sock.close()
    code = serve.stop()
    notes = f"{_SLOTS} trickling bodies (re-opened when cut: {cut} cut); {sent['retried']} retries"
    return _report("slow-bodies", sent["acked"], downstream.stop(), serve, code, notes)


def durable_disk_full() -> dict[str, Any]:
    """The durable queue's disk fills (the file-size limit of the serve process, lowered
    to what its files hold, then raised: as a full disk and space coming back)."""
    import tempfile
    from pathlib import Path

    downstream = Downstream()
    folder = Path(tempfile.mkdtemp(prefix="semloop-full-"))
    queue = folder / "queue.db"
    serve = Serve(
        ["--grpc", "127.0.0.1:0", "--http", "off", "--export-endpoint", downstream.endpoint,
         "--durable-queue", str(queue)],
        env={"SEMLOOP_RETRY_INITIAL_BACKOFF": "0.05"},
    )  # fmt: skip
    sent = run_senders(serve.grpc_port, senders=1, duration=2.0, traces_per_request=8, rounds=2)
    size = max(p.stat().st_size for p in folder.iterdir())
    limits = resource.prlimit(serve.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(serve.pid, resource.RLIMIT_FSIZE, (size, limits[1]))  # the disk is full
    full = run_senders(
        serve.grpc_port, senders=1, duration=4.0, traces_per_request=8, rounds=2, first_seed=2000
    )
    resource.prlimit(serve.pid, resource.RLIMIT_FSIZE, limits)  # room again
    after = run_senders(
        serve.grpc_port, senders=1, duration=4.0, traces_per_request=8, rounds=2, first_seed=3000
    )
    acked = sent["acked"] + full["acked"] + after["acked"]
    deadline = time.monotonic() + 30
    while downstream.snapshot()["unique"] < acked and time.monotonic() < deadline:
        time.sleep(0.2)
    code = serve.stop()
    errors = serve.log.count("write failed")
    notes = (
        f"acked {sent['acked']} before, {full['acked']} while full ({full['refused']} refusals), "
        f"{after['acked']} after; {errors} 'write failed' line(s)"
    )
    return _report("durable-full", acked, downstream.stop(), serve, code, notes)


SCENARIOS = {
    "large": large,
    "burst-sigterm": burst_sigterm,
    "slow-clients": slow_clients,
    "slow-downstream": slow_downstream,
    "idle-grpc": idle_grpc,
    "stalled-grpc": stalled_grpc_calls,
    "slow-bodies": slow_bodies,
    "durable-full": durable_disk_full,
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=", ".join(SCENARIOS) + " (default: all)"
    )
    args = parser.parse_args()
    names = args.scenarios or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    rows = [SCENARIOS[name]() for name in names]
    bad = [
        r["scenario"] for r in rows if r["lost"] or (r["duplicated"] and r["scenario"] != "slow-downstream")
    ]
    if bad:
        print(f"FAILED: {', '.join(bad)} lost or duplicated spans")
        sys.exit(1)


if __name__ == "__main__":
    main()
