"""The evaluation record: a verdict as the OTel GenAI ``gen_ai.evaluation.result`` event,
in the forms a backend can take it.

OpenTelemetry now asks for new events as log records (``event_name`` set, trace and span
ids of the evaluated span) rather than span events; backends such as Jaeger still show
only span events. So the same attributes are written three ways, all built here so every
front door writes the same record:

* the span event on the evaluated root (:func:`otel_semloop.writeback.evaluation_event`);
* a log record (:func:`log_record`), for ``rescore --emit evaluations`` and for a
  ``LoggerProvider`` in the processor and the service;
* a carrier span (:func:`carrier_span`): a child of the evaluated root, linked to it,
  carrying the attributes and the event, for backends that take only traces and for
  traces already stored (the spans themselves are not sent again, so nothing is
  duplicated).

Ids of carrier spans are derived from the evaluated trace and span ids, so rescoring the
same input twice gives the same records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, LogsData
from opentelemetry.proto.trace.v1.trace_pb2 import Span, TracesData

from otel_semloop.otlp.anyvalue import encode_attributes_pb
from otel_semloop.verdict import Label, Verdict
from otel_semloop.writeback import evaluation_event

__all__ = [
    "EVENT_NAME",
    "carrier_span",
    "evaluation_attributes",
    "log_record",
    "logs_data",
    "traces_data",
]

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "otel-semloop"
#: SeverityNumber INFO: an evaluation is a result, not a warning, even when it finds a loop.
_SEVERITY_INFO = 9


def evaluation_attributes(verdict: Verdict) -> dict[str, Any]:
    """The ``gen_ai.evaluation.*`` attributes of a verdict (the span event's attributes),
    plus ``error.type`` when the trace could not be scored."""
    attrs = dict(evaluation_event(verdict).attributes)
    if verdict.label is Label.UNSCORED:
        attrs["error.type"] = "unscored"
    return attrs


def log_record(attributes: Mapping[str, Any], trace_id: str, span_id: str, time_ns: int = 0) -> LogRecord:
    """One OTLP ``LogRecord`` with ``event_name`` ``gen_ai.evaluation.result`` parented to
    the evaluated span (``trace_id``/``span_id`` as hex)."""
    record = LogRecord(
        time_unix_nano=time_ns,
        observed_time_unix_nano=time_ns,
        severity_number=_SEVERITY_INFO,  # type: ignore[arg-type]
        severity_text="INFO",
        event_name=EVENT_NAME,
        trace_id=bytes.fromhex(trace_id),
        span_id=bytes.fromhex(span_id),
    )
    encode_attributes_pb(attributes, record.attributes)
    return record


def _derived_id(trace_id: str, span_id: str) -> bytes:
    return hashlib.sha256(f"semloop-evaluation:{trace_id}:{span_id}".encode()).digest()[:8]


def carrier_span(attributes: Mapping[str, Any], trace_id: str, span_id: str, time_ns: int = 0) -> Span:
    """A span in the evaluated trace, child of and linked to the evaluated span, carrying
    the evaluation attributes and the ``gen_ai.evaluation.result`` event."""
    span = Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=_derived_id(trace_id, span_id),
        parent_span_id=bytes.fromhex(span_id),
        name=f"evaluate {attributes.get('gen_ai.evaluation.name', 'semloop.loop')}",
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=time_ns,
        end_time_unix_nano=time_ns,
    )
    encode_attributes_pb(attributes, span.attributes)
    link = span.links.add()
    link.trace_id = bytes.fromhex(trace_id)
    link.span_id = bytes.fromhex(span_id)
    event = span.events.add()
    event.name = EVENT_NAME
    event.time_unix_nano = time_ns
    encode_attributes_pb(attributes, event.attributes)
    return span


def _resource(service_name: str) -> Any:
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource

    resource = Resource()
    encode_attributes_pb({"service.name": service_name}, resource.attributes)
    return resource


def logs_data(records: Iterable[LogRecord], service_name: str = "otel-semloop") -> LogsData:
    data = LogsData()
    rl = data.resource_logs.add()
    rl.resource.CopyFrom(_resource(service_name))
    sl = rl.scope_logs.add()
    sl.scope.CopyFrom(InstrumentationScope(name=SCOPE_NAME))
    sl.log_records.extend(records)
    return data


def traces_data(spans: Iterable[Span], service_name: str = "otel-semloop") -> TracesData:
    data = TracesData()
    rs = data.resource_spans.add()
    rs.resource.CopyFrom(_resource(service_name))
    ss = rs.scope_spans.add()
    ss.scope.CopyFrom(InstrumentationScope(name=SCOPE_NAME))
    ss.spans.extend(spans)
    return data
