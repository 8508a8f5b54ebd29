"""Scoring one closed trace, in a worker process or in-process: its spans read through a
span adapter and scored by :func:`otel_semloop.release.evaluate`, isolated per trace: a
value that does not decode is dropped from its span
(:class:`~otel_semloop.batch.spans.JsonSpans`), and whatever the builder or a detector
raises makes only that trace go out unscored, with ``semloop.unscored.reason`` saying why.
A trace's spans go in as bytes (:class:`TraceJob`, with its GenAI log events); its
per-span patches and summary row come out (:class:`Scored`).
"""

from __future__ import annotations

import concurrent.futures
import gc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_semloop.batch.scan import UnitSpans
from otel_semloop.batch.spans import JsonSpans
from otel_semloop.conventions import LogEvent
from otel_semloop.evaluation import evaluation_attributes, evaluation_record
from otel_semloop.grouping import Release, ReleaseReason
from otel_semloop.loop_cost import LoopCost, loop_cost
from otel_semloop.model import SpanRecord, StepKind, Trace
from otel_semloop.pool import process_context
from otel_semloop.redact import clean_control, redact
from otel_semloop.release import SpanLinks, evaluate, unscored_evaluation
from otel_semloop.scoring import DetectorScorer, Scorer, collector_paused
from otel_semloop.service.held import PROTO_SPANS, Held
from otel_semloop.verdict import Verdict
from otel_semloop.writeback import SpanPatch, patches_for, release_patches

__all__ = ["Scored", "ScorerSpec", "TraceJob", "TraceRow", "score_jobs", "start_pool", "trace_job"]


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
    """One trace to score: its spans in input order (``kind`` "json": JSON arrays of span
    objects, one per unit that held some; "proto": each span's protobuf bytes), its local
    roots' span ids (none: the trace is partial) and the GenAI log events of its spans
    (``evaluate`` puts them on their spans)."""

    trace_id: str
    kind: str
    spans: list[bytes]
    roots: tuple[str, ...]
    logs: tuple[LogEvent, ...] = ()

    @property
    def partial(self) -> bool:
        return not self.roots


@dataclass(slots=True)
class TraceRow:
    """One scored agent trace, for the summary, the table and the report (the defaults:
    a trace that was not scored)."""

    trace_id: str
    root_span_id: str
    root_name: str = ""
    agent: str = ""
    steps: int = 0
    label: str = "unscored"
    score: float = 1.0
    deepeval: float | None = None
    action: str = "continue"
    signals: tuple[str, ...] = ()
    reason: str = ""
    tools: tuple[str, ...] = ()
    start_ns: int = 0
    end_ns: int = 0
    partial: bool = False
    unscored_reason: str = ""
    event_ns: int = 0
    evaluation: dict[str, Any] = field(default_factory=dict)
    #: What the loop cost (a loop or suspected trace with a step where it began).
    loop_cost: LoopCost | None = None


@dataclass(frozen=True, slots=True)
class Scored:
    """A job's result: the patches by span id and the summary row (both None when the
    trace has no agent steps: it is written as it was read)."""

    trace_id: str
    patches: dict[str, SpanPatch] | None
    row: TraceRow | None


def trace_job(
    trace_id: str,
    held: Sequence[UnitSpans],
    roots: tuple[str, ...],
    logs: tuple[LogEvent, ...] = (),
) -> TraceJob:
    """The scoring job of a trace from its spans (of each unit that held some, in input
    order) and its GenAI log events; a trace with both kinds of span is scored as JSON,
    each unit's spans one array."""
    if not any(spans.is_json for spans in held):
        data = [span.SerializeToString() for spans in held for span in spans.spans]
        return TraceJob(trace_id, "proto", data, roots, logs)
    return TraceJob(trace_id, "json", [spans.json_array() for spans in held], roots, logs)


_SCORER: Scorer | None = None
_SPEC: ScorerSpec | None = None


def init_worker(spec: ScorerSpec) -> None:
    """Build the scorer of this process (a worker's initializer). A worker forked while
    the reading process paused the collector collects as usual (between batches)."""
    global _SCORER, _SPEC
    gc.enable()
    _SCORER, _SPEC = spec.build(), spec


def scorer(spec: ScorerSpec | None = None) -> Scorer:
    """The scorer of this process: the one :func:`init_worker` built, else one built from
    ``spec`` (rebuilt when the spec changes)."""
    global _SCORER, _SPEC
    if _SCORER is None or (spec is not None and spec != _SPEC):
        _SPEC = spec or ScorerSpec()
        _SCORER = _SPEC.build()
    return _SCORER


def start_pool(workers: int, spec: ScorerSpec) -> concurrent.futures.ProcessPoolExecutor:
    """``workers`` scoring processes, each with the scorer ``spec`` builds, started as
    :func:`~otel_semloop.pool.process_context` says (forked when this process runs no
    other thread: the reading process has the scoring stack imported)."""
    context = process_context([__name__], fork_if_alone=True)
    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=init_worker, initargs=(spec,)
    )


def score_jobs(jobs: Sequence[TraceJob], spec: ScorerSpec | None = None) -> list[Scored]:
    """Each job scored, in order. In a worker the scorer comes from :func:`init_worker`;
    in-process from ``spec``."""
    current = scorer(spec)
    with collector_paused():
        return [score_job(job, current) for job in jobs]


class _Unreadable(Exception):
    """A span that does not decode even without its bad values (its trace goes out
    unscored)."""


class _Reading:
    """A span adapter whose :meth:`record` failures are :class:`_Unreadable`, so they
    are told apart from the builder's."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter

    def record(self, span: Any) -> SpanRecord:
        try:
            return self.adapter.record(span)  # type: ignore[no-any-return]
        except Exception as exc:
            raise _Unreadable(f"{type(exc).__name__}: {exc}") from exc

    def patched(self, span: Any, patch: SpanPatch) -> Any:
        return self.adapter.patched(span, patch)

    def links(self, span: Any) -> SpanLinks:
        return self.adapter.links(span)  # type: ignore[no-any-return]

    def may_have_steps(self, spans: Sequence[Any]) -> bool:
        return self.adapter.may_have_steps(spans)  # type: ignore[no-any-return]


class _Isolated:
    """A scorer whose failure is the trace's unscored verdict, not an exception."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer

    def score(self, trace: Trace) -> Verdict:
        try:
            return self.scorer.score(trace)
        except Exception as exc:
            return Verdict.unscored(
                clean(f"scoring failed: {type(exc).__name__}: {exc}"), partial=trace.partial
            )


def score_job(job: TraceJob, scorer: Scorer) -> Scored:
    """Score one trace (see the module docstring)."""
    json_spans = JsonSpans()
    try:
        if job.kind == "json":
            spans: list[Any] = [span for array in job.spans for span in orjson.loads(array)]
            adapter: Any = json_spans
        else:
            spans = [Held(data, None, None) for data in job.spans]
            adapter = PROTO_SPANS
    except Exception as exc:
        return _unscored(job, f"spans could not be decoded: {type(exc).__name__}: {exc}")
    release = Release(job.trace_id, spans, ReleaseReason.COMPLETE, root_ended=not job.partial, logs=job.logs)
    try:
        evaluation = evaluate(release, _Reading(adapter), _Isolated(scorer))
    except _Unreadable as exc:
        return _unscored(job, f"spans could not be decoded: {exc}")
    except Exception as exc:
        return _unscored(job, f"trace could not be built: {type(exc).__name__}: {exc}")
    if evaluation is None:
        return Scored(job.trace_id, None, None)
    trace, verdict = evaluation.trace, evaluation.verdict
    try:
        patches = release_patches(release, trace, verdict)
        if json_spans.dropped and trace.root_span_id in patches:
            dropped = clean("; ".join(json_spans.dropped))
            patches[trace.root_span_id].attributes["semloop.input.dropped"] = dropped
        row = _row(trace, verdict, patches)
    except Exception as exc:
        return _unscored(job, f"verdict could not be written: {type(exc).__name__}: {exc}")
    return Scored(job.trace_id, patches, row)


def _unscored(job: TraceJob, reason: str) -> Scored:
    """A trace that could not be read, built or written: its first root marked unscored."""
    reason = clean(reason)
    verdict = Verdict.unscored(reason, partial=job.partial)
    patches: dict[str, SpanPatch] = {}
    if job.roots:  # the root's record is not readable: known by its id, its event at time 0
        root = SpanRecord(job.trace_id, job.roots[0], "", "", 0, 0)
        evaluation = unscored_evaluation(root, reason, job.partial)
        patches = patches_for(evaluation.trace, evaluation.verdict)
    row = TraceRow(
        trace_id=job.trace_id,
        root_span_id=job.roots[0] if job.roots else "",
        reason=reason,
        partial=job.partial,
        unscored_reason=reason,
        evaluation=evaluation_attributes(verdict),
    )
    return Scored(job.trace_id, patches, row)


def _row(trace: Trace, verdict: Verdict, patches: dict[str, SpanPatch]) -> TraceRow:
    root = trace.spans.get(trace.root_span_id)
    # The root's patch holds the evaluation record's attributes and time (its event) and
    # the redacted reason: taken from it rather than made and redacted again.
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
    agents = [s.agent or s.name for s in steps if s.kind is StepKind.AGENT]
    agent = agents[0] if agents else next((s.agent for s in steps if s.agent), "") or ""
    in_loop = verdict.in_loop_span_ids
    tools: tuple[str, ...] = ()
    if in_loop:
        tools = tuple(
            dict.fromkeys(s.name for s in steps if s.kind is StepKind.TOOL and s.span_id in in_loop)
        )
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
        start_ns=min((s.start_ns for s in spans if s.start_ns), default=0),
        end_ns=max((s.end_ns for s in spans if s.end_ns), default=0),
        partial=verdict.partial,
        unscored_reason=clean(verdict.unscored_reason, 300),
        event_ns=event_ns,
        evaluation=evaluation,
        loop_cost=loop_cost(trace, verdict),
    )
