"""GenAI log records for the span processor: message content that is not on the spans.

OpenTelemetry's GenAI instrumentations (``opentelemetry-instrumentation-openai-v2`` and
its siblings, with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``) emit an LLM
call's messages as *log records* (``gen_ai.user.message``, ``gen_ai.choice``, ... with the
content in the body) in the chat span's context, and leave the span without content.

:class:`SemloopLogProcessor` is an SDK ``LogRecordProcessor`` the application adds to its
``LoggerProvider`` beside its own exporting processor (from
:attr:`SemloopSpanProcessor.log_record_processor
<otel_semloop.processor.SemloopSpanProcessor.log_record_processor>`). It only observes: it
never changes, drops or delays a record. A record with a span context whose event name
(``event_name`` or the ``event.name`` attribute) starts with ``gen_ai.`` is kept as a
:class:`~otel_semloop.conventions.LogEvent` under its trace; the trace's release takes its
events and :func:`~otel_semloop.release.evaluate` puts them on their spans before scoring.
Records of unsampled traces, without a span context or with another name are ignored.

Bounds: :class:`~otel_semloop.grouping.HeldLogs` keeps at most ``max_log_events`` events,
dropping and counting the oldest (``stats()["logs.dropped"]``); events whose trace never
comes, or comes after its release, stay only until the cap pushes them out. On the
application's thread: a name check, a small attribute copy and an append to the span
processor's event queue, without a lock; ``on_emit`` never raises.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk._logs import LogRecordProcessor

from otel_semloop.conventions import GENAI_EVENT_PREFIX, LogEvent, is_genai_event
from otel_semloop.grouping import HeldLogs

if TYPE_CHECKING:
    from otel_semloop.processor.span_processor import SemloopSpanProcessor

__all__ = ["GENAI_EVENT_PREFIX", "HeldLogs", "SemloopLogProcessor"]


class SemloopLogProcessor(LogRecordProcessor):
    """Keeps the GenAI log records of the traces its span processor holds; see the module
    docstring. Add it with ``logger_provider.add_log_record_processor(...)``; its
    ``shutdown`` and ``force_flush`` do nothing (the span processor owns what is held)."""

    def __init__(self, span_processor: SemloopSpanProcessor) -> None:
        # Weak: a LoggerProvider that outlives the span processor must not keep it (and
        # the spans it holds) alive; its worker forwards what it held when it is collected.
        self._span_processor = weakref.ref(span_processor)

    def on_emit(self, log_record: Any) -> None:
        # SDK 1.45 passes a ReadWriteLogRecord, earlier ones (still >= the 1.40 floor) may
        # pass a LogData: both hold the API record under ``log_record``.
        owner = self._span_processor()
        if owner is None:
            return
        try:
            record = getattr(log_record, "log_record", log_record)
            trace_id = record.trace_id
            span_id = record.span_id
            if not trace_id or not span_id:
                return
            flags = record.trace_flags
            if flags is not None and not int(flags) & 1:  # TraceFlags.SAMPLED
                return  # its spans bypass the buffer: nothing would ever take it
            attributes = record.attributes
            name = record.event_name or (attributes.get("event.name") if attributes else None)
            if not is_genai_event(name):
                return
            event = LogEvent(
                format(span_id, "016x"),
                name,
                record.timestamp or record.observed_timestamp or 0,
                dict(attributes) if attributes else {},
                record.body,
            )
            owner._hold_log_event(trace_id, event)
        except Exception:
            owner._app_error("on_emit")

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
