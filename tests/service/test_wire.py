"""Held spans stay as their received bytes until changed, and an export request is framed
from those bytes: what the downstream decodes is exactly what a request built message by
message would hold (envelopes, schema URLs, patched and untouched spans)."""

from __future__ import annotations

from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.otlp import apply_patch_proto
from otel_semloop.service.exporter import encode_request
from otel_semloop.service.held import PROTO_SPANS, Held, prepare
from otel_semloop.service.receiver import parse_protobuf
from otel_semloop.writeback import SpanPatch
from tests.service.traffic import agent_spans, plain_spans, request_of, trace_id_of


def _received() -> trace_service_pb2.ExportTraceServiceRequest:
    request = trace_service_pb2.ExportTraceServiceRequest()
    for r, service in enumerate(("checkout", "research-agent")):
        rs = request.resource_spans.add(schema_url=f"https://opentelemetry.io/schemas/1.{r}")
        rs.resource.attributes.add(key="service.name", value=common_pb2.AnyValue(string_value=service))
        for n in range(2):
            ss = rs.scope_spans.add(schema_url="" if n else "https://example.com/scope")
            ss.scope.name = f"scope-{n}"
            ss.spans.extend(
                plain_spans(trace_id_of(r, n)) if r == 0 else agent_spans(trace_id_of(r, n), 2, False)
            )
    return request


def test_an_export_request_framed_from_held_bytes_is_the_request_built_message_by_message() -> None:
    received = _received()
    held = [h for _, _, h in prepare(received).spans]
    assert all(h.wire is not None for h in held)
    patch = SpanPatch(attributes={"semloop.label": "loop", "semloop.score": 0.2})
    apply_patch_proto(held[0].span, patch)  # one span changed: decoded, and kept decoded
    assert held[0].wire is None and held[1].wire is not None

    expected = trace_service_pb2.ExportTraceServiceRequest()
    expected.CopyFrom(received)
    apply_patch_proto(expected.resource_spans[0].scope_spans[0].spans[0], patch)
    decoded = trace_service_pb2.ExportTraceServiceRequest.FromString(encode_request(held))
    assert _flat(decoded) == _flat(expected)


def _flat(request: trace_service_pb2.ExportTraceServiceRequest) -> list[tuple[bytes, str, bytes, str, bytes]]:
    """Each span with the envelope it is under (a Resource may be repeated per scope)."""
    return sorted(
        (
            rs.resource.SerializeToString(deterministic=True),
            rs.schema_url,
            ss.scope.SerializeToString(deterministic=True),
            ss.schema_url,
            span.SerializeToString(deterministic=True),
        )
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    )


def test_reading_a_held_span_does_not_keep_a_decoded_copy() -> None:
    (agent, *_), (plain, *_) = (
        [h for _, _, h in prepare(request_of(spans)).spans]
        for spans in (agent_spans(trace_id_of(5, 0), 2, True), plain_spans(trace_id_of(5, 1)))
    )
    assert PROTO_SPANS.record(agent).name == "invoke_agent researcher"
    assert PROTO_SPANS.links(agent).parent_id is None
    assert PROTO_SPANS.may_have_steps([agent]) and not PROTO_SPANS.may_have_steps([plain])
    assert agent.wire is not None and plain.wire is not None
    span = trace_pb2.Span.FromString(agent.serialized())
    assert span.name == "invoke_agent researcher"
    assert Held(span, None, None).serialized() == agent.serialized()


@given(st.binary(max_size=2048))
def test_any_bytes_parse_as_a_request_or_raise_a_decode_error(body: bytes) -> None:
    try:
        request, rejected, first = parse_protobuf(body)
    except DecodeError:
        return
    assert rejected >= 0 and (rejected == 0) == (first == "")
    assert len(request.SerializeToString()) <= len(body)


def test_a_vercel_ai_sdk_span_may_be_a_step_and_a_span_without_kind_keys_is_not() -> None:
    vercel = trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="ai.generateText")
    kv = vercel.attributes.add()
    kv.key, kv.value.string_value = "ai.operationId", "ai.generateText"
    other = trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x03" * 8, name="ai.embed")
    kv = other.attributes.add()
    kv.key, kv.value.string_value = "ai.operationId", "ai.embed"
    assert PROTO_SPANS.may_have_steps([Held(vercel.SerializeToString(), None, None)])
    assert not PROTO_SPANS.may_have_steps([Held(other.SerializeToString(), None, None)])
