"""Configuration: constructor arguments and SEMLOOP_* variables, bad values named; the
zero-code configurator."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import SpanProcessor

from otel_semloop.errors import ConfigError
from otel_semloop.processor import SemloopSpanProcessor
from otel_semloop.processor.config import Config, GuardMode

ROOT = Path(__file__).resolve().parents[2]
#: A safety net, not a bound on the product: ``opentelemetry-instrument`` imports every
#: installed instrumentation (about 7 s of CPU here), which on a machine shared by busy
#: processes took over a minute of wall time.
LOADED_MACHINE_TIMEOUT = 300


def test_defaults_without_environment() -> None:
    config = Config.from_env({})
    assert config == Config()
    assert config.live_guard is GuardMode.OFF and config.enabled


def test_every_knob_has_an_environment_variable() -> None:
    env = {
        "SEMLOOP_ENABLED": "false",
        "SEMLOOP_GRACE_SECONDS": "0.25",
        "SEMLOOP_IDLE_SECONDS": "30",
        "SEMLOOP_MAX_AGE_SECONDS": "600",
        "SEMLOOP_MAX_TRACES": "50",
        "SEMLOOP_MAX_SPANS_PER_TRACE": "500",
        "SEMLOOP_MAX_SPANS": "5000",
        "SEMLOOP_RECENT_TRACES": "64",
        "SEMLOOP_SCORING_BUDGET_SECONDS": "2.5",
        "SEMLOOP_SCORING_THREADS": "2",
        "SEMLOOP_MAX_STUCK_SCORERS": "0",
        "SEMLOOP_TICK_SECONDS": "0.05",
        "SEMLOOP_SHUTDOWN_TIMEOUT_SECONDS": "3",
        "SEMLOOP_LIVE_GUARD": "Stop",
        "SEMLOOP_MAX_LOG_EVENTS": "7",
    }
    config = Config.from_env(env)
    assert config == Config(
        enabled=False,
        grace_seconds=0.25,
        idle_seconds=30.0,
        max_age_seconds=600.0,
        max_traces=50,
        max_spans_per_trace=500,
        max_spans=5000,
        recent_traces=64,
        scoring_budget_seconds=2.5,
        scoring_threads=2,
        max_stuck_scorers=0,
        tick_seconds=0.05,
        shutdown_timeout_seconds=3.0,
        live_guard=GuardMode.STOP,
        max_log_events=7,
    )


def test_constructor_arguments_override_the_environment() -> None:
    config = Config.from_env({"SEMLOOP_MAX_TRACES": "50", "SEMLOOP_GRACE_SECONDS": "2"}, max_traces=7)
    assert (config.max_traces, config.grace_seconds) == (7, 2.0)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SEMLOOP_GRACE_SECONDS", "soon"),
        ("SEMLOOP_GRACE_SECONDS", "-1"),
        ("SEMLOOP_IDLE_SECONDS", "0"),
        ("SEMLOOP_MAX_TRACES", "0"),
        ("SEMLOOP_MAX_TRACES", "1.5"),
        ("SEMLOOP_SCORING_BUDGET_SECONDS", "inf"),
        ("SEMLOOP_LIVE_GUARD", "kill"),
        ("SEMLOOP_ENABLED", "maybe"),
    ],
)
def test_a_bad_environment_value_raises_config_error_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        Config.from_env({variable: value})


def test_a_bad_argument_raises_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="max_spans_per_trace"):
        SemloopSpanProcessor(SpanProcessor(), max_spans_per_trace=0)
    with pytest.raises(ConfigError, match="live_guard"):
        Config(live_guard="loud")  # type: ignore[arg-type]


def test_an_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="grace"):
        SemloopSpanProcessor(SpanProcessor(), grace=1)


def test_the_processor_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMLOOP_MAX_TRACES", "42")
    processor = SemloopSpanProcessor(SpanProcessor())
    try:
        assert processor.config.max_traces == 42
    finally:
        processor.shutdown()


def test_a_config_object_with_option_overrides() -> None:
    processor = SemloopSpanProcessor(SpanProcessor(), config=Config(max_traces=5), grace_seconds=0.1)
    try:
        assert (processor.config.max_traces, processor.config.grace_seconds) == (5, 0.1)
    finally:
        processor.shutdown()


AGENT = textwrap.dedent(
    """
    import json
    from opentelemetry import trace
    from otel_semloop.processor.autoconfig import SemloopConfigurator

    SemloopConfigurator().configure()
    provider = trace.get_tracer_provider()
    tracer = trace.get_tracer("agent")
    with tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
    ):
        for _ in range(8):
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": '{"q": "x"}',
                    "gen_ai.tool.call.result": "nothing",
                },
            ):
                pass
    processors = provider._active_span_processor._span_processors
    print("PROCESSORS", json.dumps([type(p).__name__ for p in processors]))
    provider.shutdown()
    """
)


#: The same loop with its content only in GenAI log records (as openai-v2 emits it).
AGENT_LOGS = textwrap.dedent(
    """
    import json
    from opentelemetry import _logs, trace
    from otel_semloop.processor.autoconfig import SemloopConfigurator

    SemloopConfigurator().configure()
    provider = trace.get_tracer_provider()
    tracer = trace.get_tracer("agent")
    logger = _logs.get_logger("openai")
    chat = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}
    search = {"name": "search", "arguments": '{"q": "x"}'}
    with tracer.start_as_current_span("POST /triage"):
        for i in range(8):
            with tracer.start_as_current_span("chat m", attributes=chat):
                for j in range(i):
                    calls = [{"id": f"c{j}", "type": "function", "function": search}]
                    logger.emit(event_name="gen_ai.assistant.message", body={"tool_calls": calls})
                    logger.emit(event_name="gen_ai.tool.message", body={"content": "nothing", "id": f"c{j}"})
                calls = [{"id": f"c{i}", "type": "function", "function": search}]
                choice = {"index": 0, "message": {"role": "assistant", "tool_calls": calls}}
                logger.emit(event_name="gen_ai.choice", body=choice)
    processors = _logs.get_logger_provider()._multi_log_record_processor._log_record_processors
    print("LOG PROCESSORS", json.dumps([type(p).__name__ for p in processors]))
    provider.shutdown()
    """
)


def run_configured(extra_env: dict[str, str], agent: str = AGENT) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "PYTHONPATH": str(ROOT),
        **extra_env,
    }
    return subprocess.run(
        [sys.executable, "-c", agent],
        env=env,
        capture_output=True,
        text=True,
        timeout=LOADED_MACHINE_TIMEOUT,
        check=True,
    )


def test_the_configurator_wraps_the_exporter_in_semloop() -> None:
    result = run_configured({"SEMLOOP_GRACE_SECONDS": "0.05"})
    assert 'PROCESSORS ["SemloopSpanProcessor"]' in result.stdout
    assert '"semloop.label": "loop"' in result.stdout  # the console exporter printed the verdict


def test_the_configurator_adds_the_log_record_processor_so_content_in_log_records_is_read() -> None:
    result = run_configured({"SEMLOOP_GRACE_SECONDS": "0.05"}, AGENT_LOGS)
    assert 'LOG PROCESSORS ["SemloopLogProcessor"]' in result.stdout
    assert '"semloop.label": "loop"' in result.stdout


def test_the_configurator_can_be_disabled_by_environment() -> None:
    result = run_configured({"SEMLOOP_ENABLED": "false"})
    assert 'PROCESSORS ["BatchSpanProcessor"]' in result.stdout
    assert "semloop.label" not in result.stdout


def test_opentelemetry_instrument_runs_an_unmodified_app_through_semloop(tmp_path: Path) -> None:
    """Zero-code: the ``opentelemetry_configurator`` entry point (declared here by a stub
    distribution, as the package's own metadata declares it) is picked by
    ``opentelemetry-instrument`` and wraps the console exporter."""
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    if not instrument.exists():
        pytest.skip("opentelemetry-instrument is not installed")
    dist = tmp_path / "semloop_entrypoints-0.0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: semloop-entrypoints\nVersion: 0.0.0\n")
    (dist / "entry_points.txt").write_text(
        "[opentelemetry_configurator]\nsemloop = otel_semloop.processor.autoconfig:SemloopConfigurator\n"
    )
    app = tmp_path / "agent.py"
    app.write_text(
        AGENT.replace("from otel_semloop.processor.autoconfig import SemloopConfigurator\n", "").replace(
            "SemloopConfigurator().configure()\n", ""
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "OTEL_PYTHON_CONFIGURATOR": "semloop",
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "SEMLOOP_GRACE_SECONDS": "0.05",
    }
    result = subprocess.run(
        [str(instrument), sys.executable, str(app)],
        env=env,
        capture_output=True,
        text=True,
        timeout=LOADED_MACHINE_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert 'PROCESSORS ["SemloopSpanProcessor"]' in result.stdout
    assert '"semloop.label": "loop"' in result.stdout


def test_the_processor_is_part_of_the_public_api() -> None:
    import otel_semloop

    assert otel_semloop.SemloopSpanProcessor is SemloopSpanProcessor
    assert "SemloopSpanProcessor" in otel_semloop.__all__
