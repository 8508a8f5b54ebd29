"""Normalisation: what counts as "the same" for the deterministic detectors.

Everything here is a pure function of its input (no state, no clock), so the same step
always normalises the same way, offline or live.

Masking (results, assistant text, output lines)
    Volatile tokens are not progress: a result that differs from the last one only in a
    request id, a pid, a timestamp or a counter is the same result. Masked, in this order:
    UUIDs (``<uuid>``), ISO-8601 timestamps (``<ts>``, any precision and zone), hex runs of
    six or more characters holding both a digit and a letter a-f (``<hex>``: hashes, ids,
    addresses) and finally every run of digits (``#``). Text without a digit is returned as
    is (every pattern needs one), which keeps the common case cheap. Masking errs toward
    "same": a real change that is only numeric (``3 failed`` -> ``1 failed``) is invisible
    here; explicit progress (below) and novel actions are what let such work through.

Arguments
    :func:`canonical_args` is the exact identity of a call's arguments: keys sorted, the
    tool's volatile argument names dropped at any depth, nothing else touched (``page=1``
    and ``page=2`` are different calls). :func:`arg_signature` is the looser identity used
    for near-duplicates: per argument a class and a digest of its cosmetically normalised
    value (case, surrounding blanks, a trailing slash, a leading ``./``), so that
    :func:`near_duplicate` can accept an added flag, a tweaked limit or reordered keys while
    refusing a changed path, pattern or page.

Progress
    :func:`progress_value` reads an explicit progress figure (a percentage, ``n/m`` or
    ``n of m``) from the end of a result. Detectors treat a figure above, or a result longer
    than, anything the same call returned before as progress even when the masked result
    is unchanged.

Failures
    :func:`classify_failure` says whether a step failed and how: ``transient`` (429, 5xx,
    timeouts: retrying may help), ``permanent`` (401, 403, 404, invalid arguments: retrying
    the same call cannot help) or ``other``, with a low-cardinality class label.

Digests
    :func:`digest` is a 64-bit blake2b of text, as an ``int`` (cheap to hash and compare).
    Detectors keep these digests, never the text they came from.

Size: every rule for what counts as "the same" lives here so it has one definition;
each function is small and pure.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from otel_semloop.model import Step, StepKind

__all__ = [
    "DEFAULT_POSITION_ARGS",
    "DEFAULT_VOLATILE_ARGS",
    "ArgSignature",
    "Failure",
    "FailureKind",
    "arg_signature",
    "canonical_args",
    "classify_failure",
    "counts_fell",
    "digest",
    "mask",
    "near_duplicate",
    "normalize_result",
    "normalize_text",
    "progress_value",
    "remaining_counts",
]

# ----------------------------------------------------------------------------------------
# Masking
# ----------------------------------------------------------------------------------------

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
    re.IGNORECASE,
)
#: Candidate hex runs; :func:`_hex` keeps only those with at least one digit and one
#: letter (or a ``0x`` prefix). Six or more characters: shorter runs are too often words
#: or small numbers; pure-digit runs are left to the digit mask so a counter crossing
#: 99999 -> 100000 keeps one mask.
_HEX = re.compile(r"\b(?:0x)?[0-9a-f]{6,}\b", re.IGNORECASE)
_HEX_LETTER = re.compile(r"[a-f]", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_HAS_DIGIT = re.compile(r"\d")
#: Punctuation becomes a blank (ASCII, plus the typographic quotes, dashes and bullets
#: that models emit); ``#``, ``<`` and ``>`` survive because the masks use them.
_PUNCTUATION = str.maketrans(
    dict.fromkeys(
        [c for c in "!\"$%&'()*+,-./:;=?@[\\]^_`{|}~" if c not in "#<>"]
        + list("\u2018\u2019\u201c\u201d\u2013\u2014\u2026\u2022\u00b7"),
        " ",
    )
)


def _hex(match: re.Match[str]) -> str:
    run = match.group()
    if run[:2].lower() == "0x" or (_HEX_LETTER.search(run) and _HAS_DIGIT.search(run)):
        return "<hex>"
    return run


def mask(text: str) -> str:
    """``text`` with UUIDs, ISO timestamps, hex runs and digit runs masked (see module doc).

    Each pattern runs only when a substring test (done in C) says it could match.
    """
    if not _HAS_DIGIT.search(text):
        return text
    if text.count("-") >= 4:
        text = _UUID.sub("<uuid>", text)
    if "-" in text:
        text = _TIMESTAMP.sub("<ts>", text)
    text = _HEX.sub(_hex, text)
    return _DIGITS.sub("#", text)


def normalize_result(text: str) -> str:
    """A tool result as compared by the detectors: masked, case-folded, blanks collapsed."""
    return " ".join(mask(text).casefold().split())


def normalize_text(text: str) -> str:
    """Assistant text or an output line as compared by the detectors: like
    :func:`normalize_result`, and punctuation dropped (``Retrying.`` equals ``retrying!``)."""
    return " ".join(mask(text).casefold().translate(_PUNCTUATION).split())


def digest(text: str) -> int:
    """A 64-bit blake2b digest of ``text`` as an int. Collisions are negligible at trace
    scale (2**-64 per pair) and would err toward "same"."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )


# ----------------------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------------------

#: Argument names that are volatile for every tool: they identify the request, not the
#: action, so two calls differing only there are the same call. Per-tool names are added
#: with ``DetectorConfig.volatile_args``.
DEFAULT_VOLATILE_ARGS: frozenset[str] = frozenset(
    {
        "request_id", "requestid", "idempotency_key", "idempotencykey", "nonce", "trace_id",
        "traceid", "span_id", "spanid", "call_id", "callid", "tool_call_id", "toolcallid",
        "timestamp",
    }
)  # fmt: skip

#: Argument names that position a read (a page, an offset, a cursor). A change there is a
#: different read, never a cosmetic tweak, even though the value is a number: this is what
#: keeps pagination and chunked reads out of the near-duplicate signal.
DEFAULT_POSITION_ARGS: frozenset[str] = frozenset(
    {
        "page", "page_number", "pagenumber", "page_token", "pagetoken", "next_token",
        "nexttoken", "continuation_token", "cursor", "offset", "skip", "start", "end",
        "start_line", "end_line", "startline", "endline", "line", "lines", "after", "before",
        "since", "until", "from", "to", "index", "chunk", "chunk_index", "position", "seek",
        "range", "part",
    }
)  # fmt: skip

#: Nested argument objects deeper than this are kept whole (volatile names not dropped):
#: bounds the walk on hostile input; real tool arguments are a few levels deep.
_MAX_ARG_DEPTH = 8


def canonical_args(arguments: Any, volatile: Collection[str] = DEFAULT_VOLATILE_ARGS) -> str:
    """The exact identity of a call's arguments as text: JSON with sorted keys and the
    ``volatile`` names (matched case-insensitively) dropped at any depth; a string is
    stripped of surrounding blanks (a raw, non-JSON argument string)."""
    if isinstance(arguments, str):
        return arguments.strip()
    value = _drop_volatile(arguments, volatile, 0) if volatile else arguments
    try:
        return orjson.dumps(
            value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
        ).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _drop_volatile(value: Any, volatile: Collection[str], depth: int) -> Any:
    """``value`` without volatile keys; the very same object when there were none."""
    if depth >= _MAX_ARG_DEPTH:
        return value
    if isinstance(value, Mapping):
        out = {}
        changed = False
        for k, v in value.items():
            if isinstance(k, str) and k.lower() in volatile:
                changed = True
                continue
            new = _drop_volatile(v, volatile, depth + 1) if isinstance(v, (Mapping, list, tuple)) else v
            changed = changed or new is not v
            out[k] = new
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [_drop_volatile(v, volatile, depth + 1) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


class _ArgClass(str, enum.Enum):
    TWEAK = "tweak"  # a number, bool or null: changing it is cosmetic (a limit, a flag)
    OPTION = "option"  # a short single-word string: an added sort/format option
    POSITION = "position"  # a page, offset, cursor: always compared exactly
    VALUE = "value"  # anything else (paths, patterns, queries, objects): compared exactly


#: One argument's near-duplicate identity: (name, class, hash of the normalised value).
#: Python's string hash is salted per process, which is fine: signatures are compared
#: within one run and never stored or sent anywhere, and it costs a fraction of a digest.
ArgSignature = tuple[tuple[str, str, int], ...]

_OPTION_TOKEN = re.compile(r"^[a-z][a-z0-9_-]{0,11}$")


def _cosmetic(text: str) -> str:
    """Case, surrounding and repeated blanks, a trailing slash and a leading ``./`` are
    cosmetic: ``"./src/"``, ``"src"`` and ``" SRC "`` name the same place."""
    text = " ".join(text.casefold().split())
    if len(text) > 1:
        text = text.rstrip("/") or "/"
    if text.startswith("./") and len(text) > 2:
        text = text[2:]
    return text


def arg_signature(
    arguments: Any,
    volatile: Collection[str] = DEFAULT_VOLATILE_ARGS,
    positions: Collection[str] = DEFAULT_POSITION_ARGS,
) -> ArgSignature:
    """The near-duplicate identity of a call's arguments (see :func:`near_duplicate`).

    Top-level keys of an object are classified; anything else (a raw string, a list) is one
    ``VALUE`` under the empty name. Only digests are kept.
    """
    if not isinstance(arguments, Mapping):
        text = arguments if isinstance(arguments, str) else canonical_args(arguments, volatile)
        return (("", _ArgClass.VALUE.value, hash(_cosmetic(text))),)
    items: list[tuple[str, str, int]] = []
    for key, value in arguments.items():
        name = str(key)
        lowered = name.lower()
        if lowered in volatile:
            continue
        if lowered in positions:
            items.append((name, _ArgClass.POSITION.value, hash(canonical_args(value, volatile))))
        elif value is None or isinstance(value, (bool, int, float)):
            items.append((name, _ArgClass.TWEAK.value, 0))
        elif isinstance(value, str):
            text = _cosmetic(value)
            kind = _ArgClass.OPTION if _OPTION_TOKEN.match(text) else _ArgClass.VALUE
            items.append((name, kind.value, hash(text)))
        else:
            items.append((name, _ArgClass.VALUE.value, hash(canonical_args(value, volatile))))
    items.sort()
    return tuple(items)


_MAY_BE_ADDED = frozenset({_ArgClass.TWEAK.value, _ArgClass.OPTION.value})


def near_duplicate(a: ArgSignature, b: ArgSignature) -> bool:
    """True when two calls of one tool differ only cosmetically.

    An argument present in both must have the same normalised value, unless both values
    are numbers, booleans or null (a tweaked limit, a toggled flag). An argument present in
    only one call must be such a tweak or a short option word (an added ``sort: "asc"``).
    Positions (page, offset, cursor) and substantive values (paths, patterns, queries)
    must match. Cost: O(number of arguments).
    """
    if a == b:
        return True
    left = {name: (kind, value) for name, kind, value in a}
    right = {name: (kind, value) for name, kind, value in b}
    for name, (kind, value) in left.items():
        other = right.get(name)
        if other is None:
            if kind not in _MAY_BE_ADDED:
                return False
        elif not (kind == other[0] == _ArgClass.TWEAK.value) and (kind, value) != other:
            return False
    return all(name in left or kind in _MAY_BE_ADDED for name, (kind, _) in right.items())


# ----------------------------------------------------------------------------------------
# Progress
# ----------------------------------------------------------------------------------------

#: Only the end of a result is searched for a progress figure: status lines come last, and
#: the bound keeps the cost per step constant on huge results.
PROGRESS_TAIL_CHARS = 2048

_PERCENT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?%")
_FRACTION = re.compile(r"(?<![\w/.:-])(\d+)\s*(?:/|\bof\b)\s*(\d+)(?![\w/.:-])", re.IGNORECASE)


def progress_value(text: str) -> float | None:
    """The last explicit progress figure in the tail of ``text`` as a fraction, or None.

    ``45%`` is 0.45, ``3/10`` and ``3 of 10`` are 0.3. A fraction needs ``n <= m`` and
    ``m >= 2`` (so dates such as ``2024/05/01`` and ratios like ``5/1`` are not progress).
    """
    tail = text[-PROGRESS_TAIL_CHARS:]
    has_percent = "%" in tail
    has_fraction = "/" in tail or "of" in tail or "OF" in tail or "Of" in tail
    if not (has_percent or has_fraction) or not _HAS_DIGIT.search(tail):
        return None
    best: tuple[int, float] | None = None
    for match in _PERCENT.finditer(tail) if has_percent else ():
        value = float(match.group(1))
        if value <= 100.0:
            best = (match.start(), value / 100.0)
    for match in _FRACTION.finditer(tail) if has_fraction else ():
        done, total = int(match.group(1)), int(match.group(2))
        if total >= 2 and done <= total and (best is None or match.start() > best[0]):
            best = (match.start(), done / total)
    return best[1] if best is not None else None


#: A count is a whole number of at most this many digits: longer runs are ids, epoch
#: times or sizes, whose change says nothing about work remaining.
COUNT_MAX_DIGITS = 6
#: At most this many counts are compared per result; a result with more is a table or a
#: listing, not a status line.
MAX_COUNTS = 8
_REMAINING_WORDS = r"(?:pending|remaining|left|queued|outstanding|waiting|to\s+go|todo|unprocessed)"
#: "12 pending", "3 files left", "remaining: 40", "queued=7": a count next to a word that
#: says it is work still to do (at most one word between number and word).
_REMAINING_COUNT = re.compile(
    rf"(?<![\w.:/#-])(\d{{1,{COUNT_MAX_DIGITS}}})(?:\s+[a-z_-]+)?\s+{_REMAINING_WORDS}\b"
    rf"|\b{_REMAINING_WORDS}\s*[:=]?\s*(\d{{1,{COUNT_MAX_DIGITS}}})(?![\w.:/%-])",
    re.IGNORECASE,
)


def remaining_counts(text: str) -> tuple[int, ...] | None:
    """Counts of work remaining in the tail of ``text`` ("12 pending", "3 files left",
    "remaining: 40"), or None when there are none or too many to be a status line.

    Digits are masked in result fingerprints (a new request id is not progress), which
    would also hide a queue draining from 12 to 0. :class:`~otel_semloop.detectors.base.
    Fingerprinter` compares these counts between calls of the same action: remaining work
    that only falls is progress. Only numbers labelled as remaining work count: bare
    numbers (pids, attempt numbers, ids) fall and rise at random in loops too, so the rule
    errs toward a loop for unlabelled counters.
    """
    tail = text[-PROGRESS_TAIL_CHARS:]
    if not _HAS_DIGIT.search(tail):
        return None
    counts = tuple(int(m.group(1) or m.group(2)) for m in _REMAINING_COUNT.finditer(tail))
    if not counts or len(counts) > MAX_COUNTS:
        return None
    return counts


def counts_fell(before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> bool:
    """True when ``after`` has the same shape as ``before``, no count rose and one fell."""
    if before is None or after is None or len(before) != len(after):
        return False
    fell = False
    for old, new in zip(before, after, strict=True):
        if new > old:
            return False
        fell = fell or new < old
    return fell


# ----------------------------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------------------------


class FailureKind(str, enum.Enum):
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Failure:
    """How a step failed: its kind and a low-cardinality class label (an exception type,
    an HTTP status, or a digest of the masked first line of the message)."""

    kind: FailureKind
    label: str


#: HTTP statuses worth retrying (OTLP's own retry list plus 408/425/500 and Anthropic's
#: 529 "overloaded").
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 529})
#: HTTP statuses that the same request will keep getting.
PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 405, 422})

_STATUS = re.compile(
    r"(?:\bstatus(?:[ _-]?code)?|\bhttp(?:/\d(?:\.\d)?)?|\berror(?:[ _-]?code)?|\bcode|^)\W{0,3}([45]\d\d)\b",
    re.IGNORECASE,
)
_TRANSIENT_WORDS = re.compile(
    r"rate.?limit|too.?many.?requests|time.?out|timed.?out|temporar|unavailable|overload|"
    r"try.?again|connection.?(?:reset|refused|error|aborted)|econnreset|etimedout|"
    r"deadline.?exceeded|resource.?exhausted|internal.?server|bad.?gateway|throttl",
    re.IGNORECASE,
)
_PERMANENT_WORDS = re.compile(
    r"unauthori[sz]ed|forbidden|permission.?denied|access.?denied|authenticat|"
    r"invalid.?(?:argument|request|param|input|api.?key|value)|validation.?error|bad.?request|"
    r"not.?found.?error|notfound|unprocessable|schema",
    re.IGNORECASE,
)
#: A tool result starting with one of these words is a failure even when the span's status
#: says nothing: many tools report errors as text.
_ERROR_RESULT = re.compile(r"^\s*(?:error|exception|traceback|fatal)\b", re.IGNORECASE)
#: Characters of an error message inspected: the class is in the first line.
_ERROR_CHARS = 300


def classify_failure(step: Step, result_text: str = "") -> Failure | None:
    """How ``step`` failed, or None when it did not.

    A step failed when its span says so (``is_error``) or, for a tool, when its result
    text starts with ``error``, ``exception``, ``traceback`` or ``fatal``. The kind comes
    from an HTTP status in the type or message, then from words ("rate limit", "timed
    out" are transient; "unauthorized", "invalid argument" are permanent); the first
    match wins in that order, and anything else is ``other``.
    """
    failed = step.is_error
    if not failed and step.kind is StepKind.TOOL and result_text and _ERROR_RESULT.match(result_text):
        failed = True
    if not failed:
        return None
    error_type = step.error_type.rsplit(".", 1)[-1].strip()
    message = (step.error_message or result_text or "")[:_ERROR_CHARS]
    text = f"{error_type} {message}"
    status_match = _STATUS.search(error_type) or _STATUS.search(message)
    status = int(status_match.group(1)) if status_match else None
    if status in TRANSIENT_STATUSES:
        kind = FailureKind.TRANSIENT
    elif status in PERMANENT_STATUSES:
        kind = FailureKind.PERMANENT
    elif _TRANSIENT_WORDS.search(text):
        kind = FailureKind.TRANSIENT
    elif _PERMANENT_WORDS.search(text):
        kind = FailureKind.PERMANENT
    else:
        kind = FailureKind.OTHER
    if error_type or status is not None:
        label = " ".join(part for part in (error_type, f"http {status}" if status else "") if part)
    else:
        first_line = normalize_result(message.split("\n", 1)[0])
        label = f"message {digest(first_line):016x}"
    return Failure(kind, label)
