"""Scoring one closed trace, in a worker process or in-process: payload -> records -> trace
-> verdict -> patches, isolated per trace.

Why isolated here: one hostile value (a ``doubleValue`` of "NaN" in a token count, message
``parts`` that are a number) must cost only its own trace. A value that does not decode
is dropped from its span; whatever the builder or a detector raises makes the trace go
out unscored with ``semloop.unscored.reason`` saying why; every other trace is unaffected
and every span is written out.

What crosses the process boundary is small both ways: the trace's spans as bytes in, and
per-span patches plus one summary row out.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.logs import log_events, log_events_of, use_log_events
from otel_semloop.batch.ring import Ring, taken
from otel_semloop.builder import build_trace
from otel_semloop.conventions import attach_log_records
from otel_semloop.evaluation import evaluation_attributes, evaluation_record
from otel_semloop.loop_cost import LoopCost, loop_cost
from otel_semloop.model import SpanRecord, StepKind, Trace
from otel_semloop.otlp.records import record_from_proto_span, records_from_json
from otel_semloop.redact import clean_control, redact
from otel_semloop.scoring import DetectorScorer, Scorer, collector_paused
from otel_semloop.verdict import Verdict
from otel_semloop.writeback import SpanPatch, evaluation_event, patches_for, verdict_attributes

__all__ = ["ScorerSpec", "TraceJob", "TraceRow", "score_jobs", "start_pool"]


def clean(text: str, limit: int = 300) -> str:
    """Text safe for an attribute, a log line and a terminal: secrets redacted with the
    judge's patterns, control characters escaped, bounded."""
    return _cut(clean_control(redact(text)), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class ScorerSpec:
    """How to build the scorer in each worker process (picklable: it crosses to the pool).

    ``factory``, when set, is a picklable top-level callable taking the spec and returning
    any :class:`~otel_semloop.scoring.Scorer` (a judge-backed one, say); by default the
    deterministic :class:`~otel_semloop.scoring.DetectorScorer`. ``options`` carries what
    such a factory needs (hashable pairs, so specs compare)."""

    mode: str = "default"
    config: Any = None
    factory: Any = None
    options: tuple[tuple[str, Any], ...] = ()

    def build(self) -> Scorer:
        if self.factory is not None:
            return self.factory(self)  # type: ignore[no-any-return]
        return DetectorScorer(mode=self.mode, config=self.config)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class TraceJob:
    trace_id: str
    kind: str  # "json" | "proto"
    payload: bytes
    roots: tuple[str, ...]
    partial: bool
    #: every span's id in payload order (16 characters each), from a caller that splices
    #: compact JSON: the patches come back as each span's patched compact JSON, in payload
    #: order (None for a span without a patch), instead of by span id (see score_job)
    span_ids: str = ""


@dataclass(slots=True)
class TraceRow:
    """One scored agent trace, for the summary, the table and the report."""

    trace_id: str
    root_span_id: str
    root_name: str
    agent: str
    steps: int
    label: str
    score: float
    deepeval: float | None
    action: str
    signals: tuple[str, ...]
    reason: str
    tools: tuple[str, ...]
    start_ns: int
    end_ns: int
    partial: bool
    unscored_reason: str = ""
    event_ns: int = 0
    evaluation: dict[str, Any] = field(default_factory=dict)
    #: What the loop cost (a loop or suspected trace with a step where it began).
    loop_cost: LoopCost | None = None


_SCORER: Scorer | None = None
_SPEC: ScorerSpec | None = None


def init_worker(spec: ScorerSpec, events: Any = None) -> None:
    """A scoring process's scorer; ``events``: the logs files' GenAI events, for a process
    not forked from the reading process (:mod:`otel_semloop.batch.logs`)."""
    global _SCORER, _SPEC
    _SCORER, _SPEC = spec.build(), spec
    if events is not None:
        use_log_events(events)


def start_pool(workers: int, spec: ScorerSpec) -> concurrent.futures.ProcessPoolExecutor:
    """:func:`start_workers` without a ring."""
    return start_workers(workers, spec)[0]


def start_workers(
    workers: int, spec: ScorerSpec, ring_sizes: tuple[int, ...] = ()
) -> tuple[concurrent.futures.ProcessPoolExecutor, list[Ring]]:
    """A pool of ``workers`` scoring processes, each with the scorer ``spec`` builds, started
    now (they take a moment to start: meanwhile the caller reads its first chunk).

    How they start: on Linux, when the calling process runs no other thread, they are
    forked from it, which has already imported the scoring stack (this module imports it),
    so a worker starts at once. Else from a fork server (a fresh process importing the
    scoring stack once; forking a process that runs threads can deadlock), or spawned where
    there is no fork. Measured on the rescore bench: the fork server's imports, about half
    a second of CPU, ran while the workers waited and the reading process had nothing to do.

    ``ring_sizes``: forked workers also share a :class:`~otel_semloop.batch.ring.Ring` of
    each size with this process (returned; none when the workers are not forked), made
    before they fork."""
    ctx: Any
    rings: list[Ring] = []
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        ctx = multiprocessing.get_context("fork")
        try:
            for size in ring_sizes:
                rings.append(Ring(size))
        except (OSError, ValueError, OverflowError):  # no room for a mapping: the pipe
            for ring in rings:
                ring.close()
            rings = []
    else:
        ctx = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
        if os.name == "posix":
            # each worker starts from the fork server's copy instead of importing (and,
            # without bytecode caches, compiling) the scoring stack again
            ctx.set_forkserver_preload(["__main__", "otel_semloop.batch.chunks"])
    # Forked workers have the logs files' events already; others are sent them.
    events = None if ctx.get_start_method() == "fork" else log_events()
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=init_worker, initargs=(spec, events)
    )
    pool.submit(_ready)  # forked workers all start at the first task
    return pool, rings


def _ready() -> None:
    """A task that does nothing: submitting it starts the workers."""


def scorer(spec: ScorerSpec | None = None) -> Scorer:
    """The scorer of this process: the one :func:`init_worker` built in a worker, else one
    built from ``spec`` (rebuilt when the spec changes)."""
    global _SCORER, _SPEC
    if _SCORER is None or (spec is not None and spec != _SPEC):
        _SPEC = spec or ScorerSpec()
        _SCORER = _SPEC.build()
    return _SCORER


def score_jobs(jobs: Sequence[TraceJob], spec: ScorerSpec | None = None) -> list[tuple[str, Any, Any]]:
    """``(trace_id, patches or None, row or None)`` for each job (None: not an agent trace).
    In a worker the scorer comes from :func:`init_worker`; in-process from ``spec``."""
    current = scorer(spec)
    with collector_paused():
        return [score_job(job, current) for job in jobs]


def score_ring_jobs(key: int, offsets: list[int], jobs: Sequence[TraceJob]) -> list[tuple[str, Any, Any]]:
    """:func:`score_jobs` of jobs whose payloads came through ring ``key`` (in job order;
    see :class:`~otel_semloop.batch.ring.Ring`)."""
    payloads = taken(key, offsets)
    return score_jobs([replace(job, payload=payload) for job, payload in zip(jobs, payloads, strict=True)])


def score_job(
    job: TraceJob, scorer: Scorer, spans: list[Any] | None = None, parsed: bool = False
) -> tuple[str, Any, Any]:
    """Score one trace. ``spans``, when given, are its spans already decoded (JSON dicts
    or protobuf ``Span``s, as ``job.kind`` says) and ``job.payload`` is not read.
    ``parsed``: those JSON dicts are straight from a JSON parser (plain dicts, lists,
    strings and numbers, none built or subclassed in Python), which lets the decode skip
    checks only other objects fail (``records_from_json(json_types=True)``); spans this
    function parses itself from the payload always are.

    With ``job.span_ids`` (a JSON job) the patches are each span's patched compact JSON,
    written here where the spans are decoded already (the reading process would parse
    each patched span again to write it), in payload order."""
    parsed = parsed or spans is None
    if job.span_ids and spans is None and job.kind == "json":
        try:
            spans = orjson.loads(job.payload)
        except Exception:
            pass  # decoded (and refused) below, as without span ids
        else:
            if type(spans) is not list or 16 * len(spans) != len(job.span_ids):
                spans = None
    result = _score_job(job, scorer, spans, parsed)
    patches = result[1]
    if not job.span_ids or spans is None or not patches or type(patches) is not dict:
        return result
    from otel_semloop.batch.spans import apply_json, dump_json

    sids = job.span_ids
    written: list[bytes | None] = []
    try:
        for k, span in enumerate(spans):
            patch = patches.get(sids[16 * k : 16 * k + 16])
            if patch is None:
                written.append(None)
                continue
            apply_json(span, patch)
            written.append(bytes(memoryview(dump_json(span))))
    except Exception:  # left to the reading process, which writes patches by span id too
        return result
    return result[0], written, result[2]


def _score_job(job: TraceJob, scorer: Scorer, spans: list[Any] | None, parsed: bool) -> tuple[str, Any, Any]:
    try:
        records, dropped = _records(job, spans, parsed)
    except Exception as exc:
        return _unscored(job, f"spans could not be decoded: {type(exc).__name__}: {exc}")
    events = log_events_of(job.trace_id)
    if events:  # GenAI log records from logs files, put on their spans
        records = attach_log_records(records, events)
    try:
        trace = build_trace(records, partial=job.partial)
    except Exception as exc:
        return _unscored(job, f"trace could not be built: {type(exc).__name__}: {exc}")
    if not trace.steps:
        return job.trace_id, None, None
    try:
        verdict = scorer.score(trace)
    except Exception as exc:
        verdict = Verdict.unscored(
            clean(f"scoring failed: {type(exc).__name__}: {exc}"), partial=trace.partial
        )
    try:
        patches = patches_for(trace, verdict)
        if dropped and trace.root_span_id in patches:
            patches[trace.root_span_id].attributes["semloop.input.dropped"] = clean("; ".join(dropped))
        row = _row(job, trace, verdict, patches)
    except Exception as exc:
        return _unscored(job, f"verdict could not be written: {type(exc).__name__}: {exc}")
    return job.trace_id, patches, row


def _records(
    job: TraceJob, spans: list[Any] | None, parsed: bool = False
) -> tuple[list[SpanRecord], list[str]]:
    if job.kind == "proto":
        if spans is None:
            spans = list(TracesData.FromString(job.payload).resource_spans[0].scope_spans[0].spans)
        return [record_from_proto_span(s) for s in spans], []
    if spans is None:
        spans, parsed = orjson.loads(job.payload), True
    try:
        # ``parsed``: spans straight from orjson.loads (here, or chunks.py's parse of the
        # spans' compact JSON): plain JSON types only, which json_types lets the decoder
        # assume; a caller's own dicts keep the exact path
        return records_from_json(_envelope(spans), json_types=parsed), []
    except Exception:
        from otel_semloop.batch.spans import lenient_span_json

        records: list[SpanRecord] = []
        dropped: list[str] = []
        for span in spans:
            try:
                records.extend(records_from_json(_envelope([span])))
                continue
            except Exception:
                pass
            fixed, lost = lenient_span_json(span)
            records.extend(records_from_json(_envelope([fixed])))
            dropped.extend(lost)
        return records, dropped


def _envelope(spans: list[Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def _unscored(job: TraceJob, reason: str) -> tuple[str, Any, Any]:
    reason = clean(reason)
    verdict = Verdict.unscored(reason, partial=job.partial)
    patches = {}
    for root in job.roots[:1]:
        patches[root] = SpanPatch(
            attributes=verdict_attributes(verdict), events=[evaluation_event(verdict, 0)]
        )
    row = TraceRow(
        trace_id=job.trace_id,
        root_span_id=job.roots[0] if job.roots else "",
        root_name="",
        agent="",
        steps=0,
        label="unscored",
        score=1.0,
        deepeval=None,
        action="continue",
        signals=(),
        reason=reason,
        tools=(),
        start_ns=0,
        end_ns=0,
        partial=job.partial,
        unscored_reason=reason,
        evaluation=evaluation_attributes(verdict),
    )
    return job.trace_id, patches, row


#: read once: an enum member through its class is slow on Python 3.11
_AGENT, _TOOL = StepKind.AGENT, StepKind.TOOL
_START_NS, _END_NS = attrgetter("start_ns"), attrgetter("end_ns")
_NONE = object()


def _row(job: TraceJob, trace: Trace, verdict: Verdict, patches: dict[str, SpanPatch]) -> TraceRow:
    root = trace.spans.get(trace.root_span_id)
    # The root's patch already holds the evaluation record's attributes and time (its
    # event) and the redacted reason: taken from it instead of being made (and redacted)
    # again for every trace.
    patch = patches.get(trace.root_span_id) if root is not None else None
    if patch is not None and patch.events:
        event = patch.events[0]
        evaluation, event_ns = dict(event.attributes), int(event.time_ns or 0)
    else:
        record = evaluation_record(trace, verdict)
        evaluation = dict(record.attributes) if record else evaluation_attributes(verdict)
        event_ns = record.time_ns if record else 0
    shown = patch.attributes.get("semloop.reason") if patch is not None else None
    if type(shown) is str and "semloop.reason" not in verdict.attributes:
        reason = _cut(shown, 500)
    else:
        reason = clean(verdict.reason or "", 500)
    steps = trace.steps
    agent = next((s.agent or s.name for s in steps if s.kind is _AGENT), _NONE)
    if agent is _NONE:
        agent = next((s.agent for s in steps if s.agent), "") or ""
    in_loop = verdict.in_loop_span_ids
    tools: tuple[str, ...] = ()
    if in_loop:
        tools = tuple(dict.fromkeys(s.name for s in steps if s.kind is _TOOL and s.span_id in in_loop))
    spans = trace.spans.values()
    return TraceRow(
        trace_id=trace.trace_id,
        root_span_id=trace.root_span_id,
        root_name=clean(root.name if root else "", 80),
        agent=clean(agent, 80),
        steps=len(trace.steps),
        label=verdict.label.value,
        score=float(verdict.score),
        deepeval=float(verdict.lexical.score) if verdict.lexical else None,
        action=verdict.action.value,
        signals=verdict.fired_signals,
        reason=reason,
        tools=tuple(clean(t, 80) for t in tools),
        start_ns=min(filter(None, map(_START_NS, spans)), default=0),
        end_ns=max(filter(None, map(_END_NS, spans)), default=0),
        partial=verdict.partial,
        unscored_reason=clean(verdict.unscored_reason, 300),
        event_ns=event_ns,
        evaluation=evaluation,
        loop_cost=loop_cost(trace, verdict),
    )
