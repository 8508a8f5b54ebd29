"""The per-step facts' shortcuts give exactly what the plain code gives.

Each test keeps the plain computation as it was written before the shortcut (the original
patterns, copied here) and compares it with the fast function on generated input that
favours the edges where a shortcut could go wrong: keys in other cases, keys inside longer
words, digits after letters, dots and slashes, other scripts' letters that fold to ASCII
under IGNORECASE (the Kelvin sign, the long s, the dotless i).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import arguments as arguments_module
from otel_semloop.detectors import call_identity, figures, normalize
from otel_semloop.detectors.arguments import SHELL_ARGUMENT_NAMES, canonical_string
from otel_semloop.detectors.figures import PROGRESS_TAIL_CHARS, progress_value, result_numbers

# -- the patterns as they were: each starts with a lookbehind or \b ----------------------

PLAIN_PERCENT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?%")
PLAIN_FRACTION = re.compile(r"(?<![\w/.:-])(\d+)\s*(?:/|\bof\b)\s*(\d+)(?![\w/.:-])", re.IGNORECASE)
PLAIN_NUMBER = re.compile(r"(?<![\w.])(\d{1,8}(?:\.\d+)?)(?![\w.]*\d)(?!\.\d)")
PLAIN_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\b")


def plain_field_progress(tail: str) -> tuple[int, float] | None:
    best: tuple[int, float] | None = None
    for match in figures._PROGRESS_FIELD.finditer(tail):
        value = float(match.group(2))
        key = match.group(1).lower()
        if value <= 1.0 and not key.startswith(("percent", "pct")) and "." in match.group(2):
            best = (match.start(), value)
        elif value <= 100.0:
            best = (match.start(), value / 100.0)
    done = figures._DONE_FIELD.search(tail)
    total = figures._TOTAL_FIELD.search(tail)
    if done and total:
        finished, whole = int(done.group(1)), int(total.group(1))
        if whole >= 1 and finished <= whole:
            position = max(done.start(), total.start())
            if best is None or position > best[0]:
                best = (position, finished / whole)
    return best


def plain_progress_value(text: str) -> float | None:
    tail = text[-PROGRESS_TAIL_CHARS:]
    has_percent = "%" in tail
    has_fraction = "/" in tail or "of" in tail or "OF" in tail or "Of" in tail
    has_field = (":" in tail or "=" in tail) and figures._FIELD_HINT.search(tail) is not None
    if not (has_percent or has_fraction or has_field) or not normalize._HAS_DIGIT.search(tail):
        return None
    best: tuple[int, float] | None = None
    if has_field:
        best = plain_field_progress(tail)
    for match in PLAIN_PERCENT.finditer(tail) if has_percent else ():
        value = float(match.group(1))
        if value <= 100.0:
            best = (match.start(), value / 100.0)
    for match in PLAIN_FRACTION.finditer(tail) if has_fraction else ():
        done, total = int(match.group(1)), int(match.group(2))
        if total >= 2 and done <= total and (best is None or match.start() > best[0]):
            best = (match.start(), done / total)
    return best[1] if best is not None else None


def plain_result_numbers(text: str) -> tuple[float, ...] | None:
    tail = text[-PROGRESS_TAIL_CHARS:]
    if not normalize._HAS_DIGIT.search(tail):
        return None
    if ":" in tail:
        tail = PLAIN_CLOCK.sub(" ", tail)
    tail = normalize._mask_ids(tail)
    if not normalize._HAS_DIGIT.search(tail):
        return None
    numbers: list[float] = []
    for match in PLAIN_NUMBER.finditer(tail):
        start, end = match.span()
        if figures._DURATION_UNIT.match(tail, end) and not figures._UNIT_NOT_DURATION.match(tail, end):
            continue
        if figures._VOLATILE_LABEL.search(tail, max(0, start - 24), start):
            continue
        if figures._VOLATILE_AFTER.match(tail, end):
            continue
        numbers.append(float(match.group(1)))
    if not numbers:
        return None
    return tuple(numbers[-figures.MAX_NUMBERS :])


FIGURE_PIECES = [
    "0", "3", "45", "100", "1234", "12345678", "123456789", "0.45", "7.5", ".", ",", "/", " / ",
    "%", " %", ":", "=", ": ", "\"", "'", " ", "\n", "-", "_", "of", " of ", "OF", "oF", "Of",
    "progress", "Progress", "PERCENT", "percentage_done", "pct", "completion", "percent_complete",
    "done", "Completed", "processed", "current", "indexed", "total", "TOTAL", "count_total",
    "total_count", "expected", "subtotal", "undone", "x", "a1", "v", "id", "pid", "ms", "s",
    "ago", "times", "items", "10:42", "10:42:07.5", "2024-05-01", "e0b0-1c2d", "\u212a",
    "\u017f", "\u0131", "\u0663", "t\u0131me", "progre\u017f\u017f", "pid", "PID", "Attempt",
    "#", "x_pid", "pid2", "v", "no", "ts", "(", "\t", "version", "'", " took ", "Port=",
]  # fmt: skip
FIGURE_TEXT = st.lists(st.sampled_from(FIGURE_PIECES), max_size=30).map("".join) | st.text(
    alphabet=" 0123456789:/%.,-_=#'aAofOFsxv\t\n\u0663", max_size=40
)


@settings(max_examples=800, deadline=None)
@given(FIGURE_TEXT)
@example("progress: 45 total: 10 done: 3")
@example("subtotal: 4, done=3, total=9 total=2")
@example("12 of 30, 45%, 7/9")
@example("count_total: 12 processed: 4")
def test_progress_value_is_exact(text: str) -> None:
    assert progress_value(text) == plain_progress_value(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_progress_value_is_exact_on_any_text(text: str) -> None:
    assert progress_value(text) == plain_progress_value(text)


def test_progress_value_with_many_keys_is_exact() -> None:
    # More candidate starts than the anchor bound: the pattern scans.
    text = "total: 9 " * 40 + "done: 4 progress: 0.5 percent=40"
    assert progress_value(text) == plain_progress_value(text)
    assert progress_value(text + " 7 of 8") == plain_progress_value(text + " 7 of 8")


@settings(max_examples=600, deadline=None)
@given(FIGURE_TEXT)
@example("10:42:07 took 35 ms, rows 12 3.5s 17")
@example("pid: 12 attempt #3 v2 'port'= 8080 x_pid 4 no. 5 (pid) 6 rows 7")
def test_result_numbers_is_exact(text: str) -> None:
    assert result_numbers(text) == plain_result_numbers(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_result_numbers_is_exact_on_any_text(text: str) -> None:
    assert result_numbers(text) == plain_result_numbers(text)


@settings(max_examples=500, deadline=None)
@given(FIGURE_TEXT)
def test_digit_first_patterns_match_what_the_plain_ones_match(text: str) -> None:
    for fast, plain in (
        (figures._PERCENT, PLAIN_PERCENT),
        (figures._FRACTION, PLAIN_FRACTION),
        (figures._NUMBER, PLAIN_NUMBER),
        (figures._CLOCK, PLAIN_CLOCK),
    ):
        assert [(m.span(), m.groups()) for m in fast.finditer(text)] == [
            (m.span(), m.groups()) for m in plain.finditer(text)
        ]


# -- folding ASCII text by bytes ---------------------------------------------------------

FOLD_PIECES = [
    "Retrying", "the FILE", ".", "!", "?", ",", "-", "_", "#", "<", ">", "<id>", "<ID>", " ",
    "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x00", "\x7f", "42", "e0b0", "caf\u00e9",
    "\u2019", "\u00a0", "\x85", "\u2028", "\u017f", "\u212a", "ABC", "x",
]  # fmt: skip
FOLD_TEXT = st.lists(st.sampled_from(FOLD_PIECES), max_size=30).map("".join)


@settings(max_examples=600, deadline=None)
@given(FOLD_TEXT)
@example("  Trailing and leading.  ")
@example("\x1cOK\x1f")
def test_text_folding_by_bytes_is_exact(text: str) -> None:
    assert normalize.normalize_text(text) == " ".join(
        normalize._drop_punctuation(normalize.mask(text).casefold()).split()
    )
    if text.isascii():
        assert normalize._fold_ascii(text, normalize._FOLD) == " ".join(text.casefold().split())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_text_folding_is_exact_on_any_text(text: str) -> None:
    assert normalize.normalize_text(text) == " ".join(
        normalize._drop_punctuation(normalize.mask(text).casefold()).split()
    )


# -- canonical arguments: flat dicts in one loop, exact types before the Mapping ABC --------


def plain_canonical_value(value: Any, volatile: Collection[str], depth: int, shell: bool) -> Any:
    if depth >= call_identity._MAX_ARG_DEPTH:
        return value
    if isinstance(value, str):
        return canonical_string(value, shell=shell) if value else value
    if isinstance(value, Mapping):
        out = {}
        changed = False
        for k, v in value.items():
            lowered = k.lower() if isinstance(k, str) else k
            if lowered in volatile:
                changed = True
                continue
            if isinstance(v, (str, Mapping, list, tuple)):
                new = plain_canonical_value(v, volatile, depth + 1, shell or lowered in SHELL_ARGUMENT_NAMES)
                changed = changed or new is not v
            else:
                new = v
            out[k] = new
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [plain_canonical_value(v, volatile, depth + 1, shell) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def plain_canonical_args(arguments: Any, volatile: Collection[str], shell: bool) -> str:
    if isinstance(arguments, str):
        return canonical_string(arguments.strip(), shell=shell)
    value = plain_canonical_value(arguments, volatile, 0, shell)
    try:
        options = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
        return orjson.dumps(value, option=options, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


class Label(str):
    """A str subclass (a value an SDK may pass through): the general path handles it."""


ARG_KEYS = st.sampled_from(
    ["path", "Path", "limit", "command", "CMD", "query", "url", "request_id", "Request_ID", "nonce", "x"]
) | st.integers(-3, 3)
ARG_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "src/app.py",
        "./src/",
        "ls -la /tmp",
        "ls -l -a /tmp",
        "grep -rn 'a b' .",
        "https://Example.com/a/?utm_source=x&b=2#frag",
        "2024-05-01",
        "05/01/2024",
        "May 1, 2024",
        "20240501",
        "v2 build 1234",
        "caf\u00e9 \u0663\u0664\u0665\u0666",
        "\u0661\u0662\u0663\u0664",
    ]
) | st.text(max_size=12)
ARG_SCALARS = (
    ARG_STRINGS
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
    | ARG_STRINGS.map(Label)
)
ARG_VALUES = st.recursive(
    ARG_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ARG_KEYS, inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=600, deadline=None)
@given(
    st.dictionaries(ARG_KEYS, ARG_VALUES, max_size=5) | st.dictionaries(ARG_KEYS, ARG_SCALARS, max_size=4),
    st.booleans(),
    st.sampled_from(["usual", "x"]),
)
@example({"command": "ls -l -a /tmp", "path": "./src/"}, False, "usual")
@example({"path": "src/a.py", "limit": 50}, False, "usual")
@example({"request_id": "r1", "q": "x"}, False, "usual")
@example({"n": 2**65}, False, "usual")
def test_flat_arguments_fast_path_is_exact(arguments: dict[Any, Any], shell: bool, volatile: str) -> None:
    names = call_identity.DEFAULT_VOLATILE_ARGS | ({"x"} if volatile == "x" else set())
    fast = call_identity.canonical_args(arguments, names, shell=shell)
    assert fast == plain_canonical_args(arguments, names, shell)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_four_digit_gate_is_exact(text: str) -> None:
    assert arguments_module._has_four_digits(text) == (arguments_module._FOUR_DIGITS.search(text) is not None)


@settings(max_examples=600, deadline=None)
@given(FIGURE_TEXT)
@example("the pid: ")
@example("x #\t")
@example("(attempt)")
def test_label_gate_is_necessary(window: str) -> None:
    if window.isascii() and not figures._may_be_labelled(window):
        assert figures._VOLATILE_LABEL.search(window + "7", 0, len(window)) is None


def test_many_digit_runs_scan() -> None:
    # More digit runs than the anchor bound: the number patterns scan; the same numbers.
    table = " ".join(f"row {i}: {i * 7} items, 3/{i + 3} done" for i in range(60))
    assert result_numbers(table) == plain_result_numbers(table)
    assert progress_value(table + " 45%") == plain_progress_value(table + " 45%")


@settings(max_examples=500, deadline=None)
@given(FIGURE_TEXT)
def test_digit_starts_are_where_digit_runs_start(text: str) -> None:
    starts = figures._digit_starts(text)
    if starts is not None:
        assert starts == [m.start() for m in re.finditer(r"(?<!\d)\d", text)]


# -- shell commands: words without shlex when nothing needs quoting -----------------------

#: Characters where a plain split and shlex could part: its blanks, other Unicode spaces
#: (not blanks to shlex), operator characters, the word characters it adds in punctuation
#: mode, and the quoting characters that must send a command to shlex.
SHELL_TEXT = st.text(
    alphabet=st.sampled_from(list("ab-./~*?=_1 \t\r\n\u00a0\u2003();<>|&'\"\\#ßé")), max_size=60
)


@settings(max_examples=1500, deadline=None)
@given(SHELL_TEXT)
@example("ls -la /tmp|grep  x&&echo ok;(cd a)>b")
@example("echo a#b")
@example("a\u00a0b\u2003c")
def test_shell_segments_split_like_shlex(command: str) -> None:
    try:
        expected = arguments_module._shlex_words(command)
    except ValueError:
        expected = None
    segments = arguments_module._shell_segments(command)
    if expected is None:
        assert segments is None
        return
    assert segments is not None
    assert [word for segment in segments for word in segment] == expected
