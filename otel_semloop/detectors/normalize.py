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
    Text without a digit is returned as is. Masking errs toward "same": a real change that is only numeric
    (``3 failed`` -> ``1 failed``) is invisible here; explicit progress (below) and novel
    actions are what let such work through.

Arguments
    What counts as the same call (canonical arguments, near-duplicate signatures, argument
    words) is in :mod:`otel_semloop.detectors.call_identity`.

Progress
    The figures read from a result (a progress figure, counts of work remaining, numbers)
    are in :mod:`otel_semloop.detectors.figures`.

Failures
    Whether and how a step failed is in :mod:`otel_semloop.detectors.failure_class`.

Digests
    :func:`digest` is a 64-bit blake2b of text, as an ``int`` (cheap to hash and compare).
    Detectors keep these digests, never the text they came from.
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "digest",
    "identifiers",
    "is_acknowledgement",
    "is_time_reading",
    "mask",
    "normalize_content",
    "normalize_result",
    "normalize_result_and_content",
    "normalize_text",
    "normalize_words",
    "says_none_found",
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
#: Digit runs, spelled with a digit first so that the engine skips ahead to the next digit
#: (``\d+`` is tried at every position).
_DIGITS = re.compile(r"\d\d*")
#: Candidate identifiers: alphanumeric runs of four or more characters holding a digit and
#: a letter (``req_8f3k2``'s ``8f3k2``, ``run-e0b0``'s ``e0b0``, ``m-7Hq2xZ``'s ``7Hq2xZ``).
#: :func:`_ident` keeps only those that look random (see there).
_IDENT = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{4,}(?![A-Za-z0-9])")
_DIGIT_RUN = re.compile(r"\d+")
_HEX_ONLY = re.compile(r"^[0-9a-fA-F]+$")
#: Identifiers joined by ``_`` or ``-`` (``<id>-<id>``) are one identifier: the number of
#: parts a generator emits is not information either, nor is a part that happens to hold
#: digits alone (``a53b2d-761908`` is one id, like ``5bbac9-ed00e3``).
_JOINED_IDS = re.compile(
    r"(?:\d+[-_])*<(?:id|hex|uuid)>(?:[-_](?:<(?:id|hex|uuid)>|\d+(?!\w|\.\d)))+|\d+[-_]<(?:id|hex|uuid)>"
)
_HAS_DIGIT = re.compile(r"\d")


def has_digit(text: str) -> bool:
    """Whether ``text`` holds a digit (of any script)."""
    return _HAS_DIGIT.search(text) is not None


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
    return _JOINED_MARKS.sub("#", _DIGITS.sub("#", ids_masked).replace("<id>", "#"))


def _mask_ids(text: str) -> str:
    """``text`` with UUIDs, ISO timestamps, hex runs and generated identifiers masked,
    other numbers kept. Each mask runs only when its gate (above) says it could change
    something (a hex run or identifier that is not masked is replaced by itself).
    Kept for speed: without the gates the detectors take about twice as long in
    ``bench/detector_speed.py`` (the plain masks are the oracle in tests/detectors)."""
    gated = text.isascii()  # O(1); masking only ever writes ASCII
    if "-" in text:  # (``memchr``; counting them is a slower loop)
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


def identifiers(text: str) -> str:
    """The identifiers :func:`mask` hides in ``text`` (UUIDs, hex runs, generated
    identifiers), in order, joined by blanks; "" when it holds none. Timestamps are not
    among them: a clock moves on by itself, while an identifier names a thing (a commit,
    a revision, a run) and changes when the thing does."""
    if not has_digit(text):
        return ""
    if "-" in text:
        text = _TIMESTAMP.sub(" ", text)
    found: list[str] = []

    def keep(match: re.Match[str], masked: str) -> str:
        if masked.startswith("<"):
            found.append(match.group())
            return " "
        return masked

    if "-" in text:
        text = _UUID.sub(lambda match: keep(match, "<uuid>"), text)
    text = _HEX.sub(lambda match: keep(match, _hex(match)), text)
    _IDENT.sub(lambda match: keep(match, _ident(match)), text)
    return " ".join(found)


def normalize_result_and_content(text: str) -> tuple[str, str]:
    """(:func:`normalize_result`, :func:`normalize_content`) of one result, masking its
    identifiers once for both."""
    if not has_digit(text):
        folded = " ".join(text.casefold().split())
        return folded, folded
    # Collapsing blanks commutes with masking (no mark holds a blank, and a collapsed
    # blank still separates what it separated): one split for result and content.
    masked = _mask_ids(text)
    content = " ".join(masked.casefold().split())
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
    return " ".join(mask(text).casefold().translate(_PUNCTUATION).split())


def normalize_words(text: str) -> str:
    """Like :func:`normalize_text` with numbers kept: the lines of one output that differ
    only in a number (``Migrated table 3``, ``Migrated table 4``) are an enumeration, not
    the same line. Identifiers, UUIDs, hex and timestamps are still masked."""
    if has_digit(text):
        text = _mask_ids(text)
    return " ".join(text.casefold().translate(_PUNCTUATION).split())


def digest(text: str) -> int:
    """A 64-bit blake2b digest of ``text`` as an int. Collisions are negligible at trace
    scale (2**-64 per pair) and would err toward "same"."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )


#: What a clock reading says beside its time: zones, day and month names, a label.
_TIME_WORDS = frozenset(
    """utc gmt z am pm mon tue wed thu fri sat sun jan feb mar apr may jun jul aug sep oct nov dec
    the current time date now is it local server timestamp datetime iso unix epoch tz zone
    timezone""".split()  # noqa: SIM905
)
_TIME_MARKS = re.compile(r"<ts>|#(?::#){1,2}(?:\.#)?")
_READING_WORD = re.compile(r"[a-z]+")


def is_time_reading(normalised: str) -> bool:
    """True when a normalised result (:func:`normalize_result`) is nothing but a clock
    reading: a timestamp or a time of day, with at most a zone, day or month names and a
    label ("the current time is ..."). Its time is then its answer, not a volatile detail:
    a clock asked again answers a later time, which is new."""
    if len(normalised) > 120 or _TIME_MARKS.search(normalised) is None:
        return False
    rest = _TIME_MARKS.sub(" ", normalised)
    return all(word in _TIME_WORDS for word in _READING_WORD.findall(rest))


_NONE_FOUND = re.compile(r"\b(?:no|not|none|nothing|empty|zero|n/a)\b|^\s*(?:\[\s*\]|\{\s*\}|#|null)\s*$")


def says_none_found(normalised: str) -> bool:
    """True when a short normalised result says "nothing" (``no results``, ``not found``,
    ``[]``, ``0``, ``none``): an answer to a question, never an acknowledgement."""
    return len(normalised) <= 16 * ACK_MAX_WORDS and _NONE_FOUND.search(normalised) is not None
