"""End to end against a real OTLP backend: Arize Phoenix, run locally from PyPI.

Run it (in a virtualenv of its own: Phoenix pulls in a lot)::

    pip install -e '.[test,phoenix]'
    python -m pytest -p no:phoenix -m phoenix_e2e tests/e2e/test_e2e_phoenix.py

Skipped, with the reason shown, when ``arize-phoenix`` is not installed (the default
suite's case). Checking for it costs nothing: the test process never imports Phoenix
(``import phoenix`` alone takes seconds); the server runs as a subprocess.

The marker is ``phoenix_e2e``, not ``phoenix``: ``arize-phoenix-client`` (a dependency of
``arize-phoenix``) registers a pytest plugin named ``phoenix`` that owns
``@pytest.mark.phoenix`` and records every test so marked as a Phoenix experiment run,
posting it to a Phoenix server. ``-p no:phoenix`` turns that plugin off, which also saves
about 8 s of imports at collection.

What happens, once per module (about 10 s in all on an idle machine; Phoenix's startup, ~7 s,
dominates; over a minute on a loaded one):

1. ``phoenix serve`` starts on loopback with free ports, a tmp working dir (SQLite) and
   its telemetry and outbound features off (see :mod:`e2e.phoenix_server`).
2. A ``TracerProvider`` whose resource names a unique Phoenix project
   (``openinference.project.name``) exports through
   ``SemloopSpanProcessor(BatchSpanProcessor(OTLPSpanExporter(<phoenix>/v1/traces)))``
   (OTLP/HTTP protobuf); an ``InMemorySpanExporter`` on the same provider records what
   the application produced, and a thin wrapper around the OTLP exporter records what
   went over the wire.
3. Two hand-written agent runs with OpenInference attributes: a looping one (the same
   ``search_logs({"query": "timeout"})`` call, same result, 8 times) and a healthy one
   (different calls, different results, a final answer). Then ``force_flush`` and
   ``shutdown``.
4. The tests read back what Phoenix stored through its REST API
   (``GET /v1/projects/{project}/spans``), polling while ingestion catches up.

Phoenix keeps the first copy of a span id and silently drops later ones (``ON CONFLICT
DO NOTHING``), so "stored once" alone cannot catch a duplicate; the wire record can, and
a verdict found on a stored root proves the verdict copy was the first one sent.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

try:
    PHOENIX_VERSION = metadata.version("arize-phoenix")
except metadata.PackageNotFoundError:
    pytest.skip(
        "arize-phoenix is not installed; to run: pip install -e '.[test,phoenix]' && "
        "python -m pytest -p no:phoenix -m phoenix_e2e tests/e2e/test_e2e_phoenix.py",
        allow_module_level=True,
    )

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from otel_semloop import SemloopSpanProcessor
from tests.e2e.browser import Chromium, chromium_path
from tests.e2e.fixtures import hex_span_id, hex_trace_id
from tests.e2e.phoenix_server import PhoenixServer

pytestmark = pytest.mark.phoenix_e2e

LOOP_ROUNDS = 8
LOOP_TOOL = "search_logs"
LOOP_ARGS = {"query": "timeout"}
LOOP_RESULT = "no matches for 'timeout' in the last hour"
#: Long enough (20+ meaningful words) for deepeval's reasoning-stagnation check to compare.
LOOP_THOUGHT = (
    "Checkout requests are still timing out and I have not found the cause yet. I will search "
    "the service logs for timeout errors once more to find which upstream dependency is slow, "
    "then summarise the root cause and recommend a concrete remediation for the on-call team."
)
THRESHOLD = 0.5
EVALUATION_EVENT = "gen_ai.evaluation.result"
#: Bounded waits: Phoenix's startup (about 7 s idle, 80 s on a loaded 2-core machine), then
#: its async ingestion.
STARTUP_TIMEOUT = 180.0
INGEST_TIMEOUT = 30.0
ROOT_DIR = Path(__file__).resolve().parents[2]
README = (ROOT_DIR / "README.md").read_text(encoding="utf-8")
#: Where the screenshot test saves its picture (the README shows a copy, docs/images/).
SCREENSHOT_DIR = Path(os.environ.get("SEMLOOP_SCREENSHOT_DIR", ROOT_DIR / "out" / "screenshots"))
SCREENSHOT = SCREENSHOT_DIR / "phoenix-loop.png"


# -- what the test process sends ----------------------------------------------------------


class WireRecorder(SpanExporter):
    """Wraps the OTLP exporter and counts every span id it is asked to send."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent: Counter[str] = Counter()
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self.sent.update(hex_span_id(s) for s in spans)
        return self.inner.export(spans)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


@dataclass
class Emitted:
    """Both runs, as produced, as sent, and as Phoenix stored them."""

    project: str
    loop_trace_id: str
    healthy_trace_id: str
    produced: list[ReadableSpan]
    sent: Counter[str]
    stored: list[dict[str, Any]]
    flushed: bool
    seconds: dict[str, float] = field(default_factory=dict)

    def stored_in(self, trace_id: str) -> list[dict[str, Any]]:
        return [s for s in self.stored if s["context"]["trace_id"] == trace_id]

    def root_of(self, trace_id: str) -> dict[str, Any]:
        roots = [s for s in self.stored_in(trace_id) if not s.get("parent_id")]
        assert len(roots) == 1, f"expected one stored root for trace {trace_id}, got {len(roots)}"
        return roots[0]


# -- the agent runs (OpenInference attributes, written by hand) ----------------------------


def llm_step(tracer: Tracer, text: str, call: tuple[str, dict[str, Any]] | None = None) -> None:
    """An LLM span whose assistant message says ``text`` and may request one tool call."""
    with tracer.start_as_current_span("ChatCompletion") as span:
        span.set_attribute("openinference.span.kind", "LLM")
        span.set_attribute("llm.model_name", "fake-gpt")
        span.set_attribute("llm.output_messages.0.message.role", "assistant")
        span.set_attribute("llm.output_messages.0.message.content", text)
        if call is not None:
            name, args = call
            prefix = "llm.output_messages.0.message.tool_calls.0.tool_call.function"
            span.set_attribute(f"{prefix}.name", name)
            span.set_attribute(f"{prefix}.arguments", json.dumps(args))


def tool_step(tracer: Tracer, name: str, args: dict[str, Any], result: str) -> None:
    """A TOOL span: its name, JSON arguments and result."""
    with tracer.start_as_current_span(name) as span:
        span.set_attribute("openinference.span.kind", "TOOL")
        span.set_attribute("tool.name", name)
        span.set_attribute("input.value", json.dumps(args))
        span.set_attribute("input.mime_type", "application/json")
        span.set_attribute("output.value", result)


def run_looping_agent(tracer: Tracer) -> str:
    with tracer.start_as_current_span("oncall-triage") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        root.set_attribute("input.value", "Why are checkout requests timing out since 09:00?")
        for _ in range(LOOP_ROUNDS):
            llm_step(tracer, LOOP_THOUGHT, (LOOP_TOOL, LOOP_ARGS))
            tool_step(tracer, LOOP_TOOL, LOOP_ARGS, LOOP_RESULT)
        return f"{root.get_span_context().trace_id:032x}"


HEALTHY_STEPS: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "I'll check the checkout error logs first.",
        "search_logs",
        {"query": "checkout 5xx"},
        "412 errors: pool",
    ),
    (
        "Errors mention the pool; let me look at latency.",
        "get_metrics",
        {"service": "checkout", "metric": "p99_latency"},
        "checkout p99_latency: 40ms until 09:00, 30000ms after (connection wait)",
    ),
    (
        "Connection waits: the pool may be too small. Reading the config.",
        "read_config",
        {"path": "checkout/db.yaml"},
        "checkout/db.yaml: max_connections: 10, acquire_timeout: 30s",
    ),
]
HEALTHY_ANSWER = "Root cause: the checkout DB pool (max_connections: 10) is exhausted since 09:00."


def run_healthy_agent(tracer: Tracer) -> str:
    with tracer.start_as_current_span("oncall-triage") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        root.set_attribute("input.value", "Why are checkout requests failing since 09:00?")
        for thought, name, args, result in HEALTHY_STEPS:
            llm_step(tracer, thought, (name, args))
            tool_step(tracer, name, args, result)
        llm_step(tracer, HEALTHY_ANSWER)
        root.set_attribute("output.value", HEALTHY_ANSWER)
        return f"{root.get_span_context().trace_id:032x}"


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    with PhoenixServer(tmp_path_factory.mktemp("phoenix"), startup_timeout=STARTUP_TIMEOUT) as server:
        yield server


@pytest.fixture(scope="module")
def emitted(phoenix: PhoenixServer) -> Emitted:
    with pytest.MonkeyPatch.context() as env:
        for name in [n for n in os.environ if n.startswith(("SEMLOOP_", "OTEL_"))]:
            env.delenv(name)  # the defaults and the options below, whatever the shell says
        for name in ("NO_PROXY", "no_proxy"):  # the exporter must reach loopback directly
            env.setenv(name, ",".join(filter(None, (os.environ.get(name), "127.0.0.1", "localhost"))))
        env.setenv("SEMLOOP_PHOENIX_URL", phoenix.base_url)  # verdicts as span annotations too
        return emit_and_read_back(phoenix)


def emit_and_read_back(phoenix: PhoenixServer) -> Emitted:
    project = f"semloop-e2e-{uuid.uuid4().hex[:12]}"
    seconds: dict[str, float] = {"phoenix_startup": phoenix.startup_seconds or 0.0}
    produced = InMemorySpanExporter()
    wire = WireRecorder(OTLPSpanExporter(endpoint=phoenix.otlp_http_endpoint, timeout=10))
    provider = TracerProvider(
        resource=Resource.create({"service.name": "e2e-agent", "openinference.project.name": project}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(produced))
    provider.add_span_processor(SemloopSpanProcessor(BatchSpanProcessor(wire), grace_seconds=0.1))
    tracer = provider.get_tracer("e2e.phoenix")

    started = time.monotonic()
    try:
        loop_trace_id = run_looping_agent(tracer)
        healthy_trace_id = run_healthy_agent(tracer)
        flushed = provider.force_flush(timeout_millis=20_000)
    finally:
        provider.shutdown()
    seconds["emit_flush_shutdown"] = time.monotonic() - started

    spans = list(produced.get_finished_spans())
    started = time.monotonic()
    # A stored span never changes (Phoenix ignores later copies), so once every id is
    # there, what is stored is final.
    stored = phoenix.wait_for_spans(project, {hex_span_id(s) for s in spans}, timeout=INGEST_TIMEOUT)
    seconds["ingest_wait"] = time.monotonic() - started
    return Emitted(
        project=project,
        loop_trace_id=loop_trace_id,
        healthy_trace_id=healthy_trace_id,
        produced=spans,
        sent=Counter(wire.sent),
        stored=stored,
        flushed=flushed,
        seconds=seconds,
    )


# -- the checks ----------------------------------------------------------------------------


def _why(root: dict[str, Any]) -> str:
    attrs = root.get("attributes") or {}
    found = ", ".join(f"{k}={v!r}" for k, v in sorted(attrs.items()) if k.startswith("semloop."))
    return found or f"no semloop.* attributes on the stored root {root['context']['span_id']}"


def test_every_emitted_span_is_sent_and_stored_exactly_once(emitted: Emitted) -> None:
    assert emitted.flushed, "force_flush timed out"
    produced = Counter(hex_span_id(s) for s in emitted.produced)
    assert len(produced) == (1 + 2 * LOOP_ROUNDS) + (1 + 2 * len(HEALTHY_STEPS) + 1)
    assert {hex_trace_id(s) for s in emitted.produced} == {emitted.loop_trace_id, emitted.healthy_trace_id}

    sent_twice = {k: n for k, n in emitted.sent.items() if n > 1}
    assert not sent_twice, f"spans exported more than once: {sent_twice}"
    assert set(emitted.sent) == set(produced), "exported span ids differ from produced ones"

    stored = Counter(s["context"]["span_id"] for s in emitted.stored)
    stored_twice = {k: n for k, n in stored.items() if n > 1}
    assert not stored_twice, f"spans stored more than once: {stored_twice}"
    missing = set(produced) - set(stored)
    assert not missing, f"{len(missing)} of {len(produced)} spans never stored in Phoenix: {sorted(missing)}"
    unexpected = set(stored) - set(produced)
    assert not unexpected, f"Phoenix stored spans the app never produced: {sorted(unexpected)}"


def test_stored_spans_keep_their_structure_and_attributes(emitted: Emitted) -> None:
    """Ids, parents, names and OpenInference attributes arrive as produced (Phoenix moves
    ``openinference.span.kind`` into its ``span_kind`` field)."""
    by_id = {s["context"]["span_id"]: s for s in emitted.stored}
    for span in emitted.produced:
        got = by_id[hex_span_id(span)]
        parent = f"{span.parent.span_id:016x}" if span.parent is not None else None
        assert (got["context"]["trace_id"], got.get("parent_id"), got["name"]) == (
            hex_trace_id(span),
            parent,
            span.name,
        )
        original = dict(span.attributes or {})
        assert got["span_kind"] == original.pop("openinference.span.kind")
        stored = got.get("attributes") or {}
        assert {k: stored.get(k) for k in original} == original, f"attributes of {span.name} changed"


def test_looping_run_root_says_loop(emitted: Emitted) -> None:
    root = emitted.root_of(emitted.loop_trace_id)
    attrs = root["attributes"]
    assert root["span_kind"] == "AGENT"
    assert attrs.get("semloop.loop.detected") is True, _why(root)
    assert attrs.get("semloop.label") == "loop", _why(root)
    score = attrs.get("semloop.score")
    assert isinstance(score, float) and 0.0 <= score < THRESHOLD, _why(root)
    # The same call, result and reasoning 8 times: deepeval's metric flags it too.
    deepeval = attrs.get("semloop.deepeval.score")
    assert isinstance(deepeval, float) and 0.0 <= deepeval < THRESHOLD, _why(root)


def test_looping_run_root_has_the_evaluation_event(emitted: Emitted) -> None:
    root = emitted.root_of(emitted.loop_trace_id)
    events = [e for e in root.get("events") or [] if e["name"] == EVALUATION_EVENT]
    assert len(events) == 1, f"expected one {EVALUATION_EVENT} event, got {root.get('events')}"
    event = events[0]["attributes"]
    assert event.get("gen_ai.evaluation.name"), event
    assert event.get("gen_ai.evaluation.score.label") == "loop", event
    assert event.get("gen_ai.evaluation.score.value") == root["attributes"]["semloop.score"], event
    assert (
        isinstance(event.get("gen_ai.evaluation.explanation"), str) and event["gen_ai.evaluation.explanation"]
    )


def test_looping_steps_are_marked_in_loop(emitted: Emitted) -> None:
    spans = emitted.stored_in(emitted.loop_trace_id)
    marked = [s for s in spans if (s.get("attributes") or {}).get("semloop.in_loop") is True]
    assert marked, "no span of the looping run carries semloop.in_loop=true"
    assert all(s.get("parent_id") for s in marked), "semloop.in_loop belongs on steps, not the root"
    tools = [s for s in marked if s["span_kind"] == "TOOL"]
    assert len(tools) >= LOOP_ROUNDS // 2, f"only {len(tools)} of {LOOP_ROUNDS} repeated tool calls marked"


def test_healthy_run_root_says_no_loop(emitted: Emitted) -> None:
    root = emitted.root_of(emitted.healthy_trace_id)
    attrs = root["attributes"]
    assert attrs.get("semloop.loop.detected") is False, _why(root)
    assert attrs.get("semloop.label") == "no_loop", _why(root)
    score = attrs.get("semloop.score")
    assert isinstance(score, float) and THRESHOLD <= score <= 1.0, _why(root)
    assert not any(
        (s.get("attributes") or {}).get("semloop.in_loop")
        for s in emitted.stored_in(emitted.healthy_trace_id)
    ), "a healthy run's step is marked in_loop"


def test_only_roots_carry_the_verdict(emitted: Emitted) -> None:
    for span in emitted.stored:
        if span.get("parent_id"):
            keys = {
                k for k in span.get("attributes") or {} if k.startswith("semloop.") and k != "semloop.in_loop"
            }
            assert not keys, f"verdict keys on non-root span {span['name']}: {sorted(keys)}"


# -- the verdict among Phoenix's annotations, its filters, and a picture -----------------------


def graphql_span_names(phoenix: PhoenixServer, project: str, condition: str) -> list[str]:
    """Names of the project's spans that Phoenix's own span filter ``condition`` selects."""
    projects = phoenix.client.get("/v1/projects").json()["data"]
    project_id = next(p["id"] for p in projects if p["name"] == project)
    query = (
        "query($id: ID!, $condition: String) { node(id: $id) { ... on Project {"
        " spans(first: 100, filterCondition: $condition) { edges { node { name } } } } } }"
    )
    body = {"query": query, "variables": {"id": project_id, "condition": condition}}
    answer = phoenix.client.post("/graphql", json=body).json()
    assert "errors" not in answer, answer
    return [edge["node"]["name"] for edge in answer["data"]["node"]["spans"]["edges"]]


def annotations_of(phoenix: PhoenixServer, project: str, span_id: str, timeout: float = 30.0) -> list[dict]:
    """The span's annotations, read through Phoenix's REST API (polled: the processor posts
    them from a background thread, after the spans)."""
    deadline = time.monotonic() + timeout
    while True:
        response = phoenix.client.get(
            f"/v1/projects/{project}/span_annotations", params={"span_ids": span_id}
        )
        response.raise_for_status()
        found = response.json()["data"]
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.25)


def test_looping_root_has_the_verdict_as_a_code_annotation(phoenix: PhoenixServer, emitted: Emitted) -> None:
    root = emitted.root_of(emitted.loop_trace_id)
    (annotation,) = annotations_of(phoenix, emitted.project, root["context"]["span_id"])
    assert annotation["name"] == "semloop.loop" and annotation["annotator_kind"] == "CODE"
    result = annotation["result"]
    assert result["label"] == "loop" and result["score"] == root["attributes"]["semloop.score"]
    assert result["explanation"] == root["attributes"]["semloop.reason"]
    assert annotation["identifier"] == "otel-semloop"


def test_healthy_root_has_a_no_loop_annotation(phoenix: PhoenixServer, emitted: Emitted) -> None:
    root = emitted.root_of(emitted.healthy_trace_id)
    (annotation,) = annotations_of(phoenix, emitted.project, root["context"]["span_id"])
    assert annotation["result"]["label"] == "no_loop" and annotation["result"]["score"] == 1.0


@pytest.mark.parametrize(
    "condition",
    [
        "annotations['semloop.loop'].label == 'loop'",
        "annotations['semloop.loop'].score < 0.5",
        "attributes['semloop']['label'] == 'loop'",
    ],
)
def test_the_readme_filters_find_the_looping_root_and_nothing_else(
    phoenix: PhoenixServer, emitted: Emitted, condition: str
) -> None:
    loop_root = emitted.root_of(emitted.loop_trace_id)["name"]
    assert graphql_span_names(phoenix, emitted.project, condition) == [loop_root]
    assert condition in README, "the README shows this filter"


def test_the_flat_attribute_filter_finds_nothing(phoenix: PhoenixServer, emitted: Emitted) -> None:
    """Why the README gives the nested form: Phoenix nests dotted attribute names."""
    assert graphql_span_names(phoenix, emitted.project, "attributes['semloop.label'] == 'loop'") == []


def test_screenshot_of_the_looping_trace_shows_verdict_and_annotation(
    phoenix: PhoenixServer, emitted: Emitted
) -> None:
    """Headless Chromium opens the looping trace in Phoenix's UI, shows the root span's
    attributes, and saves the picture the README shows (``SCREENSHOT``)."""
    assert chromium_path(), "chromium is not installed (apt-get install -y chromium; .ci/run does)"
    projects = phoenix.client.get("/v1/projects").json()["data"]
    project_id = next(p["id"] for p in projects if p["name"] == emitted.project)
    with Chromium(width=1600, height=1100) as browser:
        browser.open(f"{phoenix.base_url}/projects/{project_id}/traces/{emitted.loop_trace_id}")
        browser.wait_for_text(emitted.root_of(emitted.loop_trace_id)["name"], "semloop.loop", timeout=120)
        # The trace's panel (span tree, then the root's tabs) renders after the traces table.
        assert browser.click_text("Attributes", timeout=120), browser.text()[:2000]
        text = browser.wait_for_text("semloop.label", "semloop.loop.detected", "semloop.reason", timeout=30)
        time.sleep(1.0)  # let the table finish painting
        path = browser.screenshot(SCREENSHOT)
    assert "loop" in text.split("semloop.label", 1)[1][:40]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 30_000


def test_the_service_annotates_the_roots_it_scores(phoenix: PhoenixServer) -> None:
    """``otel-semloop serve`` between an application and Phoenix, with
    ``SEMLOOP_PHOENIX_URL``: the looping run's root is annotated too."""
    from otel_semloop.service import ServiceConfig, ServiceThread

    project = f"semloop-serve-{uuid.uuid4().hex[:12]}"
    config = ServiceConfig(
        grpc=None,
        http="127.0.0.1:0",
        export_endpoint=phoenix.base_url,
        export_protocol="http/protobuf",
        grace_seconds=0.1,
        tick_seconds=0.02,
        shutdown_timeout_seconds=10.0,
    )
    with pytest.MonkeyPatch.context() as env:
        for name in [n for n in os.environ if n.startswith(("SEMLOOP_", "OTEL_"))]:
            env.delenv(name)
        env.setenv("SEMLOOP_PHOENIX_URL", phoenix.base_url)
        with ServiceThread(config) as service:
            provider = TracerProvider(
                resource=Resource.create(
                    {"service.name": "e2e-agent", "openinference.project.name": project}
                ),
                shutdown_on_exit=False,
            )
            endpoint = f"http://127.0.0.1:{service.http_port}/v1/traces"
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, timeout=10)))
            loop_trace_id = run_looping_agent(provider.get_tracer("e2e.phoenix.serve"))
            provider.shutdown()
            stored = phoenix.spans(project)
            deadline = time.monotonic() + INGEST_TIMEOUT
            while not any(
                s["context"]["trace_id"] == loop_trace_id and not s.get("parent_id") for s in stored
            ):
                assert time.monotonic() < deadline, "the service's spans never reached Phoenix"
                time.sleep(0.25)
                stored = phoenix.spans(project)
            (root,) = [
                s for s in stored if s["context"]["trace_id"] == loop_trace_id and not s.get("parent_id")
            ]
            (annotation,) = annotations_of(phoenix, project, root["context"]["span_id"])
    assert annotation["annotator_kind"] == "CODE" and annotation["result"]["label"] == "loop"
    assert annotation["result"]["score"] == root["attributes"]["semloop.score"]


def test_rescore_annotates_the_roots_of_traces_phoenix_already_stores(
    phoenix: PhoenixServer, tmp_path
) -> None:
    """The sample export goes to Phoenix as it was recorded (no verdict); then
    ``otel-semloop rescore`` with ``SEMLOOP_PHOENIX_URL`` annotates the roots it scores."""
    import subprocess
    import sys

    import orjson
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_semloop.otlp import json_to_traces

    sample = ROOT_DIR / "examples" / "agent_traces.otlp.jsonl"
    for line in sample.read_bytes().splitlines():
        request = json_to_traces(orjson.loads(line), message_type=ExportTraceServiceRequest)
        response = phoenix.client.post(
            "/v1/traces",
            content=request.SerializeToString(),
            headers={"Content-Type": "application/x-protobuf"},
        )
        assert response.status_code < 300, response.text
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMLOOP_", "OTEL_"))}
    env.update(PYTHONPATH=str(ROOT_DIR), SEMLOOP_PHOENIX_URL=phoenix.base_url)
    done = subprocess.run(
        [sys.executable, "-m", "otel_semloop", "rescore", str(sample), "-o", str(tmp_path / "scored.jsonl")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "Phoenix annotations: 4 stored" in done.stderr, done.stderr
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    roots = {
        span["spanId"]: {a["key"]: a["value"] for a in span["attributes"]}
        for batch in scored
        for resource in batch["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        if any(a["key"] == "semloop.label" for a in span.get("attributes", []))
    }
    labels = {}
    for span_id, attributes in roots.items():
        (annotation,) = annotations_of(phoenix, "default", span_id)
        assert annotation["annotator_kind"] == "CODE"
        labels[annotation["result"]["label"]] = labels.get(annotation["result"]["label"], 0) + 1
        assert annotation["result"]["label"] == attributes["semloop.label"]["stringValue"]
    assert labels == {"loop": 2, "no_loop": 2}


def test_an_annotation_posted_before_its_span_is_stored_once_phoenix_has_the_span(
    phoenix: PhoenixServer,
) -> None:
    """What tests/core/test_evaluation.py's fake assumes, against the real server: the
    annotator (otel_semloop/phoenix.py) posts for a span Phoenix has not ingested yet, keeps
    retrying, and once the span arrives the annotation is stored and read back through
    Phoenix's REST API with the name, label, score, explanation and annotator it was sent with."""
    from otel_semloop.evaluation import EvaluationRecord
    from otel_semloop.phoenix import PhoenixAnnotator

    project = f"semloop-annotator-{uuid.uuid4().hex[:12]}"
    provider = TracerProvider(
        resource=Resource.create({"service.name": "e2e-agent", "openinference.project.name": project}),
        shutdown_on_exit=False,
    )
    exporter = OTLPSpanExporter(endpoint=phoenix.otlp_http_endpoint, timeout=10)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    span = provider.get_tracer("e2e.phoenix.annotator").start_span("invoke_agent researcher")
    trace_id, span_id = f"{span.get_span_context().trace_id:032x}", f"{span.get_span_context().span_id:016x}"
    explanation = "search_logs repeated 8 times with the same result (steps 2-16)"
    record = EvaluationRecord(
        trace_id,
        span_id,
        time.time_ns(),
        {
            "gen_ai.evaluation.name": "semloop.loop",
            "gen_ai.evaluation.score.label": "loop",
            "gen_ai.evaluation.score.value": 0.125,
            "gen_ai.evaluation.explanation": explanation,
        },
    )
    annotator = PhoenixAnnotator(phoenix.base_url, retry_seconds=INGEST_TIMEOUT)
    try:
        annotator.submit(record)
        # Phoenix refuses it while it has no such span: nothing is stored, nothing dropped
        assert not annotator.flush(2.0)
        assert (annotator.sent, annotator.deferred, annotator.dropped) == (0, 0, 0)
        span.end()
        provider.shutdown()  # the span goes to Phoenix now
        assert annotator.flush(INGEST_TIMEOUT + 10)
        assert (annotator.sent, annotator.deferred, annotator.dropped) == (1, 0, 0)
        (annotation,) = annotations_of(phoenix, project, span_id)
    finally:
        annotator.shutdown()
    assert annotation["name"] == "semloop.loop" and annotation["annotator_kind"] == "CODE"
    assert annotation["result"] == {"label": "loop", "score": 0.125, "explanation": explanation}
    assert annotation["identifier"] == "otel-semloop"
    assert annotation["metadata"]["trace_id"] == trace_id
