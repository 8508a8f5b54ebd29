"""The README's "Get alerted" rules, checked on the metrics a running service exports.

An application instrumented with the OpenTelemetry SDK sends its agents' spans over OTLP/gRPC
to ``serve`` (two agents loop, one does not; ``tests/support/agent_spans.py`` says what each
round spends). The service exports its metrics both ways an operator reads them: Prometheus
(its ``/metrics`` endpoint, scraped here) and OTLP with delta temporality (to a real OTLP
metrics receiver on loopback, as Honeycomb ingests them). Then:

* ``examples/alerting/semloop.rules.yml`` is run by ``promtool test rules`` (Debian's
  ``prometheus`` package; .ci/run installs it) over series made of the scraped samples: the
  loop alert fires for each looping agent and signal, and not for the healthy agent; the
  token alert stays quiet on two loops and fires once the scraped per-loop spend has repeated
  past its threshold within the hour (and not before).
* ``examples/alerting/honeycomb-loops.trigger.json``'s query is evaluated over the received
  data points as Honeycomb evaluates it over events (filter, group by the breakdowns, the
  calculation, the threshold): it fires for the two looping agents only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

from otel_semloop.service import ServiceConfig, ServiceThread
from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import MetricsReceiver, config_for, wait_for
from tests.support.agent_spans import search_agent

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "alerting"
RULES = EXAMPLES / "semloop.rules.yml"
TRIGGER = EXAMPLES / "honeycomb-loops.trigger.json"
PROMTOOL = shutil.which("promtool")
SAME = "3 matches: 'upstream request timeout after 30s'"
#: (agent, search results): two loops and a healthy run.
RUNS = [
    ("researcher", [SAME] * 8),
    ("writer", [SAME] * 6),
    ("reporter", ["2 new lines", "5 new lines", "the build log"]),
]
SPANS = sum(1 + 2 * len(results) for _, results in RUNS)
#: Tokens a loop of n searches burns from its onset: rounds 2..n, 100*k in and 20 out each.
LOOP_TOKENS = {"researcher": 100 * sum(range(2, 9)) + 20 * 7, "writer": 100 * sum(range(2, 7)) + 20 * 5}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(the Prometheus scrape, the OTLP delta data points) after the runs were scored."""
    monkeypatch = pytest.MonkeyPatch()
    try:
        with MetricsReceiver() as receiver:
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", f"http://127.0.0.1:{receiver.port}")
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
            monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
            with GrpcOtlpReceiver() as downstream:
                plain = config_for(downstream)
                base = {
                    f.name: getattr(plain, f.name)
                    for f in dataclasses.fields(plain)
                    if f.name not in ("prometheus", "metrics_exporter")
                }
                environ = {"OTEL_METRICS_EXPORTER": "otlp,prometheus", "OTEL_EXPORTER_PROMETHEUS_PORT": "0"}
                config = ServiceConfig.load(environ=environ, **base)
                with ServiceThread(config) as service:
                    provider = TracerProvider()
                    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc_port}", insecure=True)
                    provider.add_span_processor(SimpleSpanProcessor(exporter))
                    for name, results in RUNS:
                        search_agent(provider.get_tracer("app"), results, name=name)
                    provider.shutdown()
                    wait_for(lambda: len(downstream.spans) >= SPANS, 20, "every span forwarded")
                    wait_for(
                        lambda: sum(e.get("semloop.loops", 0) for e in receiver.events()) >= 2,
                        20,
                        "the loops in the OTLP metrics",
                    )
                    scrape = httpx.get(f"http://127.0.0.1:{service.service.prometheus_port}/metrics").text
    finally:
        monkeypatch.undo()
    yield scrape, receiver.events()


def samples(scrape: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The scraped samples of metric ``name`` (labels, value)."""
    out = []
    for family in text_string_to_metric_families(scrape):
        for sample in family.samples:
            if sample.name == name:
                out.append((dict(sample.labels), float(sample.value)))
    return out


def series(name: str, labels: dict[str, str]) -> str:
    inner = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    return f"{name}{{{inner}}}"


def promtool_test(tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    rules = tmp_path / "semloop.rules.yml"
    shutil.copy(RULES, rules)
    spec = tmp_path / "semloop.test.yml"
    spec.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests}))
    return subprocess.run(
        [PROMTOOL, "test", "rules", spec.name], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )


def test_the_service_exports_the_loop_counters_prometheus_reads(exported) -> None:
    scrape, _ = exported
    loops = samples(scrape, "semloop_loops_total")
    by_agent = {labels["gen_ai_agent_name"]: value for labels, value in loops}
    assert by_agent == {"researcher": 1.0, "writer": 1.0}
    assert {labels["semloop_signal"] for labels, _ in loops} == {"action_cycle"}
    tokens = defaultdict(float)
    for labels, value in samples(scrape, "semloop_loop_tokens_burned_total"):
        tokens[labels["gen_ai_agent_name"]] += value
    assert dict(tokens) == LOOP_TOKENS


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian's prometheus package)")
def test_the_loop_alert_fires_for_each_looping_agent_and_no_other(exported, tmp_path) -> None:
    scrape, _ = exported
    input_series = [
        {"series": series("semloop_loops_total", labels), "values": f"0 {value:g}"}
        for labels, value in samples(scrape, "semloop_loops_total")
    ]
    expected = [
        {
            "exp_labels": {
                "severity": "warning",
                "gen_ai_agent_name": agent,
                "semloop_signal": "action_cycle",
            },
            "exp_annotations": {"summary": f"Agent {agent} is looping (action_cycle)"},
        }
        for agent in ("researcher", "writer")
    ]
    done = promtool_test(
        tmp_path,
        [
            {
                "interval": "1m",
                "input_series": input_series,
                "alert_rule_test": [
                    {"eval_time": "1m", "alertname": "AgentLoopDetected", "exp_alerts": expected}
                ],
            }
        ],
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian's prometheus package)")
def test_the_token_alert_fires_once_the_scraped_spend_repeats_past_its_threshold(exported, tmp_path) -> None:
    scrape, _ = exported
    rule = yaml.safe_load(RULES.read_text())["groups"][0]["rules"][1]
    threshold = float(rule["expr"].rsplit(">", 1)[1])
    scraped = samples(scrape, "semloop_loop_tokens_burned_total")
    researcher = [(labels, value) for labels, value in scraped if labels["gen_ai_agent_name"] == "researcher"]
    per_loop = sum(value for _, value in researcher)
    loops_to_fire = math.floor(threshold / per_loop) + 1  # the first whole loop past the threshold
    repeated = [
        {
            "series": series("semloop_loop_tokens_burned_total", labels),
            "values": f"0+{value:g}x{loops_to_fire + 5}",
        }
        for labels, value in researcher
    ]
    once = [
        {"series": series("semloop_loop_tokens_burned_total", labels), "values": f"0 {value:g}"}
        for labels, value in scraped
    ]
    burned = _humanize(loops_to_fire * per_loop)
    fired = {
        "exp_labels": {"severity": "page", "gen_ai_agent_name": "researcher"},
        "exp_annotations": {"summary": f"Loops of agent researcher burned {burned} tokens in the last hour"},
    }
    done = promtool_test(
        tmp_path,
        [
            {
                "interval": "1m",
                "input_series": once,
                "alert_rule_test": [
                    {"eval_time": "1m", "alertname": "AgentLoopsBurningTokens", "exp_alerts": []}
                ],
            },
            {
                "interval": "1m",
                "input_series": repeated,
                "alert_rule_test": [
                    {
                        "eval_time": f"{loops_to_fire - 1}m",
                        "alertname": "AgentLoopsBurningTokens",
                        "exp_alerts": [],
                    },
                    {
                        "eval_time": f"{loops_to_fire}m",
                        "alertname": "AgentLoopsBurningTokens",
                        "exp_alerts": [fired],
                    },
                ],
            },
        ],
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _humanize(value: float) -> str:
    """Prometheus's ``humanize`` template function for values from 1000 to 1e6: ``109.2k``."""
    return f"{value / 1000:.4g}k"


def evaluate_trigger(trigger: dict[str, Any], events: list[dict[str, Any]]) -> dict[tuple[str, ...], float]:
    """A trigger's query over events as Honeycomb runs it: the filters (``=`` and ``exists``,
    combined with AND), grouped by the breakdowns, one calculation (``SUM`` or ``COUNT``);
    the groups whose result passes the threshold."""
    query = trigger["query"]
    assert query.get("filter_combination", "AND") == "AND"
    (calculation,) = query["calculations"]
    groups: dict[tuple[str, ...], float] = defaultdict(float)
    for event in events:
        if not all(_passes(event, f) for f in query["filters"]):
            continue
        if calculation["op"] == "SUM" and calculation["column"] not in event:
            continue
        key = tuple(str(event.get(column, "")) for column in query["breakdowns"])
        groups[key] += event[calculation["column"]] if calculation["op"] == "SUM" else 1
    op, limit = trigger["threshold"]["op"], trigger["threshold"]["value"]
    compare = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__}[op]
    return {key: total for key, total in groups.items() if compare(float(total), float(limit))}


def _passes(event: dict[str, Any], spec: dict[str, Any]) -> bool:
    if spec["op"] == "exists":
        return spec["column"] in event
    assert spec["op"] == "=", spec
    return event.get(spec["column"]) == spec["value"]


def test_the_honeycomb_trigger_fires_for_each_looping_agent_and_no_other(exported) -> None:
    _, events = exported
    trigger = json.loads(TRIGGER.read_text())
    assert 60 <= trigger["frequency"] <= trigger["query"]["time_range"] <= 4 * trigger["frequency"]
    columns = {key for event in events for key in event}
    named = {c["column"] for c in trigger["query"]["calculations"]} | {
        f["column"] for f in trigger["query"]["filters"]
    }
    assert named | set(trigger["query"]["breakdowns"]) <= columns  # only columns the service exports
    assert evaluate_trigger(trigger, events) == {
        ("researcher", "action_cycle"): 1,
        ("writer", "action_cycle"): 1,
    }


def test_the_honeycomb_trigger_stays_quiet_without_loops(exported) -> None:
    _, events = exported
    trigger = json.loads(TRIGGER.read_text())
    quiet = [event for event in events if "semloop.loops" not in event]
    assert quiet and evaluate_trigger(trigger, quiet) == {}
