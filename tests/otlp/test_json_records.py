"""``records_from_json`` on the values OTLP JSON allows and the near misses it must refuse:
ids, times, flags and event times, each checked where it stands and named in the error."""

from __future__ import annotations

from typing import Any

import pytest

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp import _common as c
from otel_semloop.otlp import records_from_json
from otel_semloop.otlp._common import Bad


def _span(**changes: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "parentSpanId": "eee19b7ec3c1b173",
        "name": "chat",
        "startTimeUnixNano": "1767225600000000000",
        "endTimeUnixNano": "1767225601000000000",
    }
    span.update(changes)
    return span


def _doc(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def test_uppercase_ids_come_out_lowercase() -> None:
    (record,) = records_from_json(_doc(_span(spanId="EEE19B7EC3C1B174", parentSpanId="EEE19B7EC3C1B173")))
    assert (record.span_id, record.parent_span_id) == ("eee19b7ec3c1b174", "eee19b7ec3c1b173")


@pytest.mark.parametrize("value", ["eee19b7ec3c1b17g", "eee19b7ec3c1b1\uff174", "eee19b7ec3c1b17 "])
def test_a_bad_id_is_reported_before_a_later_span_error(value: str) -> None:
    doc = _doc(_span(spanId=value), _span(attributes=[{"key": "k", "value": {"intValue": "x"}}]))
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(doc, "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[0].spanId"


@pytest.mark.parametrize("value", [" 1767225600", "+1767225600", "1_767225600", "١٢٣", "", "0x1f"])
def test_times_int_takes_but_otlp_does_not_are_errors(value: str) -> None:
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(_doc(_span(), _span(endTimeUnixNano=value)), "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[1].endTimeUnixNano"


def test_times_with_leading_zeros_and_minus_zero_decode_as_numbers() -> None:
    (record,) = records_from_json(_doc(_span(startTimeUnixNano="-0", endTimeUnixNano="0012")))
    assert (record.start_ns, record.end_ns) == (0, 12)


@pytest.mark.parametrize(("time", "ok"), [("18446744073709551615", True), ("18446744073709551616", False)])
def test_event_times_are_unsigned_64_bit(time: str, ok: bool) -> None:
    doc = _doc(_span(events=[{"name": "e", "timeUnixNano": time}]))
    if ok:
        (record,) = records_from_json(doc)
        assert record.events[0].time_ns == int(time)
    else:
        with pytest.raises(OTLPDecodeError) as exc:
            records_from_json(doc, "f:1")
        assert exc.value.where.endswith("spans[0].events[0].timeUnixNano")


@pytest.mark.parametrize(
    ("flags", "remote"), [(0, None), (0x100, False), (0x300, True), (0x200, None), (0x3FF, True)]
)
def test_parent_is_remote_is_a_bool_or_none_from_the_flags(flags: int, remote: bool | None) -> None:
    (record,) = records_from_json(_doc(_span(flags=flags)))
    assert record.parent_is_remote is remote


@pytest.mark.parametrize("key", ["traceId", "spanId", "startTimeUnixNano", "endTimeUnixNano"])
def test_a_missing_id_is_an_error_and_a_missing_time_is_zero(key: str) -> None:
    span = _span()
    del span[key]
    if key.endswith("Id"):
        with pytest.raises(OTLPDecodeError) as caught:
            records_from_json(_doc(span), "f:1")
        assert caught.value.where.endswith(f"spans[0].{key}")
    else:
        (record,) = records_from_json(_doc(span))
        assert (record.start_ns == 0) is (key == "startTimeUnixNano")
        assert (record.end_ns == 0) is (key == "endTimeUnixNano")


@pytest.mark.parametrize(("key", "check"), [("kind", c.span_kind), ("flags", c.u32)])
@pytest.mark.parametrize(
    "value", [0, 1, 5, -1, c.MIN_I32, c.MIN_I32 - 1, c.MAX_I32, c.MAX_I32 + 1, c.MAX_U32, c.MAX_U32 + 1]
)
def test_kind_and_flags_are_bounded_as_their_field_types(key: str, check: Any, value: int) -> None:
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
