"""The service's core glue: received protobuf spans -> :class:`~otel_semloop.grouping.TraceBuffer`
-> scoring off the receive path under a time budget -> write-back -> the export queue.

Everything here runs on the service's one asyncio loop (the gRPC and HTTP receivers, the
tick, the pool's bookkeeping), so the buffer needs no lock. Only scoring runs on the
pool's threads: a thread reads the held spans, and writes patches only once it won its
release (a thread past its budget never writes to a span that has already left).

Span identity and provenance
    Each received span is held as a :class:`Held`: its own copy of the protobuf ``Span``
    (patched in place) plus envelopes holding only the Resource and InstrumentationScope
    it arrived with (and their schema URLs), so it is exported with them. A held span
    keeps nothing of its request alive: a few spans waiting for their root cannot pin the
    megabytes of the requests they came in. ``cost`` is the span's share of its request's
    bytes (counted against ``memory_limit_bytes`` until forwarded) and ``ticket`` the
    durable-queue record it belongs to. Every span enters the buffer once and leaves it
    once (a release or a late span), and is put in the export queue once.

Completion
    The service only sees ended spans, so each one is a :meth:`TraceBuffer.end` without a
    start: a trace is complete once its root (no parent, or a remote parent) arrived, and
    released ``grace`` seconds after its last span. ``idle`` releases a trace whose root
    never comes, ``max_age`` any trace; overflow releases the oldest. Early releases are
    scored as partial and say why (``semloop.release.reason``). Spans of a released trace
    are forwarded at once with ``semloop.late=true``.

Scoring
    Releases go to the :class:`~otel_semloop.pool.ScoringPool` shared with the span
    processor (its budget, stuck-thread cap, staged verdicts and drain rules are the
    pool's; see :mod:`otel_semloop.pool`). Spans are read there through
    :data:`PROTO_SPANS`; a scoring thread that wins its release applies the patches in
    place (nobody else holds those spans any more) and hands the outcome back to the
    loop, which puts it in the export queue. Non-agent traces are recognised from a few
    attribute keys on the loop, without decoding, and forwarded untouched. With
    ``scoring_processes`` the pool's threads hand each release to a worker process
    (:mod:`otel_semloop.service.processes`), so scoring uses the other cores and the
    loop keeps the GIL for receiving. :attr:`Pipeline.load` measures how far scoring
    is behind (:mod:`otel_semloop.service.admission`), for the receivers' backpressure.

Size: the span holder, the request copy that fills it and the loop's side of grouping
and scoring are one path with one invariant (every span in once, out once); the
admission arithmetic and the worker processes live in their own modules.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.conventions import step_kind
from otel_semloop.evaluation import EvaluationPublisher
from otel_semloop.grouping import ReleaseReason, TraceBuffer
from otel_semloop.model import SpanRecord, StepKind
from otel_semloop.otlp import apply_patch_proto, record_from_proto_span
from otel_semloop.pool import ScoringPool
from otel_semloop.release import Outcome, SpanLinks
from otel_semloop.scoring import Scorer
from otel_semloop.service.admission import ScoringLoad
from otel_semloop.service.config import ServiceConfig
from otel_semloop.service.processes import ScoringProcesses
from otel_semloop.service.scoring_worker import loop_summary
from otel_semloop.telemetry import SelfTelemetry, count_forwarded, get_logger
from otel_semloop.writeback import SpanPatch

__all__ = ["PROTO_SPANS", "Held", "Pipeline", "ProtoSpans"]

_logger = get_logger("otel_semloop.service")

_FLAGS_HAS_IS_REMOTE = 0x100
_FLAGS_IS_REMOTE = 0x200
_ZERO_TRACE_ID = bytes(16)
_LATE_PATCH = SpanPatch(attributes={"semloop.late": True})
#: The attributes :func:`~otel_semloop.conventions.step_kind` reads to classify a span.
_KIND_KEYS = frozenset(
    {
        "confident.span.type",
        "openinference.span.kind",
        "traceloop.span.kind",
        "gen_ai.operation.name",
        "llm.request.type",
    }
)


class Held:
    """One received span and the envelope it came in (kept for its Resource and Scope).

    The span is kept as its protobuf wire bytes (``wire``: a few hundred bytes less than a
    decoded message, and shipped to a scoring process or into an export request as they
    are) until something changes it: :attr:`span` decodes it once and from then on the
    message is the span. :meth:`view` reads it without keeping the decoded copy. ``key``
    is ``trace_id + span_id`` when the durable queue needs it (else empty)."""

    __slots__ = ("_span", "cost", "key", "resource_spans", "scope_spans", "ticket", "wire")

    def __init__(
        self,
        span: Any,
        resource_spans: Any,
        scope_spans: Any,
        cost: int = 0,
        ticket: int = 0,
        key: bytes = b"",
    ) -> None:
        if isinstance(span, bytes):
            self.wire: bytes | None = span
            self._span: Any = None
        else:
            self.wire, self._span = None, span
        self.resource_spans = resource_spans
        self.scope_spans = scope_spans
        self.cost = cost
        self.ticket = ticket
        self.key = key

    @property
    def span(self) -> Any:
        """The span as a protobuf message, to change it (decoded once, then kept)."""
        if self._span is None:
            self._span = _SPAN_FROM(self.wire)
            self.wire = None
        return self._span

    def view(self) -> Any:
        """The span as a message to read (a throwaway decoding while it is still bytes)."""
        return self._span if self._span is not None else _SPAN_FROM(self.wire)

    def replaced(self, wire: bytes) -> Held:
        """A copy holding ``wire`` (the span patched elsewhere), with the same envelopes,
        cost, ticket and key; this one is left as it was."""
        return Held(wire, self.resource_spans, self.scope_spans, self.cost, self.ticket, self.key)

    def serialized(self) -> bytes:
        """The span's wire bytes (as received, unless it was changed)."""
        return self.wire if self.wire is not None else self._span.SerializeToString()  # type: ignore[no-any-return]


_SPAN_FROM = trace_pb2.Span.FromString
_SERIALIZE = trace_pb2.Span.SerializeToString
#: Per kind key: its text, and the start of a ``Span.attributes`` entry (field 9) holding it
#: up to the AnyValue's tag (key tag, key length, key, value tag).
_KIND_FRAMES = tuple(
    (key, key.encode(), b"\x0a" + bytes((len(key),)) + key.encode() + b"\x12") for key in sorted(_KIND_KEYS)
)


def _kinds_in_wire(wire: bytes) -> dict[str, str] | None:
    """The kind attributes of a span read from its bytes without decoding it (a few
    substring scans), when each kind key's text occurs in them at most once and that once
    as an entry with a short string value; else None (decode it). An entry framed just so
    inside some other field's text could at worst send a trace without steps to a scorer,
    which then finds none."""
    kinds: dict[str, str] = {}
    for key, text, framed in _KIND_FRAMES:
        count = wire.count(text)
        if not count:
            continue
        at = wire.find(framed)
        end = at + len(framed)
        if count > 1 or at < 2 or end + 3 > len(wire) or wire[at - 2] != 0x4A or wire[end + 1] != 0x0A:
            return None
        any_size, size = wire[end], wire[end + 2]
        # entry length = key tag, length and text + value tag, length + AnyValue (one-byte sizes)
        if size >= 0x80 or any_size != size + 2 or wire[at - 1] != len(framed) + 1 + any_size:
            return None
        value = wire[end + 3 : end + 3 + size]
        if len(value) != size:
            return None
        try:
            kinds[key] = value.decode()
        except UnicodeDecodeError:
            return None
    return kinds


def _envelopes(rs: Any, ss: Any) -> tuple[Any, Any]:
    """Copies of a ``ResourceSpans``/``ScopeSpans`` without their spans."""
    out_rs = trace_pb2.ResourceSpans()
    if rs.HasField("resource"):
        out_rs.resource.CopyFrom(rs.resource)
    out_rs.schema_url = rs.schema_url
    out_ss = trace_pb2.ScopeSpans()
    if ss.HasField("scope"):
        out_ss.scope.CopyFrom(ss.scope)
    out_ss.schema_url = ss.schema_url
    return out_rs, out_ss


def _remote_parent(span: Any) -> bool:
    flags = span.flags
    return bool(flags & _FLAGS_HAS_IS_REMOTE and flags & _FLAGS_IS_REMOTE)


class ProtoSpans:
    """The :class:`~otel_semloop.release.SpanAdapter` for received protobuf spans
    (:class:`Held`): records are decoded from the protobuf, patches are applied in place."""

    __slots__ = ()

    def record(self, held: Held) -> SpanRecord:
        record = record_from_proto_span(held.view())
        record.source = held
        return record

    def patched(self, held: Held, patch: SpanPatch) -> Held:
        if patch.attributes or patch.events:  # an empty patch: applied where it was made
            apply_patch_proto(held.span, patch)
        return held

    def links(self, held: Held) -> SpanLinks:
        span = held.view()
        return SpanLinks(
            span_id=span.span_id,
            parent_id=span.parent_span_id or None,
            parent_is_remote=_remote_parent(span),
            start_ns=span.start_time_unix_nano,
        )

    def may_have_steps(self, spans: Sequence[Held]) -> bool:
        """Reads only the few attribute keys that classify a span, from its bytes when
        :func:`_kinds_in_wire` can (a span whose bytes hold none of those keys cannot be a
        step); only other spans are decoded (an agent trace: about 10 -> 5 us on the loop)."""
        for held in spans:
            wire = held.wire
            if wire is not None:
                kinds = _kinds_in_wire(wire)
                if kinds is not None:  # no kind key at all, or all read from the bytes
                    if kinds and step_kind(kinds, top_level=True) is not StepKind.OTHER:
                        return True
                    continue
            span = held.view()
            kinds = {kv.key: kv.value.string_value for kv in span.attributes if kv.key in _KIND_KEYS}
            if kinds and step_kind(kinds, top_level=True) is not StepKind.OTHER:
                return True
        return False


#: The adapter instance the service uses.
PROTO_SPANS = ProtoSpans()


@dataclasses.dataclass(slots=True)
class Accepted:
    """What :meth:`Pipeline.accept` made of a request: spans taken, spans rejected (with
    the first reason, naming the span's path)."""

    accepted: int = 0
    rejected: int = 0
    message: str = ""


#: Memory a held span costs beyond its wire bytes (the holder, the buffer's and the export
#: queue's entries, and the decoded request while it is copied), measured at about 650
#: bytes with one-span traces (600,000 of them in one request: 390 MB above the idle RSS).
SPAN_OVERHEAD_BYTES = 640


@dataclasses.dataclass(slots=True)
class Prepared:
    """A request's spans checked and copied out, ready for :meth:`Pipeline.hold`."""

    spans: list[tuple[bytes, bool, Held]]
    result: Accepted


def prepare(request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> Prepared:
    """Check and copy a request's spans: O(spans), a few checks and each span's bytes (so
    that no held span pins its request). Touches no shared state, so a large request is
    prepared on a thread while the loop serves on."""
    result = Accepted()
    out: list[tuple[bytes, bool, Held]] = []
    total = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    # A held span costs its share of the wire bytes plus the Python objects around it.
    cost = (size // total if total else 0) + SPAN_OVERHEAD_BYTES
    zero = _ZERO_TRACE_ID
    serialize = _SERIALIZE
    for i, rs in enumerate(request.resource_spans):
        for j, ss in enumerate(rs.scope_spans):
            env_rs, env_ss = _envelopes(rs, ss)
            for k, span in enumerate(ss.spans):
                # Each field read of a protobuf message makes a new object: read them once.
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                bad_parent = parent and len(parent) != 8
                if len(trace_id) != 16 or len(span_id) != 8 or bad_parent or trace_id == zero:
                    reason = invalid_span_reason(span)
                    if reason is not None:
                        result.rejected += 1
                        if not result.message:
                            result.message = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]: {reason}"
                        continue
                if skip and trace_id + span_id in skip:
                    continue
                local_root = not parent or _remote_parent(span)
                key = trace_id + span_id if ticket else b""
                out.append((trace_id, local_root, Held(serialize(span), env_rs, env_ss, cost, ticket, key)))
    result.accepted = len(out)
    return Prepared(out, result)


def invalid_span_reason(span: Any) -> str | None:
    """Why a protobuf span cannot be grouped (bad ids), or None. OTLP requires a 16-byte
    non-zero trace id and an 8-byte span id; the parent id is empty or 8 bytes."""
    tid = span.trace_id
    if len(tid) != 16:
        return f"traceId must be 16 bytes, got {len(tid)}"
    if tid == _ZERO_TRACE_ID:
        return "traceId must not be all zeros"
    if len(span.span_id) != 8:
        return f"spanId must be 8 bytes, got {len(span.span_id)}"
    parent = span.parent_span_id
    if parent and len(parent) != 8:
        return f"parentSpanId must be empty or 8 bytes, got {len(parent)}"
    return None


class Pipeline:
    """Groups, scores and hands spans to ``forward`` (the export queue's ``put``).

    Call :meth:`accept` from the receivers, run :meth:`run` as a task, and
    :meth:`drain` once at shutdown. Loop-thread only (see the module docstring); build it
    on the loop it will run on.
    """

    def __init__(
        self,
        config: ServiceConfig,
        forward: Callable[[list[Held]], None],
        scorer: Scorer,
        telemetry: SelfTelemetry,
        evaluations: EvaluationPublisher | None = None,
        processes: ScoringProcesses | None = None,
    ) -> None:
        self._config = config
        self._evaluations = evaluations
        #: Evaluation records go somewhere (logs or Phoenix): else none is built.
        self._publish = evaluations is not None and (
            evaluations.logs_enabled or evaluations.phoenix is not None
        )
        self._forward_spans = forward
        self._telemetry = telemetry
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.buffer: TraceBuffer[Held] = TraceBuffer(config.buffer_limits())
        self._processes = processes
        # With workers, a thread per batch a worker holds (processes.depth: evaluate_many).
        threads = config.scoring_threads if processes is None else config.scoring_processes * processes.depth
        self._pool: ScoringPool[Held] = ScoringPool(
            scorer,
            PROTO_SPANS,
            self._deliver,
            telemetry,
            threads=threads,
            max_stuck=config.max_stuck_scorers,
            budget=config.scoring_budget_seconds,
            **(
                {"evaluator": processes.evaluate, "batch_evaluator": processes.evaluate_many}
                if processes is not None
                else {}
            ),
        )
        if processes is not None:
            # Whole verdicts and roots only for evaluation records (the loop log line
            # comes made from the workers).
            processes.full_verdicts = self._publish
        scorers = config.scoring_processes if processes is not None else config.scoring_threads
        self.load = ScoringLoad(config.grace_seconds, scorers)
        #: While :meth:`_dispatch` submits a release, and whether it was delivered at once.
        self._submitting = False
        self._delivered_now = False
        #: Outcomes scoring threads delivered, for the loop to take in one callback.
        self._inbox: list[Outcome[Held]] = []
        self._inbox_lock = threading.Lock()

    # -- receive path --------------------------------------------------------------------

    def accept(self, request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> Accepted:
        """Hold every valid span of an ``ExportTraceServiceRequest``; count the others.
        ``size`` (the request's bytes) is shared out as the spans' ``cost``; ``skip``
        (a set of ``trace_id + span_id``) names spans already delivered (durable replay)."""
        return self.hold(prepare(request, size, ticket, skip))

    def hold(self, prepared: Prepared) -> Accepted:
        """The loop's part of :meth:`accept`: a dict operation per span."""
        now = time.monotonic()
        end = self.buffer.end
        for trace_id, local_root, held in prepared.spans:
            end(trace_id, local_root, held, now)
        result = prepared.result
        self.load.accepted(now, result.accepted)
        if result.rejected:
            self._telemetry.add("semloop.spans.rejected", "invalid", result.rejected)
        self._dispatch()  # overflow and span-limit releases leave at once
        return result

    def release_held(self) -> None:
        """Release every held trace now (after a durable replay: a replayed trace whose
        root left before the crash can never complete, so it must not wait for ``idle``)."""
        self.buffer.release_all(ReleaseReason.FLUSH)
        self._dispatch()

    @property
    def held_spans(self) -> int:
        return self.buffer.held_spans

    @property
    def backlog(self) -> int:
        """Released traces waiting for (or in) scoring."""
        return self._pool.pending

    def scoring_slack(self, now: float) -> float | None:
        """Seconds left in the budget of the oldest release still waiting for its verdict
        (None: nothing waiting). Small slack means scoring is falling behind."""
        deadline = self._pool.next_deadline()
        return None if deadline is None else deadline - now

    @property
    def stuck(self) -> int:
        """Scoring threads abandoned past their budget and not yet returned."""
        return self._pool.stuck

    # -- the tick and the drain ------------------------------------------------------------

    async def run(self) -> None:
        """Release what is due, and settle releases past their budget, every ``tick``
        (sooner when a budget ends first) until cancelled."""
        tick = self._config.tick_seconds
        while True:
            deadline = self._pool.next_deadline()
            delay = tick if deadline is None else min(tick, max(0.0, deadline - time.monotonic()) + 0.001)
            await asyncio.sleep(delay)
            try:
                now = time.monotonic()
                self.buffer.expire(now)
                self._dispatch()
                self._pool.expire(now)
                self.load.sample(now)
            except Exception:
                self._telemetry.add("semloop.errors", "pipeline")
                _logger.exception(
                    "otel-semloop: error releasing traces (counted in semloop.errors)",
                    extra={"semloop_limit": "pipeline"},
                )

    async def drain(self, deadline: float) -> bool:
        """Release everything held, score what fits before ``deadline`` (the rest leaves
        unscored) and hand every span to the export queue. True if scoring finished in time."""
        self.buffer.release_all(ReleaseReason.SHUTDOWN)
        self._dispatch()
        pool = self._pool
        last = pool.cap_deadlines(deadline)
        while not pool.settled_through(last) and time.monotonic() < deadline:
            await asyncio.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
        clean = pool.settled_through(last)
        pool.expire(max(deadline, time.monotonic()))
        pool.take_back_all()
        pool.stop()
        await asyncio.sleep(0)  # run the deliveries scoring threads handed to the loop
        return clean

    def _dispatch(self) -> None:
        releases, late = self.buffer.take()
        if late:
            for held in late:
                apply_patch_proto(held.span, _LATE_PATCH)
            self._forward(late, 0, "late")
        load = self.load
        for release in releases:
            self._submitting, self._delivered_now = True, False
            try:
                self._pool.submit(release)
            finally:
                self._submitting = False
            # Delivered during submit: no agent steps (or every scorer stuck): no queue.
            load.released(time.monotonic(), len(release.spans), to_scorers=not self._delivered_now)

    def _deliver(self, outcome: Outcome[Held]) -> None:
        """The pool's delivery: on the loop, or handed to it from a scoring thread."""
        if threading.get_ident() != self._loop_thread:
            # One wake-up of the loop for all the outcomes delivered until it runs.
            with self._inbox_lock:
                self._inbox.append(outcome)
                first = len(self._inbox) == 1
            if first:
                self._loop.call_soon_threadsafe(self._take_inbox)
        elif self._submitting:
            self._delivered_now = True
            self._delivered(outcome, False)
        else:
            self._delivered(outcome, True)  # past its budget, or at the end of a drain

    def _take_inbox(self) -> None:
        with self._inbox_lock:
            outcomes, self._inbox = self._inbox, []
        for outcome in outcomes:
            try:
                self._delivered(outcome, True, True)
            except Exception:  # as a callback of its own would: the others still go out
                self._telemetry.add("semloop.errors", "pipeline")
                _logger.exception(
                    "otel-semloop: error forwarding a scored trace (counted in semloop.errors)",
                    extra={"semloop_limit": "pipeline"},
                )

    def _delivered(self, outcome: Outcome[Held], queued: bool, scored: bool = False) -> None:
        if queued:
            self.load.delivered(time.monotonic(), len(outcome.spans), scored)
        evaluation = outcome.evaluation
        if outcome.label == "loop" and evaluation is not None and self._config.log_loops:
            line = evaluation.summary or loop_summary(evaluation.trace, evaluation.verdict)
            _logger.info("otel-semloop: loop %s", line)
        self._forward(outcome.spans, outcome.patched)
        if evaluation is not None and self._publish:
            self._evaluations.publish_verdict(evaluation.trace, evaluation.verdict)  # type: ignore[union-attr]

    def _forward(self, spans: list[Held], patched: int, state: str = "original") -> None:
        count_forwarded(self._telemetry, len(spans), patched, state)
        self._forward_spans(spans)
