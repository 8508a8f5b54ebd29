"""A degenerate run is found in the sample only, and the cycle tracker's periods are the
whole stream's, computed here the slow, obvious way."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import text as text_detectors
from otel_semloop.detectors.cycles import CycleTracker


def test_degenerate_run_looks_for_the_period_inside_the_sample_only() -> None:
    # The head repeats right at the sample's end, continued past it: not a period.
    text = "baaaabaaaaabababbaaaaaabababbaaa"
    assert text_detectors.degenerate_run(text, 0) is None


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
