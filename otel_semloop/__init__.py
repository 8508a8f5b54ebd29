"""otel-semloop: detect AI agents stuck in loops from their OpenTelemetry traces.

The public surface: the in-process span processor, the trace model and the scorer.
Everything else is reachable through its module (``otel_semloop.otlp``,
``otel_semloop.detectors``, ...); docs/architecture.md maps the modules in the order data
passes through them.
"""

from otel_semloop.builder import build_trace
from otel_semloop.errors import ConfigError, LoopDetected, OTLPDecodeError, SemloopError
from otel_semloop.lazy_exports import lazy_getattr
from otel_semloop.model import SpanRecord, Step, StepKind, ToolCall, Trace
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Action, Finding, Label, LexicalResult, Verdict

__all__ = [
    "Action",
    "ConfigError",
    "Finding",
    "Label",
    "LexicalResult",
    "LoopDetected",
    "OTLPDecodeError",
    "Scorer",
    "SemloopError",
    "SemloopSpanProcessor",
    "SpanRecord",
    "Step",
    "StepKind",
    "ToolCall",
    "Trace",
    "Verdict",
    "build_trace",
]


# The processor pulls in the SDK's span-processor machinery; CLI and library users that
# only score files should not pay for that import.
__getattr__ = lazy_getattr(__name__, {"SemloopSpanProcessor": "processor"})
