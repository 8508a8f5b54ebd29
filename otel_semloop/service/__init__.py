"""The collector plugin: an OTLP gRPC + HTTP service that scores agent traces for loops.

It sits in a telemetry pipeline (application or OpenTelemetry Collector -> otel-semloop ->
any OTLP backend), groups spans by trace id, scores each finished agent trace off the
receive path, writes the verdict onto the spans and forwards every span once, with its own
Resource and InstrumentationScope. Non-agent traces pass through untouched. Scale out
behind the Collector's ``load_balancing`` exporter with ``routing_key: traceID`` (see
``collector/README.md``).

Run it with ``otel-semloop serve`` or from Python::

    from otel_semloop.service import ServiceConfig, ServiceThread

    config = ServiceConfig(grpc="127.0.0.1:4317", http="127.0.0.1:4318",
                           export_endpoint="http://127.0.0.1:14317")
    with ServiceThread(config) as running:
        ...  # send OTLP to running.grpc_port / running.http_port

Modules: :mod:`.config` (``ServiceConfig``), :mod:`.receiver` (gRPC servicer, ASGI app,
request decoding and error replies), :mod:`.held` (received spans as held),
:mod:`.pipeline` (buffer, scoring budget, write-back), :mod:`.exporter` (queue, batching,
retries), :mod:`.server` (the service's lifecycle and admission), :mod:`.listeners` (the
gRPC server and uvicorn: addresses, TLS, connection limits), :mod:`.runner` (signals, the
process and the background-thread runner), :mod:`.processes` (the pool of scoring
processes), :mod:`.scoring_worker` (what a scoring process does), :mod:`.admission` (how
far scoring is behind). Needs the ``collector`` extra (grpcio, uvicorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_semloop.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from otel_semloop.service.config import ExportProtocol, ServiceConfig
    from otel_semloop.service.runner import ServiceThread, serve
    from otel_semloop.service.server import SemloopService

__all__ = ["ExportProtocol", "SemloopService", "ServiceConfig", "ServiceThread", "serve"]

_HOMES = {
    "ExportProtocol": "config",
    "ServiceConfig": "config",
    "SemloopService": "server",
    "ServiceThread": "runner",
    "serve": "runner",
}


#: Imported on first use, so that a scoring process (which imports
#: :mod:`.scoring_worker`) loads neither gRPC nor uvicorn.
__getattr__ = lazy_getattr(__name__, _HOMES)
