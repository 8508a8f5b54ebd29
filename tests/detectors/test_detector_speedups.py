"""The detectors' fast paths compute exactly what the plain computation does.

Each speed-up inside a detector (a bound checked in C before the work, a scan that rejects
the usual case, a cached cleaning) is compared here with a plain reference written the
slow, obvious way, on generated inputs that reach the edge cases (every line break
``str.splitlines`` knows, other scripts, repeats at every period).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import text as text_detectors
from otel_semloop.detectors.cycles import CycleTracker

#: Every character that ends a line for ``str.splitlines`` or a sentence, plus letters,
#: blanks, a non-ASCII letter and ideographs.
_MARKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029.!?"
_TEXT = st.text(alphabet=st.sampled_from(list(_MARKS + "ab \tC\u00e9\u4e0a\u8f6e")), max_size=80)


def _units_bound(text: str) -> int:
    """The unit bound counted the plain way: one, plus every line break and sentence end."""
    lines = 1
    for brk in ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
        lines += text.count(brk)
    return lines + text.count(".") + text.count("!") + text.count("?")


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.integers(min_value=1, max_value=30))
def test_most_units_counts_every_mark_and_stops_only_past_enough(text: str, enough: int) -> None:
    bound = _units_bound(text)
    assert text_detectors._most_units(text) == bound
    assert (text_detectors._most_units(text, enough) >= enough) == (bound >= enough)


def test_most_units_counts_past_the_one_by_one_finds() -> None:
    for count in range(0, 3 * text_detectors._FIND_EACH):
        text = "x." * count + "\n" * count
        assert text_detectors._most_units(text) == 1 + 2 * count
        assert text_detectors._most_units(text, 2 * count + 1) == 1 + 2 * count  # stops on reaching it
        assert text_detectors._most_units(text, 2 * count + 2) == 1 + 2 * count  # never reaches it


def _degenerate_run_plain(text: str, min_chars: int) -> tuple[str, int] | None:
    """``degenerate_run`` on a sliced copy of the sample (the obvious way)."""
    size = len(text)
    if size < min_chars:
        return None
    middle = text[size // 4 : size - size // 4]
    if len(middle) > text_detectors.RUN_SAMPLE_CHARS:
        start = (len(middle) - text_detectors.RUN_SAMPLE_CHARS) // 2
        middle = middle[start : start + text_detectors.RUN_SAMPLE_CHARS]
    head_chars = 8
    if len(middle) < 2 * head_chars:
        return None
    head = middle[:head_chars]
    limit = text_detectors.RUN_UNIT_CHARS + head_chars
    period = middle.find(head, 1, limit)
    while period != -1 and middle[period:] != middle[:-period]:
        period = middle.find(head, period + 1, limit)
    if period == -1:
        return None
    unit = middle[:period]
    if "\n" in unit or not any(c.isalpha() for c in unit):
        return None
    count = text.count(unit)
    if count * len(unit) < text_detectors.SHORT_CHANT_SHARE * len(text.strip()):
        return None
    return unit, count


_TOKENS = st.sampled_from(
    ["court", "the ", "\u4e0a\u4e00\u8f6e", "ab", "x", " ", "-", "\n", "Checking. ", "0"]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_TOKENS, max_size=8),
    st.lists(_TOKENS, min_size=1, max_size=4),
    st.integers(min_value=0, max_value=700),
    st.lists(_TOKENS, max_size=8),
    st.sampled_from([0, 20, 120]),
)
def test_degenerate_run_matches_the_sliced_computation(
    before: list[str], unit: list[str], repeats: int, after: list[str], min_chars: int
) -> None:
    text = "".join(before) + "".join(unit) * repeats + "".join(after)
    assert text_detectors.degenerate_run(text, min_chars) == _degenerate_run_plain(text, min_chars)


def test_degenerate_run_looks_for_the_period_inside_the_sample_only() -> None:
    # The head repeats right at the sample's end, continued past it: not a period.
    text = "baaaabaaaaabababbaaaaaabababbaaa"
    assert text_detectors.degenerate_run(text, 0) is None
    assert _degenerate_run_plain(text, 0) is None


def _tail_periods(items: list[int], max_period: int) -> list[tuple[int, int]]:
    """The primitive periods repeating at least twice at the tail of ``items``, plainly."""
    match = {}
    for period in range(1, max_period + 1):
        count = 0
        while count + period < len(items) and items[-1 - count] == items[-1 - count - period]:
            count += 1
        match[period] = count
    found = []
    for period in range(1, max_period + 1):
        tail = match[period] + period
        if match[period] < period:
            continue
        if any(match[d] + d >= tail for d in range(1, period) if period % d == 0):
            continue
        found.append((period, tail))
    return found


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=6),
    st.lists(st.integers(min_value=0, max_value=3), max_size=60),
    st.lists(st.integers(min_value=0, max_value=3), max_size=20),
)
def test_cycle_tracker_reports_the_tail_periods_of_the_whole_stream(
    max_period: int, items: list[int], next_run: list[int]
) -> None:
    tracker = CycleTracker(max_period)
    # Two runs on one tracker: a reset (which empties it in place) forgets the first.
    for stream in (items, next_run):
        tracker.reset()
        for end in range(1, len(stream) + 1):
            assert tracker.push(stream[end - 1]) == _tail_periods(stream[:end], max_period)


def test_most_units_of_ascii_text_counts_each_rare_line_break() -> None:
    # ASCII text holding a rare line break (ruled out first in one expression) is counted
    # with every mark: one such character in a text of usual marks adds its unit.
    for brk in ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\n"):
        text = f"One. Two{brk}three? four!"
        assert text.isascii()
        assert text_detectors._most_units(text) == _units_bound(text) == 5
        assert text_detectors._most_units(text + brk * 3) == 8
        assert text_detectors._most_units(text, 4) >= 4
