"""The fast paths of OTLP JSON attribute decoding give what the general decoder gives
(or the same error), for the shapes they take and the near misses they must not."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.anyvalue import _attributes_plain, any_json, attributes_json

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
