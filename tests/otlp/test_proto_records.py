"""Protobuf spans as records: attribute values by their kind, id errors naming the span."""

from __future__ import annotations

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import decode_attributes_pb, records_from_proto
from otel_semloop.otlp.records import record_from_proto_span


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
    assert got == {
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
