"""The service's core glue: received protobuf spans -> :class:`~otel_semloop.grouping.TraceBuffer`
-> scoring off the receive path under a time budget -> write-back -> the export queue.

Everything here runs on the service's one asyncio loop (the gRPC and HTTP receivers, the
tick, the scoring tasks' bookkeeping), so the buffer needs no lock. Only
:func:`_score_release` runs on a scoring thread: it reads the held spans and returns
patches; the loop applies them (:func:`~otel_semloop.otlp.apply_patch_proto`). A thread
past its budget therefore never writes to a span that has already left.

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

Budget
    Each release gets ``scoring_budget`` seconds from release to verdict, queueing for a
    thread included; past it the trace is forwarded unscored (``semloop.label=unscored``,
    ``semloop.unscored.reason="scoring budget exceeded"``). A thread cannot be killed: an
    abandoned one is counted as stuck until it returns, and while every scoring thread is
    stuck traces are forwarded unscored at once. A scorer that raises yields an unscored
    trace. Non-agent traces are forwarded untouched.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop._selftelemetry import SelfTelemetry
from otel_semloop.builder import build_trace
from otel_semloop.grouping import BufferLimits, Release, ReleaseReason, TraceBuffer
from otel_semloop.model import Trace
from otel_semloop.otlp import apply_patch_proto, record_from_proto_span
from otel_semloop.service.config import ServiceConfig
from otel_semloop.verdict import Verdict
from otel_semloop.writeback import (
    UNSCORED_BUDGET_EXCEEDED,
    UNSCORED_SCORERS_STUCK,
    SpanPatch,
    release_patches,
)

__all__ = ["Held", "Pipeline"]

_logger = logging.getLogger("otel_semloop.service")

_SHUTDOWN_REASON = "scoring cut short by shutdown"
_FLAGS_HAS_IS_REMOTE = 0x100
_FLAGS_IS_REMOTE = 0x200
_ZERO_TRACE_ID = bytes(16)
_LATE_PATCH = SpanPatch(attributes={"semloop.late": True})


class Held:
    """One received span and the envelope it came in (kept for its Resource and Scope)."""

    __slots__ = ("cost", "resource_spans", "scope_spans", "span", "ticket")

    def __init__(
        self, span: Any, resource_spans: Any, scope_spans: Any, cost: int = 0, ticket: int = 0
    ) -> None:
        self.span = span
        self.resource_spans = resource_spans
        self.scope_spans = scope_spans
        self.cost = cost
        self.ticket = ticket


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


@dataclasses.dataclass(slots=True)
class Accepted:
    """What :meth:`Pipeline.accept` made of a request: spans taken, spans rejected (with
    the first reason, naming the span's path)."""

    accepted: int = 0
    rejected: int = 0
    message: str = ""


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
    :meth:`drain` once at shutdown. Loop-thread only (see the module docstring).
    """

    def __init__(
        self,
        config: ServiceConfig,
        forward: Callable[[list[Held]], None],
        scorer: Any,
        telemetry: SelfTelemetry,
        executor: concurrent.futures.Executor,
    ) -> None:
        self._config = config
        self._forward_spans = forward
        self._scorer = scorer
        self._telemetry = telemetry
        self._executor = executor
        self.buffer: TraceBuffer[Held] = TraceBuffer(
            BufferLimits(
                grace=config.grace,
                idle=config.idle,
                max_age=config.max_age,
                max_traces=config.max_traces,
                max_spans_per_trace=config.max_spans_per_trace,
                max_spans=config.max_spans,
                recent=config.recent_traces,
            )
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._stuck = 0
        self._deadline_cap: float | None = None

    # -- receive path --------------------------------------------------------------------

    def accept(self, request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> Accepted:
        """Hold every valid span of an ``ExportTraceServiceRequest``; count the others.
        O(spans): a few checks, a copy and a dict operation per span, no decoding.
        ``size`` (the request's bytes) is shared out as the spans' ``cost``; ``skip``
        (a set of ``trace_id + span_id``) names spans already delivered (durable replay)."""
        result = Accepted()
        now = time.monotonic()
        end = self.buffer.end
        total = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        cost = size // total if total else 0
        for i, rs in enumerate(request.resource_spans):
            for j, ss in enumerate(rs.scope_spans):
                env_rs, env_ss = _envelopes(rs, ss)
                for k, span in enumerate(ss.spans):
                    reason = invalid_span_reason(span)
                    if reason is not None:
                        result.rejected += 1
                        if not result.message:
                            result.message = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]: {reason}"
                        continue
                    if skip and span.trace_id + span.span_id in skip:
                        continue
                    own = trace_pb2.Span()
                    own.CopyFrom(span)
                    flags = own.flags
                    local_root = not own.parent_span_id or bool(
                        flags & _FLAGS_HAS_IS_REMOTE and flags & _FLAGS_IS_REMOTE
                    )
                    end(own.trace_id, local_root, Held(own, env_rs, env_ss, cost, ticket), now)
                    result.accepted += 1
        if result.rejected:
            self._telemetry.add("semloop.spans.rejected", "invalid", result.rejected)
        self._dispatch()  # overflow and span-limit releases leave at once
        return result

    @property
    def held_spans(self) -> int:
        return self.buffer.held_spans

    @property
    def backlog(self) -> int:
        """Released traces waiting for (or in) scoring."""
        return len(self._tasks)

    @property
    def stuck(self) -> int:
        """Scoring threads abandoned past their budget and not yet returned."""
        return self._stuck

    # -- the tick and the scoring tasks --------------------------------------------------

    async def run(self) -> None:
        """Release what is due every ``tick`` until cancelled."""
        while True:
            await asyncio.sleep(self._config.tick)
            try:
                self.buffer.expire(time.monotonic())
                self._dispatch()
            except Exception:
                self._telemetry.add("semloop.errors", "pipeline")
                _logger.exception("otel-semloop: error releasing traces (counted in semloop.errors)")

    async def drain(self, deadline: float) -> bool:
        """Release everything held, score what fits before ``deadline`` (the rest leaves
        unscored) and hand every span to the export queue. True if scoring finished in time."""
        self._deadline_cap = deadline
        self.buffer.release_all(ReleaseReason.SHUTDOWN)
        self._dispatch()
        if not self._tasks:
            return True
        _done, pending = await asyncio.wait(set(self._tasks), timeout=max(0.0, deadline - time.monotonic()))
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        return not pending

    def _dispatch(self) -> None:
        releases, late = self.buffer.take()
        if late:
            for held in late:
                apply_patch_proto(held.span, _LATE_PATCH)
            self._forward(late, "late")
        for release in releases:
            telemetry = self._telemetry
            telemetry.add("semloop.releases", release.reason.value)
            if release.reason.early:
                telemetry.add("semloop.releases.early", release.reason.value)
            task = asyncio.get_running_loop().create_task(self._score(release))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _score(self, release: Release[Held]) -> None:
        telemetry = self._telemetry
        if self._stuck >= self._config.scoring_threads:
            self._finish_unscored(release, UNSCORED_SCORERS_STUCK, "stuck")
            return
        deadline = time.monotonic() + self._config.scoring_budget
        if self._deadline_cap is not None:
            deadline = min(deadline, self._deadline_cap)
        started = time.perf_counter()
        future = asyncio.get_running_loop().run_in_executor(
            self._executor, _score_release, release, self._scorer
        )
        try:
            result = await asyncio.wait_for(asyncio.shield(future), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            self._abandon(future)
            self._finish_unscored(release, UNSCORED_BUDGET_EXCEEDED, "budget")
            return
        except asyncio.CancelledError:
            # drain() ran out of time: the spans still leave, exactly once.
            self._abandon(future)
            self._finish_unscored(release, _SHUTDOWN_REASON, "shutdown")
            raise
        except Exception as exc:
            telemetry.add("semloop.errors", "scorer")
            _warn_limited("scorer", "scorer failed: %r", exc)
            self._finish_unscored(release, f"scoring failed: {type(exc).__name__}", "error")
            return
        telemetry.scoring_duration.record(time.perf_counter() - started)
        label, patches, summary = result
        if label == "loop" and self._config.log_loops:
            _logger.info("otel-semloop: loop %s", summary)
        patched = 0
        try:
            for held, patch in patches:
                apply_patch_proto(held.span, patch)
                patched += 1
        except Exception as exc:  # pragma: no cover - a codec bug; the spans still leave
            telemetry.add("semloop.errors", "writeback")
            _warn_limited("writeback", "write-back failed: %r", exc)
        telemetry.add("semloop.traces", label)
        self._forward(release.spans, "patched" if patched else "original", patched)

    def _abandon(self, future: asyncio.Future[Any]) -> None:
        if future.done():
            return
        self._stuck += 1

        def returned(_: asyncio.Future[Any]) -> None:
            self._stuck -= 1

        future.add_done_callback(returned)

    def _finish_unscored(self, release: Release[Held], reason: str, key: str) -> None:
        self._telemetry.add("semloop.unscored", key)
        self._telemetry.add("semloop.traces", "unscored")
        patched = 0
        try:
            root = _root_of(release.spans)
            if root is not None:
                record = record_from_proto_span(root.span)
                trace = Trace(
                    trace_id=record.trace_id,
                    steps=[],
                    spans={record.span_id: record},
                    root_span_id=record.span_id,
                    partial=release.partial,
                )
                verdict = Verdict.unscored(reason, partial=release.partial)
                for _, patch in release_patches(release, trace, verdict).items():
                    apply_patch_proto(root.span, patch)
                    patched = 1
        except Exception as exc:  # pragma: no cover - marking failed: the originals still leave
            self._telemetry.add("semloop.errors", "writeback")
            _warn_limited("writeback", "write-back failed: %r", exc)
        self._forward(release.spans, "patched" if patched else "original", patched)

    def _forward(self, spans: list[Held], state: str, patched: int = 0) -> None:
        telemetry = self._telemetry
        if patched:
            telemetry.add("semloop.spans.forwarded", "patched", patched)
        if len(spans) > patched:
            telemetry.add(
                "semloop.spans.forwarded", state if state != "patched" else "original", len(spans) - patched
            )
        self._forward_spans(spans)


# -- scoring (runs on a scoring thread; reads spans, never writes them) ----------------


def _score_release(release: Release[Held], scorer: Any) -> tuple[str, list[tuple[Held, SpanPatch]], str]:
    """Records, trace, verdict, patches: ``(label, [(held, patch)], log summary)``. A trace
    without agent steps gets no patches (forwarded untouched, label ``none``)."""
    held_by_span = {id(held.span): held for held in release.spans}
    records = [record_from_proto_span(held.span) for held in release.spans]
    trace = build_trace(records, partial=release.partial)
    if not trace.steps:
        return "none", [], ""
    verdict = scorer.score(trace)
    patches = release_patches(release, trace, verdict)
    out = []
    for span_id, patch in patches.items():
        record = trace.spans.get(span_id)
        if record is not None:
            out.append((held_by_span[id(record.source)], patch))
    return verdict.label.value, out, _loop_summary(trace, verdict)


def _loop_summary(trace: Trace, verdict: Verdict) -> str:
    """One structured line (JSON) for the log: trace id, agent, signals, reason. The
    reason is cleaned of control characters so a tool name cannot forge a log line."""
    import json

    root = trace.spans.get(trace.root_span_id) if trace.root_span_id else None
    agent = ""
    if root is not None:
        attributes = root.attributes
        agent = str(attributes.get("gen_ai.agent.name") or root.name)
    reason = str(getattr(verdict, "reason", "") or "")
    return json.dumps(
        {
            "trace_id": trace.trace_id,
            "agent": agent[:200],
            "signals": list(verdict.fired_signals),
            "score": round(verdict.score, 3),
            "action": verdict.action.value,
            "reason": reason[:500],
            "partial": trace.partial,
        },
        ensure_ascii=True,
    )


def _root_of(spans: list[Held]) -> Held | None:
    """The span the verdict of an unscored release goes on: the earliest without a parent,
    else the earliest whose parent is not among ``spans``."""
    best: Held | None = None
    for held in spans:
        span = held.span
        if not span.parent_span_id and (
            best is None or span.start_time_unix_nano < best.span.start_time_unix_nano
        ):
            best = held
    if best is not None:
        return best
    ids = {held.span.span_id for held in spans}
    for held in spans:
        span = held.span
        if span.parent_span_id not in ids and (
            best is None or span.start_time_unix_nano < best.span.start_time_unix_nano
        ):
            best = held
    return best


_LOG_INTERVAL_SECONDS = 60.0
_last_logged: dict[str, float] = {}


def _warn_limited(key: str, message: str, *args: Any) -> None:
    """At most one warning per kind a minute (every occurrence is counted anyway)."""
    now = time.monotonic()
    last = _last_logged.get(key)
    if last is not None and now - last < _LOG_INTERVAL_SECONDS:
        return
    _last_logged[key] = now
    _logger.warning("otel-semloop: " + message + " (counted; next report in 60 s)", *args)
