"""Fuzzing the untrusted-input parsers: whatever comes in, the OTLP readers return records
or raise OTLPDecodeError, never any other exception, and one bad line costs only itself."""

from __future__ import annotations

import copy

import orjson
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import (
    decode_any_json,
    json_to_traces,
    records_from_json,
    records_from_proto,
    traces_to_json,
)
from otel_semloop.otlp.anyvalue import MAX_DEPTH
from otel_semloop.otlp.codec import json_to_logs
from tests.otlp.test_otlp_codec import traces_data

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(
        ["", "NaN", "Infinity", "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "1e3", "-0"]
    )
    # what stdlib json (not orjson) can hand over
    | st.sampled_from([10**400, -(10**400), 2**64, -(2**63) - 1]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "intValue",
                    "doubleValue",
                    "boolValue",
                    "bytesValue",
                    "arrayValue",
                    "kvlistValue",
                    "values",
                    "events",
                    "links",
                    "status",
                    "code",
                    "flags",
                    "startTimeUnixNano",
                    "resource",
                    "scope",
                    "resourceLogs",
                    "scopeLogs",
                    "logRecords",
                    "body",
                    "eventName",
                ]
            )
            | st.text(max_size=5),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


def only_decode_errors(fn, *args):
    """Run ``fn``; the only exception allowed out is OTLPDecodeError."""
    try:
        return fn(*args)
    except OTLPDecodeError as exc:
        assert str(exc)
        return None


@FUZZ
@given(json_values)
@example({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": [], "spanId": {}}]}]}]})
@example({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": [], "value": []}]}]}]}]})
@example({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"kvlistValue": 1}, "spanId": 7}]}]}]})
def test_arbitrary_json_values_only_raise_decode_errors(value):
    only_decode_errors(records_from_json, value, "fuzz:1")
    only_decode_errors(json_to_traces, value, "fuzz:1")
    only_decode_errors(json_to_logs, value, "fuzz:1")
    only_decode_errors(decode_any_json, value)


def _locations(node, out):
    """Every (container, key) inside a parsed JSON document."""
    if isinstance(node, dict):
        for key, child in node.items():
            out.append((node, key))
            _locations(child, out)
    elif isinstance(node, list):
        for i, child in enumerate(node):
            out.append((node, i))
            _locations(child, out)
    return out


@FUZZ
@given(traces_data(valid_ids=True), st.data())
def test_mutated_valid_documents_only_raise_decode_errors(msg, data):
    doc = orjson.loads(orjson.dumps(traces_to_json(msg)))
    for _ in range(data.draw(st.integers(1, 3))):
        places = _locations(doc, [])
        if not places:
            break
        container, key = data.draw(st.sampled_from(places))
        if isinstance(container, dict) and data.draw(st.booleans()):
            del container[key]
        else:
            container[key] = data.draw(json_values)
    original = copy.deepcopy(doc)
    records = only_decode_errors(records_from_json, doc, "fuzz:1")
    only_decode_errors(json_to_traces, doc, "fuzz:1")
    assert doc == original  # decoding never edits the document
    if records is not None:
        assert all(len(r.trace_id) == 32 and len(r.span_id) == 16 for r in records)


def _line_with_attribute_value(value_json: bytes, extra: bytes = b"") -> bytes:
    return (
        b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",'
        b'"spanId":"eee19b7ec3c1b174","attributes":[{"key":"d","value":'
        + value_json
        + b"}]"
        + extra
        + b"}]}]}]}"
    )


def _nested_arrays(depth: int) -> bytes:
    return b'{"arrayValue":{"values":[' * depth + b'{"stringValue":"leaf"}' + b"]}}" * depth


def test_values_nested_within_the_limit_decode():
    line = _line_with_attribute_value(_nested_arrays(MAX_DEPTH))
    (record,) = records_from_json(orjson.loads(line))
    value = record.attributes["d"]
    for _ in range(MAX_DEPTH):
        (value,) = value
    assert value == "leaf"
    assert json_to_traces(orjson.loads(line))


def test_values_nested_past_the_limit_are_a_decode_error_not_a_crash():
    line = _line_with_attribute_value(_nested_arrays(300))
    with pytest.raises(OTLPDecodeError, match="nested deeper"):
        records_from_json(orjson.loads(line))
    with pytest.raises(OTLPDecodeError, match="nested deeper"):
        json_to_traces(orjson.loads(line))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces_data(), st.data())
def test_mutated_protobuf_bytes_only_raise_decode_errors(msg, data):
    payload = bytearray(msg.SerializeToString())
    for _ in range(data.draw(st.integers(1, 4))):
        if payload:
            i = data.draw(st.integers(0, len(payload) - 1))
            payload[i] = data.draw(st.integers(0, 255))
    try:
        parsed = TracesData.FromString(bytes(payload))
    except DecodeError:
        return
    only_decode_errors(records_from_proto, parsed, "fuzz message 1")
