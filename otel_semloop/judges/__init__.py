"""The semantic judge: ask a decision model what deterministic evidence cannot answer.

Is this step progress? Does this step go back to an earlier attempt without new
information? Are these differently-worded calls the same action? All about one trace, in
one request, with the trace's text sent as redacted data. See
:mod:`~otel_semloop.judges.questions` (what is asked), :mod:`~otel_semloop.judges.assess`
(how answers count), :mod:`~otel_semloop.judges.scorer` (staged scoring in the front doors),
:mod:`~otel_semloop.judges.escalation` (which traces are sent), :mod:`~otel_semloop.judges.http`
(the client), and the backends: System One, OpenAI-compatible, scripted, local offline.

The names below are imported on first use (PEP 562): the command line adds the judge flags
(:mod:`~otel_semloop.judges.settings`) to every ``rescore`` and ``serve``, and importing the
judge itself (asyncio, the answer cache's sqlite3) would slow the start of every run that
asks for no judge.
"""

from __future__ import annotations

from otel_semloop.judges import base  # the interface: light, no asyncio or sqlite3
from otel_semloop.lazy_exports import lazy_getattr

#: Each public name and the module that defines it.
_HOMES = {
    **dict.fromkeys(base.__all__, "base"),
    "Escalation": "escalation",
    "Judge": "judge",
    "JudgeStats": "judge",
    "QuestionConfig": "questions",
    "build_question_set": "questions",
    "JudgedScorer": "scorer",
    **dict.fromkeys(("BACKENDS", "JudgeSettings", "make_judge"), "settings"),
}

__all__ = sorted(_HOMES)


__getattr__ = lazy_getattr(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
