"""Turn one released trace (a :class:`~otel_semloop.grouping.Release`) into the spans to forward.

Each front door holds spans in its own representation (SDK ``ReadableSpan`` objects,
protobuf spans, OTLP JSON span dicts). A :class:`SpanAdapter` is what the core needs from
one: read a span as a :class:`~otel_semloop.model.SpanRecord`, give back a span carrying
a :class:`~otel_semloop.writeback.SpanPatch`, and tell its identity and parent so the
local root is found without building the trace. Everything else happens once, here:

* :func:`evaluate` (on a scoring thread): records (with the release's log events on their
  spans), :func:`~otel_semloop.builder.build_trace`, the scorer, staged verdicts reported
  as they come. It never changes the spans, so a thread abandoned past its budget cannot
  touch spans that already left.
* :func:`written_back` (whoever forwards the release, once): the patches applied, every
  other span forwarded as the original object.
* :func:`unscored`: only the local root is read and marked ``semloop.label=unscored``.
* :func:`local_root`: the span a verdict goes on when the trace was not built.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from otel_semloop.builder import build_trace
from otel_semloop.conventions import attach_log_records
from otel_semloop.grouping import Release
from otel_semloop.model import SpanRecord, Trace
from otel_semloop.scoring import Scorer, stages_of
from otel_semloop.verdict import Verdict
from otel_semloop.writeback import SpanPatch, release_patches

__all__ = [
    "Evaluation",
    "Evaluator",
    "Outcome",
    "SpanAdapter",
    "SpanLinks",
    "evaluate",
    "local_root",
    "root_trace",
    "unscored",
    "unscored_evaluation",
    "written_back",
    "yield_gil",
]

S = TypeVar("S")

#: Background work is cut into slices of this many spans, with the GIL offered between
#: them (see :func:`yield_gil`).
SLICE = 256


@dataclasses.dataclass(frozen=True, slots=True)
class SpanLinks:
    """What finding a local root needs of a span: its id, its parent's id (None for no
    parent), whether the parent is remote, and its start time."""

    span_id: Hashable
    parent_id: Hashable | None
    parent_is_remote: bool
    start_ns: int


class SpanAdapter(Protocol[S]):
    """A front door's span representation, as the core sees it."""

    def record(self, span: S) -> SpanRecord:
        """The span as a record; ``record.source`` must be ``span`` itself."""
        ...

    def patched(self, span: S, patch: SpanPatch) -> S:
        """The span to forward in place of ``span``, carrying ``patch`` (a copy, or the
        same object changed in place when nobody else can see it any more)."""
        ...

    def links(self, span: S) -> SpanLinks: ...

    def may_have_steps(self, spans: Sequence[S]) -> bool:
        """A cheap check (no conversion) whether any span may be an agent, LLM or tool
        step. Errs toward yes; a no forwards the release untouched without scoring."""
        ...


@dataclasses.dataclass(slots=True)
class Outcome(Generic[S]):
    """What to forward for one release: the spans in order, the verdict label (for the
    ``semloop.traces`` counter) and how many of the spans carry a patch."""

    spans: list[S]
    label: str = "none"
    patched: int = 0
    #: The trace and verdict written back, when there was one (for a front door's log).
    evaluation: Evaluation | None = None
    #: The attributes the root gained (for the loop metrics: ``semloop.loop.*``).
    root_attributes: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(slots=True)
class Evaluation:
    """A trace and a verdict for it (final, or the latest stage of a staged scorer)."""

    trace: Trace
    records: list[SpanRecord]
    verdict: Verdict
    #: The per-span patches when they were made elsewhere (a scoring process, where the
    #: whole trace was built): written back as they are, ``trace`` then holds only the
    #: root and ``records`` only ids and sources. None: made from ``trace`` here.
    patches: dict[str, SpanPatch] | None = None
    #: The front door's loop log line when it was made elsewhere (a scoring process);
    #: ``verdict`` is then slim: label, score, action, reason and the scorer's attributes,
    #: without findings (their patches were made where the findings were).
    summary: str | None = None
    #: What the root gained that the front door counts (what the loop cost), when the
    #: patches were made elsewhere and arrive applied (their ``SpanPatch`` is empty).
    root_attributes: Mapping[str, Any] | None = None


class Evaluator(Protocol[S]):
    """What a scoring thread calls to score one release: :func:`evaluate`, or a front
    door's own (the service's scores in worker processes)."""

    def __call__(
        self,
        release: Release[S],
        adapter: SpanAdapter[S],
        scorer: Scorer,
        on_stage: Callable[[Evaluation], None] | None = None,
    ) -> Evaluation | None: ...


def yield_gil() -> None:
    """Offer the GIL to the application between pieces of background work.

    ``time.sleep(0)`` releases the GIL; an application thread back from I/O and waiting
    for it takes it at once instead of waiting out the interpreter's 5 ms switch interval
    (``bench/processor_overhead.py`` shows the application's wall time this saves). In a
    process running one thread (a scoring process) nobody can be waiting: nothing to do.
    """
    if threading.active_count() > 1:
        time.sleep(0)


def evaluate(
    release: Release[S],
    adapter: SpanAdapter[S],
    scorer: Scorer,
    on_stage: Callable[[Evaluation], None] | None = None,
) -> Evaluation | None:
    """Score a release (runs on a scoring thread). None when the trace has no agent
    steps (it gains nothing and is forwarded untouched). ``on_stage`` sees each verdict
    of a staged scorer as it comes, so the latest one can be used if the budget runs out.
    Raises whatever the scorer raises."""
    records: list[SpanRecord] = []
    spans = release.spans
    for start in range(0, len(spans), SLICE):
        records.extend(adapter.record(span) for span in spans[start : start + SLICE])
        yield_gil()
    if release.logs:
        records = attach_log_records(records, release.logs)
    trace = build_trace(records, partial=release.partial)
    yield_gil()
    if not trace.steps:
        return None
    evaluation: Evaluation | None = None
    for verdict in stages_of(scorer, trace):
        evaluation = Evaluation(trace, records, verdict)
        if on_stage is not None:
            on_stage(evaluation)
    if evaluation is None:
        raise RuntimeError("score_stages yielded no verdict")
    yield_gil()
    return evaluation


def written_back(
    release: Release[S],
    adapter: SpanAdapter[S],
    evaluation: Evaluation,
    extra: Mapping[str, Any] | None = None,
) -> Outcome[S]:
    """The release's spans with ``evaluation``'s verdict applied: patched spans from
    ``adapter.patched``, the others as they are. ``extra`` attributes go on the root."""
    trace, verdict = evaluation.trace, evaluation.verdict
    patches = release_patches(release, trace, verdict, evaluation.patches)
    root_patch = patches.get(trace.root_span_id)
    if extra and root_patch is not None:
        root_patch.attributes.update(extra)
    out: list[S] = []
    patched = 0
    for record in evaluation.records:
        patch = patches.get(record.span_id)
        if patch is None:
            out.append(record.source)
        else:
            out.append(adapter.patched(record.source, patch))
            patched += 1
            if patched % SLICE == 0:
                yield_gil()
    if evaluation.root_attributes is not None:
        root_attributes: Mapping[str, Any] = evaluation.root_attributes
    else:
        root_attributes = root_patch.attributes if root_patch is not None else {}
    return Outcome(out, verdict.label.value, patched, evaluation, root_attributes)


def unscored(release: Release[S], adapter: SpanAdapter[S], reason: str) -> Outcome[S]:
    """Forward a release without a verdict: only its local root is read and marked
    (``semloop.label=unscored``, ``semloop.unscored.reason=reason``)."""
    root = local_root(release.spans, adapter)
    if root is None:
        return Outcome(list(release.spans), "unscored")
    evaluation = unscored_evaluation(adapter.record(root), reason, release.partial)
    copy = written_back(release, adapter, evaluation).spans[0]
    spans = [copy if span is root else span for span in release.spans]
    return Outcome(spans, "unscored", 1, evaluation)


def root_trace(root: SpanRecord | None, partial: bool) -> Trace:
    """A trace known only by its local root ``root`` (or by nothing): what a verdict made
    without building the trace, or elsewhere, is written and logged against."""
    if root is None:
        return Trace(trace_id="", steps=[], spans={}, root_span_id="", partial=partial)
    return Trace(
        trace_id=root.trace_id,
        steps=[],
        spans={root.span_id: root},
        root_span_id=root.span_id,
        partial=partial,
    )


def unscored_evaluation(root: SpanRecord, reason: str, partial: bool) -> Evaluation:
    """The unscored verdict of a trace known only by its local root ``root``."""
    return Evaluation(root_trace(root, partial), [root], Verdict.unscored(reason, partial=partial))


def local_root(spans: Sequence[S], adapter: SpanAdapter[S]) -> S | None:
    """The span a verdict goes on, found without building the trace: the earliest span
    with no parent, else the earliest whose parent is remote or not among ``spans``,
    else the first span. O(n)."""
    best: S | None = None
    best_start = 0
    links = [adapter.links(span) for span in spans]
    for span, link in zip(spans, links, strict=True):
        if link.parent_id is None and (best is None or link.start_ns < best_start):
            best, best_start = span, link.start_ns
    if best is not None:
        return best
    ids = {link.span_id for link in links}
    for span, link in zip(spans, links, strict=True):
        orphan = link.parent_is_remote or link.parent_id not in ids
        if orphan and (best is None or link.start_ns < best_start):
            best, best_start = span, link.start_ns
    return best if best is not None else (spans[0] if spans else None)
