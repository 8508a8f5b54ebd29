"""What the service benchmarks share: a counting OTLP/gRPC downstream in its own process
(spans and log records), sender processes that push agent traces (and, asked, their GenAI
log records first, on the logs signal) over OTLP/gRPC as fast as they are acknowledged,
the pass-through floor service, and the service under test as a real ``otel-semloop
serve`` process with its RSS sampled.

Everything runs on loopback in separate processes, so the service is measured with the
CPU it would have in production (the senders and the downstream do not share its GIL).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
_PORTS = re.compile(r"grpc \S+ \(port (\d+)\)")


# -- the downstream: counts spans, ids and verdict labels --------------------------------------


def _downstream_main(port_queue: Any, stop: Any, results: Any, delay: float) -> None:
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    lock = threading.Lock()
    seen: dict[bytes, int] = {}
    logs_seen: dict[bytes, int] = {}
    labels: dict[str, int] = {}
    empty = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()

    def export_logs(body: bytes, context: Any) -> bytes:
        request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
        keys = [
            r.trace_id + r.span_id + r.time_unix_nano.to_bytes(8, "big")
            for rl in request.resource_logs
            for sl in rl.scope_logs
            for r in sl.log_records
        ]
        with lock:
            for key in keys:
                logs_seen[key] = logs_seen.get(key, 0) + 1
        return b""

    def export(body: bytes, context: Any) -> bytes:
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        keys = []
        roots = []
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    keys.append(span.trace_id + span.span_id)
                    if not span.parent_span_id:
                        label = "-"
                        for kv in span.attributes:
                            if kv.key == "semloop.label":
                                label = kv.value.string_value
                                break
                        roots.append(label)
        if delay:
            time.sleep(delay)
        with lock:
            for key in keys:
                seen[key] = seen.get(key, 0) + 1
            for label in roots:
                labels[label] = labels.get(label, 0) + 1
        return empty

    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(export)},
    )
    logs_handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.logs.v1.LogsService",
        {"Export": grpc.unary_unary_rpc_method_handler(export_logs)},
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8),
        handlers=[handler, logs_handler],
        options=[("grpc.max_receive_message_length", 256 << 20)],
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    port_queue.put(port)
    while True:
        command = stop.get()
        with lock:
            copies = list(seen.values())
            log_copies = list(logs_seen.values())
            results.put(
                {
                    "unique": len(copies),
                    "received": sum(copies),
                    "duplicated": sum(c - 1 for c in copies),
                    "log_records_unique": len(log_copies),
                    "log_records_duplicated": sum(c - 1 for c in log_copies),
                    "keys": list(seen) if command == "keys" else None,
                    "labels": dict(labels),
                }
            )
        if command == "stop":
            server.stop(0)
            return


class Downstream:
    """A real OTLP/gRPC receiver in its own process. ``delay``: seconds per request (a slow
    backend)."""

    def __init__(self, delay: float = 0.0) -> None:
        context = mp.get_context("spawn")
        ports, self._commands, self._results = context.Queue(), context.Queue(), context.Queue()
        self._process = context.Process(
            target=_downstream_main, args=(ports, self._commands, self._results, delay), daemon=True
        )
        self._process.start()
        self.port = ports.get(timeout=30)
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def snapshot(self, keys: bool = False) -> dict[str, Any]:
        self._commands.put("keys" if keys else "count")
        return self._results.get(timeout=60)

    def stop(self) -> dict[str, Any]:
        self._commands.put("stop")
        result = self._results.get(timeout=60)
        self._process.join(10)
        return result


# -- senders -------------------------------------------------------------------------------------


def _sender_main(
    port: int,
    seed: int,
    traces_per_request: int,
    rounds: int,
    duration: float,
    out: Any,
    keep_ids: bool,
    go: Any,
    logs: bool = False,
) -> None:
    import random

    import grpc

    from tests.service.traffic import agent_spans, genai_log_records, logs_request_of, request_of

    rng = random.Random(seed)
    templates = []
    for k in range(16):  # requests whose trace ids are patched in place for each send
        trace_ids = [rng.randbytes(16) for _ in range(traces_per_request)]
        spans = []
        records = []
        for i, tid in enumerate(trace_ids):
            spans.extend(agent_spans(tid, rounds, loop=(k + i) % 2 == 0))
            if logs:
                records.extend(genai_log_records(tid, rounds, loop=(k + i) % 2 == 0))
        body = request_of(spans).SerializeToString()
        offsets = [[m.start() for m in re.finditer(re.escape(tid), body)] for tid in trace_ids]
        logs_body = logs_request_of(records).SerializeToString() if logs else b""
        logs_offsets = [[m.start() for m in re.finditer(re.escape(tid), logs_body)] for tid in trace_ids]
        templates.append(
            (bytearray(body), offsets, len(spans), bytearray(logs_body), logs_offsets, len(records))
        )
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)])
    go.wait()  # every sender built its requests: start together
    stop_at = time.time() + duration
    call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
    call_logs = channel.unary_unary(LOGS_EXPORT, request_serializer=None, response_deserializer=None)
    acked = refused = errors = logs_acked = 0
    ids: list[bytes] = []
    n = 0

    def send(method: Any, data: bytearray) -> bool:
        """One request, sent until acknowledged or the time is up."""
        nonlocal refused, errors
        while time.time() < stop_at:
            try:
                method(bytes(data), timeout=30)
            except grpc.RpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
                    refused += 1
                    # Backpressure: the data waits here for the delay the service asks for
                    # (RetryInfo, as the OTel Python exporter reads it), else 50 ms.
                    time.sleep(_retry_delay(exc))
                    continue
                errors += 1
                return False
            return True
        return False

    while time.time() < stop_at:
        body, offsets, count, logs_body, logs_offsets, records = templates[n % len(templates)]
        n += 1
        new_ids = [rng.randbytes(16) for _ in offsets]
        for positions, logs_positions, tid in zip(offsets, logs_offsets, new_ids, strict=True):
            for at in positions:
                body[at : at + 16] = tid
            for at in logs_positions:
                logs_body[at : at + 16] = tid
        # The log records first (an SDK's logs batch usually leaves before the trace ends).
        if logs and send(call_logs, logs_body):
            logs_acked += records
        if send(call, body):
            acked += count
            if keep_ids:
                ids.extend(new_ids)
    channel.close()
    out.put(
        {
            "acked": acked,
            "log_records_acked": logs_acked,
            "refused": refused,
            "errors": errors,
            "trace_ids": ids if keep_ids else None,
        }
    )


def _retry_delay(error: Any) -> float:
    from google.rpc import error_details_pb2

    for key, value in error.trailing_metadata() or ():
        if key == "google.rpc.retryinfo-bin":
            info = error_details_pb2.RetryInfo.FromString(value)
            return info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return 0.05


def run_senders(
    port: int,
    senders: int,
    duration: float,
    traces_per_request: int = 8,
    rounds: int = 4,
    keep_ids: bool = False,
    first_seed: int = 1000,
    logs: bool = False,
) -> dict[str, Any]:
    """``senders`` processes sending for ``duration`` seconds; totals of what was acked.
    Sender ``i`` draws its trace ids from seed ``first_seed + i``: calls that must not
    send the same ids give different seeds. ``logs``: each traces request follows a logs
    request with its traces' GenAI records."""
    context = mp.get_context("spawn")
    out = context.Queue()
    go = context.Barrier(senders)
    processes = [
        context.Process(
            target=_sender_main,
            args=(port, first_seed + i, traces_per_request, rounds, duration, out, keep_ids, go, logs),
        )
        for i in range(senders)
    ]
    for process in processes:
        process.start()
    results = [out.get(timeout=duration + 120) for _ in processes]
    for process in processes:
        process.join(10)
    total: dict[str, Any] = {"acked": 0, "log_records_acked": 0, "refused": 0, "errors": 0, "trace_ids": []}
    for result in results:
        for key in ("acked", "log_records_acked", "refused", "errors"):
            total[key] += result[key]
        if result["trace_ids"]:
            total["trace_ids"].extend(result["trace_ids"])
    return total


# -- the pass-through floor ----------------------------------------------------------------------


def _floor_main(port_queue: Any, downstream_port: int) -> None:
    import asyncio

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    async def main() -> None:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{downstream_port}")
        forward = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        forward_logs = channel.unary_unary(LOGS_EXPORT, request_serializer=None, response_deserializer=None)
        empty = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()

        async def export(body: bytes, context: Any) -> bytes:
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)  # decode
            await forward(request.SerializeToString(), timeout=30)  # and forward
            return empty

        async def export_logs(body: bytes, context: Any) -> bytes:
            request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
            await forward_logs(request.SerializeToString(), timeout=30)
            return b""

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},
        )
        logs_handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.logs.v1.LogsService",
            {"Export": grpc.unary_unary_rpc_method_handler(export_logs)},
        )
        server = grpc.aio.server(handlers=[handler, logs_handler])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        port_queue.put(port)
        await server.wait_for_termination()

    asyncio.run(main())


class Floor:
    """A pass-through OTLP service that only decodes and forwards (no grouping, no
    scoring): the cost floor of any OTLP-in/OTLP-out Python service here."""

    def __init__(self, downstream_port: int) -> None:
        context = mp.get_context("spawn")
        ports = context.Queue()
        self.process = context.Process(target=_floor_main, args=(ports, downstream_port), daemon=True)
        self.process.start()
        self.grpc_port = ports.get(timeout=30)
        self.pid = self.process.pid

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(10)


# -- the service under test --------------------------------------------------------------------


@dataclass
class Serve:
    """``otel-semloop serve`` as a subprocess with its stderr collected and RSS sampled."""

    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)
    #: The working directory: the ``otel_semloop`` package it holds comes first.
    cwd: str | None = None

    def __post_init__(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), **self.env}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "otel_semloop", "serve", "--health", "off", *self.args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=self.cwd,
        )
        self.pid = self.process.pid
        self._listening = threading.Event()
        self.grpc_port = 0
        threading.Thread(target=self._read, daemon=True).start()
        self._sampling = True
        threading.Thread(target=self._sample, daemon=True).start()
        if not self._listening.wait(60):
            raise RuntimeError("serve did not start:\n" + "".join(self.lines))

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            match = _PORTS.search(line)
            if match and not self.grpc_port:
                self.grpc_port = int(match.group(1))
                self._listening.set()

    def _sample(self) -> None:
        import psutil

        proc = psutil.Process(self.pid)
        started = time.monotonic()
        while self._sampling:
            try:
                rss = proc.memory_info().rss
                for child in proc.children(recursive=True):
                    rss += child.memory_info().rss
            except psutil.Error:
                return
            self.rss.append((time.monotonic() - started, rss))
            time.sleep(0.25)

    def cpu_seconds(self) -> float:
        import psutil

        try:
            proc = psutil.Process(self.pid)
            times = proc.cpu_times()
            total = times.user + times.system
            for child in proc.children(recursive=True):
                t = child.cpu_times()
                total += t.user + t.system
            return total
        except psutil.Error:
            return 0.0

    def peak_rss(self) -> int:
        return max((r for _, r in self.rss), default=0)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        self._sampling = False
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -9

    @property
    def log(self) -> str:
        return "".join(self.lines)


def cpu_of(pid: int) -> float:
    import psutil

    try:
        times = psutil.Process(pid).cpu_times()
        return times.user + times.system
    except psutil.Error:
        return 0.0


def median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
