"""OTLP codecs: protobuf <-> OTLP JSON round trips, records, write-back and the file formats."""

from __future__ import annotations

import copy
import math

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, LogsData
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.model import EventRecord
from otel_semloop.otlp import (
    apply_patch_json,
    apply_patch_proto,
    decode_any_json,
    decode_any_pb,
    encode_any_json,
    encode_any_pb,
    json_to_traces,
    records_from_json,
    records_from_proto,
    traces_to_json,
)
from otel_semloop.otlp.codec import json_to_logs, logs_to_json
from otel_semloop.writeback import SpanPatch

I64 = st.integers(-(2**63), 2**63 - 1)
U64 = st.integers(0, 2**64 - 1)
U32 = st.integers(0, 2**32 - 1)
TEXT = st.text(max_size=12) | st.sampled_from(["", "gen_ai.tool.name", "ünïcødé ✓ 🚀", 'a\nb\t"q"\\', "\x00"])
DOUBLES = st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, 1e308, -1e-308, math.inf, -math.inf])

# --- hypothesis strategies for protobuf TracesData ------------------------------------

#: A tree describing an AnyValue: (tag, payload). Built into protobuf by _any_pb.
_scalar = st.one_of(
    st.tuples(st.just("s"), TEXT),
    st.tuples(st.just("i"), I64),
    st.tuples(st.just("d"), DOUBLES),
    st.tuples(st.just("b"), st.booleans()),
    st.tuples(st.just("y"), st.binary(max_size=10)),
    st.tuples(st.just("e"), st.none()),
)
_any_tree = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.tuples(st.just("a"), st.lists(inner, max_size=4)),
        st.tuples(st.just("k"), st.lists(st.tuples(TEXT, st.none() | inner), max_size=4)),
    ),
    max_leaves=10,
)


def _any_pb(tree, pb: AnyValue) -> None:
    tag, payload = tree
    if tag == "s":
        pb.string_value = payload
    elif tag == "i":
        pb.int_value = payload
    elif tag == "d":
        pb.double_value = payload
    elif tag == "b":
        pb.bool_value = payload
    elif tag == "y":
        pb.bytes_value = payload
    elif tag == "a":
        pb.array_value.SetInParent()
        for item in payload:
            _any_pb(item, pb.array_value.values.add())
    elif tag == "k":
        pb.kvlist_value.SetInParent()
        _kvs_pb(payload, pb.kvlist_value.values)


def _kvs_pb(pairs, repeated) -> None:
    for key, tree in pairs:
        kv = repeated.add()
        kv.key = key
        if tree is not None:
            kv.value.SetInParent()
            _any_pb(tree, kv.value)


ATTRS = st.lists(st.tuples(TEXT, st.none() | _any_tree), max_size=5)
TRACE_ID = st.binary(min_size=16, max_size=16)
SPAN_ID = st.binary(min_size=8, max_size=8)


@st.composite
def spans(draw, *, valid_ids: bool = False) -> Span:
    s = Span()
    s.trace_id = draw(TRACE_ID if valid_ids else TRACE_ID | st.just(b""))
    s.span_id = draw(SPAN_ID if valid_ids else SPAN_ID | st.just(b""))
    s.trace_state = draw(st.sampled_from(["", "vendor=x,other=y"]) | TEXT)
    s.parent_span_id = draw(SPAN_ID | st.just(b""))
    s.flags = draw(st.sampled_from([0, 0x100, 0x300, 0x301]) | U32)
    s.name = draw(TEXT)
    s.kind = draw(st.integers(0, 5))
    s.start_time_unix_nano = draw(U64)
    s.end_time_unix_nano = draw(U64)
    _kvs_pb(draw(ATTRS), s.attributes)
    s.dropped_attributes_count = draw(U32)
    for _ in range(draw(st.integers(0, 2))):
        ev = s.events.add()
        ev.time_unix_nano = draw(U64)
        ev.name = draw(TEXT)
        _kvs_pb(draw(ATTRS), ev.attributes)
        ev.dropped_attributes_count = draw(U32)
    s.dropped_events_count = draw(U32)
    for _ in range(draw(st.integers(0, 2))):
        ln = s.links.add()
        ln.trace_id = draw(TRACE_ID | st.just(b""))
        ln.span_id = draw(SPAN_ID | st.just(b""))
        ln.trace_state = draw(TEXT)
        _kvs_pb(draw(ATTRS), ln.attributes)
        ln.dropped_attributes_count = draw(U32)
        ln.flags = draw(U32)
    s.dropped_links_count = draw(U32)
    if draw(st.booleans()):
        s.status.SetInParent()
        s.status.code = draw(st.integers(0, 2))
        s.status.message = draw(TEXT)
    return s


@st.composite
def log_records(draw) -> LogRecord:
    r = LogRecord()
    r.time_unix_nano = draw(U64)
    r.observed_time_unix_nano = draw(U64)
    r.severity_number = draw(st.integers(0, 24))
    r.severity_text = draw(TEXT)
    if draw(st.booleans()):
        _any_pb(draw(_any_tree), r.body)
    _kvs_pb(draw(ATTRS), r.attributes)
    r.dropped_attributes_count = draw(U32)
    r.flags = draw(U32)
    r.trace_id = draw(TRACE_ID | st.just(b""))
    r.span_id = draw(SPAN_ID | st.just(b""))
    r.event_name = draw(st.sampled_from(["", "gen_ai.choice", "gen_ai.user.message"]) | TEXT)
    return r


def _envelopes(draw, resources, scopes_of, items_of, items) -> None:
    """Fill a ``TracesData``/``LogsData``-shaped message: resources, each with scopes,
    each with the drawn ``items``."""
    for _ in range(draw(st.integers(0, 2))):
        rs = resources.add()
        if draw(st.booleans()):
            rs.resource.SetInParent()
            _kvs_pb(draw(ATTRS), rs.resource.attributes)
            rs.resource.dropped_attributes_count = draw(U32)
            for _ in range(draw(st.integers(0, 1))):
                ref = rs.resource.entity_refs.add()
                ref.schema_url = draw(TEXT)
                ref.type = draw(TEXT)
                ref.id_keys.extend(draw(st.lists(TEXT, max_size=2)))
                ref.description_keys.extend(draw(st.lists(TEXT, max_size=2)))
        rs.schema_url = draw(TEXT)
        for _ in range(draw(st.integers(0, 2))):
            ss = scopes_of(rs).add()
            if draw(st.booleans()):
                ss.scope.SetInParent()
                ss.scope.name = draw(TEXT)
                ss.scope.version = draw(TEXT)
                _kvs_pb(draw(ATTRS), ss.scope.attributes)
                ss.scope.dropped_attributes_count = draw(U32)
            ss.schema_url = draw(TEXT)
            for item in draw(st.lists(items, max_size=3)):
                items_of(ss).add().CopyFrom(item)


@st.composite
def traces_data(draw, *, valid_ids: bool = False, message_type=TracesData):
    msg = message_type()
    _envelopes(
        draw, msg.resource_spans, lambda rs: rs.scope_spans, lambda ss: ss.spans, spans(valid_ids=valid_ids)
    )
    return msg


@st.composite
def logs_data(draw, *, message_type=LogsData):
    msg = message_type()
    _envelopes(draw, msg.resource_logs, lambda rl: rl.scope_logs, lambda sl: sl.log_records, log_records())
    return msg


def through_json(msg, message_type=TracesData):
    """protobuf -> JSON dict -> orjson bytes -> parse -> protobuf."""
    return json_to_traces(orjson.loads(orjson.dumps(traces_to_json(msg))), message_type=message_type)


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- protobuf <-> JSON round trips ----------------------------------------------------


@FAST
@given(traces_data())
def test_protobuf_to_json_and_back_is_identical(msg):
    back = through_json(msg)
    assert back == msg
    assert back.SerializeToString(deterministic=True) == msg.SerializeToString(deterministic=True)


@FAST
@given(traces_data(message_type=ExportTraceServiceRequest))
def test_export_request_round_trips_as_itself(msg):
    assert through_json(msg, ExportTraceServiceRequest) == msg


@FAST
@given(logs_data())
def test_logs_protobuf_to_json_and_back_is_identical(msg):
    back = json_to_logs(orjson.loads(orjson.dumps(logs_to_json(msg))))
    assert back.SerializeToString(deterministic=True) == msg.SerializeToString(deterministic=True)


@FAST
@given(logs_data(message_type=ExportLogsServiceRequest))
def test_logs_export_request_round_trips_as_itself(msg):
    as_json = orjson.loads(orjson.dumps(logs_to_json(msg)))
    assert json_to_logs(as_json, message_type=ExportLogsServiceRequest) == msg


@FAST
@given(traces_data(valid_ids=True))
def test_json_records_match_protobuf_records(msg):
    obj = orjson.loads(orjson.dumps(traces_to_json(msg)))
    from_json = records_from_json(obj)
    from_pb = records_from_proto(msg)
    assert len(from_json) == len(from_pb)
    for a, b in zip(from_json, from_pb, strict=True):
        assert (a.trace_id, a.span_id, a.parent_span_id, a.name) == (
            b.trace_id,
            b.span_id,
            b.parent_span_id,
            b.name,
        )
        assert (a.start_ns, a.end_ns, a.kind, a.status_code, a.status_message) == (
            b.start_ns,
            b.end_ns,
            b.kind,
            b.status_code,
            b.status_message,
        )
        assert a.parent_is_remote == b.parent_is_remote
        assert a.attributes == b.attributes
        assert [(e.name, e.time_ns, e.attributes) for e in a.events] == [
            (e.name, e.time_ns, e.attributes) for e in b.events
        ]


_patch_values = st.one_of(
    TEXT, I64, st.booleans(), st.floats(allow_nan=False), st.binary(max_size=4), st.lists(TEXT, max_size=3)
)
patches = st.builds(
    SpanPatch,
    attributes=st.dictionaries(
        TEXT | st.sampled_from(["semloop.score", "gen_ai.tool.name"]), _patch_values, max_size=4
    ),
    events=st.lists(
        st.builds(EventRecord, TEXT, U64, st.dictionaries(TEXT, _patch_values, max_size=2)),
        max_size=2,
    ),
)


@FAST
@given(traces_data(valid_ids=True), st.data())
def test_patching_json_changes_only_attributes_and_events(msg, data):
    obj = orjson.loads(orjson.dumps(traces_to_json(msg)))
    before = copy.deepcopy(obj)
    records = records_from_json(obj)
    expected = TracesData()
    expected.CopyFrom(msg)
    pb_records = records_from_proto(expected)
    for rec, pb_rec in zip(records, pb_records, strict=True):
        if data.draw(st.booleans()):
            patch = data.draw(patches)
            apply_patch_json(rec.source, patch)
            apply_patch_proto(pb_rec.source, patch)
    after = orjson.loads(orjson.dumps(obj))
    # The same edit through both representations, and nothing else moved.
    assert json_to_traces(after) == expected
    for rs_before, rs_after in zip(
        before.get("resourceSpans", []), after.get("resourceSpans", []), strict=True
    ):
        assert {k: v for k, v in rs_before.items() if k != "scopeSpans"} == {
            k: v for k, v in rs_after.items() if k != "scopeSpans"
        }
        for ss_b, ss_a in zip(rs_before.get("scopeSpans", []), rs_after.get("scopeSpans", []), strict=True):
            for sp_b, sp_a in zip(ss_b.get("spans", []), ss_a.get("spans", []), strict=True):
                for key in sp_b.keys() | sp_a.keys():
                    if key not in ("attributes", "events"):
                        assert sp_b.get(key) == sp_a.get(key), key
                assert sp_a.get("events", [])[: len(sp_b.get("events", []))] == sp_b.get("events", [])


def test_patch_replaces_an_existing_attribute_where_it_stands_and_appends_new_ones():
    span = {
        "attributes": [
            {"key": "a", "value": {"stringValue": "x"}},
            {"key": "semloop.score", "value": {"doubleValue": 1.0}},
            {"key": "b", "value": {"intValue": "2"}},
        ]
    }
    apply_patch_json(span, SpanPatch({"semloop.score": 0.25, "semloop.label": "loop"}))
    assert span["attributes"] == [
        {"key": "a", "value": {"stringValue": "x"}},
        {"key": "semloop.score", "value": {"doubleValue": 0.25}},
        {"key": "b", "value": {"intValue": "2"}},
        {"key": "semloop.label", "value": {"stringValue": "loop"}},
    ]
    pb = Span()
    pb.attributes.add(key="semloop.score").value.double_value = 1.0
    apply_patch_proto(
        pb, SpanPatch({"semloop.score": 0.25, "semloop.label": "loop"}, [EventRecord("e", 5, {"k": 1})])
    )
    assert [(kv.key, decode_any_pb(kv.value)) for kv in pb.attributes] == [
        ("semloop.score", 0.25),
        ("semloop.label", "loop"),
    ]
    assert (pb.events[0].name, pb.events[0].time_unix_nano, pb.events[0].attributes[0].value.int_value) == (
        "e",
        5,
        1,
    )


def test_patch_on_a_span_without_attributes_or_events_creates_them():
    span = {"traceId": "5b8efff798038103d269b633813fc60c"}
    apply_patch_json(
        span, SpanPatch({"semloop.loop.detected": True}, [EventRecord("gen_ai.evaluation.result")])
    )
    assert span["attributes"] == [{"key": "semloop.loop.detected", "value": {"boolValue": True}}]
    assert span["events"] == [{"name": "gen_ai.evaluation.result"}]


# --- the real SDK exporter's encoder --------------------------------------------------


def _sdk_spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": "agent", "deployment.environment": "test"}, schema_url="https://x/1"
        ),
        span_limits=SpanLimits(max_span_attributes=12, max_events=2, max_links=1, max_event_attributes=2),
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(
        "semloop.test", "1.2.3", schema_url="https://x/scope", attributes={"scope.k": 1}
    )
    remote = SpanContext(
        trace_id=0x5B8EFFF798038103D269B633813FC60C,
        span_id=0xEEE19B7EC3C1B173,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "abc")]),
    )
    linked = SpanContext(0x1234, 0x5678, is_remote=False)
    parent_ctx = trace.set_span_in_context(NonRecordingSpan(remote))
    token = context.attach(parent_ctx)
    try:
        with tracer.start_as_current_span(
            "invoke_agent coder",
            kind=SpanKind.SERVER,
            links=[Link(linked, {"link.k": "v", "n": 3}), Link(linked)],
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "s": "ünïcødé",
                "i": -(2**63),
                "big": 2**63 - 1,
                "f": 1.5,
                "b": False,
                "ss": ["a", "b"],
                "ii": [1, 2, 3],
                "ff": [0.5, -0.0],
                "bb": [True, False],
                "empty": [],
            },
        ) as root:
            root.add_event("start", {"k": "v", "n": 1, "x": 2.5})
            for i in range(4):
                with tracer.start_as_current_span(
                    f"execute_tool read_file {i}", kind=SpanKind.INTERNAL
                ) as tool:
                    tool.set_attributes({f"a{j}": j for j in range(15)})
                    tool.add_event("retry", timestamp=1_700_000_000_000_000_000 + i)
                    if i == 3:
                        tool.set_status(Status(StatusCode.ERROR, "tool failed"))
                    else:
                        tool.set_status(Status(StatusCode.OK))
                    tool.record_exception(ValueError("boom"))
    finally:
        context.detach(token)
    provider.shutdown()
    return exporter.get_finished_spans()


def test_sdk_encoded_spans_round_trip_through_json():
    request = encode_spans(_sdk_spans())
    assert isinstance(request, ExportTraceServiceRequest)
    back = through_json(request, ExportTraceServiceRequest)
    assert back == request
    assert back.SerializeToString(deterministic=True) == request.SerializeToString(deterministic=True)


def test_sdk_encoded_spans_decode_to_records_with_remote_parent_and_drops():
    request = encode_spans(_sdk_spans())
    obj = orjson.loads(orjson.dumps(traces_to_json(request)))
    records = {r.name: r for r in records_from_json(obj)}
    root = records["invoke_agent coder"]
    assert root.parent_span_id == "eee19b7ec3c1b173"
    assert root.parent_is_remote is True
    assert root.kind == 2
    assert root.attributes["i"] == -(2**63) and root.attributes["big"] == 2**63 - 1
    assert root.attributes["ss"] == ["a", "b"] and root.attributes["ff"] == [0.5, -0.0]
    assert root.attributes["empty"] == []
    tool = records["execute_tool read_file 3"]
    assert tool.parent_span_id == root.span_id
    assert tool.parent_is_remote is False
    assert (tool.status_code, tool.status_message) == (2, "tool failed")
    assert tool.events[0].name == "retry" and tool.events[0].time_ns == 1_700_000_000_000_000_003
    assert tool.events[1].name == "exception"
    span_json = tool.source
    assert span_json["droppedAttributesCount"] == 3
    assert records["invoke_agent coder"].source["droppedLinksCount"] == 1
    assert records_from_proto(request)[0].trace_id == "5b8efff798038103d269b633813fc60c"


# --- what the Collector file exporter writes -------------------------------------------

COLLECTOR_LINE = (
    b'{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"my-agent"}}]},'
    b'"scopeSpans":[{"scope":{"name":"openinference.instrumentation","version":"0.1.0"},"spans":['
    b'{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173",'
    b'"flags":768,"name":"execute_tool search","kind":3,"startTimeUnixNano":"1700000000000000000",'
    b'"endTimeUnixNano":"1700000000250000000","attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":'
    b'"search"}},{"key":"retries","value":{"intValue":"5"}},{"key":"score","value":{"doubleValue":0.5}},'
    b'{"key":"cached","value":{"boolValue":false}},{"key":"tags","value":{"arrayValue":{"values":[{"stringValue":'
    b'"a"},{"intValue":"7"}]}}},{"key":"meta","value":{"kvlistValue":{"values":[{"key":"k","value":'
    b'{"stringValue":"v"}}]}}},{"key":"blob","value":{"bytesValue":"AAEC"}}],"droppedAttributesCount":1,'
    b'"events":[{"timeUnixNano":"1700000000100000000","name":"exception","attributes":[{"key":"exception.type",'
    b'"value":{"stringValue":"Timeout"}}]}],"status":{"message":"timed out","code":2}},'
    b'{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b173","flags":256,'
    b'"name":"invoke_agent","kind":1,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":'
    b'"1700000001000000000","status":{}}]}],"schemaUrl":"https://opentelemetry.io/schemas/1.26.0"}]}'
)


def test_collector_file_exporter_line_decodes_to_the_right_records():
    tool, agent = records_from_json(orjson.loads(COLLECTOR_LINE), "traces.jsonl:1")
    assert tool.trace_id == "5b8efff798038103d269b633813fc60c"
    assert (tool.span_id, tool.parent_span_id) == ("eee19b7ec3c1b174", "eee19b7ec3c1b173")
    assert tool.name == "execute_tool search"
    assert (tool.kind, tool.start_ns, tool.end_ns) == (
        3,
        1_700_000_000_000_000_000,
        1_700_000_000_250_000_000,
    )
    assert tool.attributes == {
        "gen_ai.tool.name": "search",
        "retries": 5,
        "score": 0.5,
        "cached": False,
        "tags": ["a", 7],
        "meta": {"k": "v"},
        "blob": b"\x00\x01\x02",
    }
    assert tool.events == [EventRecord("exception", 1_700_000_000_100_000_000, {"exception.type": "Timeout"})]
    assert (tool.status_code, tool.status_message) == (2, "timed out")
    assert tool.parent_is_remote is True
    assert (agent.parent_span_id, agent.parent_is_remote, agent.status_code, agent.events) == (
        "",
        False,
        0,
        (),
    )


def test_collector_line_survives_protobuf_and_back_unchanged():
    obj = orjson.loads(COLLECTOR_LINE)
    assert traces_to_json(json_to_traces(obj)) == obj


def test_older_collectors_enum_names_and_uppercase_hex_are_accepted():
    obj = orjson.loads(COLLECTOR_LINE)
    span = obj["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span.update(
        kind="SPAN_KIND_CLIENT", traceId=span["traceId"].upper(), startTimeUnixNano=1_700_000_000_000_000_000
    )
    span["status"]["code"] = "STATUS_CODE_ERROR"
    rec = records_from_json(obj)[0]
    assert (rec.kind, rec.status_code, rec.trace_id) == (3, 2, "5b8efff798038103d269b633813fc60c")
    assert rec.start_ns == 1_700_000_000_000_000_000
    pb = json_to_traces(obj).resource_spans[0].scope_spans[0].spans[0]
    assert (pb.kind, pb.status.code, pb.trace_id.hex()) == (3, 2, "5b8efff798038103d269b633813fc60c")


def test_unknown_fields_are_ignored_and_kept_in_the_source():
    obj = orjson.loads(COLLECTOR_LINE)
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["futureField"] = {"x": 1}
    rec = records_from_json(obj)[0]
    assert rec.source["futureField"] == {"x": 1}
    assert (
        "futureField"
        not in traces_to_json(json_to_traces(obj))["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    )


# --- AnyValue ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("json_value", "python"),
    [
        ({"stringValue": "x"}, "x"),
        ({"intValue": "-9223372036854775808"}, -(2**63)),
        ({"intValue": 42}, 42),
        ({"doubleValue": 1.5}, 1.5),
        ({"doubleValue": 2}, 2.0),
        ({"doubleValue": "Infinity"}, math.inf),
        ({"doubleValue": "-Infinity"}, -math.inf),
        ({"boolValue": True}, True),
        ({"bytesValue": "AAEC"}, b"\x00\x01\x02"),
        ({"bytesValue": "-_8"}, b"\xfb\xff"),
        ({"arrayValue": {}}, []),
        ({"arrayValue": {"values": [{"intValue": "1"}, {}]}}, [1, None]),
        ({"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": False}}]}}, {"a": False}),
        ({}, None),
        ({"stringValue": None, "intValue": "3"}, 3),
    ],
)
def test_anyvalue_json_decodes_to_python(json_value, python):
    assert decode_any_json(json_value) == python


def test_anyvalue_nan_string_decodes_to_nan_and_encodes_back():
    assert math.isnan(decode_any_json({"doubleValue": "NaN"}))
    assert encode_any_json(math.nan) == {"doubleValue": "NaN"}
    assert encode_any_json(-math.inf) == {"doubleValue": "-Infinity"}


@pytest.mark.parametrize(
    "value",
    [
        "",
        "ü",
        0,
        -1,
        2**63 - 1,
        True,
        False,
        0.0,
        1e-300,
        b"",
        b"\xff",
        [],
        [1, "a", [2.5]],
        {},
        {"a": {"b": [None]}},
    ],
)
def test_python_values_round_trip_through_json_and_protobuf(value):
    assert decode_any_json(orjson.loads(orjson.dumps(encode_any_json(value)))) == value
    assert decode_any_pb(encode_any_pb(value)) == value


def test_int_is_always_written_as_a_decimal_string():
    assert encode_any_json(5) == {"intValue": "5"}
    assert traces_to_json(json_to_traces({"resourceSpans": [{"resource": {"attributes": [
        {"key": "n", "value": {"intValue": 5}}]}}]})) == {"resourceSpans": [{"resource": {"attributes": [
        {"key": "n", "value": {"intValue": "5"}}]}}]}  # fmt: skip


def test_encoding_rejects_what_otlp_cannot_carry():
    with pytest.raises(TypeError):
        encode_any_json(object())
    with pytest.raises(ValueError):
        encode_any_json(2**63)
    with pytest.raises(ValueError):
        encode_any_pb(-(2**63) - 1)


def test_str_and_int_enum_members_encode_as_their_values():
    import enum

    class Label(str, enum.Enum):
        LOOP = "loop"

    class Level(enum.IntEnum):
        TWO = 2

    assert encode_any_json(Label.LOOP) == {"stringValue": "loop"}
    assert encode_any_json(Level.TWO) == {"intValue": "2"}
    assert encode_any_pb(Label.LOOP).string_value == "loop"


# --- errors say where ----------------------------------------------------------------


def _line_with(**changes):
    obj = orjson.loads(COLLECTOR_LINE)
    obj["resourceSpans"][0]["scopeSpans"][0]["spans"][1].update(changes)
    return obj


@pytest.mark.parametrize(
    ("changes", "path", "message"),
    [
        ({"traceId": "5b8efff798038103d269b633813fc60"}, "spans[1].traceId", "32 hex"),
        ({"traceId": "zz8efff798038103d269b633813fc60c"}, "spans[1].traceId", "32 hex"),
        ({"traceId": None}, "spans[1].traceId", "missing"),
        ({"spanId": "eee19b7ec3c1b17g"}, "spans[1].spanId", "16 hex"),
        ({"spanId": 12}, "spans[1].spanId", "hex string"),
        ({"parentSpanId": "abc"}, "spans[1].parentSpanId", "16 hex"),
        ({"startTimeUnixNano": "17e8"}, "spans[1].startTimeUnixNano", "64-bit"),
        ({"endTimeUnixNano": "-1"}, "spans[1].endTimeUnixNano", "out of range"),
        ({"endTimeUnixNano": True}, "spans[1].endTimeUnixNano", "true"),
        ({"kind": "SERVER"}, "spans[1].kind", "enum"),
        ({"name": ["x"]}, "spans[1].name", "string"),
        ({"attributes": {"key": "x"}}, "spans[1].attributes", "array"),
        (
            {"attributes": [{"key": "a", "value": {"intValue": "1.5"}}]},
            "spans[1].attributes[0].value.intValue",
            "",
        ),
        (
            {"attributes": [{"key": "a", "value": {"boolValue": "yes"}}]},
            "spans[1].attributes[0].value.boolValue",
            "",
        ),
        (
            {"attributes": [{"key": "a", "value": {"arrayValue": {"values": [{"bytesValue": "!"}]}}}]},
            "spans[1].attributes[0].value.arrayValue.values[0].bytesValue",
            "base64",
        ),
        (
            {"attributes": [{"key": "a", "value": {"stringValue": "x", "intValue": "1"}}]},
            "spans[1].attributes[0].value",
            "more than one",
        ),
        ({"events": [{"name": "e", "timeUnixNano": "x"}]}, "spans[1].events[0].timeUnixNano", ""),
        ({"status": {"code": 1.5}}, "spans[1].status.code", ""),
        ({"status": "ok"}, "spans[1].status", "status"),
        ({"flags": -1}, "spans[1].flags", "out of range"),
    ],
)
def test_invalid_values_raise_decode_errors_naming_file_line_and_field(changes, path, message):
    where = f"traces.jsonl:12 resourceSpans[0].scopeSpans[0].{path}"
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(_line_with(**changes), "traces.jsonl:12")
    assert exc.value.where == where
    assert message in str(exc.value)
    if changes.get("traceId", "") is not None:  # the codec allows a missing id (proto3 default)
        with pytest.raises(OTLPDecodeError) as exc:
            json_to_traces(_line_with(**changes), "traces.jsonl:12")
        assert exc.value.where == where


def test_empty_parent_is_a_root_and_wrong_container_types_are_errors():
    assert records_from_json(_line_with(parentSpanId=""))[1].parent_span_id == ""
    with pytest.raises(OTLPDecodeError, match="resourceSpans"):
        records_from_json({"resourceSpans": {}})
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json({"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]}, "x:1")
    assert exc.value.where == "x:1 resourceSpans[0].scopeSpans[0].spans[0]"
    with pytest.raises(OTLPDecodeError):
        records_from_json([])


def test_protobuf_records_reject_ids_of_the_wrong_length():
    msg = TracesData()
    span = msg.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 7)
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_proto(msg, "in.pb")
    assert exc.value.where == "in.pb resourceSpans[0].scopeSpans[0].spans[0].spanId"
    span.span_id = b"\x02" * 8
    assert records_from_proto(msg)[0].parent_span_id == ""


def test_keyvalue_without_a_value_stays_without_one():
    msg = TracesData()
    res = msg.resource_spans.add().resource
    res.attributes.append(KeyValue(key="k"))
    assert traces_to_json(msg) == {"resourceSpans": [{"resource": {"attributes": [{"key": "k"}]}}]}
    assert through_json(msg) == msg
