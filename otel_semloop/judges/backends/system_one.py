"""TypeSafe's System One protocol (model "Jev"): one POST carries the trace and every question.

    POST {base_url}{path}            path defaults to /v1/systemone
    Authorization: Bearer $TYPESAFE_API_KEY
    {"model": ..., "state": ..., "questions": {id: {"type": "noul"|"choice"|"score", ...}}}

    -> {"model": ..., "usage": {"input_tokens": n},
        "answers": {id: {"type": "noul", "noul": p}
                        | {"type": "choice", "choice", "confidence", "probabilities"}
                        | {"type": "score", "score", "confidence", "probabilities"}}}

The questions are answered independently, so asking one per pair of steps costs one
reading of the trace. Published price: 0.042 USD per million input tokens, output free.
``TYPESAFE_BASE_URL`` and ``path`` serve hosts that expose the protocol elsewhere.
An answer that is malformed makes that question unanswered (the rest still count);
a body without an ``answers`` object is a protocol error.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from otel_semloop.errors import ConfigError
from otel_semloop.judges.base import (
    Answer,
    JudgeProtocolError,
    JudgeRequest,
    JudgeResponse,
    parse_system_one_answer,
)
from otel_semloop.judges.http import HttpBackend, token_count

__all__ = ["INPUT_USD_PER_MILLION", "SystemOneBackend", "parse_system_one_response"]

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "Jev"
DEFAULT_PATH = "/v1/systemone"
#: Published price: USD per million input tokens; output is free.
INPUT_USD_PER_MILLION = 0.042


def parse_system_one_response(body: Any, latency_ms: float = 0.0) -> JudgeResponse:
    """Normalised answers from a System One response body."""
    if not isinstance(body, Mapping) or not isinstance(body.get("answers"), Mapping):
        raise JudgeProtocolError("judge response has no answers object")
    answers: dict[str, Answer] = {}
    for qid, raw in body["answers"].items():
        try:
            answers[str(qid)] = parse_system_one_answer(str(qid), raw)
        except JudgeProtocolError:
            continue  # that question stays unanswered
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    input_tokens = token_count(usage.get("input_tokens"))
    return JudgeResponse(
        answers=answers,
        model=str(body.get("model") or ""),
        input_tokens=input_tokens,
        cost_usd=input_tokens * INPUT_USD_PER_MILLION / 1_000_000,
        latency_ms=latency_ms,
    )


class SystemOneBackend(HttpBackend):
    """The System One judge (see the module doc). Key and base URL default to
    ``TYPESAFE_API_KEY`` and ``TYPESAFE_BASE_URL``; ``options`` are
    :class:`~otel_semloop.judges.http.HttpBackend`'s."""

    name = "system-one"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        model: str | None = None,
        path: str | None = None,
        **options: Any,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("TYPESAFE_API_KEY", "")
        if not key:
            raise ConfigError("the system-one judge needs an API key: set TYPESAFE_API_KEY")
        super().__init__(
            base_url or os.environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL,
            key,
            model or os.environ.get("TYPESAFE_MODEL") or DEFAULT_MODEL,
            **options,
        )
        self.path = path or os.environ.get("TYPESAFE_PATH") or DEFAULT_PATH

    def payload(self, request: JudgeRequest) -> dict[str, Any]:
        return {"model": self.model, "state": request.state, "questions": dict(request.questions)}

    async def ask(self, request: JudgeRequest, deadline: float | None = None) -> JudgeResponse:
        body, latency_ms = await self.post(self.path, self.payload(request), deadline)
        response = parse_system_one_response(body, latency_ms)
        if not response.model:
            response = dataclasses.replace(response, model=self.model)
        return response
