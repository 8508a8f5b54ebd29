"""What every judge backend speaks: a request (state and questions) in, answers with usage out.

One small interface, so the scorer, the cache and the escalation logic never know which
backend answered. A backend is anything with a ``name``, a ``model`` and

    ``async def ask(self, request, deadline=None) -> JudgeResponse``

(``deadline``: a ``time.monotonic()`` value no retry may pass) that answers every
question it can (missing answers are allowed: the caller falls back to
deterministic evidence for those) and raises a :class:`JudgeError` subclass when it cannot
answer at all. Backends that hold connections also have ``async def aclose()``.

Questions (see :mod:`otel_semloop.judges.questions`) are keyed by id and typed like System
One's: ``noul`` (yes/no with a probability), ``choice`` and ``score``. Answers are
normalised into :class:`Answer`: ``value`` is P(yes) for ``noul``, the chosen label for
``choice``, the numeric level for ``score``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from otel_semloop.errors import SemloopError

__all__ = [
    "Answer",
    "JudgeBackend",
    "JudgeError",
    "JudgeHTTPError",
    "JudgeProtocolError",
    "JudgeRequest",
    "JudgeResponse",
    "JudgeTimeout",
    "JudgeUnavailable",
]


class JudgeError(SemloopError):
    """The judge could not answer. ``kind`` is a short, low-cardinality name written to
    ``semloop.judge.error`` (``timeout``, ``http_500``, ``protocol``, ``unavailable``...)."""

    kind = "error"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class JudgeTimeout(JudgeError):
    """No answer within the time allowed (the request timeout or the trace's budget)."""

    kind = "timeout"


class JudgeHTTPError(JudgeError):
    """The judge answered with an HTTP error status (after any retries)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message, kind=f"http_{status}")
        self.status = status


class JudgeProtocolError(JudgeError):
    """The judge answered, but not in its protocol (malformed JSON, no answers object)."""

    kind = "protocol"


class JudgeUnavailable(JudgeError):
    """The circuit breaker is open: recent calls failed, so no call is attempted."""

    kind = "unavailable"


@dataclass(frozen=True, slots=True)
class Answer:
    """One normalised answer. ``probability`` is how sure the judge is of ``value``."""

    type: str
    value: Any
    probability: float = 1.0
    probabilities: Mapping[Any, float] = field(default_factory=dict)
    confidence: float | None = None

    @classmethod
    def yes_probability(cls, p: float) -> Answer:
        p = min(1.0, max(0.0, float(p)))
        return cls("noul", p, max(p, 1.0 - p), {True: p, False: 1.0 - p})

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "value": self.value,
            "probability": self.probability,
            "probabilities": {str(k): v for k, v in self.probabilities.items()},
            "confidence": self.confidence,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        kind = str(data["type"])
        # JSON keys are text: a yes/no answer's are booleans, a score's levels integers.
        key: Any = {"noul": lambda text: text == "True", "score": int}.get(kind, str)
        probabilities = {key(k): float(v) for k, v in (data.get("probabilities") or {}).items()}
        confidence = data.get("confidence")
        return cls(
            kind,
            data["value"],
            float(data.get("probability", 1.0)),
            probabilities,
            None if confidence is None else float(confidence),
        )


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """Everything sent for one trace: ``state`` (the trace as data, already redacted) and
    ``questions`` keyed by id. ``trace_id`` is for logs and scripted backends; it is not
    sent to remote judges."""

    state: Mapping[str, Any]
    questions: Mapping[str, Mapping[str, Any]]
    trace_id: str = ""


@dataclass(frozen=True, slots=True)
class JudgeResponse:
    """Normalised answers plus what they cost."""

    answers: Mapping[str, Answer]
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    cached: bool = False


@runtime_checkable
class JudgeBackend(Protocol):
    """State and questions in, normalised answers with usage out (see the module doc)."""

    name: str
    model: str

    async def ask(self, request: JudgeRequest, deadline: float | None = None) -> JudgeResponse: ...


def parse_system_one_answer(qid: str, raw: Any) -> Answer:
    """One System One answer object as an :class:`Answer` (also used to read answers an
    OpenAI-compatible model wrote in the same shape). Raises :class:`JudgeProtocolError`."""
    if not isinstance(raw, Mapping):
        raise JudgeProtocolError(f"answer {qid!r} is not an object")
    kind = raw.get("type")
    try:
        if kind == "noul":
            return Answer.yes_probability(_probability(raw["noul"]))
        if kind in ("choice", "score"):
            key = str if kind == "choice" else int
            probabilities = {key(k): float(v) for k, v in (raw.get("probabilities") or {}).items()}
            value: Any = str(raw["choice"]) if kind == "choice" else float(raw["score"])
            level = value
            if kind == "score":  # a score's probability is its nearest level's
                level = min(probabilities, key=lambda k: abs(k - value), default=None)
            confidence = _optional_float(raw.get("confidence"))
            return Answer(kind, value, probabilities.get(level, 1.0), probabilities, confidence)
    except (KeyError, TypeError, ValueError) as exc:
        raise JudgeProtocolError(f"answer {qid!r} is malformed: {exc!r}") from exc
    raise JudgeProtocolError(f"answer {qid!r} has unsupported type {kind!r}")


def _probability(value: Any) -> float:
    p = float(value)
    if not 0.0 <= p <= 1.0:  # NaN fails both comparisons
        raise ValueError(f"probability {value!r} outside [0, 1]")
    return p


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)
