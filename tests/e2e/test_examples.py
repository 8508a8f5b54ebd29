"""Every example in ``examples/`` runs, as a user would run it, against local fake servers.

Each example is started as a subprocess with this checkout on ``PYTHONPATH`` and its
environment pointing at loopback: a scripted OpenAI-compatible server
(:mod:`tests.e2e.fake_openai`) instead of a model, a real OTLP/gRPC receiver
(:mod:`tests.e2e.otlp_receiver`) instead of a backend. The assertions are on what the backend
received (or, for batch rescoring, on the file written): the looping run's root span carries
the verdict, and the healthy run's does not.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_openai import FakeOpenAIServer, looping_script
from tests.e2e.otlp_receiver import GrpcOtlpReceiver, ReceivedSpan
from tests.e2e.phoenix_server import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def example_env(**extra: str) -> dict[str, str]:
    """The caller's environment without OTel, semloop or OpenAI settings, plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SEMLOOP_", "OPENAI_", "PHOENIX_"))
    }
    env.update(PYTHONPATH=str(ROOT), SEMLOOP_GRACE_SECONDS="0.05", PYTHONUNBUFFERED="1", **extra)
    return env


def run(args: list[str], env: dict[str, str], timeout: float = 90) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def verdict_roots(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    return [s for s in spans if s.is_root and "semloop.label" in s.attributes]


def assert_one_loop_flagged(receiver: GrpcOtlpReceiver) -> ReceivedSpan:
    def flagged(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
        return [r for r in verdict_roots(spans) if r.attributes["semloop.loop.detected"] is True]

    spans = receiver.wait_until(lambda got: bool(flagged(got)), timeout=30)
    (root,) = flagged(spans)
    assert root.attributes["semloop.label"] == "loop"
    (event,) = root.events_named("gen_ai.evaluation.result")
    assert event.attributes["gen_ai.evaluation.score.label"] == "loop"
    assert len({s.span_id for s in spans}) == len(spans), "every span arrives exactly once"
    return root


@pytest.fixture
def receiver() -> Iterator[GrpcOtlpReceiver]:
    with GrpcOtlpReceiver() as r:
        yield r


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(looping_script(rounds=8)) as server:
        yield server


def test_plain_sdk_registration_flags_the_loop(receiver):
    run([sys.executable, "examples/sdk/agent.py"], example_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint))
    root = assert_one_loop_flagged(receiver)
    assert root.name == "invoke_agent support-bot"


def test_openai_agents_sdk_with_openinference_flags_the_loop(receiver, fake_model):
    env = example_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OPENAI_BASE_URL=fake_model.base_url,
        OPENAI_API_KEY="test",
    )
    run([sys.executable, "examples/openai-agents/agent.py"], env)
    root = assert_one_loop_flagged(receiver)
    assert root.name == "checkout-incident" and len(fake_model.requests) == 9


def test_openai_client_with_openinference_flags_the_loop(receiver, fake_model):
    env = example_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OPENAI_BASE_URL=fake_model.base_url,
        OPENAI_API_KEY="test",
    )
    run([sys.executable, "examples/openai-openinference/agent.py"], env)
    assert_one_loop_flagged(receiver)
    assert len(fake_model.requests) == 9


def hide_distribution(folder: Path, name: str) -> Path:
    """A stub distribution ``name`` without entry points in ``folder``: first on the path,
    it hides the installed one's entry points (``importlib.metadata`` keeps the first
    distribution of each name)."""
    dist = folder / f"{name.replace('-', '_')}-0.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.0\n")
    return folder


def test_zero_code_opentelemetry_instrument_flags_the_loop(receiver, fake_model, tmp_path):
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    assert instrument.exists(), (
        "opentelemetry-instrument comes with the zero-code extra (opentelemetry-distro)"
    )
    env = example_env(
        OTEL_PYTHON_CONFIGURATOR="semloop",
        OTEL_SERVICE_NAME="zero-code-example",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        # This venv also has the openai-agents instrumentor, which the app does not use.
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="openai_agents",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OPENAI_BASE_URL=fake_model.base_url,
        OPENAI_API_KEY="test",
    )
    # The test extra also installs OpenTelemetry's own openai instrumentation (for
    # tests/e2e/test_e2e_openai_v2.py), registered under the same entry point name ("openai")
    # as OpenInference's, so it cannot be disabled by name: hide it, as in the example's
    # install (one client instrumented twice is not what the example shows).
    hidden = hide_distribution(tmp_path, "opentelemetry-instrumentation-openai-v2")
    env["PYTHONPATH"] = f"{hidden}{os.pathsep}{env['PYTHONPATH']}"
    run([str(instrument), sys.executable, "examples/zero-code/app.py"], env)
    root = assert_one_loop_flagged(receiver)
    assert root.resource.get("service.name") == "zero-code-example"


def test_the_live_guard_stops_the_looping_agent_midway(receiver):
    done = run(
        [sys.executable, "examples/live-guard/agent.py"],
        example_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint),
    )
    steps = int(done.stdout.split("after ")[1].split(" of 50")[0])
    assert 3 <= steps < 10, done.stdout
    assert "on_loop: stop" in done.stdout
    root = assert_one_loop_flagged(receiver)
    tools = [s for s in receiver.spans if s.name == "execute_tool fetch_status"]
    assert len(tools) == steps and root.attributes["semloop.action"] == "stop"


def test_the_collector_pipeline_scores_an_unaware_app(receiver, tmp_path):
    """``otel-semloop serve`` with the repository's sample config, the app exporting to it."""
    grpc_port, http_port = free_port(), free_port()
    service = subprocess.Popen(
        [
            sys.executable, "-m", "otel_semloop", "serve", "--config", "collector/semloop-serve.toml",
            "--grpc", f"127.0.0.1:{grpc_port}", "--http", f"127.0.0.1:{http_port}",
            "--export-endpoint", receiver.endpoint, "--grace", "0.2",
        ],
        env=example_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for_port(grpc_port, service)
        done = run(
            [sys.executable, "examples/collector/agent.py"],
            example_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{grpc_port}"),
        )
        root = assert_one_loop_flagged(receiver)
        assert f"looping trace {root.trace_id}" in done.stdout
        healthy = done.stdout.split("healthy trace ")[1].split()[0]
        healthy_spans = [s for s in receiver.spans if s.trace_id == healthy]
        assert healthy_spans, f"no span of the healthy trace {healthy} arrived"
        healthy_roots = [s for s in healthy_spans if s.attributes.get("semloop.label")]
        assert [s.attributes["semloop.label"] for s in healthy_roots] == ["no_loop"]
        assert not any(s.attributes.get("semloop.loop.detected") for s in healthy_spans)
    finally:
        service.send_signal(signal.SIGTERM)
        output, _ = service.communicate(timeout=60)
    assert service.returncode == 0, output


def test_batch_rescoring_of_the_sample_export(tmp_path):
    scored = tmp_path / "scored.otlp.jsonl"
    run(
        [
            sys.executable,
            "-m",
            "otel_semloop",
            "rescore",
            "examples/agent_traces.otlp.jsonl",
            "-o",
            str(scored),
        ],
        example_env(),
    )
    done = run([sys.executable, "examples/rescore/show_verdicts.py", str(scored)], example_env())
    assert done.stdout.strip().endswith("2 trace(s) with semloop.loop.detected=true"), done.stdout
    assert done.stdout.count(" no_loop ") == 2


def wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 30.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listening on {port}")
