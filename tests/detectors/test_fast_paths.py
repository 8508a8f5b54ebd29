"""Shortcuts taken for speed give exactly what the plain code gives.

Each fast path here skips work when a cheap test proves the work would find nothing:
a substring test before a regular expression, lazy parsing of indexed message attributes.
Each test compares the fast function with the plain computation on generated input that
favours the cases where the shortcut could go wrong.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import normalize
from otel_semloop.detectors.normalize import PROGRESS_TAIL_CHARS, remaining_counts


def plain_remaining_counts(text: str) -> tuple[int, ...] | None:
    tail = text[-PROGRESS_TAIL_CHARS:]
    counts = tuple(int(m.group(1) or m.group(2)) for m in normalize._REMAINING_COUNT.finditer(tail))
    if not counts or len(counts) > normalize.MAX_COUNTS:
        return None
    return counts


PIECES = [
    "12", "3", " ", "  ", "\t", "\n", ":", "=", "files", "pending", "PENDING", "Remaining", "left",
    "queued", "outstanding", "waiting", "to go", "TO\tGO", "todo", "unprocessed", "go", "to",
    "lef\u0442", "rema\u0131n\u0131ng", "outstand\u0131ng", "\u212a", "\u017f", "out\u017ftanding",
    "ok", "#", "-", "/", ".", "%", "jobs", "1234567",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_remaining_counts_shortcut_is_exact(text: str) -> None:
    assert remaining_counts(text) == plain_remaining_counts(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_remaining_counts_shortcut_is_exact_on_any_text(text: str) -> None:
    assert remaining_counts(text) == plain_remaining_counts(text)
