"""The SDK adapter: ReadableSpan -> SpanRecord, and SpanPatch -> a new ReadableSpan that
carries every field of the original."""

from __future__ import annotations

from types import MappingProxyType

from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_semloop.model import EventRecord
from otel_semloop.processor.sdk import SDK_SPANS, apply_patch, span_to_record, with_attributes
from otel_semloop.release import local_root
from otel_semloop.writeback import SpanPatch

REMOTE = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0x00F067AA0BA902B7,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
)
LINKED = SpanContext(trace_id=0x1, span_id=0x2, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def finished(limits: SpanLimits | None = None) -> tuple[list[ReadableSpan], TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "adapter-test"}), span_limits=limits, shutdown_on_exit=False
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(
        "adapter.scope", "1.2.3", schema_url="https://opentelemetry.io/schemas/1.21.0"
    )
    parent = trace_api.set_span_in_context(trace_api.NonRecordingSpan(REMOTE))
    with tracer.start_as_current_span(
        "server",
        context=parent,
        kind=SpanKind.SERVER,
        links=[Link(LINKED, {"link.kind": "follows"})],
        attributes={"gen_ai.operation.name": "invoke_agent", "n": 1, "tags": ["a", "b"]},
    ) as server:
        server.add_event("started", {"detail": "x"}, timestamp=123)
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.set_status(Status(StatusCode.ERROR, "boom"))
    return list(exporter.get_finished_spans()), provider


def test_record_reads_ids_as_hex_and_the_parent_as_remote() -> None:
    (child, server), _ = finished()
    record = span_to_record(server)
    assert record.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert record.span_id == f"{server.context.span_id:016x}"
    assert record.parent_span_id == "00f067aa0ba902b7"
    assert record.parent_is_remote is True
    assert span_to_record(child).parent_span_id == record.span_id
    assert span_to_record(child).parent_is_remote is False


def test_record_wraps_the_attributes_without_copying() -> None:
    (_, server), _ = finished()
    record = span_to_record(server)
    assert isinstance(record.attributes, MappingProxyType)
    assert dict(record.attributes) == dict(server.attributes)
    assert [dict(e.attributes) for e in record.events] == [dict(e.attributes) for e in server.events]
    assert record.source is server


def test_record_carries_events_status_kind_and_times() -> None:
    (child, server), _ = finished()
    record = span_to_record(server)
    (event,) = record.events
    assert isinstance(event, EventRecord)
    assert (event.name, event.time_ns, dict(event.attributes)) == ("started", 123, {"detail": "x"})
    assert record.kind == 2  # OTLP SPAN_KIND_SERVER (SDK SpanKind.SERVER is 1)
    assert (record.start_ns, record.end_ns) == (server.start_time, server.end_time)
    child_record = span_to_record(child)
    assert (child_record.status_code, child_record.status_message) == (2, "boom")
    assert child_record.kind == 3


def test_patched_copy_keeps_every_field_and_merges_attributes_and_events() -> None:
    (_, server), _ = finished()
    patch = SpanPatch(
        attributes={"semloop.label": "loop", "n": 2, "semloop.signals": ["action_cycle"]},
        events=[EventRecord("gen_ai.evaluation.result", 999, {"gen_ai.evaluation.score.value": 0.2})],
    )
    copy = apply_patch(server, patch)
    assert copy is not server
    assert copy.name == server.name
    assert copy.context == server.context
    assert copy.parent == server.parent and copy.parent.is_remote
    assert copy.resource is server.resource
    assert copy.kind is SpanKind.SERVER
    assert copy.status.status_code == server.status.status_code
    assert (copy.start_time, copy.end_time) == (server.start_time, server.end_time)
    assert copy.instrumentation_scope == server.instrumentation_scope
    assert copy.instrumentation_scope.schema_url == "https://opentelemetry.io/schemas/1.21.0"
    assert [(link.context, dict(link.attributes)) for link in copy.links] == [
        (LINKED, {"link.kind": "follows"})
    ]
    assert dict(copy.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "tags": ("a", "b"),
        "n": 2,
        "semloop.label": "loop",
        "semloop.signals": ("action_cycle",),
    }
    assert [e.name for e in copy.events] == ["started", "gen_ai.evaluation.result"]
    assert copy.events[1].timestamp == 999
    assert dict(copy.events[1].attributes) == {"gen_ai.evaluation.score.value": 0.2}
    assert (copy.dropped_attributes, copy.dropped_events, copy.dropped_links) == (0, 0, 0)
    # The original is untouched.
    assert "semloop.label" not in server.attributes and len(server.events) == 1


def test_patched_copy_encodes_as_otlp_like_the_original() -> None:
    (_, server), _ = finished()
    copy = apply_patch(server, SpanPatch(attributes={"semloop.score": 0.5}))
    original = encode_spans([server]).resource_spans[0].scope_spans[0]
    encoded = encode_spans([copy]).resource_spans[0].scope_spans[0]
    assert encoded.scope == original.scope
    span, before = encoded.spans[0], original.spans[0]
    for field in ("trace_id", "span_id", "parent_span_id", "name", "kind", "start_time_unix_nano", "flags"):
        assert getattr(span, field) == getattr(before, field), field
    assert span.links == before.links and span.events == before.events and span.status == before.status
    assert {kv.key for kv in span.attributes} == {kv.key for kv in before.attributes} | {"semloop.score"}


def test_attribute_count_limit_applies_to_the_copy_like_the_sdk_would() -> None:
    limits = SpanLimits(max_span_attributes=3, max_events=1)
    (_, server), _ = finished(limits)
    assert server.dropped_attributes == 0 and len(server.attributes) == 3
    copy = apply_patch(
        server,
        SpanPatch(
            attributes={"semloop.label": "loop"}, events=[EventRecord("gen_ai.evaluation.result", 5, {})]
        ),
    )
    # The oldest attribute made room, and the drop is counted; the verdict is kept.
    assert list(copy.attributes) == ["n", "tags", "semloop.label"]
    assert copy.dropped_attributes == 1
    assert [e.name for e in copy.events] == ["gen_ai.evaluation.result"]
    assert copy.dropped_events == 1


def test_dropped_counts_of_the_original_carry_over() -> None:
    limits = SpanLimits(max_span_attributes=2)
    (_, server), _ = finished(limits)
    assert server.dropped_attributes == 1
    copy = apply_patch(server, SpanPatch(attributes={"n": 5}))
    assert copy.dropped_attributes == 1 and copy.attributes["n"] == 5


def test_attribute_value_length_limit_applies_to_patch_values() -> None:
    limits = SpanLimits(max_span_attribute_length=4)
    (_, server), _ = finished(limits)
    copy = apply_patch(server, SpanPatch(attributes={"semloop.reason": "abcdefgh"}))
    assert copy.attributes["semloop.reason"] == "abcd"


def test_an_empty_patch_returns_the_original_object() -> None:
    (_, server), _ = finished()
    assert apply_patch(server, SpanPatch()) is server


def test_with_attributes_marks_a_copy() -> None:
    (child, _), _ = finished()
    late = with_attributes(child, {"semloop.late": True})
    assert late.attributes["semloop.late"] is True and late.context == child.context


def test_local_root_is_the_span_without_a_parent_here() -> None:
    (child, server), _ = finished()
    assert local_root([child, server], SDK_SPANS) is server
    assert local_root([child], SDK_SPANS) is child
    assert local_root([], SDK_SPANS) is None
