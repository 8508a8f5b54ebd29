"""The trace buffer's promises, with exact times (the core reads no clock).

Spans are plain strings here: the buffer treats them as opaque objects.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.grouping import BufferLimits, Release, ReleaseReason, TraceBuffer

GRACE = 0.5
IDLE = 10.0
MAX_AGE = 100.0


def make(**limits: float) -> TraceBuffer[str]:
    values = {"grace": GRACE, "idle": IDLE, "max_age": MAX_AGE, **limits}
    return TraceBuffer(BufferLimits(**values))  # type: ignore[arg-type]


def released(buffer: TraceBuffer[str]) -> list[Release[str]]:
    releases, late = buffer.take()
    assert late == []
    return releases


def run_trace(buffer: TraceBuffer[str], key: str, *, children: int = 1, now: float = 0.0) -> float:
    """A root with ``children`` children, all ended by ``now``; returns the root's end time."""
    buffer.start(key, True, now)
    for i in range(children):
        buffer.start(key, False, now)
        buffer.end(key, False, f"{key}.child{i}", now)
    buffer.end(key, True, f"{key}.root", now)
    return now


# -- completion ----------------------------------------------------------------------------


def test_trace_is_released_grace_after_its_root_ends_with_nothing_open() -> None:
    buffer = make()
    run_trace(buffer, "t", children=2, now=1.0)
    buffer.expire(1.0 + GRACE - 0.001)
    assert released(buffer) == []
    buffer.expire(1.0 + GRACE)
    (release,) = released(buffer)
    assert release.reason is ReleaseReason.COMPLETE
    assert release.spans == ["t.child0", "t.child1", "t.root"]
    assert not release.partial
    assert buffer.held_spans == 0 and buffer.held_traces == 0


def test_an_open_span_holds_the_trace_after_its_root_ended() -> None:
    buffer = make()
    buffer.start("t", True, 0.0)
    buffer.start("t", False, 0.0)
    buffer.end("t", True, "root", 1.0)
    buffer.expire(5.0)
    assert released(buffer) == []
    buffer.end("t", False, "child", 5.0)
    buffer.expire(5.0 + GRACE - 0.001)
    assert released(buffer) == []
    buffer.expire(5.0 + GRACE)
    (release,) = released(buffer)
    assert release.spans == ["root", "child"] and not release.partial


def test_nothing_open_but_root_not_ended_is_not_complete() -> None:
    buffer = make()
    buffer.start("t", False, 0.0)  # a child whose parent this buffer never saw start
    buffer.end("t", False, "child", 0.0)
    buffer.expire(IDLE - 0.001)
    assert released(buffer) == []


def test_a_span_with_a_remote_parent_is_a_local_root() -> None:
    buffer = make()
    buffer.start("t", True, 0.0)  # the caller decides: remote parent => local_root=True
    buffer.end("t", True, "server", 0.0)
    buffer.expire(GRACE)
    (release,) = released(buffer)
    assert release.reason is ReleaseReason.COMPLETE and release.root_ended


def test_a_span_starting_during_grace_cancels_the_release() -> None:
    buffer = make()
    run_trace(buffer, "t", now=0.0)
    buffer.start("t", False, 0.2)
    buffer.expire(GRACE + 1)
    assert released(buffer) == []
    buffer.end("t", False, "background", 3.0)
    buffer.expire(3.0 + GRACE)
    (release,) = released(buffer)
    assert release.spans[-1] == "background" and not release.partial


def test_a_straggler_ending_during_grace_rearms_it() -> None:
    buffer = make()
    run_trace(buffer, "t", now=0.0)
    buffer.end("t", False, "straggler", 0.4)  # never seen starting
    buffer.expire(GRACE)
    assert released(buffer) == []
    buffer.expire(0.4 + GRACE)
    (release,) = released(buffer)
    assert "straggler" in release.spans


# -- traces that never finish ----------------------------------------------------------------


def test_idle_trace_is_released_as_partial_at_the_idle_deadline_not_before() -> None:
    buffer = make()
    buffer.start("t", True, 0.0)
    buffer.start("t", False, 1.0)
    buffer.end("t", False, "child", 2.0)
    buffer.expire(2.0 + IDLE - 0.001)
    assert released(buffer) == []
    buffer.expire(2.0 + IDLE)
    (release,) = released(buffer)
    assert release.reason is ReleaseReason.IDLE and release.partial
    assert release.open_spans == 1
    assert buffer.counts["idle"] == 1


def test_busy_trace_is_released_at_max_age_not_before() -> None:
    buffer = make(idle=1000.0)
    buffer.start("t", True, 0.0)
    for i in range(10):
        buffer.start("t", False, i * 10.0)
        buffer.end("t", False, f"c{i}", i * 10.0 + 1)
    buffer.expire(MAX_AGE - 0.001)
    assert released(buffer) == []
    buffer.expire(MAX_AGE)
    (release,) = released(buffer)
    assert release.reason is ReleaseReason.MAX_AGE and release.partial and len(release.spans) == 10


# -- bounds ----------------------------------------------------------------------------------


def test_max_traces_is_held_and_one_more_releases_the_oldest() -> None:
    buffer = make(max_traces=2)
    buffer.start("a", True, 0.0)
    buffer.end("a", False, "a1", 0.0)
    buffer.start("b", True, 1.0)
    assert released(buffer) == []  # exactly at the bound: nothing released
    buffer.start("c", True, 2.0)
    (release,) = released(buffer)
    assert release.trace_key == "a" and release.reason is ReleaseReason.OVERFLOW and release.partial
    assert buffer.held_traces == 2 and buffer.counts["overflow"] == 1


def test_overflow_releases_a_complete_trace_in_grace_before_the_oldest_open_one() -> None:
    buffer = make(max_traces=2)
    buffer.start("open", True, 0.0)
    buffer.end("open", False, "o1", 0.0)
    run_trace(buffer, "done", now=1.0)
    buffer.start("new", True, 1.1)
    (release,) = released(buffer)
    assert release.trace_key == "done" and release.reason is ReleaseReason.COMPLETE and not release.partial
    assert buffer.counts["grace_cut"] == 1 and buffer.counts["overflow"] == 0


def test_max_spans_bounds_the_spans_held_across_traces() -> None:
    buffer = make(max_spans=4)
    buffer.start("a", True, 0.0)
    for i in range(3):
        buffer.end("a", False, f"a{i}", 0.0)
    buffer.start("b", True, 1.0)
    buffer.end("b", False, "b0", 1.0)
    assert buffer.held_spans == 4 and released(buffer) == []  # at the bound
    buffer.end("b", False, "b1", 1.0)
    (release,) = released(buffer)
    assert release.trace_key == "a" and release.reason is ReleaseReason.OVERFLOW
    assert buffer.held_spans == 2


def test_a_trace_reaching_the_span_limit_is_released_in_chunks_and_keeps_grouping() -> None:
    buffer = make(max_spans_per_trace=3)
    buffer.start("t", True, 0.0)
    for i in range(2):
        buffer.end("t", False, f"s{i}", 0.0)
    assert released(buffer) == []  # one below the limit
    buffer.end("t", False, "s2", 0.0)
    (chunk,) = released(buffer)
    assert chunk.reason is ReleaseReason.SPAN_LIMIT and not chunk.final and chunk.partial
    assert chunk.spans == ["s0", "s1", "s2"]
    buffer.end("t", False, "s3", 0.0)
    buffer.end("t", True, "root", 0.0)
    buffer.expire(GRACE)
    (last,) = released(buffer)
    assert last.reason is ReleaseReason.COMPLETE and last.final and last.chunk == 1 and last.partial
    assert last.spans == ["s3", "root"]


# -- late spans ------------------------------------------------------------------------------


def test_a_span_ending_after_its_trace_was_released_is_late_and_handed_out_once() -> None:
    buffer = make()
    buffer.start("t", True, 0.0)
    buffer.start("t", False, 0.0)
    buffer.end("t", True, "root", 0.0)
    buffer.expire(IDLE)
    assert len(released(buffer)) == 1
    buffer.end("t", False, "late", 11.0)
    releases, late = buffer.take()
    assert releases == [] and late == ["late"]
    assert buffer.take() == ([], [])
    assert buffer.counts["late"] == 1 and buffer.held_traces == 0


def test_a_child_starting_in_a_released_trace_ends_late() -> None:
    buffer = make()
    run_trace(buffer, "t")
    buffer.expire(GRACE)
    released(buffer)
    buffer.start("t", False, 1.0)
    buffer.end("t", False, "afterwards", 1.0)
    assert buffer.take() == ([], ["afterwards"])


def test_a_new_local_root_in_a_released_trace_opens_a_new_segment() -> None:
    buffer = make()
    run_trace(buffer, "t")
    buffer.expire(GRACE)
    released(buffer)
    run_trace(buffer, "t", now=5.0)
    buffer.expire(5.0 + GRACE)
    (segment,) = released(buffer)
    assert segment.spans == ["t.child0", "t.root"] and not segment.partial
    assert buffer.counts["segments"] == 1


def test_a_span_of_a_forgotten_trace_is_grouped_again_never_lost() -> None:
    buffer = make(recent=1)
    run_trace(buffer, "a")
    run_trace(buffer, "b")
    buffer.expire(GRACE)
    assert len(released(buffer)) == 2  # "a" is forgotten, "b" remembered
    buffer.end("a", False, "a.late", 1.0)
    assert buffer.take() == ([], [])
    buffer.expire(1.0 + IDLE)
    (release,) = released(buffer)
    assert release.spans == ["a.late"] and release.partial


# -- draining --------------------------------------------------------------------------------


def test_release_all_releases_every_trace_complete_ones_as_complete() -> None:
    buffer = make()
    run_trace(buffer, "done")
    buffer.start("open", True, 0.0)
    buffer.end("open", False, "o1", 0.0)
    buffer.release_all(ReleaseReason.FLUSH)
    by_key = {r.trace_key: r for r in released(buffer)}
    assert by_key["done"].reason is ReleaseReason.COMPLETE
    assert by_key["open"].reason is ReleaseReason.FLUSH and by_key["open"].partial
    assert buffer.held_traces == 0 and buffer.held_spans == 0


def test_next_deadline_is_the_earliest_of_grace_idle_and_age() -> None:
    buffer = make()
    assert buffer.next_deadline() is None
    buffer.start("open", True, 0.0)
    assert buffer.next_deadline() == IDLE
    run_trace(buffer, "done", now=2.0)
    assert buffer.next_deadline() == 2.0 + GRACE


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError):
        BufferLimits(max_traces=0)
    with pytest.raises(ValueError):
        BufferLimits(idle=0)


# -- the invariant, under any interleaving ---------------------------------------------------

events = st.lists(
    st.tuples(
        st.sampled_from(["start", "end", "end_root", "tick"]),
        st.integers(0, 5),  # trace
        st.floats(0, 3),  # time step
    ),
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(
    events,
    st.integers(1, 4),
    st.integers(1, 6),
    st.integers(1, 12),
    st.integers(0, 3),
)
def test_every_ended_span_comes_out_exactly_once_within_the_bounds(
    script: list[tuple[str, int, float]], max_traces: int, per_trace: int, max_spans: int, recent: int
) -> None:
    buffer = make(
        grace=0.5,
        idle=4.0,
        max_age=9.0,
        max_traces=max_traces,
        max_spans_per_trace=per_trace,
        max_spans=max_spans,
        recent=recent,
    )
    now = 0.0
    ended: list[str] = []
    out: list[str] = []
    for n, (kind, trace, step) in enumerate(script):
        now += step
        key = f"t{trace}"
        if kind == "start":
            buffer.start(key, False, now)
        elif kind in ("end", "end_root"):
            span = f"{key}.{n}"
            ended.append(span)
            buffer.end(key, kind == "end_root", span, now)
        else:
            buffer.expire(now)
        assert buffer.held_traces <= max_traces
        assert buffer.held_spans <= max_spans
        releases, late = buffer.take()
        out.extend(late)
        for release in releases:
            assert len(release.spans) <= per_trace
            out.extend(release.spans)
    buffer.release_all(ReleaseReason.SHUTDOWN)
    releases, late = buffer.take()
    out.extend(late)
    for release in releases:
        out.extend(release.spans)
    assert sorted(out) == sorted(ended)
    assert buffer.held_spans == 0


def test_an_evicted_trace_gives_its_spans_and_is_neither_released_nor_remembered() -> None:
    buffer = make()
    buffer.end("t", False, "child", now=0.0)
    buffer.end("t", True, "root", now=1.0)  # complete: its grace runs
    assert buffer.evict("t") == ["child", "root"]
    assert buffer.evict("t") is None
    assert (buffer.held_traces, buffer.held_spans) == (0, 0)
    buffer.expire(100.0)
    assert released(buffer) == []  # the grace that ran releases nothing
    buffer.end("t", False, "later", now=101.0)  # not late: a new group
    buffer.release_all(ReleaseReason.FLUSH)
    assert [r.spans for r in released(buffer)] == [["later"]]
