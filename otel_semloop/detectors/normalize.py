"""Normalisation: what counts as "the same" for the deterministic detectors.

Everything here is a pure function of its input (no state, no clock), so the same step
always normalises the same way, offline or live.

Masking (results, assistant text, output lines)
    Volatile tokens are not progress: a result that differs from the last one only in a
    request id, a pid, a timestamp or a counter is the same result. Masked, in this order:
    UUIDs (``<uuid>``), ISO-8601 timestamps (``<ts>``, any precision and zone), hex runs of
    six or more characters holding both a digit and a letter a-f (``<hex>``: hashes, ids,
    addresses), generated identifiers (``<id>``: short hex such as ``e0b0``, letters and
    digits interleaved such as ``8f3k2``, whatever their prefix ``req_``/``m-``/``run-``,
    and several of them joined by ``_`` or ``-`` as one) and finally every run of digits
    (``#``). Masked identifiers have one length, so their jitter is not "longer output".
    Text without a digit is returned as is (every pattern needs one), which keeps the
    common case cheap. Masking errs toward "same": a real change that is only numeric
    (``3 failed`` -> ``1 failed``) is invisible here; explicit progress (below) and novel
    actions are what let such work through.

Arguments
    :func:`canonical_args` is the exact identity of a call's arguments: keys sorted, the
    tool's volatile argument names dropped at any depth, nothing else touched (``page=1``
    and ``page=2`` are different calls). :func:`arg_signature` is the looser identity used
    for near-duplicates: per argument a class and a digest of its cosmetically normalised
    value (case, surrounding blanks, a trailing slash, a leading ``./``), so that
    :func:`near_duplicate` can accept an added flag, a tweaked limit or reordered keys while
    refusing a changed path, pattern or page.

Progress
    The figures read from a result (a progress figure, counts of work remaining, numbers)
    are in :mod:`otel_semloop.detectors.figures`.

Failures
    Whether and how a step failed is in :mod:`otel_semloop.detectors.failure_class`.

Digests
    :func:`digest` is a 64-bit blake2b of text, as an ``int`` (cheap to hash and compare).
    Detectors keep these digests, never the text they came from.

Size: every rule for what counts as "the same" lives here so it has one definition;
each function is small and pure.
"""

from __future__ import annotations

import enum
import hashlib
import itertools
import re
from collections.abc import Collection, Mapping
from typing import Any

import orjson

from otel_semloop.detectors.arguments import SHELL_ARGUMENT_NAMES, canonical_string, shell_near_form

__all__ = [
    "DEFAULT_POSITION_ARGS",
    "DEFAULT_VOLATILE_ARGS",
    "ArgSignature",
    "arg_signature",
    "argument_words",
    "canonical_args",
    "digest",
    "is_acknowledgement",
    "mask",
    "near_duplicate",
    "normalize_content",
    "normalize_result",
    "normalize_result_and_content",
    "normalize_text",
    "normalize_words",
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
#: Candidate identifiers: alphanumeric runs of four or more characters holding a digit and
#: a letter (``req_8f3k2``'s ``8f3k2``, ``run-e0b0``'s ``e0b0``, ``m-7Hq2xZ``'s ``7Hq2xZ``).
#: :func:`_ident` keeps only those that look random (see there).
_IDENT = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{4,}(?![A-Za-z0-9])")
_DIGIT_RUN = re.compile(r"\d+")
_HEX_ONLY = re.compile(r"^[0-9a-fA-F]+$")
#: Identifiers joined by ``_`` or ``-`` (``<id>-<id>``) are one identifier: the number of
#: parts a generator emits is not information either.
_JOINED_IDS = re.compile(r"<(?:id|hex|uuid)>(?:[-_]<(?:id|hex|uuid)>)+")
_HAS_DIGIT = re.compile(r"\d")


def has_digit(text: str) -> bool:
    """``_HAS_DIGIT.search(text)``: ASCII text by ten substring tests (memchr speed), other
    text by the pattern (``\\d`` also matches other scripts' digits)."""
    if text.isascii():
        return (
            "0" in text or "1" in text or "2" in text or "3" in text or "4" in text
            or "5" in text or "6" in text or "7" in text or "8" in text or "9" in text
        )  # fmt: skip
    return _HAS_DIGIT.search(text) is not None


#: ASCII digits to NUL, then runs of NUL to ``#``: ``_DIGITS.sub("#", text)`` for ASCII
#: text without NUL, with one translation and a search for a literal (the digit pattern is
#: a character set, which the regex engine tries at every position).
_DIGITS_TO_NUL = bytes.maketrans(b"0123456789", b"\0" * 10)
_NUL_RUN = re.compile(b"\0\0*")  # a literal first: the engine jumps from NUL to NUL


def _mask_digits(text: str) -> str:
    """``_DIGITS.sub("#", text)``."""
    if text.isascii() and "\0" not in text:
        return _NUL_RUN.sub(b"#", text.encode("ascii").translate(_DIGITS_TO_NUL)).decode("ascii")
    return _DIGITS.sub("#", text)
#: Punctuation becomes a blank (ASCII, plus the typographic quotes, dashes and bullets
#: that models emit); ``#``, ``<`` and ``>`` survive because the masks use them.
_PUNCTUATION = str.maketrans(
    dict.fromkeys(
        [c for c in "!\"$%&'()*+,-./:;=?@[\\]^_`{|}~" if c not in "#<>"]
        + list("\u2018\u2019\u201c\u201d\u2013\u2014\u2026\u2022\u00b7"),
        " ",
    )
)


#: :data:`_PUNCTUATION` for ASCII text, as a byte table (a byte translation is several
#: times faster than a ``str`` one).
_PUNCTUATION_BYTES = bytes(
    ord(" ") if c < 128 and _PUNCTUATION.get(c) == " " else c for c in range(256)
)


def _drop_punctuation(text: str) -> str:
    """``text.translate(_PUNCTUATION)``."""
    if text.isascii():
        return text.encode("ascii").translate(_PUNCTUATION_BYTES).decode("ascii")
    return text.translate(_PUNCTUATION)


#: ASCII as bytes: upper-case letters to lower case and every character ``str.split``
#: splits on to a blank (``_FOLD``); the same, and punctuation to a blank too
#: (``_FOLD_PUNCTUATION``). For ASCII text ``casefold`` is ``lower``.
_FOLD = bytes(
    c + 32 if 65 <= c <= 90 else ord(" ") if c < 128 and chr(c).isspace() else c for c in range(256)
)
_FOLD_PUNCTUATION = bytes(ord(" ") if _PUNCTUATION_BYTES[c] == ord(" ") else _FOLD[c] for c in range(256))
_BLANKS = re.compile(b"  +")


def _fold_ascii(text: str, table: bytes) -> str:
    """``" ".join(text.casefold().split())`` of ASCII ``text`` (with :data:`_FOLD`;
    punctuation dropped first with :data:`_FOLD_PUNCTUATION`): one byte translation, then
    runs of blanks collapsed by a pattern that starts with a literal."""
    folded = text.encode("ascii").translate(table)
    if b"  " in folded:
        folded = _BLANKS.sub(b" ", folded)
    return folded.strip(b" ").decode("ascii")


def _hex(match: re.Match[str]) -> str:
    run = match.group()
    if run[:2].lower() == "0x" or (_HEX_LETTER.search(run) and _HAS_DIGIT.search(run)):
        return "<hex>"
    return run


def _ident(match: re.Match[str]) -> str:
    """An identifier when the run looks generated: hex holding a digit (``e0b0``,
    ``3eab``), or letters and digits interleaved (two digit runs or more: ``8f3k2``,
    ``7Hq2xZ``). ``python3``, ``utf8``, ``sha256`` and ``x86`` are words, kept."""
    run = match.group()
    digit_runs = len(_DIGIT_RUN.findall(run))
    if _HEX_ONLY.match(run):
        return "<id>"  # hex holding a digit (``e0b0``, ``3eab``): hex words have none
    if digit_runs >= 2:
        return "<id>"
    return run


def mask(text: str) -> str:
    """``text`` with UUIDs, ISO timestamps, hex runs, generated identifiers and digit runs
    masked (see module doc).

    Each pattern runs only when a substring test (done in C) says it could match.
    """
    if not has_digit(text):
        return text
    return _volatile_marks(_mask_ids(text))


#: Gates for ASCII text: each is a necessary condition for its mask to change anything,
#: found by a pattern that starts with a literal or a character set, which the regex
#: engine scans for in C (the masks start with ``\b`` or a lookbehind and try every
#: position). A UUID holds ``-hhhh-``; a timestamp ``-dd-dd``; a hex run six hex
#: characters in a row; an identifier (a run of letters and digits holding both, as the
#: lookaheads read it in ASCII) a digit next to a letter. Non-ASCII text skips
#: the gates: there ``\d`` also matches other scripts' digits, which the lookaheads may
#: cross, and case-insensitive classes follow Unicode case folding.
_UUID_GATE = re.compile(r"-[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]-")
_TIMESTAMP_GATE = re.compile(r"-\d\d-\d\d")
#: Character classes for the hex and identifier gates (ASCII text as bytes): a digit
#: becomes ``0``, a hex letter ``1``, another letter ``2``, anything else a blank.
_CLASSES = bytes(
    ord("0") if chr(c).isdigit() and c < 128
    else ord("1") if chr(c) in "abcdefABCDEF"
    else ord("2") if chr(c).isalpha() and c < 128
    else ord(" ")
    for c in range(256)
)  # fmt: skip
#: A digit next to a letter (after it, or before it: the lookbehind over the digit).
_DIGIT_LETTER = re.compile(b"0(?:[12]|(?<=[12]0))")
#: Six hex characters in a row of which one is a digit (the digit, then where the run lies
#: around it), in the classes. It starts with the literal ``0``: the engine jumps from
#: digit to digit.
_HEX_RUN = re.compile(
    b"0(?:[01]{5}|(?<=[01]0)[01]{4}|(?<=[01]{2}0)[01]{3}|(?<=[01]{3}0)[01]{2}|(?<=[01]{4}0)[01]|(?<=[01]{5}0))"
)


#: A generated identifier and a number are one mark once numbers are masked too: an id
#: generator emits ``run-5340`` as readily as ``run-d1a8``. Marks joined by ``-``/``_``
#: are one mark.
_JOINED_MARKS = re.compile(r"#(?:[-_]#)+")


def _volatile_marks(ids_masked: str) -> str:
    """``ids_masked`` (identifiers already masked) with digit runs and ``<id>`` as ``#``."""
    text = _mask_digits(ids_masked).replace("<id>", "#")
    return _JOINED_MARKS.sub("#", text) if "#-#" in text or "#_#" in text else text


def _mask_ids(text: str) -> str:
    """``text`` with UUIDs, ISO timestamps, hex runs and generated identifiers masked,
    other numbers kept. Each mask runs only when its gate (above) says it could change
    something (a hex run or identifier that is not masked is replaced by itself)."""
    gated = text.isascii()  # O(1); masking only ever writes ASCII
    if text.count("-") >= 4 and not (gated and _UUID_GATE.search(text) is None):
        text = _UUID.sub("<uuid>", text)
    if "-" in text and not (gated and _TIMESTAMP_GATE.search(text) is None):
        text = _TIMESTAMP.sub("<ts>", text)
    if gated:
        classes = text.encode("ascii").translate(_CLASSES)
        # A digit next to a letter: the identifier gate itself, and necessary for a masked
        # hex run too (its ``0x`` prefix is one; a run holding a digit and a letter has one).
        ident = _DIGIT_LETTER.search(classes) is not None
        # A masked hex run has the ``0x`` prefix, or six hex characters in a row and a digit.
        hex_run = ident and ("0x" in text or "0X" in text or _HEX_RUN.search(classes) is not None)
    else:
        hex_run = ident = True
    if hex_run:
        text = _HEX.sub(_hex, text)
    if ident:
        text = _IDENT.sub(_ident, text)
    if "<" in text:
        text = _JOINED_IDS.sub("<id>", text)
    return text


def normalize_result_and_content(text: str) -> tuple[str, str]:
    """(:func:`normalize_result`, :func:`normalize_content`) of one result, masking its
    identifiers once for both."""
    if not has_digit(text):
        folded = _fold_ascii(text, _FOLD) if text.isascii() else " ".join(text.casefold().split())
        return folded, folded
    # Collapsing blanks commutes with masking (no mark holds a blank, and a collapsed
    # blank still separates what it separated): one split for result and content.
    masked = _mask_ids(text)
    content = _fold_ascii(masked, _FOLD) if masked.isascii() else " ".join(masked.casefold().split())
    return _volatile_marks(content), content


def normalize_content(text: str) -> str:
    """A result's content as compared *across different calls*: identifiers, UUIDs, hex
    and timestamps masked, case and blanks folded, but numbers kept (two cities at 18 and
    20 degrees are two answers; the same answer to two queries has the same numbers)."""
    if has_digit(text):
        text = _mask_ids(text)
    return " ".join(text.casefold().split())


#: Words of a result that only acknowledges an action ("ok", "File written successfully",
#: ``{"status": "ok"}``): the same acknowledgement from many different calls is batch work
#: getting done, not the same answer to a question asked again.
ACK_WORDS = frozenset(
    """ok okay success successful successfully succeeded done true yes saved written wrote
    created updated deleted removed added applied sent accepted queued scheduled
    completed complete finished status result message healthy running up active passed
    pass valid exists available enabled disabled ack acknowledged noted recorded stored
    committed pushed moved copied renamed uploaded installed started stopped the a an to
    has have been was were is are file files item items record records row rows changes
    change operation request task job it data value values # <id> <hex> <uuid> <ts>""".split()  # noqa: SIM905
)
#: An acknowledgement is short: a longer result says something.
ACK_MAX_WORDS = 8


def is_acknowledgement(normalised: str) -> bool:
    """True when a normalised result (:func:`normalize_result`) is empty, ``null``/``none``
    or only acknowledges (see :data:`ACK_WORDS`); ``[]``, ``false``, ``0``, ``not found``
    and ``no results`` are answers, not acknowledgements."""
    if len(normalised) > 16 * ACK_MAX_WORDS:
        return False
    words = normalised.translate(_PUNCTUATION).split()
    if not words:
        return normalised.strip() not in ("[]", "{}")
    if len(words) == 1 and words[0] in ("null", "none"):
        return True
    return len(words) <= ACK_MAX_WORDS and all(word in ACK_WORDS for word in words)


def normalize_result(text: str) -> str:
    """A tool result as compared by the detectors: masked, case-folded, blanks collapsed."""
    return " ".join(mask(text).casefold().split())


def normalize_text(text: str) -> str:
    """Assistant text or an output line as compared by the detectors: like
    :func:`normalize_result`, and punctuation dropped (``Retrying.`` equals ``retrying!``)."""
    masked = mask(text)
    if masked.isascii():
        return _fold_ascii(masked, _FOLD_PUNCTUATION)
    return " ".join(_drop_punctuation(masked.casefold()).split())


def normalize_words(text: str) -> str:
    """Like :func:`normalize_text` with numbers kept: the lines of one output that differ
    only in a number (``Migrated table 3``, ``Migrated table 4``) are an enumeration, not
    the same line. Identifiers, UUIDs, hex and timestamps are still masked."""
    if has_digit(text):
        text = _mask_ids(text)
    return " ".join(_drop_punctuation(text.casefold()).split())


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
        # client-generated ids that make a re-send unique (Slack's client_msg_id, AWS's
        # client tokens, SQS deduplication ids, correlation ids)
        "client_msg_id", "clientmsgid", "client_request_id", "clientrequestid", "client_token",
        "clienttoken", "dedup_id", "dedupe_id", "dedup_key", "dedupe_key", "deduplication_id",
        "message_deduplication_id", "correlation_id", "correlationid", "x_request_id",
        "x-request-id",
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


def canonical_args(
    arguments: Any,
    volatile: Collection[str] = DEFAULT_VOLATILE_ARGS,
    *,
    shell: bool = False,
    rewrite: bool = True,
) -> str:
    """The exact identity of a call's arguments as text: JSON with sorted keys and the
    ``volatile`` names (matched case-insensitively) dropped at any depth; a string is
    stripped of surrounding blanks (a raw, non-JSON argument string).

    With ``rewrite`` (the default) string values are put in their canonical spelling
    (:mod:`otel_semloop.detectors.arguments`: URLs, dates, and shell command lines for
    argument names such as ``command``, or every string when ``shell`` says the tool runs
    commands), so two spellings of one call are one call.
    """
    if isinstance(arguments, str):
        if rewrite:
            return _rewrite_string(arguments.strip(), shell)
        return arguments.strip()
    if rewrite and type(arguments) is dict:
        flat = _flat_canonical(arguments, volatile, shell)
        if flat is not None:
            return flat
    value = arguments
    if rewrite or volatile:
        value = _canonical_value(arguments, volatile, 0, shell, rewrite)
    try:
        return orjson.dumps(
            value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
        ).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _flat_canonical(arguments: dict[Any, Any], volatile: Collection[str], shell: bool) -> str | None:
    """:func:`canonical_args` (rewriting) of a dict whose keys are strings and whose values
    are strings, numbers, booleans or null (most tool calls), in one loop; None for any
    other dict (the general path). Exact types only: a subclass may serialise otherwise."""
    out: dict[str, Any] | None = None
    for position, (key, value) in enumerate(arguments.items()):
        if type(key) is not str:
            return None
        lowered = key.lower()
        if lowered in volatile:
            if out is None:
                out = dict(itertools.islice(arguments.items(), position))
            continue
        kind = type(value)
        if kind is str:
            new = canonical_string(value, shell=shell or lowered in SHELL_ARGUMENT_NAMES) if value else value
        elif kind in _LEAF_TYPES:
            new = value
        else:
            return None
        if out is None and new is not value:
            out = dict(itertools.islice(arguments.items(), position))
        if out is not None:
            out[key] = new
    try:
        return orjson.dumps(arguments if out is None else out, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:
        return None  # an integer orjson cannot write: the general path says what then


def _rewrite_string(text: str, shell: bool) -> str:

    return canonical_string(text, shell=shell)


#: Exact types of values that :func:`_canonical_value` returns unchanged (scalars): tested
#: by ``type(...) in`` before the ``isinstance`` chain, whose ``Mapping`` test goes through
#: the ABC machinery and costs several times more.
_LEAF_TYPES = frozenset({int, float, bool, type(None)})


def _canonical_value(value: Any, volatile: Collection[str], depth: int, shell: bool, rewrite: bool) -> Any:
    """``value`` without volatile keys and with its strings rewritten; the very same
    object when nothing changed."""
    if depth >= _MAX_ARG_DEPTH:
        return value
    kind = type(value)
    if kind is str or (kind is not dict and isinstance(value, str)):
        return _rewrite_string(value, shell) if rewrite and value else value
    if kind is dict or (kind not in _LEAF_TYPES and isinstance(value, Mapping)):
        out = {}
        changed = False
        for k, v in value.items():
            lowered = k.lower() if isinstance(k, str) else k
            if lowered in volatile:
                changed = True
                continue
            if type(v) not in _LEAF_TYPES and isinstance(v, (str, Mapping, list, tuple)):
                new = _canonical_value(
                    v, volatile, depth + 1, shell or lowered in SHELL_ARGUMENT_NAMES, rewrite
                )
                changed = changed or new is not v
            else:
                new = v
            out[k] = new
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [_canonical_value(v, volatile, depth + 1, shell, rewrite) for v in value]
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


def _near_string(text: str, shell: bool) -> str:
    """A string argument's near-duplicate form: canonical spelling, then cosmetic
    normalisation; a command line keeps only its programs and operands (flags are tweaks)."""

    if shell:
        return _cosmetic(shell_near_form(text))
    return _cosmetic(canonical_string(text))


def arg_signature(
    arguments: Any,
    volatile: Collection[str] = DEFAULT_VOLATILE_ARGS,
    positions: Collection[str] = DEFAULT_POSITION_ARGS,
    *,
    shell: bool = False,
) -> ArgSignature:
    """The near-duplicate identity of a call's arguments (see :func:`near_duplicate`).

    Top-level keys of an object are classified; anything else (a raw string, a list) is one
    ``VALUE`` under the empty name. Strings are compared in their canonical spelling
    (URLs, dates); command lines (``shell``, or an argument named like ``command``) by
    programs and operands only, so a changed flag is a cosmetic change. Only digests are
    kept.
    """

    if not isinstance(arguments, Mapping):
        if isinstance(arguments, str):
            return (("", _ArgClass.VALUE.value, hash(_near_string(arguments, shell))),)
        text = canonical_args(arguments, volatile, shell=shell)
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
        elif isinstance(value, str) and (shell or lowered in SHELL_ARGUMENT_NAMES):
            items.append((name, _ArgClass.VALUE.value, hash(_near_string(value, True))))
        elif isinstance(value, str):
            text = _near_string(value, False)
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


_WORD = re.compile(r"[^\W\d_]{3,}")


def argument_words(arguments: Any, volatile: Collection[str] = DEFAULT_VOLATILE_ARGS) -> frozenset[int]:
    """Hashes of the words (three letters or more, case-folded) in a call's string
    argument values, keys left out: two calls that share one are about the same thing
    (a reworded query, an edited URL), two that share none are about different things
    (two users, two cities). Bounded to the first 64 words."""
    words: set[int] = set()
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack and len(words) < 64:
        value, depth = stack.pop()
        if isinstance(value, str):
            for match in _WORD.finditer(value[:2048]):
                words.add(hash(match.group().casefold()))
        elif depth < _MAX_ARG_DEPTH and isinstance(value, Mapping):
            stack.extend(
                (v, depth + 1) for k, v in value.items() if not (isinstance(k, str) and k.lower() in volatile)
            )
        elif depth < _MAX_ARG_DEPTH and isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)
    return frozenset(words)
