"""A chat agent whose spans carry no content: its messages and tool calls are GenAI log
records in each chat span's context, as ``opentelemetry-instrumentation-openai-v2`` emits
them. Used by every front door that reads log records."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Tracer

ROUNDS = 8
#: Spans of one run: the request span and one chat span per round.
SPANS = ROUNDS + 1
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "fake-gpt"}
SYSTEM = {"gen_ai.system": "openai"}


def chat_agent_with_log_records(tracer: Tracer, logger: Any, rounds: int = ROUNDS) -> int:
    """A request span with one content-free chat span per round; each chat emits its input
    messages and its choice as GenAI log records in its span's context. The model asks
    ``search_logs({"query": "timeout"})`` every round and gets the same result back.
    Returns the number of log records emitted."""
    history: list[tuple[str, dict[str, Any]]] = [
        ("gen_ai.user.message", {"content": "Why is checkout failing?"})
    ]
    emitted = 0
    with tracer.start_as_current_span("POST /triage"):
        for i in range(rounds):
            call = {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "search_logs", "arguments": json.dumps({"query": "timeout"})},
            }
            with tracer.start_as_current_span("chat fake-gpt", attributes=CHAT):
                for name, body in history:
                    logger.emit(event_name=name, body=body, attributes=SYSTEM)
                choice = {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "tool_calls": [call]},
                }
                logger.emit(event_name="gen_ai.choice", body=choice, attributes=SYSTEM)
                emitted += len(history) + 1
            history.append(("gen_ai.assistant.message", {"tool_calls": [call]}))
            history.append(
                ("gen_ai.tool.message", {"content": "3 matches: upstream timeout", "id": f"call_{i}"})
            )
    return emitted
