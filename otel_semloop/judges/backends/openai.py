"""Any OpenAI-compatible chat-completions endpoint as a judge (hosted, or a local server).

One request per trace: the system message says how to answer and that trace text is data;
the user message is one JSON document ``{"state": ..., "questions": ...}``; the model is
asked (``response_format: json_object``, temperature 0) for ONE JSON object with an
answer for every question id:

    {"progress_0_1": {"answer": "yes", "probability": 0.9}, ..., "stagnation": {"score": 1}}

Accepted answer shapes, so small local models still count: ``{"answer": "yes"|"no",
"probability": p}`` (p is how sure the model is of its answer), ``{"p_yes": p}``, a bare
number (P(yes)), a bare boolean or "yes"/"no", System One's own objects, and for
``stagnation`` ``{"score": n}`` or a number. Anything else leaves that question unanswered.

Key: ``api_key`` or ``OPENAI_API_KEY`` (none is needed for a local server); base URL
``OPENAI_BASE_URL``; prices per million input and output tokens are configurable (they
differ by provider and model), default 0, so cost reads 0 unless told.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any

import orjson

from otel_semloop.errors import ConfigError
from otel_semloop.judges.base import (
    Answer,
    JudgeProtocolError,
    JudgeRequest,
    JudgeResponse,
    parse_system_one_answer,
)
from otel_semloop.judges.http import HttpBackend, token_count
from otel_semloop.judges.questions import DATA_NOTICE

__all__ = ["OpenAIBackend", "parse_chat_answers"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
PATH = "/chat/completions"

SYSTEM_PROMPT = (
    "You judge whether an AI agent is stuck in a loop. The user message is one JSON document "
    "with `state` (the agent's trace) and `questions` (keyed by id; each has `type`, "
    "`instructions` and `criteria`). Answer every question id. Reply with ONE JSON object and "
    "nothing else, mapping each question id to its answer: for a question of type `noul`, "
    '{"answer": "yes" or "no", "probability": how sure you are, 0.5 to 1}; for type `score`, '
    '{"score": the index of the matching criterion}; for type `choice`, {"choice": the label}. ' + DATA_NOTICE
)

_YES = {"yes", "true", "y", "1"}
_NO = {"no", "false", "n", "0"}


def _noul(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, (int, float)):
        return float(raw) if 0.0 <= float(raw) <= 1.0 else None
    if isinstance(raw, str):
        word = raw.strip().lower()
        return 1.0 if word in _YES else 0.0 if word in _NO else None
    if isinstance(raw, Mapping):
        if "p_yes" in raw:
            return _noul(raw["p_yes"])
        word = raw.get("answer")
        yes = _noul(word) if word is not None else None
        if yes is None:
            return None
        sure = raw.get("probability", raw.get("confidence", 1.0))
        try:
            sure = min(1.0, max(0.0, float(sure)))
        except (TypeError, ValueError):
            return None
        return sure if yes == 1.0 else 1.0 - sure
    return None


def parse_chat_answers(content: Any, questions: Mapping[str, Mapping[str, Any]]) -> dict[str, Answer]:
    """Answers from the model's JSON object (see the module doc)."""
    if isinstance(content, str):
        text = content.strip()
        if text.startswith("```"):  # a fenced block despite json_object mode
            text = text.strip("`").removeprefix("json").strip()
        try:
            content = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise JudgeProtocolError(f"the model's answer is not JSON: {exc}") from None
    if not isinstance(content, Mapping):
        raise JudgeProtocolError("the model's answer is not a JSON object")
    if isinstance(content.get("answers"), Mapping):
        content = content["answers"]
    answers: dict[str, Answer] = {}
    for qid, question in questions.items():
        raw = content.get(qid)
        if raw is None:
            continue
        kind = question.get("type")
        if isinstance(raw, Mapping) and raw.get("type") in ("noul", "choice", "score"):
            with contextlib.suppress(JudgeProtocolError):  # that question stays unanswered
                answers[qid] = parse_system_one_answer(qid, raw)
            continue
        if kind == "noul":
            p = _noul(raw)
            if p is not None:
                answers[qid] = Answer.yes_probability(p)
        elif kind == "score":
            value = raw.get("score") if isinstance(raw, Mapping) else raw
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                answers[qid] = Answer("score", float(value))
        elif kind == "choice":
            value = raw.get("choice") if isinstance(raw, Mapping) else raw
            if isinstance(value, str):
                answers[qid] = Answer("choice", value)
    return answers


class OpenAIBackend(HttpBackend):
    """Chat completions judge (see the module doc); ``options`` are
    :class:`~otel_semloop.judges.http.HttpBackend`'s."""

    name = "openai"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        model: str | None = None,
        input_usd_per_million: float = 0.0,
        output_usd_per_million: float = 0.0,
        **options: Any,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not key and base_url == DEFAULT_BASE_URL:
            raise ConfigError("the openai judge needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)")
        super().__init__(
            base_url, key, model or os.environ.get("SEMLOOP_JUDGE_MODEL") or DEFAULT_MODEL, **options
        )
        self.input_usd_per_million = input_usd_per_million
        self.output_usd_per_million = output_usd_per_million

    def payload(self, request: JudgeRequest) -> dict[str, Any]:
        document = orjson.dumps({"state": request.state, "questions": request.questions}).decode()
        return {
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": document},
            ],
        }

    async def ask(self, request: JudgeRequest, deadline: float | None = None) -> JudgeResponse:
        body, latency_ms = await self.post(PATH, self.payload(request), deadline)
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeProtocolError("chat completion has no choices[0].message.content") from None
        answers = parse_chat_answers(content, request.questions)
        usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
        prompt = token_count(usage.get("prompt_tokens"))
        completion = token_count(usage.get("completion_tokens"))
        return JudgeResponse(
            answers=answers,
            model=str(body.get("model") or self.model),
            input_tokens=prompt,
            output_tokens=completion,
            cost_usd=(prompt * self.input_usd_per_million + completion * self.output_usd_per_million) / 1e6,
            latency_ms=latency_ms,
        )
