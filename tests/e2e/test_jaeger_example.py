"""``examples/jaeger/``: what can be checked without Docker or Jaeger.

The compose file, the Jaeger v2 config and the UI config parse and agree (mounted files
exist, the UI config is the one Jaeger is told to load, the image is pinned, the service
forwards to Jaeger's OTLP/gRPC port); the service config of the compose file starts as
``otel-semloop serve`` and scores the demo agent (the compose file's own command) on the way
to an OTLP receiver; and ``load_file.py`` loads a rescored file over OTLP/HTTP.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from otel_semloop.service.config import ServiceConfig
from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.e2e.phoenix_server import free_port
from tests.e2e.test_examples import ROOT, assert_one_loop_flagged, example_env, run, wait_for_port

HERE = ROOT / "examples" / "jaeger"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((HERE / "docker-compose.yaml").read_text())


def mounts(service: dict) -> dict[str, Path]:
    """Container path -> file in the repository, for each bind mount."""
    out = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        out[target] = (HERE / source).resolve()
    return out


def test_the_compose_file_wires_jaeger_semloop_and_the_demo_agent(compose):
    services = compose["services"]
    assert set(services) == {"jaeger", "semloop", "demo-agent"}
    assert re.fullmatch(r"jaegertracing/jaeger:2\.\d+\.\d+", services["jaeger"]["image"]), "pin Jaeger v2"
    for service in services.values():
        for path in mounts(service).values():
            assert path.is_file(), path
        build = service.get("build")
        if build:
            assert (HERE / build["context"] / build["dockerfile"]).is_file()
    assert "16686:16686" in services["jaeger"]["ports"]
    agent_env = services["demo-agent"]["environment"]
    assert agent_env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://semloop:4317"


def test_jaeger_loads_the_ui_config_that_pins_semloop_tags(compose):
    jaeger = compose["services"]["jaeger"]
    config_path = jaeger["command"][jaeger["command"].index("--config") + 1]
    files = mounts(jaeger)
    config = yaml.safe_load(files[config_path].read_text())
    ui_path = config["extensions"]["jaeger_query"]["ui"]["config_file"]
    ui = json.loads(files[ui_path].read_text())
    assert "semloop." in ui["topTagPrefixes"]
    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"] and pipeline["exporters"] == ["jaeger_storage_exporter"]


def test_the_service_config_of_the_compose_file_forwards_to_jaeger(compose):
    semloop = compose["services"]["semloop"]
    command = semloop["command"]
    assert command[:2] == ["otel-semloop", "serve"]
    config = ServiceConfig.load(mounts(semloop)[command[command.index("--config") + 1]])
    assert config.export_endpoint == "http://jaeger:4317" and config.export_protocol == "grpc"
    assert {config.grpc, config.http} == {"0.0.0.0:4317", "0.0.0.0:4318"}


def test_the_compose_service_starts_scores_the_demo_agent_and_loads_a_rescored_file(compose, tmp_path):
    """The compose file's semloop command and config, with loopback addresses and a local
    OTLP receiver standing in for Jaeger; then the demo agent's command; then a rescored
    file through load_file.py into the same service's OTLP/HTTP receiver."""
    semloop, agent = compose["services"]["semloop"], compose["services"]["demo-agent"]
    config = str(mounts(semloop)[semloop["command"][semloop["command"].index("--config") + 1]])
    grpc_port, http_port = free_port(), free_port()
    with GrpcOtlpReceiver() as jaeger:
        command = [sys.executable, "-m", "otel_semloop", *semloop["command"][1:]]
        command[command.index("--config") + 1] = config
        command += ["--grpc", f"127.0.0.1:{grpc_port}", "--http", f"127.0.0.1:{http_port}"]
        command += ["--export-endpoint", jaeger.endpoint, "--grace", "0.2"]
        service = subprocess.Popen(
            command, env=example_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            wait_for_port(grpc_port, service)
            agent_command = [a.replace("/src/", f"{ROOT}/") for a in agent["command"]]
            agent_command[0] = sys.executable
            env = example_env(
                **{**agent["environment"], "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{grpc_port}"}
            )
            run(agent_command, env)
            assert_one_loop_flagged(jaeger)
            assert {s.resource.get("service.name") for s in jaeger.spans} == {"demo-agent"}

            scored = tmp_path / "scored.otlp.jsonl"
            run(
                [
                    sys.executable,
                    "-m",
                    "otel_semloop",
                    "rescore",
                    "examples/agent_traces.otlp.jsonl",
                    "-o",
                    f"{scored}",
                ],
                example_env(),
            )
            before = len(jaeger.spans)
            url = f"http://127.0.0.1:{http_port}/v1/traces"
            done = run([sys.executable, str(HERE / "load_file.py"), str(scored), url], example_env())
            lines = sum(1 for line in scored.read_text().splitlines() if line.strip())
            assert done.stdout.strip() == f"posted {lines} lines to {url}"
            expected = sum(line.count('"spanId"') for line in scored.read_text().splitlines())
            got = jaeger.wait_until(lambda spans: len(spans) >= before + expected, timeout=30)
            assert len(got) - before == expected
            assert any(s.attributes.get("semloop.label") == "loop" for s in got[before:])
        finally:
            service.send_signal(signal.SIGTERM)
            output, _ = service.communicate(timeout=60)
    assert service.returncode == 0, output
