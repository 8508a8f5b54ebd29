"""The evaluation record: one ``gen_ai.evaluation.result`` per scored trace, built once and
delivered every way a backend can read it.

The GenAI conventions define the evaluation result as an event parented to the evaluated
span; OpenTelemetry carries new events as log records, Jaeger and Honeycomb show span
events, and Arize Phoenix lists span annotations among its evaluations. So the record is
written:

* as a span event on the root span, always (:func:`evaluation_event`, through
  :mod:`otel_semloop.writeback`);
* as a log record, when a ``LoggerProvider`` is configured or ``SEMLOOP_EVALUATION_LOGS``
  is ``true`` (:func:`emit_log_record`; :func:`logs_data_json` for ``rescore``'s files);
* as a Phoenix span annotation, opt-in (:mod:`otel_semloop.phoenix`).

Every front door builds it with :func:`evaluation_record` and hands it to an
:class:`EvaluationPublisher`, so it has one shape wherever it lands (attributes:
``docs/architecture.md``, "Contracts").
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from otel_semloop.model import AttributeValue, EventRecord, Trace
from otel_semloop.redact import safe_text
from otel_semloop.verdict import Label, Verdict

if TYPE_CHECKING:  # pragma: no cover
    from opentelemetry._logs import Logger, LoggerProvider

    from otel_semloop.phoenix import PhoenixAnnotator

__all__ = [
    "EVALUATION_NAME",
    "EVENT_NAME",
    "EvaluationPublisher",
    "EvaluationRecord",
    "emit_log_record",
    "evaluation_attributes",
    "evaluation_event",
    "evaluation_record",
    "logs_data_json",
]

_logger = logging.getLogger(__name__)

#: The event (span event name and log record ``event_name``) of the GenAI conventions.
EVENT_NAME = "gen_ai.evaluation.result"
#: ``gen_ai.evaluation.name`` of every record this package writes.
EVALUATION_NAME = "semloop.loop"
#: The instrumentation scope of the log records.
SCOPE_NAME = "otel_semloop"
#: OTLP ``SeverityNumber`` INFO: an evaluation result is information, whatever it says.
SEVERITY_INFO = 9

#: ``error.type`` for the unscored reasons that are failures of the evaluation itself (a
#: trace with no agent steps is not a failure: it was not evaluated, and gets no record).
_ERROR_TYPES = {
    "scoring budget exceeded": "timeout",
    "scoring unavailable: scorers stuck past their budget": "scorers_stuck",
    "scoring cut short by shutdown": "shutdown",
}
_SCORING_FAILED = "scoring failed: "
_NOT_EVALUATED = "no agent steps in trace"


@dataclass(frozen=True, slots=True)
class EvaluationRecord:
    """One evaluation of one trace: where it belongs (the evaluated root span) and what it says."""

    trace_id: str
    span_id: str
    time_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return str(self.attributes.get("gen_ai.evaluation.score.label", ""))

    @property
    def score(self) -> float | None:
        value = self.attributes.get("gen_ai.evaluation.score.value")
        return float(value) if isinstance(value, int | float) else None

    @property
    def explanation(self) -> str:
        return str(self.attributes.get("gen_ai.evaluation.explanation", ""))

    @property
    def error_type(self) -> str | None:
        value = self.attributes.get("error.type")
        return str(value) if value is not None else None


def error_type(verdict: Verdict) -> str | None:
    """``error.type`` of a verdict whose evaluation failed, else None."""
    if verdict.label is not Label.UNSCORED:
        return None
    reason = verdict.unscored_reason or verdict.reason
    if reason.startswith(_SCORING_FAILED):
        return safe_text(reason[len(_SCORING_FAILED) :].strip(), 200) or "_OTHER"
    if reason == _NOT_EVALUATED:
        return None
    return _ERROR_TYPES.get(reason, "_OTHER")


def evaluation_attributes(
    verdict: Verdict, *, response_id: str | None = None, safe_reason: str | None = None
) -> dict[str, AttributeValue]:
    """The attributes of the ``gen_ai.evaluation.result`` record for ``verdict``.
    ``safe_reason``: ``safe_text(verdict.reason)`` when the caller made it already (the
    root's ``semloop.reason``), so that a reason is redacted once per verdict."""
    attrs: dict[str, AttributeValue] = {"gen_ai.evaluation.name": EVALUATION_NAME}
    failed = error_type(verdict)
    if verdict.label is not Label.UNSCORED:
        attrs["gen_ai.evaluation.score.value"] = float(verdict.score)
    attrs["gen_ai.evaluation.score.label"] = verdict.label.value
    # Reasons quote trace text (tool names, error types): secrets redacted, controls escaped.
    if safe_reason is None or not verdict.reason:
        safe_reason = safe_text(verdict.reason or verdict.label.value)
    attrs["gen_ai.evaluation.explanation"] = safe_reason
    if response_id:
        attrs["gen_ai.response.id"] = response_id
    if failed is not None:
        attrs["error.type"] = failed
    return attrs


def evaluation_record(
    trace: Trace, verdict: Verdict, *, time_ns: int | None = None
) -> EvaluationRecord | None:
    """The record for ``verdict`` on ``trace``'s root span; None when the trace has no root
    span to parent it to. ``time_ns`` defaults to the root's end (its start if it never ended),
    the moment the evaluated operation finished."""
    root = trace.spans.get(trace.root_span_id) if trace.root_span_id else None
    if root is None:
        return None
    if time_ns is None:
        time_ns = root.end_ns or root.start_ns
    response_id = root.attributes.get("gen_ai.response.id")
    return EvaluationRecord(
        trace_id=trace.trace_id or root.trace_id,
        span_id=root.span_id,
        time_ns=int(time_ns or 0),
        attributes=evaluation_attributes(
            verdict, response_id=response_id if isinstance(response_id, str) else None
        ),
    )


def evaluation_event(
    verdict: Verdict, time_ns: int = 0, *, response_id: str | None = None, safe_reason: str | None = None
) -> EventRecord:
    """The record as a span event (what Jaeger and Honeycomb show); ``safe_reason`` as
    for :func:`evaluation_attributes`."""
    attributes = evaluation_attributes(verdict, response_id=response_id, safe_reason=safe_reason)
    return EventRecord(name=EVENT_NAME, time_ns=time_ns, attributes=attributes)


# -- log records ------------------------------------------------------------------------------


def emit_log_record(record: EvaluationRecord, logger: Logger) -> None:
    """Emit ``record`` through an OTel ``Logger`` as a log record named
    ``gen_ai.evaluation.result``, parented to the evaluated span through its context."""
    from opentelemetry import trace as trace_api
    from opentelemetry._logs import LogRecord, SeverityNumber

    span_context = trace_api.SpanContext(
        trace_id=int(record.trace_id, 16),
        span_id=int(record.span_id, 16),
        is_remote=False,
        trace_flags=trace_api.TraceFlags(trace_api.TraceFlags.SAMPLED),
    )
    context = trace_api.set_span_in_context(trace_api.NonRecordingSpan(span_context))
    logger.emit(
        LogRecord(
            timestamp=record.time_ns or None,
            observed_timestamp=time.time_ns(),
            context=context,
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            event_name=EVENT_NAME,
            attributes=dict(record.attributes),
        )
    )


def log_record_json(record: EvaluationRecord) -> dict[str, Any]:
    """``record`` as an OTLP JSON ``LogRecord``."""
    from otel_semloop.otlp.anyvalue import encode_attributes_json

    return {
        "timeUnixNano": str(record.time_ns),
        "observedTimeUnixNano": str(time.time_ns()),
        "severityNumber": SEVERITY_INFO,
        "severityText": "INFO",
        "eventName": EVENT_NAME,
        "attributes": encode_attributes_json(record.attributes),
        "flags": 1,
        "traceId": record.trace_id,
        "spanId": record.span_id,
    }


def logs_data_json(
    records: Iterable[EvaluationRecord], *, service_name: str = "otel-semloop", version: str = ""
) -> dict[str, Any]:
    """One OTLP JSON ``LogsData`` holding ``records`` (a line of a Collector file-exporter
    logs file, or the body of an OTLP/HTTP JSON ``/v1/logs`` request)."""
    scope: dict[str, Any] = {"name": SCOPE_NAME}
    if version:
        scope["version"] = version
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]},
                "scopeLogs": [{"scope": scope, "logRecords": [log_record_json(r) for r in records]}],
            }
        ]
    }


def _logs_configured(provider: Any) -> bool:
    """Whether ``provider`` is a real ``LoggerProvider`` (not the API's no-op or its proxy
    before one is set)."""
    from opentelemetry._logs import NoOpLoggerProvider

    try:
        from opentelemetry._logs._internal import ProxyLoggerProvider
    except ImportError:  # pragma: no cover - the API moved it
        ProxyLoggerProvider = NoOpLoggerProvider
    return not isinstance(provider, NoOpLoggerProvider | ProxyLoggerProvider)


def _flag(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


def package_version() -> str:
    """The installed otel-semloop's version ("" when running from a bare checkout)."""
    from importlib import metadata

    try:
        return metadata.version("otel-semloop")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return ""


# -- delivery ---------------------------------------------------------------------------------


class EvaluationPublisher:
    """Delivers each :class:`EvaluationRecord` beyond the span event: a log record (when
    logs are on) and a Phoenix span annotation (when an annotator is given).

    ``logs``: ``None`` (default) follows ``SEMLOOP_EVALUATION_LOGS`` (``true``/``false``), and
    when that is unset emits exactly when a ``LoggerProvider`` is configured (``logger_provider``,
    else the global one at the time of the first record). :meth:`publish` never raises: a
    delivery failure is logged and counted in :attr:`errors`.
    """

    def __init__(
        self,
        *,
        logs: bool | None = None,
        logger_provider: LoggerProvider | None = None,
        phoenix: PhoenixAnnotator | None = None,
    ) -> None:
        self._logs = logs if logs is not None else _flag("SEMLOOP_EVALUATION_LOGS")
        self._provider = logger_provider
        self._logger: Logger | None = None
        self.phoenix = phoenix
        self._owns_provider = False
        self.errors = 0

    @classmethod
    def from_env(cls, *, logger_provider: LoggerProvider | None = None) -> EvaluationPublisher:
        """Logs per ``SEMLOOP_EVALUATION_LOGS``; Phoenix annotations when ``SEMLOOP_PHOENIX_URL``
        is set (see :mod:`otel_semloop.phoenix`)."""
        from otel_semloop.phoenix import PhoenixAnnotator

        return cls(logger_provider=logger_provider, phoenix=PhoenixAnnotator.from_env())

    def _get_logger(self) -> Logger | None:
        if self._logger is not None:
            return self._logger
        from opentelemetry import _logs

        provider = self._provider if self._provider is not None else _logs.get_logger_provider()
        if self._logs is False or (self._logs is None and not _logs_configured(provider)):
            return None
        self._logger = provider.get_logger(SCOPE_NAME, package_version())
        return self._logger

    @property
    def logs_enabled(self) -> bool:
        return self._get_logger() is not None

    def publish(self, record: EvaluationRecord | None) -> None:
        if record is None:
            return
        try:
            logger = self._get_logger()
            if logger is not None:
                emit_log_record(record, logger)
            if self.phoenix is not None:
                self.phoenix.submit(record)
        except Exception:
            self.errors += 1
            _logger.warning("otel-semloop: could not publish an evaluation record", exc_info=True)

    def publish_verdict(self, trace: Trace, verdict: Verdict) -> None:
        """:func:`evaluation_record` then :meth:`publish`; traces without agent steps are not
        evaluated and publish nothing."""
        if verdict.label is Label.UNSCORED and error_type(verdict) is None:
            return
        try:
            record = evaluation_record(trace, verdict)
        except Exception:
            self.errors += 1
            _logger.warning("otel-semloop: could not build an evaluation record", exc_info=True)
            return
        self.publish(record)

    def flush(self, timeout: float = 30.0) -> bool:
        ok = True
        if self.phoenix is not None:
            ok = self.phoenix.flush(timeout)
        provider = self._provider
        if self._logger is not None and provider is not None and hasattr(provider, "force_flush"):
            ok = bool(provider.force_flush(int(timeout * 1000))) and ok
        return ok

    def shutdown(self, timeout: float = 30.0) -> None:
        self.flush(timeout)
        if self.phoenix is not None:
            self.phoenix.shutdown()
        provider = self._provider
        if self._owns_provider and provider is not None and hasattr(provider, "shutdown"):
            provider.shutdown()

    @classmethod
    def for_exporter(
        cls,
        endpoint: str,
        protocol: str = "grpc",
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        service_name: str = "otel-semloop",
    ) -> EvaluationPublisher:
        """For a front door that exports OTLP itself (``otel-semloop serve``): with
        ``SEMLOOP_EVALUATION_LOGS=true`` the log records go to the same backend as the
        spans (``endpoint``, ``protocol`` ``grpc`` or ``http/protobuf``, ``headers``), through
        an SDK ``LoggerProvider`` of its own; Phoenix annotations as :meth:`from_env`."""
        from otel_semloop.phoenix import PhoenixAnnotator

        phoenix = PhoenixAnnotator.from_env()
        if _flag("SEMLOOP_EVALUATION_LOGS") is not True:
            return cls(logs=False, phoenix=phoenix)
        from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

            exporter: Any = OTLPLogExporter(
                endpoint=endpoint,
                insecure=endpoint.startswith("http://"),
                headers=dict(headers or {}),
                timeout=timeout,
            )
        else:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import (  # type: ignore[assignment]
                OTLPLogExporter,
            )

            url = endpoint.rstrip("/")
            url = url if url.endswith("/v1/logs") else url.removesuffix("/v1/traces") + "/v1/logs"
            exporter = OTLPLogExporter(endpoint=url, headers=dict(headers or {}), timeout=timeout)
        provider = SdkLoggerProvider(resource=Resource.create({"service.name": service_name}))
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        publisher = cls(logs=True, logger_provider=provider, phoenix=phoenix)
        publisher._owns_provider = True
        return publisher
