"""The in-app front door: a span processor inside the application's own tracer provider.

* :mod:`.span_processor` - ``SemloopSpanProcessor``: the SDK hooks (O(1) bookkeeping on
  the application's thread), flush and shutdown.
* :mod:`.worker` - the background thread that releases finished traces, scores them
  through the shared :class:`~otel_semloop.pool.ScoringPool` and forwards every span once.
* :mod:`.sdk` - the adapter between SDK ``ReadableSpan`` objects and the core's records
  and patches.
* :mod:`.config` - the processor's options (constructor arguments and ``SEMLOOP_*``).
* :mod:`.guard` and :mod:`.live` - the opt-in live guard: a monitor per running agent that
  warns or stops it the moment a loop becomes conclusive.
* :mod:`.autoconfig` - the ``opentelemetry_configurator`` entry point for zero-code setup.

Everything here depends on the core (``otel_semloop.grouping``, ``scoring``,
``writeback``...), never the other way round.
"""

from otel_semloop.processor.config import Config, GuardMode
from otel_semloop.processor.span_processor import SemloopSpanProcessor

__all__ = ["Config", "GuardMode", "SemloopSpanProcessor"]
