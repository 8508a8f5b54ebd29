"""SemloopSpanProcessor in a real TracerProvider: verdicts written back, completion rules on
both sides of each bound, late spans, overflow, pass-through, flush and shutdown."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from otel_semloop.processor import SemloopSpanProcessor
from tests.support.processor_support import FAST, healthy, looping, pipeline, root_of

# -- the verdict on the spans --------------------------------------------------------------


def test_a_looping_agent_trace_gets_the_verdict_on_its_root_and_marks_on_the_loop_steps() -> None:
    with pipeline() as line:
        looping(line, iterations=8)
        spans = line.wait_exported(17)
        root = root_of(spans)
        assert root.attributes["semloop.loop.detected"] is True
        assert root.attributes["semloop.label"] == "loop"
        assert root.attributes["semloop.score"] < 0.5
        assert isinstance(root.attributes["semloop.deepeval.score"], float)
        assert root.attributes["semloop.partial"] is False
        (event,) = [e for e in root.events if e.name == "gen_ai.evaluation.result"]
        assert event.attributes["gen_ai.evaluation.score.value"] == root.attributes["semloop.score"]
        assert event.attributes["gen_ai.evaluation.score.label"] == "loop"
        in_loop = [s for s in spans if s.attributes.get("semloop.in_loop")]
        assert in_loop and all(s.name == "execute_tool search" for s in in_loop)
        line.assert_each_span_forwarded_once()


def test_a_healthy_agent_trace_is_labelled_no_loop() -> None:
    with pipeline() as line:
        healthy(line, iterations=3)
        root = root_of(line.wait_exported(7))
        assert root.attributes["semloop.loop.detected"] is False
        assert root.attributes["semloop.label"] == "no_loop"
        assert root.attributes["semloop.score"] >= 0.5
        assert not any(s.attributes.get("semloop.in_loop") for s in line.exported_spans())


def test_spans_that_gain_nothing_are_forwarded_as_the_original_objects() -> None:
    with pipeline() as line:
        looping(line, iterations=8)
        line.wait_exported(17)
        produced = {s.context.span_id: s for s in line.produced_spans()}
        exported = line.exported_spans()
        assert len(exported) == len(produced) == 17
        touched = [any(k.startswith("semloop.") for k in span.attributes) for span in exported]
        assert 0 < sum(touched) < 17  # the root and the looping steps, not the others
        for span, was_touched in zip(exported, touched, strict=True):
            assert (span is produced[span.context.span_id]) is not was_touched


def test_a_trace_without_agent_steps_is_forwarded_untouched() -> None:
    with pipeline() as line:
        with line.tracer.start_as_current_span("GET /health"), line.tracer.start_as_current_span("SELECT 1"):
            pass
        spans = line.wait_exported(2)
        produced = {s.context.span_id: s for s in line.produced_spans()}
        assert len(spans) == len(produced) == 2
        assert all(span is produced[span.context.span_id] for span in spans)
        assert line.processor.stats()["traces.none"] == 1


# -- completion ----------------------------------------------------------------------------


def test_spans_are_held_until_the_trace_completes_then_released_after_the_grace() -> None:
    with pipeline(grace_seconds=0.3) as line:
        tracer = line.tracer
        root = tracer.start_span("root")
        ctx = trace_api.set_span_in_context(root)
        child = tracer.start_span("child", context=ctx)
        child.end()
        time.sleep(0.4)
        assert line.exported_spans() == []  # root still open: held past the grace
        ending = time.monotonic()
        root.end()
        assert len(line.wait_exported(2)) == 2
        # Lower bounds on when the spans left: a loaded machine only makes them later.
        assert line.exported.first_export_time() >= ending + 0.3


def test_a_span_starting_during_the_grace_keeps_the_trace() -> None:
    # A grace a loaded machine cannot overrun between two statements (0.2 s could be).
    with pipeline(grace_seconds=1.0) as line:
        tracer = line.tracer
        root = tracer.start_span("root")
        root.end()
        background = tracer.start_span("background", context=trace_api.set_span_in_context(root))
        time.sleep(1.2)  # past the grace: held, because a span started during it
        assert line.exported_spans() == []
        background.end()
        assert len(line.wait_exported(2)) == 2
        assert not any("semloop.late" in s.attributes for s in line.exported_spans())


def test_a_span_with_a_remote_parent_completes_the_trace_as_local_root() -> None:
    remote = SpanContext(
        trace_id=0xABC, span_id=0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    with pipeline() as line:
        ctx = trace_api.set_span_in_context(NonRecordingSpan(remote))
        with (
            line.tracer.start_as_current_span("server", context=ctx),
            line.tracer.start_as_current_span("work"),
        ):
            pass
        assert len(line.wait_exported(2)) == 2


def test_an_idle_trace_is_released_as_partial_and_counted() -> None:
    with pipeline(idle_seconds=0.2) as line:
        root = line.tracer.start_span(
            "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}
        )
        ctx = trace_api.set_span_in_context(root)
        last_activity = time.monotonic()
        line.tracer.start_span(
            "execute_tool t", context=ctx, attributes={"gen_ai.operation.name": "execute_tool"}
        ).end()
        (released,) = line.wait_exported(1)
        assert line.exported.first_export_time() >= last_activity + 0.2  # not before the idle deadline
        assert released.attributes["semloop.partial"] is True
        assert released.attributes["semloop.release.reason"] == "idle"
        assert line.processor.stats()["releases.early.idle"] == 1
        root.end()
        spans = line.wait_exported(2)
        assert spans[-1].attributes["semloop.late"] is True
        line.assert_each_span_forwarded_once()


def test_a_busy_trace_is_released_at_max_age() -> None:
    with pipeline(max_age_seconds=0.3, idle_seconds=10) as line:
        started = time.monotonic()
        root = line.tracer.start_span("root")
        ctx = trace_api.set_span_in_context(root)
        while not line.exported_spans():  # busy: a span every 20 ms, never idle
            assert time.monotonic() - started < 10, "never released"
            line.tracer.start_span("tick", context=ctx).end()
            time.sleep(0.02)
        assert line.exported.first_export_time() >= started + 0.3  # not before max_age
        assert line.processor.stats()["releases.early.max_age"] == 1
        root.end()
        line.processor.force_flush()
        line.assert_each_span_forwarded_once()


def test_a_late_span_is_forwarded_marked_and_only_once() -> None:
    with pipeline(grace_seconds=0.05) as line:
        root = line.tracer.start_span("root")
        slow = line.tracer.start_span("slow", context=trace_api.set_span_in_context(root))
        root.end()
        # The root ended and "slow" is open: the trace is not complete; force it out.
        line.processor.force_flush()
        assert [s.name for s in line.exported_spans()] == ["root"]
        slow.end()
        line.processor.force_flush()
        spans = line.exported_spans()
        assert [s.name for s in spans] == ["root", "slow"]
        assert spans[1].attributes["semloop.late"] is True
        assert line.processor.stats()["spans.forwarded.late"] == 1
        line.assert_each_span_forwarded_once()


# -- bounds -----------------------------------------------------------------------------------


def test_overflow_releases_the_oldest_trace_marked_and_counted() -> None:
    with pipeline(max_traces=2, idle_seconds=30) as line:
        tracer = line.tracer
        roots = []
        for i in range(3):  # the third run's root evicts the first run
            roots.append(tracer.start_span(f"run{i}", context=Context()))
            tracer.start_span(
                f"step{i}",
                context=trace_api.set_span_in_context(roots[-1]),
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
            ).end()
        (oldest_step,) = line.wait_exported(1)
        assert oldest_step.name == "step0"
        assert oldest_step.attributes["semloop.release.reason"] == "overflow"
        assert oldest_step.attributes["semloop.partial"] is True
        assert line.processor.stats()["releases.early.overflow"] == 1
        for root in roots:
            root.end()
        line.processor.force_flush()
        assert [s.attributes.get("semloop.late") for s in line.exported_spans() if s.name == "run0"] == [True]
        line.assert_each_span_forwarded_once()


def test_at_the_trace_limit_nothing_is_released_early() -> None:
    with pipeline(max_traces=3, idle_seconds=30) as line:
        roots = [line.tracer.start_span(f"run{i}", context=Context()) for i in range(3)]
        time.sleep(0.1)
        assert line.exported_spans() == []
        assert line.processor.stats()["traces.held"] == 3
        for root in roots:
            root.end()
        assert len(line.wait_exported(3)) == 3
        assert "releases.early.overflow" not in line.processor.stats()


def test_a_trace_over_the_span_limit_is_released_in_partial_chunks() -> None:
    with pipeline(max_spans_per_trace=10) as line:
        with line.tracer.start_as_current_span("root"):
            for i in range(25):
                with line.tracer.start_as_current_span(f"s{i}"):
                    pass
        assert len(line.wait_exported(26)) == 26
        assert line.processor.stats()["releases.early.span_limit"] == 2
        line.assert_each_span_forwarded_once()


# -- pass-through, flush, shutdown ---------------------------------------------------------------


class RecordOnlySampler(Sampler):
    """Spans are recorded (processors see them) but not sampled."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        return "record-only"


class Capture(SpanProcessor):
    def __init__(self) -> None:
        self.started: list[Any] = []
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.started.append(span)

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


def test_unsampled_spans_pass_straight_through() -> None:
    capture = Capture()
    provider = TracerProvider(sampler=RecordOnlySampler(), shutdown_on_exit=False)
    processor = SemloopSpanProcessor(capture, **FAST)
    provider.add_span_processor(processor)
    with provider.get_tracer("t").start_as_current_span("root") as root:
        assert processor.stats()["traces.held"] == 0
    assert [s.context.span_id for s in capture.ended] == [root.get_span_context().span_id]
    provider.shutdown()
    assert len(capture.ended) == 1


def test_on_start_reaches_the_downstream_processor() -> None:
    capture = Capture()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SemloopSpanProcessor(capture, **FAST))
    with provider.get_tracer("t").start_as_current_span("root"):
        assert len(capture.started) == 1
    provider.shutdown()


def test_force_flush_forwards_everything_held_within_its_timeout() -> None:
    with pipeline(idle_seconds=30) as line:
        open_root = line.tracer.start_span("open")
        line.tracer.start_span("done", context=trace_api.set_span_in_context(open_root)).end()
        looping(line, iterations=4)
        started = time.monotonic()
        assert line.processor.force_flush(5000) is True
        assert time.monotonic() - started < 2
        spans = line.exported_spans()
        assert len(spans) == 10
        (partial,) = [s for s in spans if s.name == "done"]
        assert "semloop.label" not in partial.attributes  # no agent steps: untouched
        assert line.processor.stats()["releases.early.flush"] == 1
        open_root.end()


def test_shutdown_drains_then_shuts_the_downstream_down() -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    processor = SemloopSpanProcessor(
        BatchSpanProcessor(exported, schedule_delay_millis=10_000), idle_seconds=30
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    root = tracer.start_span("open")
    tracer.start_span("child", context=trace_api.set_span_in_context(root)).end()
    provider.shutdown()
    assert [s.name for s in exported.get_finished_spans()] == ["child"]
    root.end()  # after shutdown: passes through to the (shut down) downstream, no error
    processor.shutdown()  # idempotent


def test_a_burst_larger_than_the_batch_queue_loses_no_span() -> None:
    exported = InMemorySpanExporter()
    downstream = BatchSpanProcessor(exported, max_queue_size=256, max_export_batch_size=64)
    with pipeline(downstream=downstream, exported=exported, idle_seconds=30) as line:
        tracer = line.tracer
        roots = [tracer.start_span(f"r{i}", context=Context()) for i in range(400)]
        for root in roots:
            tracer.start_span("c", context=trace_api.set_span_in_context(root)).end()
        assert line.processor.force_flush(10_000)
        assert len(exported.get_finished_spans()) == 400
        for root in roots:
            root.end()


def test_disabled_processor_passes_every_span_through_at_once() -> None:
    with pipeline(enabled=False) as line:
        with line.tracer.start_as_current_span("root"):
            pass
        assert len(line.exported_spans()) == 1
        assert line.processor.stats()["traces.held"] == 0


def test_metrics_are_recorded_through_the_metrics_api() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    with pipeline(meter_provider=meters) as line:
        looping(line, iterations=8)
        assert len(line.wait_exported(17)) == 17
        assert line.processor.force_flush()
    data = reader.get_metrics_data()
    points: dict[str, list[Any]] = {}
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            assert scope_metrics.scope.name == "otel_semloop"
            for metric in scope_metrics.metrics:
                points[metric.name] = list(metric.data.data_points)
    assert {p.attributes["semloop.label"]: p.value for p in points["semloop.traces"]} == {"loop": 1}
    assert {p.attributes["semloop.release.reason"]: p.value for p in points["semloop.releases"]} == {
        "complete": 1
    }
    assert points["semloop.scoring.duration"][0].count == 1
    assert points["semloop.spans.held"][0].value == 0
    forwarded = {p.attributes["semloop.span.state"]: p.value for p in points["semloop.spans.forwarded"]}
    assert sum(forwarded.values()) == 17 and forwarded["patched"] >= 1
    meters.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_scores_its_own_traces_and_not_its_parents() -> None:
    with pipeline(idle_seconds=30) as line:
        held = line.tracer.start_span("parent-open")
        line.tracer.start_span("parent-child", context=trace_api.set_span_in_context(held)).end()
        pid = os.fork()
        if pid == 0:  # the child: fresh threads, nothing of the parent's held
            code = 1
            try:
                looping(line, iterations=8)
                line.processor.force_flush(5000)
                names = [s.name for s in line.exported_spans()]
                code = 0 if len(names) == 17 and "parent-child" not in names else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        held.end()
        line.processor.force_flush()
        assert [s.name for s in line.exported_spans()] == ["parent-child", "parent-open"]


def test_span_hooks_do_not_wait_for_the_processor_lock() -> None:
    """Application threads never queue on the lock the worker holds: while another thread
    holds it, a whole agent run still starts and ends every span; the spans are scored once
    the lock is free."""
    import threading

    with pipeline() as line:
        ran = threading.Event()
        with line.processor._lock:
            app = threading.Thread(target=lambda: (looping(line), ran.set()))
            app.start()
            finished = ran.wait(5.0)
        app.join()
        assert finished, "the application thread waited for the processor's lock"
        line.processor.force_flush()
        assert root_of(line.exported_spans()).attributes["semloop.label"] == "loop"
        line.assert_each_span_forwarded_once()


def test_spans_past_the_event_bound_go_downstream_unheld_and_are_counted() -> None:
    """With the worker not taking span events (the lock held), ending spans past
    ``max_spans`` events are forwarded at once, unscored, and counted: the processor holds
    no more than its bound whatever the worker does."""
    import threading

    def twenty_spans() -> None:
        for i in range(20):
            line.tracer.start_span(f"step{i}", context=Context()).end()
        ended.set()

    with pipeline(max_spans=10) as line:
        ended = threading.Event()
        with line.processor._lock:
            threading.Thread(target=twenty_spans, daemon=True).start()
            assert ended.wait(5.0), "the application thread waited for the processor's lock"
            # the first 5 spans fill the 10 events (a start and an end each)
            assert [s.name for s in line.exported_spans()] == [f"step{i}" for i in range(5, 20)]
        line.processor.force_flush()
        assert line.processor.stats()["spans.forwarded.unheld"] == 15
        assert len(line.exported_spans()) == 20
        line.assert_each_span_forwarded_once()
