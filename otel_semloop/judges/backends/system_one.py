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
import logging
import os
import time
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
from otel_semloop.judges.http import CircuitBreaker, HttpJudgeClient, RetryPolicy, token_count

__all__ = ["INPUT_USD_PER_MILLION", "SystemOneBackend", "parse_system_one_response"]

DEFAULT_BASE_URL = "https://api.typesafe.ai"
DEFAULT_MODEL = "Jev"
DEFAULT_PATH = "/v1/systemone"
#: Published price: USD per million input tokens; output is free.
INPUT_USD_PER_MILLION = 0.042

_log = logging.getLogger("otel_semloop.judges")


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


class SystemOneBackend:
    """The System One judge (see the module doc). Key and base URL default to
    ``TYPESAFE_API_KEY`` and ``TYPESAFE_BASE_URL``."""

    name = "system-one"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        model: str | None = None,
        path: str | None = None,
        timeout: float = 30.0,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        client: HttpJudgeClient | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("TYPESAFE_API_KEY", "")
        if not key:
            raise ConfigError("the system-one judge needs an API key: set TYPESAFE_API_KEY")
        self.model = model or os.environ.get("TYPESAFE_MODEL") or DEFAULT_MODEL
        self.base_url = (base_url or os.environ.get("TYPESAFE_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.path = path or os.environ.get("TYPESAFE_PATH") or DEFAULT_PATH
        self.max_concurrency = max_concurrency
        self.client = client or HttpJudgeClient.with_key(
            self.base_url,
            key,
            timeout=timeout,
            max_concurrency=max_concurrency,
            retry=retry,
            breaker=breaker,
        )

    def payload(self, request: JudgeRequest) -> dict[str, Any]:
        return {"model": self.model, "state": request.state, "questions": dict(request.questions)}

    async def ask(self, request: JudgeRequest, deadline: float | None = None) -> JudgeResponse:
        started = time.monotonic()
        body, _ = await self.client.post_json(self.path, self.payload(request), deadline=deadline)
        response = parse_system_one_response(body, (time.monotonic() - started) * 1000.0)
        if not response.model:
            response = dataclasses.replace(response, model=self.model)
        return response

    async def aclose(self) -> None:
        await self.client.aclose()
