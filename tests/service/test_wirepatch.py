"""Patches written as appended protobuf bytes (``otel_semloop.service.wirepatch``) give the
span ``apply_patch_proto`` gives, or decline."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.model import EventRecord
from otel_semloop.otlp import apply_patch_proto, record_from_proto_span
from otel_semloop.service.wirepatch import appended
from otel_semloop.writeback import SpanPatch

_KEYS = st.sampled_from(["a", "b", "", "semloop.score", "semloop.in_loop", "é", "k" * 200])
_SCALARS = st.one_of(
    st.text(max_size=300),
    st.booleans(),
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    st.floats(allow_nan=False),
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4), st.tuples(_SCALARS, _SCALARS))
_EVENTS = st.builds(
    EventRecord,
    st.text(max_size=20),
    st.integers(min_value=0, max_value=(1 << 64) - 1),
    st.dictionaries(_KEYS, _VALUES, max_size=4),
)


def _span(existing: dict[str, str], events: int) -> trace_pb2.Span:
    span = trace_pb2.Span(
        trace_id=b"\x01" * 16,
        span_id=b"\x02" * 8,
        name="invoke_agent",
        start_time_unix_nano=5,
        end_time_unix_nano=9,
        status=trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message="boom"),
    )
    for key, value in existing.items():
        span.attributes.append(common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=value)))
    for n in range(events):
        span.events.add(name=f"e{n}", time_unix_nano=n)
    return span


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(_KEYS, st.text(max_size=10), max_size=3),
    st.integers(0, 2),
    st.dictionaries(_KEYS, _VALUES, max_size=6),
    st.lists(_EVENTS, max_size=2),
)
def test_appended_bytes_parse_as_the_patched_span_or_the_patch_is_declined(
    existing, events, attributes, new_events
):
    span = _span(existing, events)
    wire = span.SerializeToString()
    patch = SpanPatch(attributes=dict(attributes), events=list(new_events))
    out = appended(wire, record_from_proto_span(trace_pb2.Span.FromString(wire)).attributes, patch)
    expected = trace_pb2.Span.FromString(wire)
    apply_patch_proto(expected, patch)
    if set(attributes) & set(existing):
        assert out is None  # apply_patch_proto overwrites such a key where it stands
        return
    assert out is not None
    got = trace_pb2.Span.FromString(out)
    assert got == expected or _same_with_nan(got, expected)


def _same_with_nan(a: trace_pb2.Span, b: trace_pb2.Span) -> bool:
    return a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


def test_values_it_does_not_encode_take_the_message_path():
    wire = _span({}, 0).SerializeToString()
    for value in (None, b"raw", {"nested": 1}, 1 << 70, [None]):
        assert appended(wire, {}, SpanPatch(attributes={"x": value})) is None
    assert appended(wire, {}, SpanPatch(events=[EventRecord("e", -1)])) is None
    nan = appended(wire, {}, SpanPatch(attributes={"x": math.nan}))
    assert nan is not None and math.isnan(trace_pb2.Span.FromString(nan).attributes[0].value.double_value)
