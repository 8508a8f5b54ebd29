"""The protobuf path to records reads each field once and takes a non-empty
``string_value`` without ``WhichOneof``; these tests hold it to the plain reading
(every value through ``decode_any_pb``, the span read field by field as before)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.model import EventRecord, SpanRecord
from otel_semloop.otlp import decode_any_pb, decode_attributes_pb, records_from_proto
from otel_semloop.otlp._common import FLAGS_HAS_IS_REMOTE, FLAGS_IS_REMOTE
from otel_semloop.otlp.records import record_from_proto_span
from tests.otlp.test_otlp_codec import traces_data

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plain_attributes(kvs) -> dict:
    return {kv.key: decode_any_pb(kv.value) for kv in kvs}


def _plain_record(span) -> SpanRecord:
    return SpanRecord(
        span.trace_id.hex(),
        span.span_id.hex(),
        span.parent_span_id.hex(),
        span.name,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        _plain_attributes(span.attributes),
        [EventRecord(ev.name, ev.time_unix_nano, _plain_attributes(ev.attributes)) for ev in span.events],
        span.status.code,
        span.status.message,
        span.kind,
        bool(span.flags & FLAGS_IS_REMOTE) if span.flags & FLAGS_HAS_IS_REMOTE else None,
        span,
    )


def _fields(record: SpanRecord) -> tuple:
    return tuple(
        (f.name, getattr(record, f.name), type(getattr(record, f.name))) for f in dataclasses.fields(record)
    )


@FAST
@given(traces_data(valid_ids=True))
def test_protobuf_records_are_the_plain_readings(msg):
    spans = [span for rs in msg.resource_spans for ss in rs.scope_spans for span in ss.spans]
    records = records_from_proto(msg)
    assert [_fields(r) for r in records] == [_fields(_plain_record(s)) for s in spans]
    assert [_fields(record_from_proto_span(s)) for s in spans] == [_fields(r) for r in records]
    for span, record in zip(spans, records, strict=True):
        assert record.source is span
        for a, b in zip(record.attributes.values(), _plain_attributes(span.attributes).values(), strict=True):
            assert type(a) is type(b)


def test_empty_strings_and_other_values_are_read_by_their_kind():
    kvs = [
        KeyValue(key="s", value=AnyValue(string_value="")),
        KeyValue(key="i", value=AnyValue(int_value=0)),
        KeyValue(key="i2", value=AnyValue(int_value=7)),
        KeyValue(key="b", value=AnyValue(bool_value=False)),
        KeyValue(key="d", value=AnyValue(double_value=0.0)),
        KeyValue(key="y", value=AnyValue(bytes_value=b"")),
        KeyValue(key="e"),
        KeyValue(key="t", value=AnyValue(string_value="x")),
    ]
    got = decode_attributes_pb(kvs)
    assert got == _plain_attributes(kvs) == {
        "s": "", "i": 0, "i2": 7, "b": False, "d": 0.0, "y": b"", "e": None, "t": "x",
    }  # fmt: skip
    assert [type(v) for v in got.values()] == [str, int, int, bool, float, bytes, type(None), str]


def test_protobuf_id_errors_name_the_span_and_field():
    msg = TracesData()
    spans = msg.resource_spans.add().scope_spans.add().spans
    spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
    spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, parent_span_id=b"\x03" * 3)
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_proto(msg, "in.pb")
    assert exc.value.where == "in.pb resourceSpans[0].scopeSpans[0].spans[1].parentSpanId"
    assert "got 3" in str(exc.value)
    with pytest.raises(OTLPDecodeError) as exc:
        record_from_proto_span(spans[1], "svc", "request")
    assert exc.value.where == "svc request.parentSpanId"
