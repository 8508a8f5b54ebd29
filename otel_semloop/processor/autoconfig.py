"""Zero-code setup: ``opentelemetry-instrument`` with semloop in the export pipeline.

The SDK's configurator (what ``opentelemetry-instrument`` runs through the
``opentelemetry_configurator`` entry point) builds one ``BatchSpanProcessor(exporter)`` per
exporter in ``OTEL_TRACES_EXPORTER`` and takes an ``export_span_processor`` factory to build
something else; distros subclass ``_OTelSDKConfigurator`` for this. This one wraps each
exporter as ``SemloopSpanProcessor(BatchSpanProcessor(exporter))`` and adds its
:attr:`~otel_semloop.processor.SemloopSpanProcessor.log_record_processor` to the SDK's
``LoggerProvider``; the rest of the SDK setup is unchanged, and semloop reads its options
from ``SEMLOOP_*`` variables. With the package installed (entry point ``semloop``)::

    OTEL_PYTHON_CONFIGURATOR=semloop SEMLOOP_LIVE_GUARD=warn \\
        opentelemetry-instrument --traces_exporter otlp python agent.py

``OTEL_PYTHON_CONFIGURATOR=semloop`` matters when another configurator is installed
(``opentelemetry-distro`` registers one): only one is loaded. ``SEMLOOP_ENABLED=false``
falls back to the plain ``BatchSpanProcessor``.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from opentelemetry._logs import get_logger_provider
from opentelemetry.sdk._configuration import _initialize_components, _OTelSDKConfigurator
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otel_semloop.processor.config import Config

__all__ = ["SemloopConfigurator", "semloop_export_processor"]

_logger = logging.getLogger(__name__)


def semloop_export_processor(exporter: SpanExporter, *args: Any, **kwargs: Any) -> SpanProcessor:
    """The SDK's ``export_span_processor`` factory: ``BatchSpanProcessor(exporter, ...)``
    wrapped in a ``SemloopSpanProcessor`` configured from ``SEMLOOP_*``."""
    batch = BatchSpanProcessor(exporter, *args, **kwargs)
    if not Config.from_env().enabled:
        return batch
    from otel_semloop.processor import SemloopSpanProcessor

    return SemloopSpanProcessor(batch)


class SemloopConfigurator(_OTelSDKConfigurator):
    """The SDK configurator, with semloop wrapping every span exporter's batch processor,
    and each semloop processor's ``log_record_processor`` added to the SDK's global
    ``LoggerProvider`` (which the configurator sets up whatever ``OTEL_LOGS_EXPORTER``
    says), so GenAI message content emitted as log records is read."""

    def _configure(self, **kwargs: Any) -> None:
        observers: list[Any] = []
        if "export_span_processor" in inspect.signature(_initialize_components).parameters:

            def export_processor(exporter: SpanExporter, *args: Any, **options: Any) -> SpanProcessor:
                processor = semloop_export_processor(exporter, *args, **options)
                observer = getattr(processor, "log_record_processor", None)  # None: SEMLOOP_ENABLED=false
                if observer is not None:
                    observers.append(observer)
                return processor

            kwargs.setdefault("export_span_processor", export_processor)
        else:  # pragma: no cover - SDKs before export_span_processor existed
            _logger.warning(
                "otel-semloop: this opentelemetry-sdk cannot wrap its exporters; add "
                "SemloopSpanProcessor to the TracerProvider by hand"
            )
        super()._configure(**kwargs)
        add = getattr(get_logger_provider(), "add_log_record_processor", None)
        if add is None:  # pragma: no cover - no SDK LoggerProvider was set up
            return
        for observer in observers:
            add(observer)
