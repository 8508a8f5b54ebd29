"""Loop detectors: each reads one agent trace and reports what it found.

* :mod:`.lexical` - deepeval's ``AgentLoopDetectionMetric``, reproduced exactly (the
  compatibility score, ``semloop.deepeval.*``); its three sub-scores have their own
  modules, :mod:`.repetition` (tool repetition), :mod:`.stagnation` (reasoning
  stagnation) and :mod:`.call_graph` (call-graph cycles).
* The deterministic detectors, the default verdict: :mod:`.cycles` (action cycles),
  :mod:`.progress` (repeated results, cosmetic argument changes, the same answer, the call
  ceiling), :mod:`.stale` (stale stretches), :mod:`.failures` (repeated and permanent
  errors, transient retries, retry storms), :mod:`.text` (monologue, chanting),
  :mod:`.agents` (hand-off cycles), :mod:`.budgets` (off by default). :mod:`.base` holds
  what they share, :mod:`.facts` the per-step facts they read, :mod:`.config` every
  threshold, :mod:`.suite` the default set, :mod:`.normalize` the text normalisation,
  :mod:`.call_identity` the argument identities and :mod:`.failure_class` the failure
  classes the facts are made of. Detectors never import the policy: the live guard's
  monitor (detectors + policy, span by span) is ``otel_semloop.processor.live``.
"""

from otel_semloop.detectors.base import Detector, IncrementalDetector
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.suite import DetectorSuite, default_detectors

__all__ = [
    "Detector",
    "DetectorConfig",
    "DetectorSuite",
    "IncrementalDetector",
    "default_detectors",
]
