"""What an operator watches: the health endpoint and the self-metrics.

:class:`Health` is the service's state (``starting``, ``ready``, ``draining``, ``stopped``);
liveness also needs the event loop to beat within ``stall_after`` seconds. An
:class:`AdminServer` answers ``GET /health/live``, ``/health/ready``, ``/health`` and,
given a Prometheus registry, ``/metrics`` on its own thread, so a probe measures the loop
rather than queueing behind it. :func:`build_meter_provider` builds the ``MeterProvider``
``metrics_exporter`` names (``otlp`` configured by the standard ``OTEL_EXPORTER_OTLP_*``
variables, ``prometheus``, ``console``) for the instruments of
:data:`otel_semloop.telemetry.INSTRUMENTS`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from otel_semloop.service.config import ServiceConfig, listen_error, parse_address

__all__ = ["AdminServer", "Health", "build_meter_provider"]

_logger = logging.getLogger("otel_semloop.service")


def build_meter_provider(config: ServiceConfig) -> tuple[Any, Any]:
    """``(MeterProvider or None, Prometheus registry or None)`` for ``metrics_exporter``.
    None when no exporter is configured (the API's no-op meter is used then)."""
    exporters = config.metrics_exporters
    if not exporters:
        return None, None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    readers: list[Any] = []
    registry = None
    for name in exporters:
        if name == "otlp":
            readers.append(PeriodicExportingMetricReader(_otlp_metric_exporter()))
        elif name == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        elif name == "prometheus":
            try:
                from opentelemetry.exporter.prometheus import PrometheusMetricReader
                from prometheus_client import CollectorRegistry
            except ImportError as error:
                from otel_semloop.errors import ConfigError

                raise ConfigError(
                    f"serve: metrics_exporter=prometheus needs opentelemetry-exporter-prometheus: {error}"
                ) from None
            registry = CollectorRegistry(auto_describe=True)
            readers.append(PrometheusMetricReader(registry=registry))
    resource = Resource.create({"service.name": "otel-semloop"}).merge(OTELResourceDetector().detect())
    return MeterProvider(metric_readers=readers, resource=resource), registry


def _otlp_metric_exporter() -> Any:
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
            OTLPMetricExporter,
        )
    return OTLPMetricExporter()


class Health:
    """The service's state for the health endpoint (thread-safe reads): ``state`` is
    ``starting``, ``ready``, ``draining`` or ``stopped``."""

    def __init__(self, stall_after: float = 10.0) -> None:
        self.state = "starting"
        self._stall_after = stall_after
        self._last_beat = time.monotonic()

    def beat(self) -> None:
        self._last_beat = time.monotonic()

    @property
    def live(self) -> bool:
        return self.state != "stopped" and time.monotonic() - self._last_beat < self._stall_after

    @property
    def ready(self) -> bool:
        return self.state == "ready" and self.live

    def report(self) -> dict[str, Any]:
        return {
            "status": self.state,
            "live": self.live,
            "ready": self.ready,
            "loop_lag_seconds": round(time.monotonic() - self._last_beat, 3),
        }


class AdminServer:
    """Health and/or ``/metrics`` on a plain HTTP listener of its own thread."""

    def __init__(self, address: str, name: str, health: Health | None, registry: Any = None) -> None:
        host, port = parse_address(address, name)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "otel-semloop"

            def do_GET(self) -> None:
                owner._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # quiet: probes every few seconds
                pass

        self._health = health
        self._registry = registry
        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as error:
            raise listen_error(f"the {name} endpoint ({name})", address, error) from None
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"semloop-{name}", daemon=True
        )

    def start(self) -> AdminServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        health = self._health
        if health is not None and path in ("/health", "/health/ready", "/health/live", "/"):
            ok = health.live if path == "/health/live" else health.ready
            self._reply(request, 200 if ok else 503, orjson.dumps(health.report()), "application/json")
            return
        if self._registry is not None and path == "/metrics":
            from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

            self._reply(request, 200, generate_latest(self._registry), CONTENT_TYPE_LATEST)
            return
        self._reply(request, 404, b'{"error": "not found"}', "application/json")

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(body)))
        request.send_header("Cache-Control", "no-store")
        request.end_headers()
        request.wfile.write(body)
