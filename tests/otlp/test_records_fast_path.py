"""``records_from_json`` takes shortcuts (ids and times checked in bulk after the pass,
see ``otel_semloop.otlp.records._spans_json``); these tests hold it to the plain path,
where every value is checked where it stands: the same records, or the same error."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.model import EventRecord
from otel_semloop.otlp import _common as c
from otel_semloop.otlp import records, records_from_json, traces_to_json
from otel_semloop.otlp._common import Bad, field
from otel_semloop.otlp.records import _attributes, _events_json, _records_json
from tests.otlp.test_otlp_codec import traces_data
from tests.otlp.test_otlp_fuzz import json_values

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: near misses of lowercase hex ids and decimal times: each is wrong, or right only
#: after the plain path's normalising (uppercase hex), for a reason a bulk check can miss
NEAR_MISSES = [
    "EEE19B7EC3C1B174",  # uppercase: valid, lowercased
    "eee19b7ec3c1b17G",
    "eee19b7ec3c1b17g",
    "eee19b7ec3c1b17 ",
    "\uff10eee19b7ec3c1b17",  # a fullwidth digit zero
    "eee19b7ec3c1b17",
    "eee19b7ec3c1b1744",
    "",
    "1767225600000000000",
    " 1767225600000000",
    "+1767225600000000",
    "1_767225600000000",
    "-0",
    "00000000000000001",
    "١٢٣",  # Arabic-Indic digits: int() takes them
    "17e8",
    "18446744073709551615",
    "18446744073709551616",
    "9999999999999999999",
    "0x1f",
]
ID_OR_TIME = st.sampled_from(NEAR_MISSES) | st.text(alphabet="0123456789abcdefABCDEF_ +-x", max_size=20)
FIELDS = ["traceId", "spanId", "parentSpanId", "startTimeUnixNano", "endTimeUnixNano"]


def _plain(doc: Any, where: str = "") -> list[Any]:
    try:
        return _records_json(doc, None, None, False)
    except Bad as e:
        raise e.to_error(where) from None
    except RecursionError:
        raise Bad("value nested too deeply").to_error(where) from None


def _outcome(decode: Any, doc: Any) -> Any:
    try:
        records = decode(doc, "f:1")
    except OTLPDecodeError as exc:
        return ("error", str(exc), exc.where)
    out = []
    for r in records:
        fields = dataclasses.asdict(r) | {"source": None}
        out.append((fields, id(r.source)))
    return ("ok", out)


def _parsed(doc: Any, where: str = "") -> list[Any]:
    return records_from_json(doc, where, json_types=True)


def _same_as_plain(doc: Any) -> None:
    """``doc`` decodes as on the plain path, also as a parser's output (every caller here
    passes only JSON types)."""
    plain = _outcome(_plain, doc)
    assert _outcome(records_from_json, doc) == plain
    assert _outcome(_parsed, doc) == plain
    if plain[0] == "ok":  # the trace id shortcut (the previous span's) serves both paths
        for record in records_from_json(doc):
            assert record.trace_id == c.trace_id_hex(record.source["traceId"])


@FUZZ
@given(traces_data(valid_ids=True), st.data())
def test_ids_and_times_near_misses_decode_as_on_the_plain_path(msg, data):
    doc = orjson.loads(orjson.dumps(traces_to_json(msg)))
    levels = [ss for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", [])]
    for span in [s for ss in levels for s in ss.get("spans", [])]:
        for key in FIELDS:
            if data.draw(st.integers(0, 3)) == 0:
                span[key] = data.draw(ID_OR_TIME)
    _same_as_plain(doc)


@FUZZ
@given(traces_data(valid_ids=True))
def test_valid_documents_decode_as_on_the_plain_path(msg):
    _same_as_plain(orjson.loads(orjson.dumps(traces_to_json(msg))))


@FUZZ
@given(json_values)
@example({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "a" * 32, "spanId": "A" * 16}]}]}]})
def test_arbitrary_documents_decode_as_on_the_plain_path(value):
    _same_as_plain(value)


def _doc(*spans: dict[str, Any]) -> dict[str, Any]:
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


def test_uppercase_ids_taken_unchecked_come_out_lowercase():
    (record,) = records_from_json(_doc(_span(spanId="EEE19B7EC3C1B174", parentSpanId="EEE19B7EC3C1B173")))
    assert (record.span_id, record.parent_span_id) == ("eee19b7ec3c1b174", "eee19b7ec3c1b173")


@pytest.mark.parametrize("value", ["eee19b7ec3c1b17g", "eee19b7ec3c1b1\uff174", "eee19b7ec3c1b17 "])
def test_a_bad_id_is_reported_before_a_later_span_error(value):
    # the unchecked id in span 0 is wrong, span 1's attribute too: span 0 is named
    doc = _doc(_span(spanId=value), _span(attributes=[{"key": "k", "value": {"intValue": "x"}}]))
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(doc, "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[0].spanId"


@pytest.mark.parametrize("value", [" 1767225600", "+1767225600", "1_767225600", "١٢٣", "", "0x1f"])
def test_times_int_takes_but_otlp_does_not_are_errors(value):
    with pytest.raises(OTLPDecodeError) as exc:
        records_from_json(_doc(_span(), _span(endTimeUnixNano=value)), "f:1")
    assert exc.value.where == "f:1 resourceSpans[0].scopeSpans[0].spans[1].endTimeUnixNano"


def test_times_with_leading_zeros_and_minus_zero_decode_as_numbers():
    (record,) = records_from_json(_doc(_span(startTimeUnixNano="-0", endTimeUnixNano="0012")))
    assert (record.start_ns, record.end_ns) == (0, 12)


def test_a_trace_as_exporters_write_it_decodes_as_on_the_plain_path():
    # every shortcut taken: lowercase ids, times as decimal strings, a root without a parent
    spans = [
        _span(spanId=f"{i:016x}", startTimeUnixNano=f"17672256{i:011d}", endTimeUnixNano=f"1767225{i:012d}")
        for i in range(1, 40)
    ]
    spans.append(_span(parentSpanId="", startTimeUnixNano="1767225599000000000", endTimeUnixNano="9"))
    doc = _doc(*spans)
    _same_as_plain(doc)
    assert [r.start_ns for r in records_from_json(doc)][:2] == [1767225600000000001, 1767225600000000002]


# --- events -----------------------------------------------------------------------------


def _plain_events(events: Any) -> list[EventRecord]:
    """The reading of a span's events before its shortcuts (the reference)."""
    if type(events) is not list:
        c.bad_type("an array", events)
    out = []
    for ev in events:
        try:
            if type(ev) is not dict:
                c.bad_type("an event object", ev)
            name = ev.get("name")
            if type(name) is not str:
                name = field(ev, "name", c.string)
            t = ev.get("timeUnixNano")
            if type(t) is not str or not t.isdigit() or not t.isascii():
                t = field(ev, "timeUnixNano", c.u64)
            out.append(EventRecord(name, c.u64(t), _attributes(ev.get("attributes"))))
        except Bad as e:
            e.path.append(f"[{c.index_of(events, ev)}]")
            raise
    return out


def _events_outcome(decode: Any, events: Any) -> Any:
    try:
        return ("ok", [(e.name, e.time_ns, type(e.time_ns), e.attributes) for e in decode(events)])
    except Bad as e:
        return ("bad", str(e), list(e.path))


EVENTS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["gen_ai.user.message", "", None, 3]),
            "timeUnixNano": ID_OR_TIME | st.integers(-1, 2**65) | st.none() | st.just(1.5),
            "attributes": st.sampled_from(
                [
                    [{"key": "content", "value": {"stringValue": "hi"}}],
                    [{"key": "n", "value": {"intValue": "x"}}],
                    [],
                    None,
                    {"key": "k"},
                ]
            ),
        },
    )
    | st.sampled_from([None, 1, []]),
    max_size=4,
)


@FUZZ
@given(EVENTS | json_values)
def test_events_decode_as_on_the_plain_path(events):
    plain = _events_outcome(_plain_events, events)
    assert _events_outcome(_events_json, events) == plain


@pytest.mark.parametrize("time", ["99999999999999999999", "18446744073709551616", "1767225600000000000", "0"])
def test_event_times_decode_as_before_including_the_range_error_path(time):
    events = [{"name": "e", "timeUnixNano": time}]
    assert _events_outcome(_events_json, events) == _events_outcome(_plain_events, events)


# --- what only a subclass fails, and json_types=True ---------------------------------------


class _Str(str):  # not what a JSON parser returns: the plain path refuses it where it stands
    pass


class _Dict(dict):
    pass


@pytest.mark.parametrize(
    "doc",
    [
        _doc(_span(), _span(traceId=_Str("5b8efff798038103d269b633813fc60c"))),
        _doc(_span(spanId=_Str("eee19b7ec3c1b174"))),
        _doc(_span(parentSpanId=_Str("eee19b7ec3c1b173"))),
        _doc(_span(startTimeUnixNano=_Str("1767225600000000000"))),
        _doc(_span(), _Dict(_span())),
        _doc(_span(attributes=[_Dict(key="a", value={"stringValue": "x"})])),
        _doc(_span(events=[{"name": "e", "attributes": [{"key": "a", "value": _Dict(stringValue="x")}]}])),
    ],
)
def test_subclasses_decode_as_on_the_plain_path(doc):
    # (json_types=True would be a wrong word here)
    assert _outcome(records_from_json, doc)[0] == "error"
    assert _outcome(records_from_json, doc) == _outcome(_plain, doc)


@pytest.mark.parametrize(
    "changes",
    [
        {"traceId": ["5b8efff798038103d269b633813fc60c"]},
        {"traceId": {"a": 1}},
        {"spanId": list("eee19b7ec3c1b174")},
        {"parentSpanId": None},
        {"parentSpanId": 0},
        {"parentSpanId": []},
        {"startTimeUnixNano": 1767225600000000000},
        {"startTimeUnixNano": None},
        {"startTimeUnixNano": list("1767225600")},
    ],
)
def test_what_a_parser_can_hand_over_decodes_as_on_the_plain_path(changes):
    doc = orjson.loads(orjson.dumps(_doc(_span(), _span(**changes), _span())))
    _same_as_plain(doc)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].insert(1, ["not a span"])
    _same_as_plain(doc)


def test_trace_ids_of_consecutive_spans():
    a, b = "5b8efff798038103d269b633813fc60c", "6b8efff798038103d269b633813fc60c"
    doc = _doc(
        *(
            _span(traceId=t, spanId=f"{i:016x}")
            for i, t in enumerate([a, a, b, a.upper(), a.upper(), a, b, b])
        )
    )
    _same_as_plain(doc)
    assert [r.trace_id[0] for r in records_from_json(doc)] == list("55655566")


def test_an_exporter_shaped_trace_takes_the_first_pass(monkeypatch):
    # a root without parentSpanId, spans sharing a trace id: the first pass keeps them all
    root = _span()
    del root["parentSpanId"]
    doc = orjson.loads(orjson.dumps(_doc(root, _span(), _span(spanId="eee19b7ec3c1b175"))))
    passes = []
    first = records._records_json

    def counted(obj, hexes, digits, parsed):
        passes.append(hexes is not None)
        return first(obj, hexes, digits, parsed)

    monkeypatch.setattr(records, "_records_json", counted)
    for json_types in (False, True):
        passes.clear()
        assert [r.parent_span_id for r in records_from_json(doc, json_types=json_types)] == [
            "",
            "eee19b7ec3c1b173",
            "eee19b7ec3c1b173",
        ]
        assert passes == [True]


@pytest.mark.parametrize(
    ("flags", "remote"), [(0, None), (0x100, False), (0x300, True), (0x200, None), (0x3FF, True)]
)
def test_parent_is_remote_is_a_bool_or_none_from_the_flags(flags, remote):
    # (the flag bit is compared, not converted by bool(): the result must still be a bool)
    for json_types in (False, True):
        (record,) = records_from_json(_doc(_span(flags=flags)), json_types=json_types)
        assert record.parent_is_remote is remote


@pytest.mark.parametrize("key", ["traceId", "spanId", "startTimeUnixNano", "endTimeUnixNano"])
def test_a_span_without_an_id_or_a_time_decodes_as_it_always_has(key):
    # (a parser's spans have these read by subscript on the first pass: a missing one falls
    # back to the plain pass, which reads it as missing: an id is an error naming it, a
    # time is 0)
    span = _span()
    del span[key]
    for json_types in (False, True):
        if key.endswith("Id"):
            with pytest.raises(OTLPDecodeError) as caught:
                records_from_json(_doc(span), "f:1", json_types=json_types)
            assert caught.value.where.endswith(f"spans[0].{key}")
        else:
            (record,) = records_from_json(_doc(span), json_types=json_types)
            assert (record.start_ns == 0) is (key == "startTimeUnixNano")
            assert (record.end_ns == 0) is (key == "endTimeUnixNano")


@pytest.mark.parametrize(
    ("key", "check"),
    [("kind", c.span_kind), ("flags", c.u32)],
)
@pytest.mark.parametrize(
    "value", [0, 1, 5, -1, c.MIN_I32, c.MIN_I32 - 1, c.MAX_I32, c.MAX_I32 + 1, c.MAX_U32, c.MAX_U32 + 1]
)
def test_kind_and_flags_bounds_are_the_field_readers(key, check, value):
    # (the span loop checks them against its own copies of the bounds: held to the readers)
    try:
        expected: Any = check(value)
    except Bad:
        expected = "error"
    for json_types in (False, True):
        try:
            (record,) = records_from_json(_doc(_span(**{key: value})), json_types=json_types)
        except OTLPDecodeError as exc:
            assert expected == "error" and exc.where.endswith(f"spans[0].{key}")
        else:
            assert expected != "error"
            if key == "kind":
                assert record.kind == expected
