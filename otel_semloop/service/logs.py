"""The service's logs signal: OTLP log records in, every one forwarded as it came, and the
GenAI ones held with their trace until it is scored.

OpenTelemetry's GenAI instrumentations put an LLM call's messages and tool calls in log
records (``gen_ai.user.message``, ``gen_ai.choice``, ...) in the chat span's context, so
the service receives logs beside traces. :class:`LogRecords` forwards every record at once,
unchanged, through a logs :class:`~otel_semloop.service.exporter.ExportQueue` (records are
never patched, so nothing about their trace delays them), and keeps the ``gen_ai.`` ones
that carry a trace and span id, decoded, under their trace id
(:class:`~otel_semloop.grouping.HeldLogs`, at most ``max_log_events``) until the pipeline
releases the trace and scoring puts them on their spans
(:func:`~otel_semloop.conventions.attach_log_records`). Arrival order, late records, the
cap and the counters are described in ``docs/service.md`` ("OTLP logs").
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from opentelemetry.proto.logs.v1 import logs_pb2

from otel_semloop.conventions import LogEvent
from otel_semloop.grouping import HeldLogs
from otel_semloop.otlp.records import log_event_from_proto
from otel_semloop.service.held import SPAN_OVERHEAD_BYTES, Accepted, Held, envelopes
from otel_semloop.telemetry import SelfTelemetry

__all__ = ["LogRecords", "PreparedLogs", "prepare_logs"]

#: Requests with more records than this are copied out on a thread.
_INLINE_RECORDS = 2000
_SERIALIZE = logs_pb2.LogRecord.SerializeToString


@dataclasses.dataclass(slots=True)
class PreparedLogs:
    """A logs request's records copied out: each as a :class:`Held` (its bytes under
    copies of its ``ResourceLogs``/``ScopeLogs`` envelopes: the export queue frames them as
    it frames spans) and the GenAI events among them by trace id."""

    records: list[Held]
    events: list[tuple[bytes, LogEvent]]


def prepare_logs(request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> PreparedLogs:
    """Copy a logs request's records out (touches no shared state: a large request is
    prepared on a thread). ``skip`` names records already delivered (durable replay) by
    their key, the record's index in the request as 4 bytes."""
    total = sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
    cost = (size // total if total else 0) + SPAN_OVERHEAD_BYTES
    records: list[Held] = []
    events: list[tuple[bytes, LogEvent]] = []
    index = 0
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            env_rl, env_sl = envelopes(rl, sl)
            for record in sl.log_records:
                key = index.to_bytes(4, "big") if ticket else b""
                index += 1
                if skip and key in skip:
                    continue
                records.append(Held(_SERIALIZE(record), env_rl, env_sl, cost, ticket, key))
                event = log_event_from_proto(record)
                if event is not None:
                    events.append((record.trace_id, event))
    return PreparedLogs(records, events)


class LogRecords:
    """What the logs receivers call (the receivers' ``Ingest``), and the hold of GenAI
    events the pipeline's releases take (see the module docstring). Loop-thread only.

    ``service`` is the :class:`~otel_semloop.service.server.SemloopService` (admission,
    refusal counts, accepted bytes, the durable queue), ``exports`` the logs export queue.
    """

    def __init__(self, service: Any, pipeline: Any, exports: Any, telemetry: SelfTelemetry, cap: int) -> None:
        self._service = service
        self._pipeline = pipeline
        self._exports = exports
        self._telemetry = telemetry
        self.held: HeldLogs[LogEvent] = HeldLogs(cap)
        pipeline.log_events = self.held

    # -- Ingest ------------------------------------------------------------------------------

    def admit(self, size: int) -> None:
        self._service.admit(size, self._exports)

    def refused(self, reason: str, spans: int = 0) -> None:
        self._service.refused(reason)

    async def accept(self, request: Any, size: int, raw: bytes | None = None) -> Accepted:
        """Forward and hold a decoded logs request (after :meth:`admit`); with a durable
        queue it is on disk before this returns."""
        self.admit(size)
        durable = self._service.durable
        ticket = 0
        if durable is not None:
            ticket = await durable.append(raw if raw is not None else request.SerializeToString(), "logs")
        records = sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
        if records > _INLINE_RECORDS:
            prepared = await asyncio.to_thread(prepare_logs, request, size, ticket)
        else:
            prepared = prepare_logs(request, size, ticket)
        result = self.hold(prepared)
        if durable is not None:
            durable.track(ticket, result.accepted)
        return result

    # -- the loop's part ---------------------------------------------------------------------

    def receive(self, request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> Accepted:
        """:meth:`accept` without admission or the durable queue (a durable replay)."""
        return self.hold(prepare_logs(request, size, ticket, skip))

    def hold(self, prepared: PreparedLogs) -> Accepted:
        """Queue every record for the logs downstream and hold the GenAI events whose trace
        has not left yet."""
        records = prepared.records
        self._exports.put(records)
        self._service.accepted_bytes += sum(held.cost for held in records)
        telemetry = self._telemetry
        telemetry.add("semloop.log_records", "received", len(records))
        released = self._pipeline.buffer.released
        held = late = 0
        for trace_id, event in prepared.events:
            if released(trace_id):
                late += 1
                continue
            dropped = self.held.dropped
            self.held.add(trace_id, event)
            held += 1
            if self.held.dropped != dropped:
                telemetry.add("semloop.log_records", "dropped")
        if held:
            telemetry.add("semloop.log_records", "kept", held)
        if late:
            telemetry.add("semloop.log_records", "late", late)
        return Accepted(accepted=len(records))
