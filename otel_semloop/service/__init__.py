"""The collector plugin: an OTLP gRPC + HTTP service that scores agent traces for loops.

It sits in a telemetry pipeline (application or Collector -> otel-semloop -> any OTLP
backend), groups spans by trace id, scores each finished agent trace off the receive path,
writes the verdict onto the spans and forwards every span once. Non-agent traces pass
through untouched. Scale out behind the Collector's ``load_balancing`` exporter with
``routing_key: traceID`` (``collector/README.md``).

Run it with ``otel-semloop serve`` or from Python::

    from otel_semloop.service import ServiceConfig, ServiceThread

    config = ServiceConfig(grpc="127.0.0.1:4317", http="127.0.0.1:4318",
                           export_endpoint="http://127.0.0.1:14317")
    with ServiceThread(config) as running:
        ...  # send OTLP to running.grpc_port / running.http_port

Needs the ``collector`` extra (grpcio, uvicorn); ``docs/architecture.md`` maps the modules.
"""

from __future__ import annotations

from otel_semloop.lazy_exports import lazy_getattr

#: Each public name and the module that defines it.
_HOMES = {
    "ExportProtocol": "config",
    "ServiceConfig": "config",
    "SemloopService": "server",
    "ServiceThread": "runner",
    "serve": "runner",
}
__all__ = sorted(_HOMES)


#: Imported on first use, so that a scoring process (which imports
#: :mod:`.scoring_worker`) loads neither gRPC nor uvicorn.
__getattr__ = lazy_getattr(__name__, _HOMES)
