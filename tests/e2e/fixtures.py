"""pytest fixtures for the end-to-end tests (registered by ``tests/e2e/conftest.py``).

The pipeline under test is the one a user builds::

    TracerProvider
      +- SemloopSpanProcessor(BatchSpanProcessor(OTLPSpanExporter(...)), short grace)  -> receiver
      +- SimpleSpanProcessor(InMemorySpanExporter)   # records every span the app produced

with a real OTLP exporter (gRPC by default, OTLP/HTTP on request) and a real receiver on
loopback. Each test gets its own provider; none is set as the global one, and the provider
is shut down in teardown. Instrumentors are instrumented with ``tracer_provider=`` by the
test modules and uninstrumented in their teardown.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from openai import OpenAI
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .fake_openai import FakeOpenAIServer, Script, healthy_script
from .otlp_receiver import GrpcOtlpReceiver, HttpOtlpReceiver, OtlpReceiver, ReceivedSpan

#: Semloop's wait after a trace completes (root ended, no span open) before scoring it.
GRACE_SECONDS = 0.1
#: How often semloop's worker wakes to release completed traces.
TICK_SECONDS = 0.02
#: A trace idle this long is released as partial: far above any step of these runs, so
#: every trace here is released because it completed, never because it went quiet.
IDLE_SECONDS = 30.0
#: The most a delivery may take: grace, scoring, the batch delay, the export.
DELIVERY_TIMEOUT = 10.0
#: ``BatchSpanProcessor`` delay between exports.
BATCH_DELAY_MILLIS = 50
#: After the last expected span arrived: long enough for a duplicate to follow it.
SETTLE_SECONDS = GRACE_SECONDS + 2 * TICK_SECONDS + 3 * BATCH_DELAY_MILLIS / 1000


def semloop_processor(downstream: SpanProcessor) -> SpanProcessor:
    """The processor under test, with test-sized timings, wrapping ``downstream``."""
    from otel_semloop import SemloopSpanProcessor

    return SemloopSpanProcessor(
        downstream, grace_seconds=GRACE_SECONDS, tick_seconds=TICK_SECONDS, idle_seconds=IDLE_SECONDS
    )


def otlp_exporter(receiver: OtlpReceiver) -> SpanExporter:
    """The real OTLP exporter for ``receiver``'s protocol."""
    if isinstance(receiver, GrpcOtlpReceiver):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=receiver.endpoint, insecure=True, timeout=5)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=receiver.endpoint, timeout=5)


@dataclass(frozen=True)
class Run:
    """One agent run: the id of the one trace it made, and its final answer."""

    trace_id: str
    answer: str


@dataclass
class Pipeline:
    """A tracer provider whose spans go through semloop to a real OTLP receiver."""

    provider: TracerProvider
    produced: InMemorySpanExporter
    receiver: OtlpReceiver
    #: The ``SemloopSpanProcessor`` under test (for its ``log_record_processor``).
    semloop: Any = None

    def produced_spans(self) -> list[ReadableSpan]:
        """Every span the application ended, as it ended it (before semloop)."""
        return list(self.produced.get_finished_spans())

    def run_once(self, agent: Callable[[], str]) -> Run:
        """Run ``agent`` (it returns the final answer), which must make exactly one new trace."""
        before = {hex_trace_id(s) for s in self.produced_spans()}
        answer = agent()
        new = {hex_trace_id(s) for s in self.produced_spans()} - before
        assert len(new) == 1, f"one run should make one trace, got {len(new)}"
        return Run(trace_id=new.pop(), answer=answer)

    def wait_delivered(self, timeout: float = DELIVERY_TIMEOUT) -> list[ReceivedSpan]:
        """Wait, without flushing, until every produced span id has arrived; then wait
        out one more grace period so a second copy of any span, if one is coming, arrives
        too. Returns everything received.

        Semloop must release a finished trace by itself (completed, then grace), so no
        ``force_flush`` here: a trace held forever fails the assertions that follow.
        """
        expected = {hex_span_id(s) for s in self.produced_spans()}
        self.receiver.wait_until(lambda spans: expected <= {s.span_id for s in spans}, timeout)
        time.sleep(SETTLE_SECONDS)
        return self.receiver.spans

    def shutdown(self) -> None:
        self.provider.shutdown()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """The scripted OpenAI-compatible server; tests pick the script (``.script = ...``)."""
    with FakeOpenAIServer(healthy_script()) as server:
        yield server


@pytest.fixture(params=["grpc"])
def otlp_receiver(request: pytest.FixtureRequest) -> Iterator[OtlpReceiver]:
    """A real OTLP receiver on loopback: gRPC by default; parametrize indirectly with
    ``"http"`` for OTLP/HTTP protobuf."""
    protocol = getattr(request, "param", "grpc")
    receiver: OtlpReceiver = GrpcOtlpReceiver() if protocol == "grpc" else HttpOtlpReceiver()
    with receiver:
        yield receiver


@pytest.fixture
def pipeline(otlp_receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    for name in [n for n in os.environ if n.startswith("SEMLOOP_")]:
        monkeypatch.delenv(name)  # the defaults and the options below, whatever the shell says
    produced = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-agent"}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(produced))
    downstream = BatchSpanProcessor(otlp_exporter(otlp_receiver), schedule_delay_millis=BATCH_DELAY_MILLIS)
    semloop = semloop_processor(downstream)
    provider.add_span_processor(semloop)
    line = Pipeline(provider=provider, produced=produced, receiver=otlp_receiver, semloop=semloop)
    try:
        yield line
    finally:
        line.shutdown()


@contextmanager
def chat_agent_runner(
    pipeline: Pipeline, fake_openai: FakeOpenAIServer, tracer: Any, default_app: Callable[..., str]
) -> Iterator[Callable[..., Run]]:
    """``run(script, app=default_app)``: one run of ``app(client, tracer)`` (an agent of
    :mod:`.agent_app`) with a plain ``openai`` client against the scripted server; the
    client is closed afterwards. Instrumenting is the caller's."""
    client = OpenAI(base_url=fake_openai.base_url, api_key="test", max_retries=0, timeout=10)

    def run(script: Script, app: Callable[..., str] = default_app) -> Run:
        fake_openai.script = script
        return pipeline.run_once(lambda: app(client, tracer))

    try:
        yield run
    finally:
        client.close()


def hex_span_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{span.context.span_id:016x}"


def hex_trace_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{span.context.trace_id:032x}"


def attributes_of(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes with sequences as lists (how OTLP arrays decode)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in (span.attributes or {}).items()}
