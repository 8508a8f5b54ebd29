"""The service's logs signal: every OTLP log record forwarded as it came, and the GenAI ones
held with their trace until it is scored.

GenAI instrumentations put an LLM call's messages and tool calls in log records in the
chat span's context. :class:`LogRecords` queues every record for the logs downstream at
once, unchanged (records are never patched), and keeps the ``gen_ai.`` events that carry a
trace id (:class:`~otel_semloop.grouping.HeldLogs`, at most ``max_log_events``) until the
pipeline releases their trace and scoring puts them on their spans. Late records, the cap
and the counters are described in ``docs/service.md`` ("OTLP logs").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from otel_semloop.conventions import LogEvent
from otel_semloop.grouping import HeldLogs
from otel_semloop.otlp.records import log_event_from_proto
from otel_semloop.service.held import Accepted, Held, envelopes, item_cost
from otel_semloop.telemetry import SelfTelemetry

__all__ = ["LogRecords", "PreparedLogs", "prepare_logs"]


@dataclasses.dataclass(slots=True)
class PreparedLogs:
    """A logs request's records copied out, each as a :class:`Held` (the export queue
    frames them as it frames spans), and the GenAI events among them by trace id."""

    records: list[Held]
    events: list[tuple[bytes, LogEvent]]
    #: Bytes the records count against the memory limit.
    cost: int = 0


def prepare_logs(request: Any, size: int = 0, ticket: int = 0, skip: Any = None) -> PreparedLogs:
    """Copy a logs request's records out (touches no shared state). ``skip`` names records
    already delivered (durable replay) by their key, the record's index in the request as
    4 bytes."""
    cost = item_cost(request, size)
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
                records.append(Held(record.SerializeToString(), env_rl, env_sl, cost, ticket, key))
                event = log_event_from_proto(record)
                if event is not None:
                    events.append((record.trace_id, event))
    return PreparedLogs(records, events, cost * len(records))


class LogRecords:
    """Forwards log records and holds the GenAI events until their trace is released
    (see the module docstring). Loop-thread only; ``exports`` is the logs export queue."""

    def __init__(self, pipeline: Any, exports: Any, telemetry: SelfTelemetry, cap: int) -> None:
        self._pipeline = pipeline
        self._exports = exports
        self._telemetry = telemetry
        self.held: HeldLogs[LogEvent] = HeldLogs(cap)
        pipeline.log_events = self.held

    def hold(self, prepared: PreparedLogs) -> Accepted:
        """Queue every record for the logs downstream and hold the GenAI events whose trace
        has not left yet."""
        records = prepared.records
        self._exports.put(records)
        telemetry = self._telemetry
        telemetry.add("semloop.log_records", "received", len(records))
        held = late = 0
        dropped = self.held.dropped
        for trace_id, event in prepared.events:
            if self._pipeline.buffer.released(trace_id):
                late += 1
            else:
                self.held.add(trace_id, event)
                held += 1
        if self.held.dropped > dropped:
            telemetry.add("semloop.log_records", "dropped", self.held.dropped - dropped)
        if held:
            telemetry.add("semloop.log_records", "kept", held)
        if late:
            telemetry.add("semloop.log_records", "late", late)
        return Accepted(accepted=len(records))
