"""Fuzzing the untrusted-input parsers: whatever comes in, the OTLP readers return records
or raise OTLPDecodeError, never any other exception, and one bad line costs only itself."""

from __future__ import annotations

import copy
import gzip
import io

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import (
    decode_any_json,
    iter_json_lines,
    iter_proto_messages,
    json_to_traces,
    records_from_json,
    traces_to_json,
    write_json_line,
)
from otel_semloop.otlp.anyvalue import MAX_DEPTH
from otel_semloop.otlp.codec import json_to_logs
from tests.otlp.test_otlp_codec import COLLECTOR_LINE, traces_data

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


@FUZZ
@given(st.binary(max_size=300))
@example(b"\xff\xfe{}")
@example(b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"\\ud800"}]}]}]}')
@example(b"[" * 2000)
@example(b'{"a":' * 600 + b"1" + b"}" * 600)
@example(b"\x1f\x8b")
def test_arbitrary_bytes_lines_become_batches_or_errors(raw):
    try:
        for batch in iter_json_lines(io.BytesIO(raw), name="fuzz.jsonl"):
            assert (batch.error is None) == (batch.obj is not None)
            if batch.error is not None:
                assert isinstance(batch.error, OTLPDecodeError)
                assert batch.error.where.startswith("fuzz.jsonl:")
                assert batch.raw
    except OTLPDecodeError as exc:  # only a broken gzip stream stops the reader
        assert raw.startswith(b"\x1f\x8b") and "gzip" in str(exc)


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
    (batch,) = iter_json_lines(io.BytesIO(line))
    value = batch.records[0].attributes["d"]
    for _ in range(MAX_DEPTH):
        (value,) = value
    assert value == "leaf"
    assert json_to_traces(orjson.loads(line))


def test_values_nested_past_the_limit_are_an_error_batch_not_a_crash():
    line = _line_with_attribute_value(_nested_arrays(300))
    (batch,) = iter_json_lines(io.BytesIO(line), name="deep.jsonl")
    assert not batch.ok and "nested deeper" in str(batch.error)
    assert batch.raw == line
    with pytest.raises(OTLPDecodeError, match="nested deeper"):
        json_to_traces(orjson.loads(line))


def test_deep_unknown_fields_are_written_back_even_past_orjsons_nesting_limit():
    line = _line_with_attribute_value(b'{"intValue":"1"}', b',"future":' + b"[" * 900 + b"]" * 900)
    (batch,) = iter_json_lines(io.BytesIO(line))
    assert batch.ok
    out = io.BytesIO()
    write_json_line(out, batch)
    assert orjson.loads(out.getvalue()) == orjson.loads(line)


@FUZZ
@given(st.lists(st.binary(max_size=80), min_size=1, max_size=6), st.data())
def test_a_file_with_broken_lines_yields_every_good_line_and_one_error_per_bad_line(garbage, data):
    good = COLLECTOR_LINE
    lines, expect_ok = [], []
    for junk in garbage:
        junk = junk.replace(b"\n", b" ").replace(b"\r", b" ")
        if data.draw(st.booleans()):
            lines.append(good)
            expect_ok.append(True)
        if junk.strip():
            lines.append(b"{\x00" + junk)  # a NUL after "{" is never valid JSON
            expect_ok.append(False)
    lines.append(good)
    expect_ok.append(True)
    payload = b"\n".join(lines) + b"\n"
    if data.draw(st.booleans()):
        payload = gzip.compress(payload)
    batches = list(iter_json_lines(io.BytesIO(payload), name="mixed.jsonl"))
    assert [b.ok for b in batches] == expect_ok
    assert [b.line_no for b in batches] == list(range(1, len(lines) + 1))
    for batch, line in zip(batches, lines, strict=True):
        if batch.ok:
            assert len(batch.records) == 2
        else:
            assert batch.raw == line
            assert batch.error.where == f"mixed.jsonl:{batch.line_no}"


@FUZZ
@given(st.binary(max_size=200))
@example(b"\x00\x00\x00\x05\x0a\x03\x0a\x01\xff")
@example(b"\x7f\xff\xff\xff")
def test_arbitrary_bytes_as_a_protobuf_file_only_raise_decode_errors(raw):
    try:
        for batch in iter_proto_messages(io.BytesIO(raw), name="fuzz.pb"):
            assert (batch.error is None) == (batch.message is not None)
    except OTLPDecodeError as exc:
        assert exc.where.startswith("fuzz.pb message ")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces_data(), st.data())
def test_mutated_protobuf_bytes_only_raise_decode_errors(msg, data):
    payload = bytearray(msg.SerializeToString())
    for _ in range(data.draw(st.integers(1, 4))):
        if payload:
            i = data.draw(st.integers(0, len(payload) - 1))
            payload[i] = data.draw(st.integers(0, 255))
    framed = len(payload).to_bytes(4, "big") + bytes(payload)
    try:
        batches = list(iter_proto_messages(io.BytesIO(framed)))
    except OTLPDecodeError as exc:  # a mutated length inside is fine; the frame is intact
        raise AssertionError("the frame is intact, so the reader must not stop") from exc
    assert len(batches) == 1 and (batches[0].message is None) == (batches[0].error is not None)
