"""Batch rescoring of exported OTLP files: the engine behind ``otel-semloop rescore``.

The Collector's file exporter writes one export batch per line, not one trace per line:
a trace's spans can sit on many lines and in several files. So every input is read first,
spans are grouped by trace id across all of them, each agent trace is scored once, its
patches are applied to the decoded span dicts in place, and every line is written back in
its original order. Lines that are not valid OTLP are reported with their file and line
number and copied through unchanged: nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from otel_semloop.builder import build_trace
from otel_semloop.errors import OTLPDecodeError
from otel_semloop.model import SpanRecord
from otel_semloop.otlp import Batch, apply_patch_json, iter_json_lines, write_json_line
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Verdict
from otel_semloop.writeback import patches_for


@dataclass(frozen=True, slots=True)
class TraceResult:
    """One scored agent trace, for the summary table."""

    trace_id: str
    root_name: str
    steps: int
    verdict: Verdict


@dataclass(slots=True)
class RescoreReport:
    results: list[TraceResult] = field(default_factory=list)
    errors: list[OTLPDecodeError] = field(default_factory=list)
    spans: int = 0
    lines: int = 0
    skipped_traces: int = 0


def rescore_files(
    inputs: Sequence[str | Path], output: BinaryIO, scorer: Scorer | None = None
) -> RescoreReport:
    """Read every input, score every agent trace, write all lines to ``output``."""
    batches = [batch for path in inputs for batch in iter_json_lines(path)]
    report = rescore_batches(batches, scorer or Scorer())
    for batch in batches:
        write_json_line(output, batch)
    return report


def rescore_batches(batches: Iterable[Batch], scorer: Scorer) -> RescoreReport:
    """Score the agent traces in ``batches`` and patch their span dicts in place."""
    report = RescoreReport()
    by_trace: dict[str, list[SpanRecord]] = {}
    for batch in batches:
        report.lines += 1
        if batch.error is not None:
            report.errors.append(batch.error)
            continue
        for record in batch.records:
            by_trace.setdefault(record.trace_id, []).append(record)
            report.spans += 1
    traces = []
    for records in by_trace.values():
        trace = build_trace(records)
        if not trace.steps:
            report.skipped_traces += 1
            continue
        traces.append(trace)
    # A judged scorer sends every trace's request at once (its concurrency limit applies).
    score_batch = getattr(scorer, "score_batch", None)
    verdicts = score_batch(traces) if score_batch is not None else [scorer.score(t) for t in traces]
    for trace, verdict in zip(traces, verdicts, strict=True):
        for span_id, patch in patches_for(trace, verdict).items():
            apply_patch_json(trace.spans[span_id].source, patch)
        root = trace.spans.get(trace.root_span_id)
        report.results.append(
            TraceResult(trace.trace_id, root.name if root else "", len(trace.steps), verdict)
        )
    return report
