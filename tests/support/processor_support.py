"""Shared builders for the span processor and live guard tests: a real TracerProvider
whose spans go through ``SemloopSpanProcessor`` to an in-memory exporter, and scripted
agents that emit OpenTelemetry GenAI spans."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_semloop.processor import SemloopSpanProcessor
from tests.support.agent_spans import search_agent

#: Test-sized timings: traces leave 50 ms after they complete, the worker ticks every 10 ms.
FAST = {"grace_seconds": 0.05, "tick_seconds": 0.01}


class IdExporter(SpanExporter):
    """Keeps only span ids: big tests must not grow the heap (and the GC pauses that come
    with it) with a second copy of every span."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.late = 0

    def export(self, spans: Any) -> SpanExportResult:
        for span in spans:
            self.ids.append(span.context.span_id)
            if span.attributes.get("semloop.late"):
                self.late += 1
        return SpanExportResult.SUCCESS

    def get_finished_spans(self) -> list[int]:
        return self.ids


class TimedExporter(InMemorySpanExporter):
    """Keeps the spans and the monotonic time each one was exported at, so tests state
    "not before the grace" as a lower bound on that time (which a loaded machine only
    pushes later) instead of sleeping and hoping nothing moved meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.times: dict[int, float] = {}

    def export(self, spans: Any) -> SpanExportResult:
        now = time.monotonic()
        for span in spans:
            self.times.setdefault(span.context.span_id, now)
        return super().export(spans)

    def first_export_time(self) -> float:
        return min(self.times.values())


@dataclass
class Pipeline:
    provider: TracerProvider
    processor: SemloopSpanProcessor
    produced: Any
    exported: Any
    end_durations: list[float] = field(default_factory=list)
    #: Time each ``on_end`` of the semloop processor took on the application's thread,
    #: and, for the same spans at the same moments, the SDK's ``SimpleSpanProcessor``
    #: that records them (the baseline the semloop hook is compared with).
    hook_durations: list[float] = field(default_factory=list)
    baseline_durations: list[float] = field(default_factory=list)

    @property
    def tracer(self) -> Any:
        return self.provider.get_tracer("tests.agent")

    def produced_spans(self) -> list[ReadableSpan]:
        """Every span the application ended, as it ended it."""
        return list(self.produced.get_finished_spans())

    def exported_spans(self) -> list[ReadableSpan]:
        return list(self.exported.get_finished_spans())

    def wait_exported(self, count: int, timeout: float = 10.0) -> list[ReadableSpan]:
        """Wait, without flushing, until ``count`` spans were exported; fail if they were not."""
        wait_for(lambda: len(self.exported.get_finished_spans()) >= count, timeout, f"{count} spans exported")
        return self.exported_spans()

    def assert_each_span_forwarded_once(self) -> None:
        def ids(spans: list[Any]) -> Counter[int]:
            return Counter(s if isinstance(s, int) else s.context.span_id for s in spans)

        produced = ids(self.produced_spans())
        exported = ids(self.exported_spans())
        assert produced, "nothing was produced: the check would prove nothing"
        assert exported == produced, (len(exported), len(produced))

    def end(self, span: Any) -> None:
        """End ``span``, timing the call as the application sees it."""
        started = time.perf_counter()
        span.end()
        self.end_durations.append(time.perf_counter() - started)


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """Wait until ``predicate()`` is truthy and return its value; fail the test when it is
    still falsy after ``timeout`` seconds (a wait that ends quietly proves nothing)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout} s: {what or predicate}")
        time.sleep(0.005)


class _Timed(SpanProcessor):
    """Times ``on_end`` of the processor it wraps (on the thread that ends the span)."""

    def __init__(self, inner: SpanProcessor, durations: list[float]) -> None:
        self._inner = inner
        self._durations = durations

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        started = time.perf_counter()
        self._inner.on_end(span)
        self._durations.append(time.perf_counter() - started)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()


@contextmanager
def pipeline(
    downstream: SpanProcessor | None = None,
    exported: InMemorySpanExporter | None = None,
    lean: bool = False,
    **options: Any,
) -> Iterator[Pipeline]:
    """A provider: SimpleSpanProcessor(produced) records what the app ended, then
    SemloopSpanProcessor(downstream) with test-sized timings (``options`` override).
    ``lean`` records span ids only (:class:`IdExporter`)."""
    produced: Any = IdExporter() if lean else InMemorySpanExporter()
    if exported is None:
        exported = IdExporter() if lean else TimedExporter()  # type: ignore[assignment]
    provider = TracerProvider(shutdown_on_exit=False)
    processor = SemloopSpanProcessor(downstream or SimpleSpanProcessor(exported), **{**FAST, **options})
    line = Pipeline(provider, processor, produced, exported)
    provider.add_span_processor(_Timed(SimpleSpanProcessor(produced), line.baseline_durations))
    provider.add_span_processor(_Timed(processor, line.hook_durations))
    try:
        yield line
    except BaseException:
        provider.shutdown()
        raise
    provider.shutdown()
    if downstream is None and line.produced_spans():
        # After shutdown nothing more can arrive: a duplicate sent late is caught here,
        # whatever the test waited for.
        line.assert_each_span_forwarded_once()


def agent_run(
    line: Pipeline,
    results: Callable[[int], str],
    iterations: int,
    *,
    before_step: Callable[[], None] | None = None,
    name: str = "researcher",
) -> int:
    """An agent that asks the model, then calls ``search`` with the same arguments,
    ``iterations`` times; ``results(i)`` is what the i-th search returns. Returns the
    number of searches the agent actually made (counted from the spans it ended), so a
    caller can tell a run that went to the end from one that was stopped
    (``before_step`` may raise to stop the run)."""
    trace_id = search_agent(
        line.tracer, (results(i) for i in range(iterations)), name=name, before_step=before_step
    )
    return sum(
        1
        for span in line.produced_spans()
        if not isinstance(span, int)
        and span.name == "execute_tool search"
        and f"{span.context.trace_id:032x}" == trace_id
    )


def looping(line: Pipeline, iterations: int = 8, **kwargs: Any) -> int:
    return agent_run(line, lambda i: "no results", iterations, **kwargs)


def healthy(line: Pipeline, iterations: int = 3, **kwargs: Any) -> int:
    topics = ["solar panels", "wind turbines", "tidal power", "geothermal", "hydrogen"]
    return agent_run(
        line, lambda i: f"found 3 papers on {topics[i % len(topics)]} (page {i})", iterations, **kwargs
    )


def root_of(spans: list[ReadableSpan]) -> ReadableSpan:
    (root,) = [s for s in spans if s.parent is None]
    return root
