"""Logs files beside the traces files: the GenAI log records (an LLM call's messages, as
``opentelemetry-instrumentation-openai-v2`` emits them) joined to their spans before a
trace is scored.

A logs file is told by its first unit (:func:`split_logs`): a JSON line with
``resourceLogs``, or a protobuf message that is ``LogsData`` with records and no span. A
stream is always read as traces (it can be read only once); logs files alone are an input
error. :func:`read_log_events` reads them first, whole: each GenAI event with a trace and
span id, by trace id, for the scoring jobs (``TraceJob.logs``); they are held for the run
and not written to the output. ``--engine dask`` does not read logs files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import orjson
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.inputs import DEFAULT_MAX_UNIT_BYTES, InputError, ReadState, Source, iter_units
from otel_semloop.batch.units import InputProblem, Spool, Unit
from otel_semloop.conventions import LogEvent
from otel_semloop.errors import OTLPDecodeError
from otel_semloop.otlp.codec import json_to_logs
from otel_semloop.otlp.records import log_event_from_proto

__all__ = ["read_log_events", "split_logs"]


def _is_logs(unit: Unit) -> bool:
    if unit.error is not None or unit.spooled is not None or not unit.raw:
        return False
    if unit.kind == "json":
        try:
            head = orjson.loads(unit.raw)
        except orjson.JSONDecodeError:
            return False
        return type(head) is dict and "resourceLogs" in head and "resourceSpans" not in head
    try:
        traces = TracesData.FromString(unit.raw)
        if any(
            len(s.trace_id) == 16 for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans
        ):
            return False
    except Exception:  # not TracesData: maybe logs
        pass
    try:
        logs = LogsData.FromString(unit.raw)
    except Exception:
        return False
    return any(sl.log_records for rl in logs.resource_logs for sl in rl.scope_logs)


def _first_unit_is_logs(source: Source, max_unit_bytes: int) -> bool:
    state = ReadState([], Spool())
    try:
        for unit in iter_units([source], state, max_unit_bytes=max_unit_bytes):
            return _is_logs(unit)
        return False
    finally:
        state.spool.close()


def split_logs(
    sources: list[Source], max_unit_bytes: int = DEFAULT_MAX_UNIT_BYTES
) -> tuple[list[Source], list[Source]]:
    """``(traces sources, logs sources)``, each in the order given, by content (see the
    module docstring). Raises :class:`~otel_semloop.batch.inputs.InputError` when every
    input is a logs file."""
    traces: list[Source] = []
    logs: list[Source] = []
    for source in sources:
        # a stream (stdin, a FIFO, a character device) can be read only once: traces
        is_logs = os.path.isfile(source.path) and _first_unit_is_logs(source, max_unit_bytes)
        (logs if is_logs else traces).append(source)
    if logs and not traces:
        names = ", ".join(source.label for source in logs)
        raise InputError(
            f"only OTLP logs given ({names}): rescore scores traces; give the traces files "
            "too (the log records are joined to their spans)"
        )
    return traces, logs


def read_log_events(
    sources: Iterable[Source], state: ReadState, max_unit_bytes: int = DEFAULT_MAX_UNIT_BYTES
) -> dict[str, tuple[LogEvent, ...]]:
    """The GenAI events of the logs files ``sources`` by hex trace id; a unit that is not
    OTLP logs goes to ``state.problems``."""
    found: dict[str, list[LogEvent]] = {}
    for unit in iter_units(list(sources), state, max_unit_bytes=max_unit_bytes):
        if unit.error is not None or unit.spooled is not None:
            state.problems.append(InputProblem(unit.where, unit.error or "logs unit too long; skipped"))
            continue
        try:
            if unit.kind == "json":
                logs = json_to_logs(orjson.loads(unit.raw), where=unit.where)
            else:
                logs = LogsData.FromString(unit.raw)
        except (OTLPDecodeError, orjson.JSONDecodeError) as exc:
            state.problems.append(InputProblem(unit.where, f"not OTLP logs: {exc}"))
            continue
        except Exception as exc:
            state.problems.append(InputProblem(unit.where, f"not an OTLP LogsData message: {exc}"))
            continue
        for rl in logs.resource_logs:
            for sl in rl.scope_logs:
                for record in sl.log_records:
                    event = log_event_from_proto(record)
                    if event is not None:
                        found.setdefault(record.trace_id.hex(), []).append(event)
    return {trace_id: tuple(events) for trace_id, events in found.items()}
