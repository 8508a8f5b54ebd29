"""A scoring process: the worker's side of :mod:`otel_semloop.service.processes`' pipe.

A batch comes in pickled: per release its spans' wire bytes, whether it is partial and its
GenAI log events. Each release is scored as every front door scores one, by
:func:`~otel_semloop.release.evaluate` and :func:`~otel_semloop.release.written_back`
through the service's own adapter; a :class:`Scored` goes back per release (None without
agent steps, or the exception its scoring raised). This module imports no gRPC or asyncio:
the fork server preloads it.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

from otel_semloop.conventions import LogEvent
from otel_semloop.grouping import Release, ReleaseReason
from otel_semloop.model import Trace
from otel_semloop.redact import safe_text
from otel_semloop.release import evaluate, written_back
from otel_semloop.scoring import DetectorScorer, collector_paused
from otel_semloop.service.held import PROTO_SPANS, Held
from otel_semloop.verdict import Label, Verdict

__all__ = ["READY", "Scored", "loop_summary", "score_release", "worker_main"]

#: What a worker sends once it is warm (imports done, the scorer built).
READY = b"ready"

#: A batch as it crosses the pipe: per release its spans' wire bytes and ``partial``.
Batch = list[tuple[list[bytes], bool, tuple[LogEvent, ...]]]


@dataclasses.dataclass(slots=True)
class Scored:
    """What a scoring process sends back for a release with agent steps."""

    #: The verdict without what only its patches needed (findings, the lexical result,
    #: the loop's span ids, calibration).
    verdict: Verdict
    #: The index of the root span (the one the verdict is written on) among the
    #: release's spans, -1 when there is none.
    root_index: int
    #: ``(span index, patched wire bytes)`` for each span the verdict changed.
    patched: list[tuple[int, bytes]]
    #: The service's loop log line (:func:`loop_summary`) for a loop, else None.
    summary: str | None
    #: What the loop cost: the ``semloop.loop.*`` and ``semloop.trace.*`` attributes the
    #: root gained (empty without a loop), for the service's loop metrics.
    loop_cost: dict[str, Any] = dataclasses.field(default_factory=dict)


def worker_main(conn: Any, mode: str) -> None:
    """A scoring process: a pickled :data:`Batch` in, per release a :class:`Scored`, None
    or an exception out, until the pipe closes."""
    scorer = DetectorScorer(mode=mode)  # type: ignore[arg-type]
    score_release([], False, scorer)  # imports done before the worker reports ready
    conn.send_bytes(READY)
    while True:
        try:
            batch: Batch = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        with collector_paused():
            results = [_score_or_error(spans, partial, scorer, logs) for spans, partial, logs in batch]
        try:
            reply = pickle.dumps(results, pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle: only its release says so
            reply = pickle.dumps([_picklable(result) for result in results], pickle.HIGHEST_PROTOCOL)
        try:
            conn.send_bytes(reply)
        except (EOFError, OSError):
            return


def _score_or_error(
    spans: list[bytes], partial: bool, scorer: DetectorScorer, logs: tuple[LogEvent, ...] = ()
) -> Scored | Exception | None:
    try:
        return score_release(spans, partial, scorer, logs)
    except Exception as exc:  # the trace goes out unscored with this error's type
        return exc


def score_release(
    spans: list[bytes], partial: bool, scorer: DetectorScorer, logs: tuple[LogEvent, ...] = ()
) -> Scored | None:
    """Score one release's spans (with its GenAI log events ``logs``) and patch them; None
    when the trace has no agent steps."""
    held = [Held(data, None, None) for data in spans]
    # root_ended=not partial: the release is partial exactly when the service's was.
    release = Release(None, held, ReleaseReason.COMPLETE, root_ended=not partial, logs=logs)
    evaluation = evaluate(release, PROTO_SPANS, scorer)
    if evaluation is None:
        return None
    outcome = written_back(release, PROTO_SPANS, evaluation)
    # PROTO_SPANS patches a span in place, decoding it: a span without its bytes changed.
    patched = [(index, span.serialized()) for index, span in enumerate(held) if span.wire is None]
    trace, verdict = evaluation.trace, evaluation.verdict
    root = trace.spans.get(trace.root_span_id) if trace.root_span_id else None
    root_index = held.index(root.source) if root is not None else -1
    summary = loop_summary(trace, verdict) if verdict.label is Label.LOOP else None
    gained = outcome.root_attributes.items()
    cost = {key: value for key, value in gained if key.startswith(("semloop.loop.", "semloop.trace."))}
    # What the service reads of the verdict: the findings' patches are on the spans already.
    sent = dataclasses.replace(
        verdict, findings=(), lexical=None, in_loop_span_ids=frozenset(), calibration={}
    )
    return Scored(sent, root_index, patched, summary, cost)


def loop_summary(trace: Trace, verdict: Verdict) -> str:
    """The service's loop log line: one JSON object with the trace id, agent, signals,
    score, action, reason and partial flag. The reason is redacted and cleaned of control
    characters (:func:`~otel_semloop.redact.safe_text`: a tool name can neither leak a
    secret into the log nor forge a line)."""
    root = trace.spans.get(trace.root_span_id) if trace.root_span_id else None
    agent = ""
    if root is not None:
        agent = str(root.attributes.get("gen_ai.agent.name") or root.name)
    return json.dumps(
        {
            "trace_id": trace.trace_id,
            "agent": agent[:200],
            "signals": list(verdict.fired_signals),
            "score": round(verdict.score, 3),
            "action": verdict.action.value,
            "reason": safe_text(str(verdict.reason or ""))[:500],
            "partial": trace.partial,
        },
        ensure_ascii=True,
    )


def _picklable(result: Scored | Exception | None) -> Scored | Exception | None:
    try:
        pickle.dumps(result)
    except Exception as exc:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return result
