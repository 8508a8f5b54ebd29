"""What counts as the same call: the identities of a tool call's arguments.

Everything here is a pure function of its input, like :mod:`otel_semloop.detectors.normalize`.

:func:`canonical_args` is the exact identity of a call's arguments: keys sorted, the tool's
volatile argument names dropped at any depth, nothing else touched (``page=1`` and
``page=2`` are different calls), string values in their canonical spelling
(:mod:`otel_semloop.detectors.arguments`). :func:`arg_signature` is the looser identity
used for near-duplicates: per argument a class and a digest of its cosmetically normalised
value (case, surrounding blanks, a trailing slash, a leading ``./``), so that
:func:`near_duplicate` can accept an added flag, a tweaked limit or reordered keys while
refusing a changed path, pattern or page. :func:`argument_words` tells calls about the same
thing from calls about different things.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Mapping
from typing import Any

import orjson

from otel_semloop.detectors.arguments import (
    SHELL_ARGUMENT_NAMES,
    canonical_string,
    shell_near_form,
)

__all__ = [
    "DEFAULT_POSITION_ARGS",
    "DEFAULT_VOLATILE_ARGS",
    "ArgSignature",
    "arg_signature",
    "argument_words",
    "canonical_args",
    "near_duplicate",
]


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
    value = arguments
    if rewrite or volatile:
        value = _canonical_value(arguments, volatile, 0, shell, rewrite)
    try:
        return orjson.dumps(
            value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str
        ).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _rewrite_string(text: str, shell: bool) -> str:
    return canonical_string(text, shell=shell)


def _canonical_value(value: Any, volatile: Collection[str], depth: int, shell: bool, rewrite: bool) -> Any:
    """``value`` without volatile keys and with its strings rewritten; the very same
    object when nothing changed."""
    if depth >= _MAX_ARG_DEPTH:
        return value
    if isinstance(value, str):
        return _rewrite_string(value, shell) if rewrite and value else value
    if isinstance(value, Mapping):
        out = {}
        changed = False
        for k, v in value.items():
            lowered = k.lower() if isinstance(k, str) else k
            if lowered in volatile:
                changed = True
                continue
            if isinstance(v, (str, Mapping, list, tuple)):
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
    TWEAK = "tweak"  # a number, bool or null: may be added (a default spelled out), never changed
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
            # A different number is a different target, amount or duration (issue 17 and
            # issue 18, a sleep of 15 s and of 30 s): compared exactly, like any value.
            items.append((name, _ArgClass.TWEAK.value, hash(repr(value))))
        elif isinstance(value, str) and (shell or lowered in SHELL_ARGUMENT_NAMES):
            items.append((name, _ArgClass.VALUE.value, hash(_near_string(value, True))))
        elif isinstance(value, str):
            text = _near_string(value, False)
            kind = _ArgClass.OPTION if _OPTION_TOKEN.match(text) else _ArgClass.VALUE
            items.append((name, kind.value, hash(text)))
        else:
            items.append((name, _ArgClass.VALUE.value, hash(_cosmetic_value(value, volatile, 0))))
    items.sort()
    return tuple(items)


def _cosmetic_value(value: Any, volatile: Collection[str], depth: int) -> str:
    """A nested argument's near-duplicate form as text: keys sorted, volatile names
    dropped, every string in its cosmetic form (case, blanks, a trailing slash), numbers
    and everything else exact."""
    if depth >= _MAX_ARG_DEPTH:
        return canonical_args(value, volatile, rewrite=False)
    if isinstance(value, str):
        return orjson.dumps(_near_string(value, False)).decode()
    if isinstance(value, Mapping):
        parts = sorted(
            (str(k), _cosmetic_value(v, volatile, depth + 1))
            for k, v in value.items()
            if not (isinstance(k, str) and k.lower() in volatile)
        )
        return "{" + ",".join(f"{orjson.dumps(k).decode()}:{v}" for k, v in parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_cosmetic_value(v, volatile, depth + 1) for v in value) + "]"
    return canonical_args(value, volatile, rewrite=False)


_MAY_BE_ADDED = frozenset({_ArgClass.TWEAK.value, _ArgClass.OPTION.value})


def near_duplicate(a: ArgSignature, b: ArgSignature) -> bool:
    """True when two calls of one tool differ only cosmetically.

    A difference is cosmetic only when it is known not to matter: an argument present in
    both must have the same normalised value (case, blanks, a trailing slash, a URL's
    tracking parameters, a date's spelling, a command's flags; numbers exactly: a
    different id, amount or duration is different work). An argument present in only one
    call must be a number, boolean, null or short option word (a default spelled out, an
    added ``sort: "asc"``). Volatile names (request ids, idempotency keys) are not in the
    signatures at all. Cost: O(number of arguments).
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
        elif (kind, value) != other:
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
