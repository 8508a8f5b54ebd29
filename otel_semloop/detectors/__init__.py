"""Loop detectors: each reads one agent trace and reports what it found.

* :mod:`.lexical` - deepeval's ``AgentLoopDetectionMetric``, reproduced exactly (the
  compatibility score, ``semloop.deepeval.*``).
* The deterministic detectors, the default verdict: :mod:`.cycles` (action cycles),
  :mod:`.progress` (repeated results, cosmetic argument changes, the call ceiling, stale
  stretches), :mod:`.failures` (repeated and permanent errors, transient retries, retry
  storms), :mod:`.text` (monologue, chanting), :mod:`.agents` (hand-off cycles),
  :mod:`.budgets` (off by default). :mod:`.base` holds what they share, :mod:`.config`
  every threshold, :mod:`.suite` the default set, :mod:`.live` the live guard's monitor.
"""

from otel_semloop.detectors.base import Detector, IncrementalDetector
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.live import Decision, LiveMonitor
from otel_semloop.detectors.suite import DetectorSuite, default_detectors

__all__ = [
    "Decision",
    "Detector",
    "DetectorConfig",
    "DetectorSuite",
    "IncrementalDetector",
    "LiveMonitor",
    "default_detectors",
]
