"""A scripted judge: answers come from a function, not a model (tests, the oracle column).

``script(request)`` returns ``{question_id: answer}`` where an answer is an
:class:`~otel_semloop.judges.base.Answer`, a number (P(yes) for ``noul`` questions, the
level for ``score``), or a bool; ids it leaves out stay unanswered. A script may also be a
plain mapping from question-kind prefix (``"progress"``, ``"revisit"``, ``"tool_repeat"``,
``"stagnation"``) to a number, applied to every question of that kind.

``delay`` (seconds) makes it slow, for tests of budgets; ``requests`` records every request
it was asked, so tests can count calls per trace.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from otel_semloop.judges.base import Answer, JudgeRequest, JudgeResponse, JudgeTimeout

__all__ = ["ScriptedBackend", "by_kind"]

Script = Callable[[JudgeRequest], Mapping[str, Any]]


def by_kind(table: Mapping[str, float]) -> Script:
    """A script answering every question by its kind (the id's prefix)."""

    def script(request: JudgeRequest) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for qid in request.questions:
            for prefix, value in table.items():
                if qid == prefix or qid.startswith(prefix + "_"):
                    out[qid] = value
                    break
        return out

    return script


class ScriptedBackend:
    name = "scripted"

    def __init__(
        self, script: Script | Mapping[str, float], *, model: str = "scripted", delay: float = 0.0
    ) -> None:
        self.script: Script = by_kind(script) if isinstance(script, Mapping) else script
        self.model = model
        self.delay = delay
        self.requests: list[JudgeRequest] = []

    async def ask(self, request: JudgeRequest, deadline: float | None = None) -> JudgeResponse:
        started = time.monotonic()
        self.requests.append(request)
        if self.delay:
            if deadline is not None and started + self.delay > deadline:
                await asyncio.sleep(max(0.0, deadline - started))
                raise JudgeTimeout("no answer within the scoring budget")
            await asyncio.sleep(self.delay)
        answers: dict[str, Answer] = {}
        for qid, raw in self.script(request).items():
            question = request.questions.get(qid)
            if question is None:
                continue
            if isinstance(raw, Answer):
                answers[qid] = raw
            elif question.get("type") == "noul":
                answers[qid] = Answer.yes_probability(float(raw))
            else:
                answers[qid] = Answer(
                    str(question.get("type")), float(raw) if not isinstance(raw, str) else raw
                )
        return JudgeResponse(
            answers=answers, model=self.model, latency_ms=(time.monotonic() - started) * 1000.0
        )
