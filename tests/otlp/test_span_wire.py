"""record_from_span_bytes (the wire reader) against the reference path
``record_from_proto_span(Span.FromString(data))``: same record, or the same exception,
for valid spans, hand-written wire (fields repeated, merged, reordered, unknown, with
other wire types, non-minimal varints) and mutated bytes."""

from __future__ import annotations

import struct

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_semloop.model import EventRecord
from otel_semloop.otlp import record_from_proto_span, record_from_span_bytes, wire
from tests.otlp.test_otlp_codec import spans

CHECK = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_ns",
    "end_ns",
    "attributes",
    "events",
    "status_code",
    "status_message",
    "kind",
    "parent_is_remote",
)


def canon(value):
    """A value with its types spelled out, so True != 1, -0.0 != 0.0 and NaNs compare by bits;
    dicts keep their order."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return ("dict", [(canon(k), canon(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [canon(v) for v in value])
    if isinstance(value, EventRecord):
        return ("event", value.name, value.time_ns, canon(value.attributes))
    return (type(value).__name__, value)


def outcome(read, data):
    try:
        record = read(data)
    except Exception as exc:  # compared, not swallowed: both sides must raise the same
        return ("raised", type(exc), str(exc))
    return ("record", [canon(getattr(record, name)) for name in FIELDS])


def reference(data):
    return record_from_proto_span(Span.FromString(data))


def assert_same(data):
    expected = outcome(reference, data)
    assert outcome(record_from_span_bytes, data) == expected
    return expected


# --- hand-written wire ------------------------------------------------------------------


def varint(n: int, pad: int = 0) -> bytes:
    """``n`` as a varint; ``pad`` > 0 spells it with that many more bytes than needed."""
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    if not pad:
        return bytes(out) + bytes([n])
    out.append(n | 0x80)
    out.extend(b"\x80" * (pad - 1))
    out.append(0)
    return bytes(out)


def kv_field(kv: bytes) -> bytes:
    """A KeyValueList entry."""
    return ld(1, kv)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, payload: bytes, pad: int = 0) -> bytes:
    return tag(number, 2) + varint(len(payload), pad) + payload


PAD = st.sampled_from([0, 0, 0, 1, 2])
SIGNED = st.integers(-(2**63), 2**63 - 1).map(lambda n: n & (2**64 - 1))
#: a 10-byte varint whose last byte may carry bits past the 64th (dropped)
LONG_VARINT = st.builds(
    lambda low, last: bytes(b | 0x80 for b in low) + bytes([last]),
    st.binary(min_size=9, max_size=9),
    st.integers(0, 127),
)
# text, long text (two-byte lengths); invalid UTF-8 only in the "any" wire
GOOD_TEXT = (
    st.text(max_size=8) | st.sampled_from(["", "gen_ai.tool.name", "ünï ✓ 🚀", "x" * 130, "\u00e9" * 70])
).map(str.encode)
BAD_TEXT = GOOD_TEXT | st.sampled_from([b"\xff", b"\xed\xa0\x80", b"a\xc3"])
ID16 = st.binary(min_size=16, max_size=16)
ID8 = st.binary(min_size=8, max_size=8)
ENUM = st.integers(0, 7) | st.integers(0, 2**64 - 1)


def unknown_field(number: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.builds(lambda n, v: tag(n, 0) + varint(v), number, st.integers(0, 2**64 - 1)),
        st.builds(lambda n, b: tag(n, 1) + b, number, st.binary(min_size=8, max_size=8)),
        st.builds(lambda n, b: ld(n, b), number, st.binary(max_size=6)),
        st.builds(lambda n, b: tag(n, 5) + b, number, st.binary(min_size=4, max_size=4)),
        st.builds(lambda n: tag(n, 3) + tag(n, 4), number),
    )


def _odd(clean: bool, *choices: st.SearchStrategy[bytes]) -> list[st.SearchStrategy[bytes]]:
    """``choices`` (what the reader hands to upb) unless the wire is to be ``clean``."""
    return [] if clean else list(choices)


def wire_strategies(clean: bool) -> tuple[st.SearchStrategy[bytes], st.SearchStrategy[list[bytes]]]:
    """(KeyValue, a span's fields) as wire. ``clean``: only what the reader reads itself
    (fields repeated, merged, reordered, non-minimal varints), so a mistake in it shows;
    else also unknown fields, other wire types, links, bad ids and invalid UTF-8."""
    text = GOOD_TEXT if clean else BAD_TEXT

    def key_value(value: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
        field = st.one_of(
            st.builds(lambda k, p: ld(1, k, p), text, PAD),
            st.builds(lambda v, p: ld(2, v, p), value, PAD),
            *_odd(clean, unknown_field(st.sampled_from([1, 2, 3, 7]))),
        )
        # mostly a key then a value, as everyone writes it; sometimes anything
        canonical = st.builds(lambda k, v: ld(1, k) + ld(2, v), text, value)
        return canonical | st.lists(field, max_size=4).map(b"".join)

    def any_value(inner: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
        """One AnyValue's fields (several, so oneof members replace and merge)."""
        member = st.one_of(
            st.builds(lambda s, p: ld(1, s, p), text, PAD),
            st.builds(lambda v, p: tag(2, 0) + varint(v, p), st.integers(0, 300), PAD),
            st.builds(lambda v: tag(2, 0) + v, LONG_VARINT),
            st.builds(lambda v: tag(3, 0) + varint(v), SIGNED),
            st.builds(lambda v: tag(3, 0) + v, LONG_VARINT),
            st.builds(lambda d: tag(4, 1) + struct.pack("<d", d), st.floats()),
            st.builds(lambda b: tag(4, 1) + b, st.binary(min_size=8, max_size=8)),  # NaN payloads too
            st.builds(
                lambda vs, p: ld(5, b"".join(ld(1, v) for v in vs), p), st.lists(inner, max_size=3), PAD
            ),
            st.builds(
                lambda kvs: ld(6, b"".join(ld(1, kv) for kv in kvs)), st.lists(key_value(inner), max_size=3)
            ),
            st.builds(lambda b: ld(7, b), st.binary(max_size=5)),
            *_odd(
                clean,
                st.builds(lambda v: tag(8, 0) + varint(v), st.integers(0, 5)),  # string_value_strindex
                unknown_field(st.sampled_from([1, 5, 9, 100])),
            ),
        )
        # a string first and something after it: not the one-string shape read inline
        string_then = st.builds(lambda s, rest: ld(1, s) + rest, text, member)
        return st.lists(member, max_size=3).map(b"".join) | string_then

    kv = key_value(st.recursive(st.sampled_from([b"", ld(1, b"x")]), any_value, max_leaves=6))
    event = st.lists(
        st.one_of(
            st.builds(lambda b: tag(1, 1) + b, st.binary(min_size=8, max_size=8)),
            st.builds(lambda s: ld(2, s), text),
            st.builds(lambda kv: ld(3, kv), kv),
            st.builds(lambda v: tag(4, 0) + varint(v), st.integers(0, 2**32)),
            *_odd(clean, unknown_field(st.sampled_from([1, 2, 9]))),
        ),
        max_size=4,
    ).map(b"".join)
    status = st.lists(
        st.one_of(
            st.builds(lambda s: ld(2, s), text),
            st.builds(lambda v: tag(3, 0) + varint(v), st.integers(0, 7) if clean else ENUM),
            *_odd(clean, unknown_field(st.sampled_from([1, 2, 3, 4]))),
        ),
        max_size=3,
    ).map(b"".join)
    rest = st.one_of(
        st.builds(lambda s: ld(3, s), text),
        st.builds(lambda v: tag(10, 0) + varint(v), st.integers(0, 2**40)),
        st.builds(lambda e: ld(11, e), event),
        st.builds(lambda v: tag(12, 0) + varint(v), st.integers(0, 2**32)),
        st.builds(lambda v: tag(14, 0) + varint(v), st.integers(0, 2**32)),
        st.builds(lambda s: ld(15, s), status),
        st.builds(lambda b: tag(16, 5) + b, st.binary(min_size=4, max_size=4)),
        st.builds(lambda v: tag(16, 5) + struct.pack("<I", v), st.sampled_from([0x100, 0x300, 0x200])),
        st.builds(lambda s: ld(5, s), text),
        st.builds(lambda kv: ld(9, kv), kv),
        st.builds(lambda b: ld(2, b), ID8),
        st.builds(lambda b: tag(7, 1) + b, st.binary(min_size=8, max_size=8)),
        st.builds(lambda v: tag(6, 0) + varint(v), st.integers(0, 2**31 - 1) if clean else ENUM),
        *_odd(
            clean,
            st.builds(lambda b: ld(13, b), st.binary(max_size=6)),
            unknown_field(st.sampled_from([1, 6, 7, 16, 17, 2000])),
        ),
    )

    @st.composite
    def span_fields(draw) -> list[bytes]:
        head = [
            ld(1, draw(ID16 if clean else ID16 | st.binary(max_size=20))),
            ld(2, draw(ID8 if clean else ID8 | st.binary(max_size=10))),
        ]
        if draw(st.booleans()):
            head.append(ld(4, draw(ID8 | st.just(b""))))
        head.append(ld(5, draw(text), draw(PAD)))
        head.append(tag(6, 0) + varint(draw(st.integers(0, 7) if clean else ENUM)))
        head.append(tag(7, 1) + draw(st.binary(min_size=8, max_size=8)))
        head.append(tag(8, 1) + draw(st.binary(min_size=8, max_size=8)))
        head.extend(ld(9, one) for one in draw(st.lists(kv, max_size=4)))
        fields = head + draw(st.lists(rest, max_size=5))
        if draw(st.booleans()):  # any order at all
            fields = draw(st.permutations(fields))
        return fields

    return kv, span_fields()


CLEAN_SPAN = wire_strategies(clean=True)[1]
ANY_SPAN = wire_strategies(clean=False)[1]


@CHECK
@given(spans(valid_ids=True) | spans())
def test_valid_spans_read_as_the_reference_does(span):
    data = span.SerializeToString()
    assert_same(data)
    if not span.links and len(span.trace_id) == 16 and len(span.span_id) == 8:
        wire._fast(data)  # the canonical shape is read without upb


IDS = [ld(1, b"t" * 16), ld(2, b"s" * 8)]


@CHECK
@given(st.tuples(st.just(True), CLEAN_SPAN) | st.tuples(st.just(False), ANY_SPAN))
@example((True, [*IDS, ld(9, ld(1, b"k") + ld(2, ld(5, ld(1, ld(1, b"a")))) + ld(2, ld(5, ld(1, b""))))]))
@example((True, [*IDS, ld(9, ld(1, b"k") + ld(2, ld(1, b"a")) + ld(2, tag(2, 0) + b"\x01"))]))
@example((True, [*IDS, ld(9, ld(2, ld(6, kv_field(ld(1, b"a"))) + ld(6, kv_field(ld(1, b"b")))))]))
@example((True, [*IDS, ld(15, tag(3, 0) + b"\x02"), ld(15, ld(2, b"m"))]))
@example((True, [*IDS, ld(9, ld(1, b"k") + ld(2, ld(1, b"a") + tag(2, 0) + b"\x01"))]))
@example((True, [*IDS, ld(9, ld(1, b"k") + ld(2, ld(1, b"b" * 200) + tag(2, 0) + b"\x01"))]))
@example((True, [*IDS, ld(9, ld(1, b"k") + ld(2, tag(3, 0) + b"\xff" * 9 + b"\x7f"))]))
@example((True, [*IDS, ld(5, b"n" * 17000), ld(9, ld(1, b"k" * 17000) + ld(2, ld(1, b"v" * 17000)))]))
def test_hand_written_wire_reads_as_the_reference_does(case):
    clean, fields = case
    data = b"".join(fields)
    assert_same(data)
    if clean:  # read without upb: a mistake of the reader's own shows above
        wire._fast(data)


@pytest.mark.parametrize(
    "field",
    [
        ld(3, b"\xff"),  # trace_state: not kept, still checked by upb
        ld(5, b"a\xc3"),
        ld(9, ld(1, b"\xed\xa0\x80")),
        ld(9, ld(1, b"k") + ld(2, ld(1, b"\xff"))),
        ld(9, ld(1, b"k") + ld(2, ld(1, b"\xff" * 200))),
        ld(9, ld(1, b"k") + ld(2, ld(5, ld(1, ld(1, b"\xff"))))),
        ld(11, ld(2, b"\xff")),
        ld(15, ld(2, b"\xff")),
    ],
)
def test_invalid_utf8_anywhere_is_refused_as_upb_refuses_it(field):
    kind, error, _ = assert_same(b"".join([*IDS, field]))
    assert kind == "raised" and error is DecodeError


@pytest.mark.parametrize(
    "tail",
    [
        b"*\x05ab",  # a name cut short (read by the head)
        b"*\x85\x01ab",
        b"9\x01\x02",  # a start time cut short
        ld(9, ld(1, b"k") + ld(2, ld(1, b"v")))[:-1],
        ld(15, ld(2, b"m"))[:-1],
        ld(9, ld(1, b"k") + ld(2, ld(5, ld(1, ld(1, b"a")))))[:-2],
    ],
)
def test_cut_wire_is_refused_as_upb_refuses_it(tail):
    kind, error, _ = assert_same(b"".join([*IDS, tail]))
    assert kind == "raised" and error is DecodeError


@pytest.mark.parametrize("value", [5, 200, 2**31 - 1, 2**31, 2**32 + 1, 2**63, 2**64 - 1])
def test_enums_past_int32_read_as_upb_reads_them(value):
    assert_same(b"".join([*IDS, tag(6, 0) + varint(value)]))
    assert_same(b"".join([*IDS, ld(15, tag(3, 0) + varint(value))]))


def test_a_start_time_without_an_end_time_after_it():
    start = tag(7, 1) + (5).to_bytes(8, "little")
    assert assert_same(b"".join([*IDS, start, ld(5, b"abcdefg")]))[1][3] == canon("abcdefg")


def test_fields_after_an_unknown_one_are_read():
    kvlist = kv_field(ld(1, b"a")) + tag(3, 0) + b"\x01" + kv_field(ld(1, b"b"))
    data = b"".join([*IDS, ld(9, ld(1, b"k") + ld(2, ld(6, kvlist)))])
    assert assert_same(data)[1][6] == canon({"k": {"a": None, "b": None}})


@CHECK
@given(CLEAN_SPAN | ANY_SPAN, st.data())
def test_damaged_wire_reads_as_the_reference_does(fields, data):
    raw = bytearray(b"".join(fields))
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.integers(0, len(raw)))
        how = data.draw(st.sampled_from(["cut", "flip", "insert", "drop"]))
        if how == "cut":
            del raw[where:]
        elif how == "insert":
            raw[where:where] = bytes([data.draw(st.integers(0, 255))])
        elif where < len(raw):
            if how == "flip":
                raw[where] ^= 1 << data.draw(st.integers(0, 7))
            else:
                del raw[where]
    assert_same(bytes(raw))


@CHECK
@given(st.binary(max_size=64))
def test_arbitrary_bytes_read_as_the_reference_does(raw):
    assert_same(raw)


def test_source_is_the_bytes_and_errors_are_the_references():
    data = Span(trace_id=b"t" * 16, span_id=b"s" * 8, name="chat").SerializeToString()
    assert record_from_span_bytes(data).source is data
    short = Span(trace_id=b"t" * 15, span_id=b"s" * 8).SerializeToString()
    kind, _, text = assert_same(short)
    assert kind == "raised" and "trace id must be 16 bytes" in text
    fields = outcome(record_from_span_bytes, data)
    for view in (bytearray(data), memoryview(data)):
        assert outcome(record_from_span_bytes, view) == fields
        assert type(record_from_span_bytes(view).source) is bytes
    linked = Span(trace_id=b"t" * 16, span_id=b"s" * 8, links=[Span.Link()]).SerializeToString()
    assert record_from_span_bytes(linked).source is linked  # (read by upb)
