"""The semantic judge: ask a decision model what deterministic evidence cannot answer.

Is this step progress? Does this step go back to an earlier attempt without new
information? Are these differently-worded calls the same action? All about one trace, in
one request, with the trace's text sent as redacted data. See
:mod:`~otel_semloop.judges.questions` (what is asked), :mod:`~otel_semloop.judges.assess`
(how answers count), :mod:`~otel_semloop.judges.scorer` (staged scoring in the front doors),
:mod:`~otel_semloop.judges.escalation` (which traces are sent), :mod:`~otel_semloop.judges.http`
(the client), and the backends: System One, OpenAI-compatible, scripted, local offline.
"""

from otel_semloop.judges.base import (
    Answer,
    JudgeBackend,
    JudgeError,
    JudgeHTTPError,
    JudgeProtocolError,
    JudgeRequest,
    JudgeResponse,
    JudgeTimeout,
    JudgeUnavailable,
)
from otel_semloop.judges.escalation import Escalation
from otel_semloop.judges.judge import Judge, JudgeStats
from otel_semloop.judges.questions import QuestionConfig, build_question_set
from otel_semloop.judges.scorer import JudgedScorer
from otel_semloop.judges.settings import BACKENDS, JudgeSettings, make_judge, make_judged_scorer

__all__ = [
    "BACKENDS",
    "Answer",
    "Escalation",
    "Judge",
    "JudgeBackend",
    "JudgeError",
    "JudgeHTTPError",
    "JudgeProtocolError",
    "JudgeRequest",
    "JudgeResponse",
    "JudgeSettings",
    "JudgeStats",
    "JudgeTimeout",
    "JudgeUnavailable",
    "JudgedScorer",
    "QuestionConfig",
    "build_question_set",
    "make_judge",
    "make_judged_scorer",
]
