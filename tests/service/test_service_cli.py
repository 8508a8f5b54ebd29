"""``otel-semloop serve`` as a process: it listens where told, and SIGTERM drains what it
holds (scored and forwarded) before it exits 0."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import ServeProcess
from tests.support.agent_spans import search_agent

_PORTS = re.compile(r"grpc 127\.0\.0\.1:0 \(port (\d+)\), http 127\.0\.0\.1:0 \(port (\d+)\)")


def _serve(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "otel_semloop", "serve", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def test_sigterm_drains_a_held_trace_with_its_verdict_then_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    # The file sets the grace; the flags set the rest (flags would win on a clash).
    config.write_text("[serve]\ngrace_seconds = 60.0\nscoring_budget_seconds = 5.0\n")
    with GrpcOtlpReceiver() as downstream:
        process = _serve(
            "--config",
            str(config),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--export-endpoint",
            downstream.endpoint,
            "--shutdown-timeout-seconds",
            "10",
        )
        try:
            assert process.stderr is not None
            ports = None
            deadline = time.monotonic() + 20
            while ports is None and time.monotonic() < deadline:
                line = process.stderr.readline()
                assert line, "serve exited before listening"
                ports = _PORTS.search(line)
            assert ports is not None
            provider = TracerProvider()
            exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{ports.group(2)}/v1/traces", timeout=5)
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            tracer = provider.get_tracer("cli-test")
            search_agent(tracer, ["no results"] * 6, name="a", ask_model=False)
            provider.shutdown()
            time.sleep(0.3)
            assert not downstream.spans  # held: the grace is 60 s
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0
            spans = downstream.wait_until(lambda got: len(got) >= 7, timeout=5)
            assert len(spans) == 7
            (root,) = [s for s in spans if s.is_root]
            assert root.attributes["semloop.label"] == "loop"
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_serve_without_a_downstream_is_a_usage_error() -> None:
    process = _serve("--grpc", "127.0.0.1:0")
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2
    assert "export_endpoint is required" in err


@pytest.mark.parametrize(
    ("flag", "listener"),
    [
        ("--grpc", "the gRPC receiver (grpc)"),
        ("--http", "the HTTP receiver (http)"),
        ("--health", "the health endpoint (health)"),
    ],
)
def test_an_address_in_use_is_one_line_naming_the_listener_and_exit_2(flag: str, listener: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        addresses = {"--grpc": "127.0.0.1:0", "--http": "127.0.0.1:0", "--health": "off", flag: address}
        args = [part for pair in addresses.items() for part in pair]
        process = _serve(*args, "--export-endpoint", "http://127.0.0.1:9")
        _, err = process.communicate(timeout=30)
    assert process.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].endswith(f"otel-semloop: cannot listen: {listener} on {address}: Address already in use")


def test_a_port_out_of_range_says_so() -> None:
    process = _serve("--grpc", "127.0.0.1:70000", "--export-endpoint", "http://127.0.0.1:9")
    _, err = process.communicate(timeout=20)
    assert process.returncode == 2
    assert "grpc='127.0.0.1:70000': port 70000 is out of range (0-65535)" in err


def test_two_replicas_share_a_host_with_the_default_settings() -> None:
    """The health endpoint is off unless asked for, so nothing else needs a fixed port."""
    replicas = [
        ServeProcess(
            "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-endpoint", "http://127.0.0.1:9"
        )
        for _ in range(2)
    ]
    try:
        for replica in replicas:
            replica.wait_listening()
    finally:
        codes = [replica.stop() for replica in replicas]
    assert codes == [0, 0], [replica.log for replica in replicas]
    assert not any("health" in replica.log for replica in replicas)
