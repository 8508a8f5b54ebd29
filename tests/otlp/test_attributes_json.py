"""An OTLP JSON attribute list decodes as each of its values decodes alone (or fails as
the first bad value fails)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.anyvalue import any_json, attributes_json

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
