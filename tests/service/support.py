"""What the service tests share: a service on a background thread with test-sized timings,
raw OTLP senders (gRPC and HTTP), a real OTLP *metrics* receiver on loopback, and the
serve command as a process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from otel_semloop.service import ServiceConfig, ServiceThread
from tests.e2e.otlp_receiver import GrpcOtlpReceiver, OtlpReceiver

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


def config_for(downstream: OtlpReceiver | str, **overrides: Any) -> ServiceConfig:
    endpoint = downstream if isinstance(downstream, str) else downstream.endpoint
    grpc_downstream = isinstance(downstream, (str, GrpcOtlpReceiver))
    options: dict[str, Any] = {
        "grpc": "127.0.0.1:0",
        "http": "127.0.0.1:0",
        "export_endpoint": endpoint,
        "export_protocol": "grpc" if grpc_downstream else "http/protobuf",
        "grace_seconds": 0.1,
        "tick_seconds": 0.02,
        "retry_initial_backoff": 0.05,
        "retry_max_backoff": 0.2,
        "export_timeout": 2.0,
        "shutdown_timeout_seconds": 5.0,
        **overrides,
    }
    return ServiceConfig(**options)


@contextmanager
def running(downstream: OtlpReceiver | str, **overrides: Any) -> Iterator[ServiceThread]:
    service = ServiceThread(config_for(downstream, **overrides)).start()
    try:
        yield service
    finally:
        service.stop()


def grpc_export(
    port: int,
    request: Any,
    *,
    method: str = EXPORT,
    token: str | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    host: str = "127.0.0.1",
    compression: grpc.Compression | None = None,
    timeout: float = 10,
) -> Any:
    """One Export call (``method``: the traces' or :data:`LOGS_EXPORT`) with raw bytes (so
    malformed bodies can be sent); raises ``grpc.RpcError`` on a non-OK status."""
    body = request if isinstance(request, bytes) else request.SerializeToString()
    target = f"{host}:{port}"
    options = [("grpc.max_send_message_length", -1), ("grpc.ssl_target_name_override", "localhost")]
    channel = (
        grpc.secure_channel(target, credentials, options=options)
        if credentials is not None
        else grpc.insecure_channel(target, options=options)
    )
    with channel:
        response = (
            logs_service_pb2.ExportLogsServiceResponse
            if method == LOGS_EXPORT
            else trace_service_pb2.ExportTraceServiceResponse
        )
        call = channel.unary_unary(method, request_serializer=None, response_deserializer=response.FromString)
        metadata = (("authorization", f"Bearer {token}"),) if token is not None else None
        return call(body, timeout=timeout, metadata=metadata, compression=compression)


def once_each(received: list[Any]) -> Counter[tuple[str, str]]:
    return Counter((s.trace_id, s.span_id) for s in received)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``condition`` until true; fail the test (never return quietly) on timeout."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


# -- a real OTLP metrics receiver ------------------------------------------------------------


class MetricsReceiver(metrics_service_pb2_grpc.MetricsServiceServicer):
    """OTLP/gRPC ``MetricsService/Export`` on loopback; keeps the last value of each
    (metric, attributes) data point, and every counter data point as an event the way
    Honeycomb stores metrics (the value in a column named after the metric, beside the
    point's attributes: :meth:`events`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.points: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._events: list[dict[str, Any]] = []
        self.resources: list[dict[str, str]] = []
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    def Export(self, request: Any, context: Any) -> Any:
        with self._lock:
            for rm in request.resource_metrics:
                self.resources.append({kv.key: kv.value.string_value for kv in rm.resource.attributes})
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        kind = metric.WhichOneof("data")
                        data = getattr(metric, kind)
                        for point in data.data_points:
                            attrs = tuple(sorted((kv.key, kv.value.string_value) for kv in point.attributes))
                            if kind == "histogram":
                                value: float = point.count
                            else:
                                value = point.as_int if point.HasField("as_int") else point.as_double
                            self.points[(metric.name, attrs)] = value
                            if kind == "sum":
                                self._events.append({**dict(attrs), metric.name: value})
        return metrics_service_pb2.ExportMetricsServiceResponse()

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._events)

    def value(self, name: str, **attrs: str) -> float | None:
        key = (name, tuple(sorted(attrs.items())))
        with self._lock:
            return self.points.get(key)

    def __enter__(self) -> MetricsReceiver:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(0)


# -- the serve command as a process ----------------------------------------------------------

_PORTS = re.compile(r"grpc \S+ \(port (\d+)\), http \S+ \(port (\d+)\)")


class ServeProcess:
    """``python -m otel_semloop serve ARGS`` with stderr collected on a thread; ``ports``
    is ``(grpc, http)`` once it listens."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "otel_semloop", "serve", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=full_env,
        )
        self.lines: list[str] = []
        self._listening = threading.Event()
        self.ports: tuple[int, int] | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            match = _PORTS.search(line)
            if match and self.ports is None:
                self.ports = (int(match.group(1)), int(match.group(2)))
                self._listening.set()

    def wait_listening(self, timeout: float = 30) -> tuple[int, int]:
        if not self._listening.wait(timeout):
            raise AssertionError("serve did not start listening:\n" + "".join(self.lines))
        assert self.ports is not None
        return self.ports

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def stop(self, sig: int | None = None, timeout: float = 30) -> int:
        import signal

        if self.process.poll() is None:
            self.process.send_signal(sig if sig is not None else signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        self._reader.join(5)
        return code

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self._reader.join(5)
