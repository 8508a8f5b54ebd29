"""``records_from_json`` and ``record_from_json``: what each span field decodes to, and
which field an error names."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import _common as c
from otel_semloop.otlp import records_from_json
from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.records import record_from_json


def _doc(*spans: Any) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _span(**changes: Any) -> dict[str, Any]:
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "parentSpanId": "eee19b7ec3c1b173",
        "name": "chat",
        "startTimeUnixNano": "1767225600000000000",
        "endTimeUnixNano": "1767225601000000000",
    }
    span.update(changes)
    return span


def test_uppercase_ids_come_out_lowercase():
    (record,) = records_from_json(
        _doc(
            _span(
                traceId="5B8EFFF798038103D269B633813FC60C",
                spanId="EEE19B7EC3C1B174",
                parentSpanId="EEE19B7EC3C1B173",
            )
        )
    )
    assert (record.trace_id, record.span_id, record.parent_span_id) == (
        "5b8efff798038103d269b633813fc60c",
        "eee19b7ec3c1b174",
        "eee19b7ec3c1b173",
    )


@pytest.mark.parametrize(
    "value", ["eee19b7ec3c1b17g", "eee19b7ec3c1b1\uff174", "eee19b7ec3c1b17 ", "eee19b7ec3c1b17"]
)
def test_a_bad_id_is_reported_before_a_later_span_error(value):
    doc = _doc(_span(spanId=value), _span(attributes=[{"key": "k", "value": {"intValue": "x"}}]))
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(doc, "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[0].spanId"


@pytest.mark.parametrize(
    "value", [" 1767225600", "+1767225600", "1_767225600", "١٢٣", "", "0x1f", "18446744073709551616"]
)
def test_times_int_takes_but_otlp_does_not_are_errors(value):
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(_doc(_span(), _span(endTimeUnixNano=value)), "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[1].endTimeUnixNano"


def test_a_span_read_alone_is_the_record_its_document_gives():
    span = _span(attributes=[{"key": "k", "value": {"intValue": "7"}}], events=[{"name": "e"}])
    (in_document,) = records_from_json(_doc(span))
    alone = record_from_json(span)
    values = [(f.name, getattr(alone, f.name)) for f in dataclasses.fields(alone)]
    assert values == [(f.name, getattr(in_document, f.name)) for f in dataclasses.fields(in_document)]
    assert alone.source is span and alone.attributes == {"k": 7}


def test_a_span_read_alone_names_the_bad_field_from_the_span_on():
    span = _span(events=[{"name": "ok"}, {"name": "e", "timeUnixNano": "x"}])
    with pytest.raises(OTLPDecodeError) as exc:
        record_from_json(span)
    assert exc.value.where == "events[1].timeUnixNano"


def test_times_with_leading_zeros_and_minus_zero_and_the_largest_decode_as_numbers():
    (record,) = records_from_json(_doc(_span(startTimeUnixNano="-0", endTimeUnixNano="18446744073709551615")))
    assert (record.start_ns, record.end_ns) == (0, 2**64 - 1)


def test_an_event_time_out_of_range_names_the_event_and_field():
    doc = _doc(_span(events=[{"name": "ok"}, {"name": "e", "timeUnixNano": "18446744073709551616"}]))
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(doc, "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[0].events[1].timeUnixNano"


def test_events_decode_to_name_time_and_attributes():
    events = [
        {"name": "e", "timeUnixNano": "12", "attributes": [{"key": "a", "value": {"intValue": "3"}}]},
        {},
    ]
    (record,) = records_from_json(_doc(_span(events=events)))
    assert [(e.name, e.time_ns, dict(e.attributes)) for e in record.events] == [
        ("e", 12, {"a": 3}),
        ("", 0, {}),
    ]


@pytest.mark.parametrize(
    ("flags", "remote"), [(0, None), (0x100, False), (0x300, True), (0x200, None), (0x3FF, True)]
)
def test_parent_is_remote_is_a_bool_or_none_from_the_flags(flags, remote):
    (record,) = records_from_json(_doc(_span(flags=flags)))
    assert record.parent_is_remote is remote


@pytest.mark.parametrize("key", ["traceId", "spanId"])
def test_a_span_without_an_id_is_an_error_naming_it(key):
    span = _span()
    del span[key]
    with pytest.raises(OTLPDecodeError) as caught:
        records_from_json(_doc(span), "f:1")
    assert caught.value.where.endswith(f"spans[0].{key}")


@pytest.mark.parametrize(
    "key", ["startTimeUnixNano", "endTimeUnixNano", "parentSpanId", "name", "kind", "status"]
)
def test_a_span_without_an_optional_field_takes_its_default(key):
    span = _span(status={"code": 2, "message": "boom"}, kind=3)
    del span[key]
    (record,) = records_from_json(_doc(span))
    defaults = {
        "startTimeUnixNano": ("start_ns", 0),
        "endTimeUnixNano": ("end_ns", 0),
        "parentSpanId": ("parent_span_id", ""),
        "name": ("name", ""),
        "kind": ("kind", 0),
        "status": ("status_code", 0),
    }
    attribute, default = defaults[key]
    assert getattr(record, attribute) == default


@pytest.mark.parametrize(("key", "check"), [("kind", c.span_kind), ("flags", c.u32)])
@pytest.mark.parametrize(
    "value", [0, 1, 5, -1, c.MIN_I32, c.MIN_I32 - 1, c.MAX_I32, c.MAX_I32 + 1, c.MAX_U32, c.MAX_U32 + 1]
)
def test_kind_and_flags_bounds_are_the_field_readers(key, check, value):
    try:
        expected: Any = check(value)
    except Bad:
        expected = "error"
    try:
        (record,) = records_from_json(_doc(_span(**{key: value})))
    except OTLPDecodeError as exc:
        assert expected == "error" and exc.where.endswith(f"spans[0].{key}")
    else:
        assert expected != "error"
        if key == "kind":
            assert record.kind == expected


@pytest.mark.parametrize("value", [0, [], "", False, "x"])
def test_a_status_that_is_not_an_object_is_an_error_naming_it(value):
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(_doc(_span(status=value)), "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[0].status"


def test_the_record_keeps_the_span_dict_as_its_source():
    span = _span()
    (record,) = records_from_json(_doc(span))
    assert record.source is span
