"""Shared helpers of the OTLP codecs: the internal error that carries a field path, and
the scalar parsers of OTLP JSON (hex ids, 64-bit integers as decimal strings, enums as
integers, base64 bytes).

OTLP JSON is proto3 JSON with deviations (opentelemetry-proto's ``docs/specification.md``,
"JSON Protobuf Encoding"): ``traceId``/``spanId`` are hex (case-insensitive on input,
lowercase on output), enums are integers, keys are lowerCamelCase, unknown keys are
ignored. As proto3 JSON, 64-bit integers are written as decimal strings and accepted as
strings or numbers, and ``null`` stands for the default value.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from otel_semloop.errors import OTLPDecodeError

MAX_U64 = (1 << 64) - 1
MAX_U32 = (1 << 32) - 1
MIN_I64 = -(1 << 63)
MAX_I64 = (1 << 63) - 1
MIN_I32 = -(1 << 31)
MAX_I32 = (1 << 31) - 1

#: ``Span.flags`` bits (``SpanFlags`` in trace.proto).
FLAGS_HAS_IS_REMOTE = 0x100
FLAGS_IS_REMOTE = 0x200

SPAN_KIND_NAMES = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
STATUS_CODE_NAMES = {
    "STATUS_CODE_UNSET": 0,
    "STATUS_CODE_OK": 1,
    "STATUS_CODE_ERROR": 2,
}

_is_hex = re.compile(r"[0-9a-fA-F]*").fullmatch
_is_int = re.compile(r"-?[0-9]+").fullmatch
_is_json_number = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?").fullmatch
_is_base64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}").fullmatch
_URLSAFE = bytes.maketrans(b"-_", b"+/")


class Bad(Exception):
    """Internal: an invalid value, with the path to it collected innermost first.

    Decoders raise it at the leaf; each enclosing level appends its own segment on the
    way out, and the public entry point turns it into :class:`OTLPDecodeError`.
    """

    def __init__(self, message: str, *segments: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = list(reversed(segments))

    def to_error(self, where: str = "") -> OTLPDecodeError:
        path = ".".join(reversed(self.path)).replace(".[", "[")
        if where and path:
            return OTLPDecodeError(self.message, f"{where} {path}")
        return OTLPDecodeError(self.message, where or path)


@contextlib.contextmanager
def decode_errors(where: str = "", what: str = "value") -> Iterator[None]:
    """A public decoder's failures (a :class:`Bad`, nesting past Python's recursion limit)
    raised as :class:`OTLPDecodeError` at ``where``."""
    try:
        yield
    except Bad as e:
        raise e.to_error(where) from None
    except RecursionError:
        raise Bad(f"{what} nested too deeply").to_error(where) from None


def describe(value: Any) -> str:
    """A short, safe description of an unexpected JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"string {text!r}"
    if isinstance(value, int) and value.bit_length() > 128:
        return f"a {value.bit_length()}-bit integer"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def bad_type(expected: str, value: Any, *segments: str) -> NoReturn:
    raise Bad(f"expected {expected}, got {describe(value)}", *segments)


def field(d: dict[str, Any], key: str, parse: Callable[[Any], Any]) -> Any:
    """``parse(d.get(key))``, with ``key`` added to the path of a :class:`Bad` it raises."""
    try:
        return parse(d.get(key))
    except Bad as e:
        e.path.append(key)
        raise


# --- integers -------------------------------------------------------------------------


def _integral(value: Any, lo: int, hi: int, what: str) -> int:
    """An integer in ``lo..hi`` from a number or a decimal string; ``null`` is 0."""
    if value is None:
        return 0
    if type(value) is int:
        result = value
    elif type(value) is str:
        if not _is_int(value):
            bad_type(what, value)
        result = int(value)
    elif type(value) is float and math.isfinite(value) and value.is_integer():
        result = int(value)
    else:
        bad_type(what, value)
    if not lo <= result <= hi:
        raise Bad(f"{what} out of range: {describe(result)}")
    return result


def u64(value: Any) -> int:
    """A ``fixed64``/``uint64`` (times)."""
    return _integral(value, 0, MAX_U64, "an unsigned 64-bit integer")


def i64(value: Any) -> int:
    """An ``int64`` (``intValue``)."""
    return _integral(value, MIN_I64, MAX_I64, "a signed 64-bit integer")


def u32(value: Any) -> int:
    """A ``uint32``/``fixed32`` (counts, flags)."""
    return _integral(value, 0, MAX_U32, "an unsigned 32-bit integer")


def i32(value: Any) -> int:
    return _integral(value, MIN_I32, MAX_I32, "a signed 32-bit integer")


def enum(value: Any, names: dict[str, int]) -> int:
    """An enum: an integer (OTLP JSON), also its name (older Collectors wrote names)."""
    if type(value) is str and value in names:
        return names[value]
    return _integral(value, MIN_I32, MAX_I32, "an enum integer")


def span_kind(value: Any) -> int:
    """``Span.kind``: an integer or a ``SPAN_KIND_*`` name."""
    return enum(value, SPAN_KIND_NAMES)


def status_code(value: Any) -> int:
    """``Status.code``: an integer or a ``STATUS_CODE_*`` name."""
    return enum(value, STATUS_CODE_NAMES)


def double(value: Any) -> float:
    """A ``double``: number, or "NaN" / "Infinity" / "-Infinity" / a numeric string."""
    if type(value) is float:
        return value
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            raise Bad(f"number out of the double range: {describe(value)}") from None
    if type(value) is str:
        if value == "NaN":
            return math.nan
        if value == "Infinity":
            return math.inf
        if value == "-Infinity":
            return -math.inf
        if _is_json_number(value):
            return float(value)
    bad_type("a number", value)


def string(value: Any) -> str:
    if type(value) is str:
        return value
    if value is None:
        return ""
    bad_type("a string", value)


# --- ids and bytes --------------------------------------------------------------------


def trace_id_hex(value: Any) -> str:
    """A trace id as 32 lowercase hex characters (input is case-insensitive)."""
    if type(value) is str:
        if len(value) == 32 and _is_hex(value):
            return value.lower()
        if value == "":
            raise Bad("trace id is empty")
        raise Bad(f"trace id must be 32 hex characters, got {describe(value)}")
    if value is None:
        raise Bad("trace id is missing")
    bad_type("a hex string", value)


def span_id_hex(value: Any, *, allow_empty: bool = False) -> str:
    """A span id as 16 lowercase hex characters; ``""`` when empty is allowed."""
    if type(value) is str:
        if len(value) == 16 and _is_hex(value):
            return value.lower()
        if value == "":
            if allow_empty:
                return ""
            raise Bad("span id is empty")
        raise Bad(f"span id must be 16 hex characters, got {describe(value)}")
    if value is None:
        if allow_empty:
            return ""
        raise Bad("span id is missing")
    bad_type("a hex string", value)


def id_bytes(value: Any, size: int) -> bytes:
    """A hex id to bytes for the protobuf codec: empty, or exactly ``size`` bytes."""
    if value is None or value == "":
        return b""
    if type(value) is not str:
        bad_type("a hex string", value)
    if len(value) != 2 * size or not _is_hex(value):
        raise Bad(f"id must be {2 * size} hex characters, got {describe(value)}")
    return bytes.fromhex(value)


def b64decode(value: Any) -> bytes:
    """proto3 JSON ``bytes``: standard or URL-safe base64, padding optional."""
    if type(value) is not str:
        if value is None:
            return b""
        bad_type("a base64 string", value)
    if not _is_base64(value):
        raise Bad(f"invalid base64: {describe(value)}")
    data = value.rstrip("=").encode("ascii").translate(_URLSAFE)
    if len(data) % 4 == 1:
        raise Bad(f"invalid base64 length: {describe(value)}")
    data += b"=" * (-len(data) % 4)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Bad(f"invalid base64: {exc}") from None


def b64encode(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def double_json(value: float) -> float | str:
    """A double for JSON: non-finite values as proto3 JSON strings."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def json_array(d: dict[str, Any], key: str) -> list[Any]:
    """``d[key]`` when it is an array, ``[]`` when missing or null; raises :class:`Bad`
    naming ``key`` for anything else."""
    value = d.get(key)
    if type(value) is list:
        return value
    if value is None:
        return []
    bad_type("an array", value, key)


def each_span_array(doc: Any, visit: Callable[[list[Any]], None]) -> None:
    """Call ``visit`` with each ``spans`` array of an OTLP JSON ``TracesData``, in order.

    Raises :class:`Bad` for a level that is not an object or an array, and adds
    ``scopeSpans[j]`` and ``resourceSpans[i]`` to the path of a :class:`Bad` that ``visit``
    raises: one walk of the levels for the decoder and the rescore scan, which differ only
    in what they do with a span."""
    if type(doc) is not dict:
        bad_type("a TracesData object", doc)
    for i, rs in enumerate(json_array(doc, "resourceSpans")):
        try:
            if type(rs) is not dict:
                bad_type("a resourceSpans object", rs)
            for j, ss in enumerate(json_array(rs, "scopeSpans")):
                try:
                    if type(ss) is not dict:
                        bad_type("a scopeSpans object", ss)
                    visit(json_array(ss, "spans"))
                except Bad as e:
                    e.path.append(f"scopeSpans[{j}]")
                    raise
        except Bad as e:
            e.path.append(f"resourceSpans[{i}]")
            raise
