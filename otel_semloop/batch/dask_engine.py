"""``rescore --engine dask`` (docs/rescore.md, "Scale-out with Dask"): each input file is
read and scanned on a worker, spans are shuffled by trace id so each trace is scored whole
on one worker by the local engine's job and scoring functions, and only patches and summary
rows come back; the client then rewrites the inputs in order with the same writer. The
output is byte-identical to the local engine's (there every trace completes inside its
window; here traces are whole by construction, so spans the local engine would count as
late are scored with their trace).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from otel_semloop.batch.engine import EngineOptions, EngineStats
from otel_semloop.batch.inputs import ReadState, Source, iter_units
from otel_semloop.batch.pending import PendingUnit, patch_unit, read_unit, rendered
from otel_semloop.batch.scan import UnitSpans
from otel_semloop.batch.units import InputProblem, Spool
from otel_semloop.batch.worker import Scored, ScorerSpec, score_jobs, trace_job

__all__ = ["run_dask"]

_PARTITIONS_PER_WORKER = 4


def _scan_file(path: str, index: int, max_unit_bytes: int) -> list[tuple[str, tuple[Any, UnitSpans]]]:
    """The spans of one file, each trace's of one unit together, as ``(trace_id, ((file,
    unit, first span), spans))``. Units that do not parse are left out here (the client
    reports them)."""
    out: list[tuple[str, tuple[Any, UnitSpans]]] = []
    state = ReadState([], Spool())
    try:
        for unit in iter_units([Source(path)], state, max_unit_bytes=max_unit_bytes):
            read = read_unit(unit)
            if isinstance(read, InputProblem):
                continue
            for tid, spans in read[1].items():
                out.append((tid, ((index, unit.seq, spans.first), spans)))
    finally:
        state.spool.close()
    return out


def _score_group(group: tuple[str, list[tuple[Any, UnitSpans]]], spec: ScorerSpec) -> tuple[Scored, Any]:
    tid, items = group
    items = sorted(items, key=lambda item: item[0])  # input order, as the local engine has them
    held = [spans for _, spans in items]
    roots = tuple(root for spans in held for root in spans.roots)
    (scored,) = score_jobs([trace_job(tid, held, roots)], spec)
    return scored, items[0][0]


def _client(scheduler: str | None, workers: int) -> tuple[Any, Any]:
    """A client of the scheduler at ``scheduler``, else of a new local cluster (then also
    returned, to close); the caller has checked that the dask extra is installed."""
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler), None
    import logging

    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    return Client(cluster), cluster


def run_dask(
    sources: list[Source],
    options: EngineOptions,
    write: Callable[..., None],
    state: ReadState,
    *,
    max_unit_bytes: int,
    scheduler: str | None = None,
) -> EngineStats:
    """Score on the cluster, then write every unit in input order (see the module doc)."""
    import os

    import dask.bag as db

    workers = options.workers or (os.cpu_count() or 1)
    client, cluster = _client(scheduler, workers)
    try:
        paths = [s.path for s in sources]
        bag = db.from_sequence(list(enumerate(paths)), npartitions=max(1, len(paths)))
        spans = bag.map_partitions(
            lambda part: [item for index, path in part for item in _scan_file(path, index, max_unit_bytes)]
        )
        n_workers = max(1, len(client.scheduler_info().get("workers", {})) or workers)
        groups = spans.groupby(
            lambda item: item[0], npartitions=n_workers * _PARTITIONS_PER_WORKER, shuffle="tasks"
        )
        groups = groups.map(lambda g: (g[0], [item for _, item in g[1]]))
        spec = options.spec
        results = groups.map(_score_group, spec=spec).compute()
        stats = EngineStats(workers=n_workers)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    patches: dict[str, dict[str, Any]] = {}
    rows = []
    for scored, first in results:
        stats.traces += 1
        if scored.patches:
            patches[scored.trace_id] = scored.patches
        if scored.row is not None:
            rows.append((first, scored.row))
            stats.loops += scored.row.label == "loop"
    rows.sort(key=lambda item: item[0])
    stats.rows = [row for _, row in rows]
    _rewrite(sources, state, patches, write, stats, max_unit_bytes, options.output_format)
    return stats


def _rewrite(
    sources: list[Source],
    state: ReadState,
    patches: dict[str, dict[str, Any]],
    write: Callable[..., None],
    stats: EngineStats,
    max_unit_bytes: int,
    output_format: str,
) -> None:
    """Every unit in input order to ``write``, as the local engine writes it."""
    for unit in iter_units(sources, state, max_unit_bytes=max_unit_bytes):
        stats.units += 1
        pending = PendingUnit(unit, stats.units)
        read = read_unit(unit)
        if isinstance(read, InputProblem):
            unit.error = read.message
            stats.malformed.append(read)
        else:
            pending.doc, by_trace = read
            stats.spans += sum(len(spans.spans) for spans in by_trace.values())
            pending.dirty = patch_unit(by_trace, patches)
        write(unit, rendered(pending, output_format), pending.dirty)
