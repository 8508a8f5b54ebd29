"""A judge slower than the scoring budget, in the two front doors that hold spans: every span
still goes out exactly once, in time, with the deterministic verdict and
``semloop.judge.error=timeout``; the late answer changes nothing and duplicates nothing."""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_semloop import SemloopSpanProcessor
from otel_semloop.judges import Escalation, Judge
from otel_semloop.judges.backends.scripted import ScriptedBackend
from otel_semloop.judges.settings import scorer_with_judge

#: Generous for a loaded CI machine (load ~10 on 2 cores): the deterministic verdict must be
#: ready well within the budget, and the judge's answer (if it came) well after it.
BUDGET = 1.5
JUDGE_DELAY = 5.0
STUCK = {"progress": 0.05, "revisit": 0.9, "tool_repeat": 0.9}


def slow_judge() -> tuple[Any, ScriptedBackend]:
    backend = ScriptedBackend(STUCK, delay=JUDGE_DELAY)
    judge = Judge(backend, timeout=30.0)
    return scorer_with_judge(
        judge, budget_seconds=BUDGET, environ={"SEMLOOP_JUDGE_ESCALATE": "always"}
    ), backend


def run_agents(provider: TracerProvider) -> None:
    """A looping agent (the same search, nothing found), a healthy one, and a plain HTTP trace."""
    tracer = provider.get_tracer("front-doors")
    for kind in ("loop", "healthy"):
        with tracer.start_as_current_span(
            "invoke_agent research", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            for i in range(6):
                with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
                    pass
                topic = "same topic" if kind == "loop" else f"topic {i}"
                result = "no results" if kind == "loop" else f"{i + 3} papers on topic {i}"
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": f'{{"q": "{topic}"}}',
                    "gen_ai.tool.call.result": result,
                }
                with tracer.start_as_current_span("execute_tool search", attributes=attributes):
                    pass
    with tracer.start_as_current_span("GET /health"):
        pass


def assert_deterministic_and_once(spans: list[Any], produced: int) -> None:
    counts = Counter(s["span_id"] for s in spans)
    assert len(spans) == produced and all(n == 1 for n in counts.values()), counts.most_common(3)
    roots = {s["trace_id"]: s["attributes"] for s in spans if s["name"] == "invoke_agent research"}
    labels = sorted(a["semloop.label"] for a in roots.values())
    assert labels == ["loop", "no_loop"]
    for attrs in roots.values():
        assert attrs["semloop.judge.error"] == "timeout"
        assert attrs["semloop.judge.status"] == "error"
        assert "semloop.judge.score" not in attrs


def test_the_processor_forwards_every_span_once_with_the_deterministic_verdict_when_the_judge_is_late(
    monkeypatch,
):
    monkeypatch.setenv("SEMLOOP_JUDGE_ESCALATE", "always")
    scorer, backend = slow_judge()
    produced, exported = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(produced))
    reader = InMemoryMetricReader()
    processor = SemloopSpanProcessor(
        SimpleSpanProcessor(exported),
        judge=scorer.judge,
        grace_seconds=0.05,
        scoring_budget_seconds=BUDGET,
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    provider.add_span_processor(processor)
    started = time.monotonic()
    run_agents(provider)
    total = len(produced.get_finished_spans())
    deadline = time.monotonic() + 10
    while len(exported.get_finished_spans()) < total and time.monotonic() < deadline:
        time.sleep(0.02)
    forwarded_in = time.monotonic() - started
    assert forwarded_in < JUDGE_DELAY  # out within the budget, not after the judge
    time.sleep(max(0.0, started + JUDGE_DELAY + 0.5 - time.monotonic()))  # past any late answer
    provider.shutdown()
    spans = [
        {
            "span_id": s.context.span_id,
            "trace_id": s.context.trace_id,
            "name": s.name,
            "attributes": dict(s.attributes or {}),
        }
        for s in exported.get_finished_spans()
    ]
    assert_deterministic_and_once(spans, total)
    assert len(backend.requests) == 2  # one request per agent trace, none for the HTTP trace
    judged = {
        dict(point.attributes)["semloop.judge.status"]: point.value
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == "semloop.judge.traces"
        for point in metric.data.data_points
    }
    assert judged == {"error": 2}  # self-metrics count the judge's outcome per trace
    scorer.judge.close()


class _Receiver:
    """A minimal OTLP/HTTP protobuf receiver on loopback that keeps every span it gets."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                with lock:
                    for rs in request.resource_spans:
                        for ss in rs.scope_spans:
                            for span in ss.spans:
                                attrs = {kv.key: _value(kv.value) for kv in span.attributes}
                                receiver.spans.append(
                                    {
                                        "span_id": span.span_id,
                                        "trace_id": span.trace_id,
                                        "name": span.name,
                                        "attributes": attrs,
                                    }
                                )
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1/traces"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _value(value: Any) -> Any:
    field = value.WhichOneof("value")
    return getattr(value, field) if field else None


def test_the_service_forwards_every_span_once_with_the_deterministic_verdict_when_the_judge_is_late():
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from otel_semloop.service import ServiceConfig, ServiceThread

    scorer, backend = slow_judge()
    downstream = _Receiver()
    config = ServiceConfig(
        grpc="",
        http="127.0.0.1:0",
        export_endpoint=downstream.endpoint,
        export_protocol="http/protobuf",
        grace_seconds=0.1,
        tick_seconds=0.02,
        scoring_budget_seconds=BUDGET,
        scoring_threads=2,
        export_timeout=2.0,
        shutdown_timeout_seconds=5.0,
    )
    service = ServiceThread(config, scorer=scorer).start()
    try:
        produced = InMemorySpanExporter()
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(SimpleSpanProcessor(produced))
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces"))
        )
        started = time.monotonic()
        run_agents(provider)
        total = len(produced.get_finished_spans())
        deadline = time.monotonic() + 15
        while len(downstream.spans) < total and time.monotonic() < deadline:
            time.sleep(0.02)
        assert time.monotonic() - started < JUDGE_DELAY
        time.sleep(max(0.0, started + JUDGE_DELAY + 0.5 - time.monotonic()))  # past any late answer
        provider.shutdown()
    finally:
        service.stop()
        downstream.close()
        scorer.judge.close()
    assert_deterministic_and_once(downstream.spans, total)
    assert len(backend.requests) == 2


def test_the_processor_reads_its_judge_from_the_environment(monkeypatch):
    import pytest

    from otel_semloop.errors import ConfigError
    from otel_semloop.judges import JudgedScorer

    monkeypatch.setenv("SEMLOOP_JUDGE", "no-such-judge")
    with pytest.raises(ConfigError):
        SemloopSpanProcessor(SimpleSpanProcessor(InMemorySpanExporter()))
    monkeypatch.setenv("SEMLOOP_JUDGE", "none")
    processor = SemloopSpanProcessor(SimpleSpanProcessor(InMemorySpanExporter()))
    assert not isinstance(processor._scorer, JudgedScorer)
    processor.shutdown()
    monkeypatch.setenv("SEMLOOP_JUDGE", "openai")
    monkeypatch.setenv("SEMLOOP_JUDGE_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SEMLOOP_JUDGE_ESCALATE", "0.5")
    processor = SemloopSpanProcessor(SimpleSpanProcessor(InMemorySpanExporter()), scoring_budget_seconds=2.0)
    scorer = processor._scorer
    assert isinstance(scorer, JudgedScorer) and scorer.judge.name == "openai"
    assert scorer.escalation == Escalation("rate", 0.5) and scorer.budget_seconds == 2.0
    processor.shutdown()


class _ArrivalsBackend(ScriptedBackend):
    """The slow scripted judge, noting when each request arrives."""

    def __init__(self) -> None:
        super().__init__(STUCK, delay=JUDGE_DELAY)
        self.arrivals: list[float] = []

    async def ask(self, request: Any, deadline: float | None = None) -> Any:
        self.arrivals.append(time.monotonic())
        return await super().ask(request, deadline)


def test_with_a_judge_the_processor_scores_two_traces_side_by_side(monkeypatch):
    # With one scoring thread, a trace waiting for the judge would hold back the next one
    # until its budget ran out (the next trace's budget then spent queueing).
    monkeypatch.setenv("SEMLOOP_JUDGE_ESCALATE", "always")
    backend = _ArrivalsBackend()
    scorer = scorer_with_judge(
        Judge(backend, timeout=30.0), budget_seconds=BUDGET, environ={"SEMLOOP_JUDGE_ESCALATE": "always"}
    )
    exported = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    processor = SemloopSpanProcessor(
        SimpleSpanProcessor(exported), judge=scorer.judge, grace_seconds=0.05, scoring_budget_seconds=BUDGET
    )
    provider.add_span_processor(processor)
    run_agents(provider)
    deadline = time.monotonic() + 10
    while len(backend.arrivals) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    provider.shutdown()
    assert len(backend.arrivals) == 2
    assert backend.arrivals[1] - backend.arrivals[0] < BUDGET / 2
