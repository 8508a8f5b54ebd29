"""Shortcuts taken for speed give exactly what the plain code gives.

Each fast path here skips work when a cheap test proves the work would find nothing:
a substring test before a regular expression, lazy parsing of indexed message attributes.
Each test compares the fast function with the plain computation on generated input that
favours the cases where the shortcut could go wrong.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import normalize
from otel_semloop.detectors import text as text_detectors

# -- masking: gates before the identifier masks ----------------------------------------------


def plain_mask_ids(text: str) -> str:
    if text.count("-") >= 4:
        text = normalize._UUID.sub("<uuid>", text)
    if "-" in text:
        text = normalize._TIMESTAMP.sub("<ts>", text)
    text = normalize._HEX.sub(normalize._hex, text)
    text = normalize._IDENT.sub(normalize._ident, text)
    if "<" in text:
        text = normalize._JOINED_IDS.sub("<id>", text)
    return text


def plain_result_and_content(text: str) -> tuple[str, str]:
    if not normalize._HAS_DIGIT.search(text):
        folded = " ".join(text.casefold().split())
        return folded, folded
    ids = plain_mask_ids(text).casefold()
    marks = normalize._DIGITS.sub("#", ids).replace("<id>", "#")
    marks = normalize._JOINED_MARKS.sub("#", marks)
    return " ".join(marks.split()), " ".join(ids.split())


#: Pieces that sit on each gate's edge: ``0x`` before hex letters, hex runs of five and six,
#: digits next to letters or not, UUID and timestamp fragments, other scripts' digits
#: (Arabic-Indic, fullwidth), NUL, the blanks ``str.split`` knows.
MASK_PIECES = [
    "0", "7", "42", "0x", "0X", "ab", "cdef", "ABCDEF", "fade", "g", "xyz", "e0b0", "8f3k2",
    "0xcafeba", "a1", "1a", "Z9", "bb", "1",
    "-", "_", " ", "  ", "\n", "\x1c", "\x00", "2024-05-01", "T10:42:07Z", "1234", "5678",
    "9abc", "\u0663", "\uff11", "\u00e9", "req_", "#", "<", ">", ":", ".", "3eab", "<id>", "#-", "_#",
]  # fmt: skip
MASK_TEXT = st.lists(st.sampled_from(MASK_PIECES), max_size=24).map("".join)


@settings(max_examples=1500, deadline=None)
@given(MASK_TEXT)
@example("0xfdAFefa-x")  # masked for its prefix alone: no digit among the hex letters
@example("run abcde1 x")  # a hex run whose digit comes last
@example("id 1234\u0663a")  # the lookaheads cross another script's digit to a letter
def test_identifier_mask_gates_are_exact(text: str) -> None:
    assert normalize._mask_ids(text) == plain_mask_ids(text)
    assert normalize.normalize_result_and_content(text) == plain_result_and_content(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_masks_are_exact_on_any_text(text: str) -> None:
    assert normalize._mask_ids(text) == plain_mask_ids(text)
    assert normalize.normalize_result_and_content(text) == plain_result_and_content(text)


def test_hex_gate_finds_a_digit_anywhere_in_a_run_of_six() -> None:
    for length in (5, 6, 7):
        for at in range(length):
            run = "".join("7" if i == at else "c" for i in range(length))
            for text in (run, f"id {run} x", f"{run}-{run}"):
                assert normalize._mask_ids(text) == plain_mask_ids(text), text


# -- text: the unit bound before chanting ---------------------------------------------------

TEXT_PIECES = [
    "Checking", "the file", ".", "!", "?", " ", "  ", "\n", "\r\n", "\x0b", "\x85", "\u2028",
    "```", "    code", "- item", "| a | b |", "1.", "\u2026", "\u201cq\u201d", "caf\u00e9", "#", "<x>",
]  # fmt: skip


def plain_units(text: str) -> list[str]:
    """The units ``chant_units`` collects, by its own rules, without the bound."""
    units: list[str] = []
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or not stripped or line.startswith(("    ", "\t")):
            continue
        if text_detectors._LIST_ITEM.match(stripped) or stripped.startswith("|") or stripped.count("|") >= 2:
            continue
        units.extend(text_detectors._SENTENCE_END.split(stripped))
    return units


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(TEXT_PIECES), max_size=40).map("".join))
def test_unit_bound_is_an_upper_bound(text: str) -> None:
    assert text_detectors._most_units(text) >= len(plain_units(text))
    bounded = text_detectors.chant_units(text, 4, min_units=len(plain_units(text)))
    assert bounded == text_detectors.chant_units(text, 4, min_units=0)


# -- failure class: the first character before the error-result pattern -------------------


def test_error_result_gate_is_exact_over_every_code_point() -> None:
    import re
    import sys

    from otel_semloop.detectors import failure_class

    first = re.compile(r"[etf]", re.IGNORECASE)
    blank = re.compile(r"\s")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert bool(first.match(char)) == (char in failure_class._ERROR_FIRST), hex(code)
        # ``\s`` is what ``str.lstrip`` strips.
        assert bool(blank.match(char)) == ((char + "x").lstrip() == "x"), hex(code)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from([" ", "\t", "\n", "\u2003", "error", "Error", "ERROR", "fatal", "Traceback",
                         "exception", "e", "x", ":", "rror", "\u0130", "ok", "f", "t"]),
        max_size=8,
    ).map("".join)
)  # fmt: skip
def test_error_result_gate_agrees_with_the_pattern(text: str) -> None:
    from otel_semloop.detectors import failure_class
    from otel_semloop.model import Step, StepKind

    step = Step(StepKind.TOOL, "t", tool_result=text)
    expected = bool(text) and failure_class._ERROR_RESULT.match(text) is not None
    assert (failure_class.classify_failure(step, text) is not None) == expected
