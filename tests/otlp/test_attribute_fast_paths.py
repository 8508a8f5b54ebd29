"""The fast paths of OTLP JSON attribute decoding give what the general decoder gives
(or the same error), for the shapes they take and the near misses they must not."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.anyvalue import _attributes_plain, any_json, attributes_json, attributes_json_parsed
from tests.otlp.test_otlp_fuzz import json_values

INT_TEXT = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.from_regex(r"[+-]?[0-9]{0,20}", fullmatch=True),
    st.text(alphabet="0123456789٣²+- ", max_size=20),
)
VALUES = st.one_of(
    INT_TEXT.map(lambda s: {"intValue": s}),
    st.integers(-(2**64), 2**64).map(lambda i: {"intValue": i}),
    st.text(max_size=5).map(lambda s: {"stringValue": s}),
    st.just({"stringValue": None}),
    st.just({"intValue": "1", "stringValue": "x"}),
    st.just({}),
    st.none(),
    st.integers(),
)


def _outcome(decode: Any, value: Any) -> Any:
    try:
        return ("ok", decode(value))
    except Bad as e:
        return ("bad", str(e))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", None, 3]), VALUES), max_size=4))
def test_attribute_lists_decode_as_each_value_alone(pairs: list[tuple[Any, Any]]) -> None:
    kvs = [{"key": key, "value": value} for key, value in pairs]
    got = _outcome(attributes_json, kvs)
    expected: dict[str, Any] = {}
    for key, value in pairs:
        key = "" if key is None else key  # a null key is proto3's default, the empty string
        if not isinstance(key, str):
            assert got[0] == "bad"
            return
        one = _outcome(any_json, value)
        if one[0] == "bad":
            assert got[0] == "bad"
            return
        expected[key] = one[1]
    assert got == ("ok", expected)
    for value in expected.values():
        assert type(value) in (str, int, type(None))


class _Dict(dict):  # not what a JSON parser returns: the general path rejects it
    pass


KEY_VALUES = st.one_of(
    st.tuples(st.sampled_from(["a", "b", None, 3]), VALUES).map(lambda p: {"key": p[0], "value": p[1]}),
    st.sampled_from(["a", "b"]).map(lambda k: {"key": k}),  # no value: None
    VALUES.map(lambda v: {"value": v}),  # no key: ""
    st.just({}),
    st.just(_Dict(key="a", value={"stringValue": "x"})),
    st.just({"key": "a", "value": _Dict(stringValue="x")}),
    st.just({"key": "a", "value": {"stringValue": "x"}, "extra": 1}),
    st.sampled_from([None, 1, "kv", ["key", "value"]]),
)


def _outcome_with_path(decode: Any, value: Any) -> Any:
    try:
        return ("ok", decode(value))
    except Bad as e:
        return ("bad", str(e), list(e.path))


@settings(max_examples=500, deadline=None)
@given(st.lists(KEY_VALUES, max_size=5))
def test_attribute_lists_decode_as_on_the_plain_path(kvs: list[Any]) -> None:
    assert _outcome_with_path(attributes_json, kvs) == _outcome_with_path(_attributes_plain, kvs)


# --- attributes_json_parsed: a JSON parser's output only (no subclasses) -----------------

ODD_VALUES = st.sampled_from(
    [
        {"boolValue": True},
        {"boolValue": "true"},
        {"doubleValue": 1.5},
        {"doubleValue": "NaN"},
        {"bytesValue": "aGk="},
        {"bytesValue": "not base64!"},
        {"arrayValue": {"values": [{"stringValue": "x"}, {"intValue": "2"}]}},
        {"arrayValue": {"values": [{"arrayValue": {"values": [{"boolValue": 3}]}}]}},
        {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}},
        {"kvlistValue": {"values": [{"key": 1, "value": {}}]}},
        {"stringValue": "x", "extra": 1},
        {"stringValue": "x", "intValue": None},
        {"stringValue": "x", "intValue": "1"},
        {"intValue": "1", "boolValue": False},
        {"stringValue": 5},
        {"stringValue": ["x"]},
        {"stringValue": None},
        {"intValue": "123456789012345678"},
        {"intValue": "9223372036854775807"},
        {"intValue": "9999999999999999999"},
        {"intValue": "9" * 30},
        {"intValue": "007"},
        {"intValue": "-5"},
        {"intValue": 2**70},
        {"intValue": ["1"]},
        {},
    ]
)
#: value objects: the shapes attributes_json_parsed takes (a string, a short decimal
#: intValue) and their near misses, and every other kind of value
VALUE_OBJECTS = st.one_of(
    st.text(max_size=3).map(lambda s: {"stringValue": s}),
    st.from_regex(r"[0-9]{1,20}", fullmatch=True).map(lambda s: {"intValue": s}),
    st.from_regex(r"[1-9][0-9]{17,19}", fullmatch=True).map(lambda s: {"intValue": s}),
    INT_TEXT.map(lambda s: {"intValue": s}),
    st.fixed_dictionaries(
        {"stringValue": st.text(max_size=2) | st.none()},
        optional={"intValue": st.sampled_from(["1", None]), "boolValue": st.booleans(), "extra": st.just(1)},
    ),
    st.fixed_dictionaries(
        {"intValue": st.sampled_from(["12", "٣", "1a", None])},
        optional={
            "stringValue": st.sampled_from(["x", None]),
            "doubleValue": st.just(1.0),
            "extra": st.just(1),
        },
    ),
    ODD_VALUES,
)
JSON_VALUES = VALUE_OBJECTS | VALUES | st.sampled_from(["x", 1, 1.5, True, None, [], ["stringValue"]])
KEYS = st.sampled_from(["a", "b", "", None, 3, 1.5, True, ["a"], {"k": 1}])
#: lists with a key and a value object in each key/value: none sends the whole list to
#: the plain path (which would hide what the shortcut did with the others)
WELL_FORMED = st.lists(
    st.tuples(KEYS, VALUE_OBJECTS).map(lambda p: {"key": p[0], "value": p[1]}), min_size=1, max_size=6
)
PARSED_KEY_VALUES = st.one_of(
    st.tuples(KEYS, JSON_VALUES).map(lambda p: {"key": p[0], "value": p[1]}),
    st.tuples(KEYS, JSON_VALUES).map(lambda p: {"value": p[1], "key": p[0], "extra": [1]}),
    st.sampled_from(["a", "b"]).map(lambda k: {"key": k}),
    JSON_VALUES.map(lambda v: {"value": v}),
    st.sampled_from([{}, None, 1, 2.5, True, "kv", ["key", "value"], [{"key": "a"}]]),
)


def _as_parsed(value: Any) -> Any:
    """``value`` as orjson hands it over (its own key objects), when orjson can write it
    (not past 64-bit integers, which ``json.loads`` does return)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        return value


@settings(max_examples=1500, deadline=None)
@given(WELL_FORMED | st.lists(PARSED_KEY_VALUES, max_size=6) | json_values)
@example([{"key": 3, "value": {"stringValue": "x"}}])
@example([{"key": True, "value": {"intValue": "1"}}])
@example([{"key": "a", "value": {"intValue": "9999999999999999999"}}])
@example([{"key": "a", "value": {"stringValue": "x", "intValue": "1"}}])
@example([{"key": "a", "value": {"intValue": "1", "boolValue": False}}])
@example([{"key": "a", "value": "x"}, {"key": "b"}])
@example([{"key": "a", "value": {"intValue": "\u0663"}}, {"key": "b", "value": {"intValue": " 12"}}])
@example([{"key": "a", "value": {"intValue": "1a"}}])
@example([{"key": "a", "value": {"intValue": "1.5"}}, {"key": "b", "value": {"intValue": "1e5"}}])
@example([{"key": "a", "value": {"intValue": "true"}}, {"key": "b", "value": {"intValue": "null"}}])
@example([{"key": "a", "value": {"intValue": "-0"}}, {"key": "b", "value": {"intValue": "[1]"}}])
def test_parsed_attribute_lists_decode_as_on_the_plain_path(kvs: Any) -> None:
    # (the examples are JSON an intValue's digits are read as: what isdigit lets through)
    kvs = _as_parsed(kvs)
    got = _outcome_with_path(attributes_json_parsed, kvs)
    if type(kvs) is list:
        assert got == _outcome_with_path(_attributes_plain, kvs)
    assert got == _outcome_with_path(attributes_json, kvs)


def test_parsed_common_shapes_come_out_with_their_types() -> None:
    kvs = orjson.loads(
        b'[{"key":"a","value":{"stringValue":"x"}},{"key":"n","value":{"intValue":"18778"}},'
        b'{"key":"b","value":{"boolValue":true}},{"key":"a","value":{"intValue":"007"}}]'
    )
    got = attributes_json_parsed(kvs)
    assert got == {"a": 7, "n": 18778, "b": True} and list(got) == ["a", "n", "b"]
    assert [type(v) for v in got.values()] == [int, int, bool]
