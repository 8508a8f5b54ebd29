"""Group spans by trace until the trace is complete: a bounded buffer with visible eviction.

:class:`TraceBuffer` holds each trace's spans until the whole trace can be scored, never
holds too much and never loses a span. It knows nothing about the SDK or OTLP (callers
pass a hashable trace key, whether the span is a local root, an opaque span and the
time), reads no clock, starts no thread and takes no lock: the caller decides the
threading.

Completion rule
    A trace is *complete* when a local root has ended (a span without a parent, or whose
    parent is remote) and no span of it is open. It is released ``grace`` seconds later so
    that stragglers join it; a start within the grace period cancels the release, an end
    re-arms it. Agent traces run for minutes, so a fixed wait from the first span (as
    groupbytrace does) would cut most of them.

Traces that never finish
    ``idle`` (no span started or ended for that long) and ``max_age`` (that long since the
    first span) release the trace as partial.

Bounds (each release is counted by reason in :attr:`TraceBuffer.counts`)
    ``max_traces`` and ``max_spans`` in all: on overflow a trace whose grace is running
    goes first (``grace_cut``), else the oldest (``overflow``). ``max_spans_per_trace``:
    the held spans leave as a partial chunk (``span_limit``) and grouping goes on, so a
    huge trace costs bounded memory and every span is still forwarded once.

Late spans
    Released trace keys are remembered (up to ``recent``). A span ending in a remembered
    trace is *late*: handed out on its own, to be forwarded marked. A new local root
    starting in one opens a new group (a second request of a distributed trace). A span
    of a forgotten trace opens a new group, released later as partial.

Log events
    :class:`HeldLogs` keeps a trace's GenAI log events until its release takes them:
    bounded by a count, oldest dropped and counted.

Cost: O(1) per :meth:`TraceBuffer.start` and :meth:`TraceBuffer.end` (amortised);
:meth:`TraceBuffer.expire` is O(1) plus O(k) for the k traces it releases.
"""

from __future__ import annotations

import enum
from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

S = TypeVar("S")
E = TypeVar("E")


class ReleaseReason(str, enum.Enum):
    """Why a trace (or a chunk of it) left the buffer. Every reason but ``complete`` is
    an early release, counted and marked on the trace."""

    COMPLETE = "complete"
    IDLE = "idle"
    MAX_AGE = "max_age"
    OVERFLOW = "overflow"
    SPAN_LIMIT = "span_limit"
    FLUSH = "flush"
    SHUTDOWN = "shutdown"

    @property
    def early(self) -> bool:
        return self is not ReleaseReason.COMPLETE


@dataclass(slots=True, eq=False)
class Release(Generic[S]):
    """Spans of one trace handed out together, with what is known about the trace.

    ``final`` is False for a ``span_limit`` chunk (more of the trace will follow).
    ``chunk`` counts the chunks released before this one. ``open_spans`` is how many spans
    of the trace were still open: they will arrive later as late spans.
    """

    trace_key: Hashable
    spans: list[S]
    reason: ReleaseReason
    open_spans: int = 0
    root_ended: bool = False
    final: bool = True
    chunk: int = 0
    first_seen: float = 0.0
    #: Log events of the trace to put on its spans before scoring
    #: (:class:`~otel_semloop.conventions.LogEvent`; the span processor's GenAI log records).
    logs: tuple = ()

    @property
    def partial(self) -> bool:
        """True when these spans are not the whole trace (scored as partial)."""
        return not self.final or self.chunk > 0 or self.open_spans > 0 or not self.root_ended


@dataclass(frozen=True, slots=True)
class BufferLimits:
    """Deadlines (seconds) and bounds of a :class:`TraceBuffer`; see the module docstring."""

    grace: float = 0.5
    idle: float = 120.0
    max_age: float = 1800.0
    max_traces: int = 10_000
    max_spans_per_trace: int = 10_000
    max_spans: int = 100_000
    recent: int = 16_384

    def __post_init__(self) -> None:
        if self.grace < 0 or self.idle <= 0 or self.max_age <= 0:
            raise ValueError("grace must be >= 0, idle and max_age > 0")
        if min(self.max_traces, self.max_spans_per_trace, self.max_spans) < 1 or self.recent < 0:
            raise ValueError("max_traces, max_spans_per_trace and max_spans must be >= 1, recent >= 0")


@dataclass(slots=True, eq=False)
class _Group:
    """One trace being grouped. ``ready_at`` is set while the grace period runs."""

    key: Hashable
    first_seen: float
    last_seen: float
    spans: list = field(default_factory=list)
    open: int = 0
    root_ended: bool = False
    ready_at: float | None = None
    chunk: int = 0


class TraceBuffer(Generic[S]):
    """Holds spans per trace until complete; see the module docstring for the rules.

    Not thread-safe: callers serialise access (one lock around every call). Releases and
    late spans accumulate until :meth:`take` empties them; nothing is ever
    dropped, so the caller must call :meth:`take` regularly.
    """

    def __init__(self, limits: BufferLimits | None = None) -> None:
        self.limits = limits or BufferLimits()
        # Insertion order = creation order: the oldest trace (max_age, overflow) is first.
        self._groups: OrderedDict[Hashable, _Group] = OrderedDict()
        # Least recently active first (idle timeout).
        self._activity: OrderedDict[Hashable, _Group] = OrderedDict()
        # Traces whose grace period runs, earliest deadline first (grace is constant and a
        # re-armed trace moves to the end).
        self._ready: OrderedDict[Hashable, _Group] = OrderedDict()
        self._recent: OrderedDict[Hashable, None] = OrderedDict()
        # What take() hands out next.
        self._releases: list[Release[S]] = []
        self._late: list[S] = []
        self.held_spans = 0
        #: Releases by reason value, plus ``late`` (late spans), ``grace_cut`` (complete
        #: traces released before their grace ended to make room) and ``segments``
        #: (groups opened by a new local root in an already released trace).
        self.counts: dict[str, int] = dict.fromkeys(
            [*(r.value for r in ReleaseReason), "late", "grace_cut", "segments"], 0
        )

    # -- span events (the application's threads) ---------------------------------------

    def start(self, trace_key: Hashable, local_root: bool, now: float) -> None:
        """A span of ``trace_key`` started. A child span starting in an already released
        trace is not tracked: it will end as a late span."""
        group = self._groups.get(trace_key)
        if group is None:
            if trace_key in self._recent:
                if not local_root:
                    return
                del self._recent[trace_key]
                self.counts["segments"] += 1
            group = self._new_group(trace_key, now)
        group.open += 1
        group.last_seen = now
        self._activity.move_to_end(trace_key)
        if group.ready_at is not None:
            group.ready_at = None
            del self._ready[trace_key]

    def end(self, trace_key: Hashable, local_root: bool, span: S, now: float) -> None:
        """A span of ``trace_key`` ended: hold it, or hand it out as late."""
        group = self._groups.get(trace_key)
        if group is None:
            if trace_key in self._recent:
                self._late.append(span)
                self.counts["late"] += 1
                return
            # Never seen starting (the processor was added mid-trace, or the trace was
            # forgotten): group it anyway, it leaves by completion or idle timeout.
            group = self._new_group(trace_key, now)
        group.spans.append(span)
        self.held_spans += 1
        if group.open > 0:
            group.open -= 1
        if local_root:
            group.root_ended = True
        group.last_seen = now
        self._activity.move_to_end(trace_key)
        if group.open == 0 and group.root_ended:
            group.ready_at = now + self.limits.grace
            self._ready[trace_key] = group
            self._ready.move_to_end(trace_key)
        if len(group.spans) >= self.limits.max_spans_per_trace:
            self._release_chunk(group)
        while self.held_spans > self.limits.max_spans and self._groups:
            self._make_room()

    # -- time and draining (the worker) ------------------------------------------------

    def expire(self, now: float) -> None:
        """Release every trace whose grace, idle or age deadline is at or before ``now``."""
        ready = self._ready
        while ready:
            group = next(iter(ready.values()))
            if group.ready_at is None or group.ready_at > now:
                break
            self._release(group, ReleaseReason.COMPLETE)
        idle = self.limits.idle
        activity = self._activity
        while activity:
            group = next(iter(activity.values()))
            if group.last_seen + idle > now:
                break
            self._release(group, ReleaseReason.IDLE)
        max_age = self.limits.max_age
        groups = self._groups
        while groups:
            group = next(iter(groups.values()))
            if group.first_seen + max_age > now:
                break
            self._release(group, ReleaseReason.MAX_AGE)

    def release_all(self, reason: ReleaseReason) -> None:
        """Release every held trace (flush, shutdown). Complete traces in their grace
        period are released as complete: only the wait is cut."""
        while self._ready:
            self._release(next(iter(self._ready.values())), ReleaseReason.COMPLETE)
        while self._groups:
            self._release(next(iter(self._groups.values())), reason)

    def take(self) -> tuple[list[Release[S]], list[S]]:
        """The releases and the late spans since the last call."""
        releases, late = self._releases, self._late
        self._releases, self._late = [], []
        return releases, late

    def evict(self, trace_key: Hashable) -> list[S] | None:
        """Take a held trace's spans out without releasing it (None when it is not held):
        the caller keeps them elsewhere (rescore spills them to disk) and routes the
        trace's later spans there too, so its key is not remembered as released."""
        group = self._groups.pop(trace_key, None)
        if group is None:
            return None
        del self._activity[trace_key]
        if group.ready_at is not None:
            del self._ready[trace_key]
        self.held_spans -= len(group.spans)
        return group.spans

    def clear(self) -> None:
        """Forget everything without releasing (a forked child must not re-export what
        its parent holds)."""
        self._groups.clear()
        self._activity.clear()
        self._ready.clear()
        self._recent.clear()
        self._releases, self._late = [], []
        self.held_spans = 0

    # -- introspection -----------------------------------------------------------------

    @property
    def held_traces(self) -> int:
        return len(self._groups)

    def released(self, trace_key: Hashable) -> bool:
        """Whether ``trace_key`` was released and is still remembered (a span of it now
        would be late)."""
        return trace_key in self._recent

    def next_deadline(self) -> float | None:
        """The earliest time :meth:`expire` would release something, if any."""
        candidates = []
        if self._ready:
            ready_at = next(iter(self._ready.values())).ready_at
            if ready_at is not None:
                candidates.append(ready_at)
        if self._activity:
            candidates.append(next(iter(self._activity.values())).last_seen + self.limits.idle)
        if self._groups:
            candidates.append(next(iter(self._groups.values())).first_seen + self.limits.max_age)
        return min(candidates) if candidates else None

    # -- internals ---------------------------------------------------------------------

    def _new_group(self, trace_key: Hashable, now: float) -> _Group:
        if len(self._groups) >= self.limits.max_traces:
            self._make_room()
        group = _Group(trace_key, now, now)
        self._groups[trace_key] = group
        self._activity[trace_key] = group
        return group

    def _make_room(self) -> None:
        """Release one trace: a complete one whose grace runs, else the oldest."""
        if self._ready:
            self._release(next(iter(self._ready.values())), ReleaseReason.COMPLETE)
            self.counts["grace_cut"] += 1
        elif self._groups:
            self._release(next(iter(self._groups.values())), ReleaseReason.OVERFLOW)

    def _release_chunk(self, group: _Group) -> None:
        spans = group.spans
        group.spans = []
        self.held_spans -= len(spans)
        self._hand_out(group, spans, ReleaseReason.SPAN_LIMIT, final=False)
        group.chunk += 1
        self.counts[ReleaseReason.SPAN_LIMIT.value] += 1

    def _release(self, group: _Group, reason: ReleaseReason) -> None:
        key = group.key
        del self._groups[key]
        del self._activity[key]
        if group.ready_at is not None:
            del self._ready[key]
            group.ready_at = None
        self.held_spans -= len(group.spans)
        self.counts[reason.value] += 1
        if self.limits.recent:
            self._recent[key] = None
            if len(self._recent) > self.limits.recent:
                self._recent.popitem(last=False)
        if group.spans:
            self._hand_out(group, group.spans, reason, final=True)

    def _hand_out(self, group: _Group, spans: list, reason: ReleaseReason, final: bool) -> None:
        self._releases.append(
            Release(
                group.key,
                spans,
                reason,
                open_spans=group.open,
                root_ended=group.root_ended,
                final=final,
                chunk=group.chunk,
                first_seen=group.first_seen,
            )
        )


class HeldLogs(Generic[E]):
    """Log events by trace key, at most ``cap`` in all; the oldest trace's oldest event is
    dropped first (traces in the order their first event came). Not thread-safe: the span
    processor calls it under its one lock, the service from its loop."""

    __slots__ = ("_by_trace", "cap", "dropped", "held")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._by_trace: OrderedDict[Hashable, deque[E]] = OrderedDict()
        self.held = 0
        self.dropped = 0

    def add(self, trace_key: Hashable, event: E) -> None:
        events = self._by_trace.get(trace_key)
        if events is None:
            events = self._by_trace[trace_key] = deque()
        events.append(event)
        self.held += 1
        if self.held > self.cap:
            oldest_key, oldest = next(iter(self._by_trace.items()))
            oldest.popleft()
            if not oldest:
                del self._by_trace[oldest_key]
            self.held -= 1
            self.dropped += 1

    def take(self, trace_key: Hashable, final: bool = True) -> tuple[E, ...]:
        """The events of ``trace_key``; a final release takes them away, a chunk of a big
        trace (more spans to come) leaves them for the next chunk."""
        if final:
            events = self._by_trace.pop(trace_key, None)
            if events is None:
                return ()
            self.held -= len(events)
        else:
            events = self._by_trace.get(trace_key)
            if events is None:
                return ()
        return tuple(events)

    def clear(self) -> None:
        self._by_trace.clear()
        self.held = 0
