"""The service as an operator runs it: health transitions, self-metrics read back through a
real OTLP metrics receiver and the Prometheus endpoint, the standard ``OTEL_EXPORTER_OTLP_*``
variables for the next hop, ``${env:NAME}`` in the config file, secrets never printed, and
one structured log line per looping trace with no per-request library logs."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from otel_semloop.cli import main as cli_main
from otel_semloop.errors import ConfigError
from otel_semloop.service import ServiceConfig, ServiceThread
from tests.e2e.http_thread import ServerThread, reply
from tests.e2e.otlp_receiver import GrpcOtlpReceiver, HttpOtlpReceiver
from tests.service.support import MetricsReceiver, ServeProcess, config_for, grpc_export, wait_for
from tests.service.traffic import agent_spans, mixed_traces, request_of, trace_id_of


def test_health_is_ready_while_serving_then_not_ready_while_draining_then_gone() -> None:
    down = GrpcOtlpReceiver()  # never started: the drain waits for it until its deadline
    service = ServiceThread(config_for(down, health="127.0.0.1:0", shutdown_timeout_seconds=4)).start()
    url = f"http://127.0.0.1:{service.service.health_port}"
    try:
        ready = httpx.get(f"{url}/health/ready")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        assert httpx.get(f"{url}/health/live").status_code == 200
        assert httpx.get(f"{url}/health").status_code == 200  # the Collector extension's path
        assert cli_main(["health", f"{url}/health/ready"]) == 0  # the container health check
        grpc_export(service.grpc_port, request_of(agent_spans(trace_id_of(1, 0), 2, loop=True)))
        stopper = threading.Thread(target=service.stop)
        stopper.start()
        draining: dict = {}

        def not_ready() -> bool:
            answer = httpx.get(f"{url}/health/ready")
            if answer.status_code == 503:
                draining.update(answer.json())  # the first 503 is read, not a second request
            return answer.status_code == 503

        wait_for(not_ready, 5, "not ready")
        assert draining["status"] == "draining" and draining["ready"] is False
        assert httpx.get(f"{url}/health/live").status_code == 200  # draining is alive
        stopper.join(20)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/health/live", timeout=1)
        assert cli_main(["health", f"{url}/health/ready"]) == 1
    finally:
        service.stop()


def test_self_metrics_reach_a_real_otlp_metrics_receiver_and_the_prometheus_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with MetricsReceiver() as metrics, GrpcOtlpReceiver() as downstream:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", f"http://127.0.0.1:{metrics.port}")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
        config = ServiceConfig.load(
            environ={"OTEL_METRICS_EXPORTER": "otlp,prometheus", "OTEL_EXPORTER_PROMETHEUS_PORT": "0"},
            **{k: v for k, v in vars_of(config_for(downstream)).items() if k not in _METRIC_KEYS},
        )
        assert config.metrics_exporters == ("otlp", "prometheus")
        traces = list(mixed_traces(seed=7, count=6))
        sent = sum(len(spans) for _, _, spans in traces)
        with ServiceThread(config) as service:
            for _, _, spans in traces:
                grpc_export(service.grpc_port, request_of(spans))
            downstream_count = lambda: len(downstream.spans)  # noqa: E731
            wait_for(lambda: downstream_count() >= sent, 10, "every span forwarded")
            wait_for(
                lambda: metrics.value("semloop.spans.received", **{"semloop.outcome": "accepted"}) == sent,
                10,
                "spans.received in the OTLP metrics",
            )
            wait_for(
                lambda: (
                    metrics.value("semloop.traces", **{"semloop.label": "no_loop"}) == 2
                    and metrics.value("semloop.traces", **{"semloop.label": "loop"}) == 2
                ),
                10,
                "traces by label",
            )
            wait_for(
                lambda: metrics.value("semloop.export.spans", **{"semloop.export.outcome": "sent"}) == sent,
                10,
                "export.spans in the OTLP metrics",
            )
            assert metrics.value("semloop.export.pending") == 0
            assert (metrics.value("semloop.scoring.duration") or 0) >= 4  # a histogram: count
            assert any(r.get("service.name") == "otel-semloop" for r in metrics.resources)
            scrape = httpx.get(f"http://127.0.0.1:{service.service.prometheus_port}/metrics").text
            assert f'semloop_spans_received_total{{semloop_outcome="accepted"}} {float(sent)}' in _lines(
                scrape
            )
            assert 'semloop_traces_total{semloop_label="loop"} 2.0' in _lines(scrape)


_METRIC_KEYS = ("prometheus", "metrics_exporter")


def vars_of(config: ServiceConfig) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def _lines(scrape: str) -> str:
    """Prometheus text without the otel_scope_* labels, for readable assertions."""
    import re

    return re.sub(r'otel_scope_[a-z_]+="[^"]*",?', "", scrape).replace(",}", "}")


class _RecordingOtlpHttp:
    """An OTLP/HTTP receiver that records each request's headers and decoded span count."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], int]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                count = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
                owner.requests.append(({k.lower(): v for k, v in self.headers.items()}, count))
                reply(self, 200, b"", "application/x-protobuf")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ServerThread("127.0.0.1", Handler)

    def __enter__(self) -> _RecordingOtlpHttp:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


def test_the_otel_exporter_otlp_variables_configure_the_next_hop_and_secrets_stay_out_of_logs(
    tmp_path: Path,
) -> None:
    with _RecordingOtlpHttp() as downstream, GrpcOtlpReceiver() as unused:
        port = downstream.server.port
        env = {
            # The generic variables are overridden by the TRACES_ ones, as the spec says.
            "OTEL_EXPORTER_OTLP_ENDPOINT": unused.endpoint,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://agent:hunter2@127.0.0.1:{port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s3cr3t-k3y%21,x-team=loops",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "4000",
            "SEMLOOP_GRACE_SECONDS": "0.1",
            "SEMLOOP_HEALTH": "off",
            "SEMLOOP_AUTH_TOKEN": "t0k3n-value",
        }
        config = ServiceConfig.load(environ=env)
        assert config.export_protocol == "http/protobuf" and config.export_compression is True
        assert config.export_timeout == 4.0 and config.grace_seconds == 0.1 and config.health is None
        assert dict(config.export_headers) == {"x-api-key": "s3cr3t-k3y!", "x-team": "loops"}
        for text in (repr(config), config.describe()):
            assert "hunter2" not in text and "s3cr3t" not in text and "t0k3n" not in text

        process = ServeProcess("--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--health", "off", env=env)
        try:
            grpc_port, _ = process.wait_listening()
            spans = agent_spans(trace_id_of(3, 0), 5, loop=True)
            grpc_export(grpc_port, request_of(spans), token="t0k3n-value")
            wait_for(lambda: sum(n for _, n in downstream.requests) >= len(spans), 10, "spans downstream")
        finally:
            code = process.stop()
        assert code == 0, process.log
        headers, _ = downstream.requests[0]
        assert headers["x-api-key"] == "s3cr3t-k3y!" and headers["content-encoding"] == "gzip"
        assert headers["authorization"] == "Basic " + _basic("agent", "hunter2")
        log = process.log
        assert f"127.0.0.1:{port}" in log  # the endpoint is named...
        for secret in ("hunter2", "s3cr3t", "t0k3n"):  # ...its secrets are not
            assert secret not in log, log
        # One structured line for the loop; no per-request "HTTP Request: POST" lines.
        assert sum('"signals"' in line and "otel-semloop: loop" in line for line in process.lines) == 1
        assert "HTTP Request" not in log


def _basic(user: str, password: str) -> str:
    import base64

    return base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_config_file_expands_env_references_and_flags_win(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(
        '[serve]\nexport_endpoint = "${env:BACKEND}"\nexport_headers = { "x-key" = "${env:KEY}" }\n'
        'grace_seconds = 7.0\nidle_seconds = "${IDLE:-33}"\n'
    )
    environ = {"BACKEND": "http://127.0.0.1:9999", "KEY": "from-env", "SEMLOOP_GRACE_SECONDS": "1.0"}
    config = ServiceConfig.load(path, environ=environ, idle_seconds=None, shutdown_timeout_seconds=3.0)
    assert config.export_endpoint == "http://127.0.0.1:9999"
    assert dict(config.export_headers) == {"x-key": "from-env"}
    assert config.grace_seconds == 7.0  # the file beats the environment
    assert config.shutdown_timeout_seconds == 3.0  # flags beat the file
    assert config.idle_seconds == 33.0
    with pytest.raises(ConfigError, match="KEY is not set"):
        ServiceConfig.load(path, environ={"BACKEND": "http://x:1"})


def test_log_lines_are_quiet_by_default() -> None:
    """The serve command as run, at its default level: the loggers of gRPC, uvicorn and
    httpx (one line per request or probe) are not heard, only one line per looping trace."""
    with HttpOtlpReceiver() as downstream:  # the exporter's HTTP client logs each request at INFO
        process = ServeProcess(
            "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-endpoint", downstream.endpoint,
            "--export-protocol", "http/protobuf", "--grace-seconds", "0.1",
        )  # fmt: skip
        try:
            grpc_port, http_port = process.wait_listening()
            wait_for(lambda: "options:" in process.log, 10, "the start-up lines")
            started = len(process.lines)
            for i in range(3):
                grpc_export(grpc_port, request_of(agent_spans(trace_id_of(5, i), 4, loop=i == 0)))
                body = request_of(agent_spans(trace_id_of(6, i), 4, loop=False)).SerializeToString()
                response = httpx.post(
                    f"http://127.0.0.1:{http_port}/v1/traces",
                    content=body,
                    headers={"Content-Type": "application/x-protobuf"},
                )
                assert response.status_code == 200
            wait_for(lambda: len(downstream.spans) >= 54, 10, "54 spans downstream")
            time.sleep(0.3)
            during = process.lines[started:]
        finally:
            assert process.stop() == 0, process.log
    assert [line for line in during if "otel-semloop: loop " in line] == [
        line for line in during if trace_id_of(5, 0).hex() in line
    ]
    assert len(during) == 1, during  # no access log, no client log, no per-request line
