"""The in-app front door: ``SemloopSpanProcessor`` inside the application's own tracer
provider. Its modules (hooks, worker, SDK adapter, config, live guard, log records,
zero-code setup) are mapped in ``docs/architecture.md``; they depend on the core, never
the other way round.
"""

from otel_semloop.processor.config import Config, GuardMode
from otel_semloop.processor.span_processor import SemloopSpanProcessor

__all__ = ["Config", "GuardMode", "SemloopSpanProcessor"]
