"""A scoring process: the worker's side of :mod:`otel_semloop.service.processes`' pipe.

What it does with a batch: ``(full, [(span bytes, partial, log events), ...])`` comes in,
pickled; each release's spans are decoded into records (its GenAI log events put on their
spans: :func:`~otel_semloop.conventions.attach_log_records`) and scored
(:func:`~otel_semloop.scoring.score_records`: trace build, detectors, policy, patches)
with the cyclic collector paused, the patches are written onto the spans it decoded
(as protobuf fields appended to a span's bytes: :mod:`otel_semloop.service.wirepatch`;
``semloop.in_loop`` alone as constant bytes) and per release a verdict, the root's index
and head and the patched spans' bytes go back (:func:`_score_one`). Unless ``full`` (the
service publishes evaluation records, which need the whole verdict and root), the
verdict crosses the pipe slim (:class:`_Slim`) and the loop log line
(:func:`loop_summary`) is made here, so the service process unpickles a few fields per
trace and decodes no root.

Pickling (:func:`_dumps`): the verdict's dataclasses are reduced to their field values
(the default for a slotted dataclass calls ``dataclasses.fields`` for every object on
both sides). An exception that does not pickle becomes a ``RuntimeError`` naming it,
for its own release only.

This module imports no gRPC or asyncio machinery: the fork server preloads it, and the
workers forked from it start with the scoring code imported.
"""

from __future__ import annotations

import copyreg
import dataclasses
import gc
import io
import json
import pickle
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.conventions import LogEvent, attach_log_records
from otel_semloop.model import SpanRecord, Trace
from otel_semloop.otlp import apply_patch_proto, record_from_proto_span
from otel_semloop.redact import safe_text
from otel_semloop.scoring import collector_paused, score_records
from otel_semloop.service.wirepatch import appended
from otel_semloop.verdict import Finding, Label, LexicalResult, Verdict

__all__ = ["READY", "loop_summary", "root_trace", "worker_main"]

#: What a worker sends once it is warm (imports done, the scorer built).
READY = b"ready"


def worker_main(conn: Any, mode: str) -> None:
    """A scoring process: ``(full, [(span bytes, partial, log events), ...])`` in; per release what
    :func:`_score_one` returns, until the pipe closes."""
    score_records([], mode=mode)  # type: ignore[arg-type]  # imports and the scorer, before ready
    # What start-up left alive lives as long as the process: out of the collector's sight.
    gc.collect()
    gc.freeze()
    conn.send_bytes(READY)
    while True:
        try:
            full, batch = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        with collector_paused():
            results = [_score_one(spans, partial, mode, full, logs) for spans, partial, logs in batch]
        try:
            reply = _dumps(results)
        except Exception:  # an exception that does not pickle: only its release says so
            reply = _dumps([_picklable(result) for result in results])
        try:
            conn.send_bytes(reply)
        except (EOFError, OSError):
            return


def _score_one(
    spans: list[bytes], partial: bool, mode: str, full: bool = True, logs: Sequence[LogEvent] = ()
) -> tuple[str, Any]:
    """Score one release's spans: ``("ok", None)`` without agent steps, else ``("ok",
    (verdict, root index, (trace id, root span id, name, agent) or None, [(span index,
    patched span bytes)], loop log line or None))``, or ``("error", exception)``.

    The patches are applied here, to the spans this process decoded anyway, so the
    service process only swaps bytes. Unless ``full``, the verdict sent back is slim
    (:func:`_slim`) and a loop's log line is made here (:func:`loop_summary`): the
    service then unpickles a few fields instead of every finding."""
    span_from = _SPAN_FROM
    try:
        messages = [span_from(data) for data in spans]
        records = [record_from_proto_span(message) for message in messages]
        if logs:
            records = attach_log_records(records, logs)
        scored = score_records(records, partial=partial, mode=mode)  # type: ignore[arg-type]
        if scored is None:
            return ("ok", None)
        verdict, patches = scored
        root = -1
        patched: list[tuple[int, bytes]] = []
        for index, record in enumerate(records):
            patch = patches.get(record.span_id)
            if patch is None:
                continue
            if patch.events and root < 0:
                root = index
            if not patch.events and _only_in_loop(patch.attributes) and _IN_LOOP not in record.attributes:
                wire: bytes | None = spans[index] + _IN_LOOP_FIELD  # the common patch, encoded once
            else:  # new attributes and events as fields appended to the span's bytes
                wire = appended(spans[index], record.attributes, patch)
            if wire is None:  # a key the span has, or a value appended() does not encode
                message = messages[index]
                apply_patch_proto(message, patch)
                wire = message.SerializeToString()
            patched.append((index, wire))
        head: tuple[str, str, str, str] | None = None
        if root >= 0:  # what the loop log line reads of the root: no decoding for it there
            record = records[root]
            agent = record.attributes.get("gen_ai.agent.name")
            head = (record.trace_id, record.span_id, record.name, agent if isinstance(agent, str) else "")
        if full:
            return ("ok", (verdict, root, head, patched, None))
        line = None
        if verdict.label is Label.LOOP:  # the root patch's signals and redacted reason, made once
            made = patches[head[1]].attributes if head is not None else {}
            signals, reason = made.get("semloop.signals"), made.get("semloop.reason")
            line = loop_summary(
                root_trace(head, partial),
                verdict,
                signals=signals if isinstance(signals, list) else None,
                safe_reason=reason if isinstance(reason, str) else None,
            )
        return ("ok", (_slim(verdict), root, head, patched, line))
    except Exception as exc:  # the trace goes out unscored with this error's type
        return ("error", exc)


_IN_LOOP = "semloop.in_loop"
#: ``semloop.in_loop=true`` as the bytes of one ``Span.attributes`` entry (field 9), as
#: :func:`~otel_semloop.service.wirepatch.appended` writes it.
_IN_LOOP_FIELD = trace_pb2.Span(
    attributes=[common_pb2.KeyValue(key=_IN_LOOP, value=common_pb2.AnyValue(bool_value=True))]
).SerializeToString()


def _only_in_loop(attributes: Any) -> bool:
    return len(attributes) == 1 and attributes.get(_IN_LOOP) is True


class _Slim:
    """Pickles as the verdict without what only the worker reads (findings, the lexical
    result, the loop's span ids, calibration: their patches are already on the spans):
    what the service's label counts, log and pool read (label, score, action, reason,
    partial, scorer attributes) crosses the pipe and unpickles as a :class:`Verdict`.
    (A wrapper rather than a copy: ``dataclasses.replace`` cost the worker ~2 us a span.)"""

    __slots__ = ("verdict",)

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    def __reduce__(self) -> tuple[Any, ...]:
        verdict = self.verdict
        values = []
        for name in _FIELDS[Verdict]:
            if name in _SLIM_DROPPED:
                values.append({} if name == "calibration" else _SLIM_DROPPED[name])
            else:
                values.append(getattr(verdict, name))
        return (_rebuild, (Verdict, tuple(values)))


#: What a slim verdict holds in place of the fields only the worker reads (their defaults;
#: ``calibration`` an empty dict of its own, not one shared by a batch's verdicts).
_SLIM_DROPPED: dict[str, Any] = {
    "findings": (),
    "lexical": None,
    "in_loop_span_ids": frozenset(),
    "calibration": None,
}


def _slim(verdict: Verdict) -> _Slim:
    return _Slim(verdict)


def loop_summary(
    trace: Trace,
    verdict: Verdict,
    *,
    signals: Sequence[str] | None = None,
    safe_reason: str | None = None,
) -> str:
    """The service's loop log line: one JSON object with the trace id, agent, signals,
    score, action, reason and partial flag. The reason is redacted and cleaned of control
    characters (:func:`~otel_semloop.redact.safe_text`: a tool name can neither leak a
    secret into the log nor forge a line). ``signals`` and ``safe_reason``: the verdict's
    fired signals and redacted reason when the caller has them (the root's patch)."""
    root = trace.spans.get(trace.root_span_id) if trace.root_span_id else None
    agent = ""
    if root is not None:
        attributes = root.attributes
        agent = str(attributes.get("gen_ai.agent.name") or root.name)
    if safe_reason is None:
        safe_reason = safe_text(str(getattr(verdict, "reason", "") or ""))
    return json.dumps(
        {
            "trace_id": trace.trace_id,
            "agent": agent[:200],
            "signals": list(verdict.fired_signals if signals is None else signals),
            "score": round(verdict.score, 3),
            "action": verdict.action.value,
            "reason": safe_reason[:500],
            "partial": trace.partial,
        },
        ensure_ascii=True,
    )


def root_trace(head: tuple[str, str, str, str] | None, partial: bool) -> Trace:
    """A trace holding only the root's record as the worker read it (ids, name,
    ``gen_ai.agent.name``): what the loop log line reads."""
    if head is None:
        return Trace(trace_id="", steps=[], spans={}, root_span_id="", partial=partial)
    trace_id, root_id, name, agent = head
    attributes = {"gen_ai.agent.name": agent} if agent else {}
    record = SpanRecord(trace_id, root_id, "", name, 0, 0, attributes)
    return Trace(trace_id=trace_id, steps=[], spans={root_id: record}, root_span_id=root_id, partial=partial)


def _picklable(result: tuple[str, Any]) -> tuple[str, Any]:
    try:
        _dumps(result)
    except Exception as exc:
        return ("error", RuntimeError(f"{type(exc).__name__}: {exc}"))
    return result


_SPAN_FROM = trace_pb2.Span.FromString


def _dumps(obj: Any) -> bytes:
    """``pickle.dumps`` with the verdict's dataclasses reduced to their field values: the
    default for a slotted dataclass calls ``dataclasses.fields`` for every object on
    both sides (a good part of the service process's unpickling)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(obj)
    return buffer.getvalue()


def _reduce(obj: Any) -> tuple[Any, ...]:
    cls = type(obj)
    return (_rebuild, (cls, tuple([getattr(obj, name) for name in _FIELDS[cls]])))


def _rebuild(cls: type, values: tuple[Any, ...]) -> Any:
    """The object :func:`_reduce` took apart (its fields set as a frozen dataclass's
    ``__init__`` sets them; these classes have no ``__post_init__``)."""
    obj = cls.__new__(cls)
    for name, value in zip(_FIELDS[cls], values, strict=True):
        object.__setattr__(obj, name, value)
    return obj


_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(field.name for field in dataclasses.fields(cls)) for cls in (Verdict, Finding, LexicalResult)
}
_DISPATCH = {**copyreg.dispatch_table, **dict.fromkeys(_FIELDS, _reduce)}
