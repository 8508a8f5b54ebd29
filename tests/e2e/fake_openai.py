"""A scripted OpenAI-compatible chat completions server on loopback.

``POST /v1/chat/completions`` answers non-streaming requests from a :class:`Script`: a list
of assistant turns, each either tool calls (with the model's reasoning as ``content``) or a
final answer. The turn served is chosen from the conversation itself, the number of
assistant messages already in ``messages``, so the server keeps no per-run state and the
same script serves a run from any client (the plain ``openai`` client in an app's own loop,
or the ``openai-agents`` SDK's chat completions model). Past the end of the script the last
turn repeats.

Responses have the shape the ``openai`` client parses: ``choices[0].message`` with
``tool_calls`` (``type: function``, JSON-string ``arguments``, unique ids),
``finish_reason`` ``tool_calls`` or ``stop``, and ``usage``. Everything the server received
is kept in :attr:`FakeOpenAIServer.requests` for assertions.

Runs in a daemon thread on ``127.0.0.1`` with an ephemeral port; nothing leaves the machine.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .http_thread import ServerThread, reply

__all__ = [
    "FakeOpenAIServer",
    "Script",
    "ToolCallSpec",
    "Turn",
    "healthy_script",
    "looping_script",
    "searching_script",
]


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call the model asks for: a function name and its JSON arguments."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant reply: optional text and the tool calls it requests (none: final)."""

    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()

    @classmethod
    def call(cls, name: str, arguments: Mapping[str, Any], *, thought: str | None = None) -> Turn:
        return cls(content=thought, tool_calls=(ToolCallSpec(name, dict(arguments)),))

    @classmethod
    def answer(cls, text: str) -> Turn:
        return cls(content=text)

    @property
    def final(self) -> bool:
        return not self.tool_calls


@dataclass(frozen=True, slots=True)
class Script:
    """What the fake model says, turn by turn."""

    name: str
    turns: tuple[Turn, ...]

    def turn_for(self, messages: Sequence[Mapping[str, Any]]) -> tuple[int, Turn]:
        """The turn answering ``messages``: one per assistant message already sent."""
        index = sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")
        index = min(index, len(self.turns) - 1)
        return index, self.turns[index]

    @property
    def tool_calls(self) -> list[ToolCallSpec]:
        return [call for turn in self.turns for call in turn.tool_calls]


#: The looping model's reasoning, word for word every round: an agent that learned nothing
#: from the last result says the same thing again (more than 20 meaningful words, so
#: deepeval's reasoning-stagnation check compares consecutive outputs).
LOOP_THOUGHT = (
    "The checkout service keeps failing with gateway errors. I should search the service "
    "logs for timeout errors again to find which upstream dependency causes the failing "
    "checkout requests, then summarise the root cause and recommend a concrete remediation "
    "for the on-call engineer."
)

LOOP_TOOL = "search_logs"
LOOP_ARGUMENTS: Mapping[str, Any] = {"query": "timeout"}
#: What the looping app's tool returns every time: the same result, so no progress.
LOOP_RESULT = "3 matches: 'upstream request timeout after 30s' (checkout-api)"


def looping_script(rounds: int = 8, *, thought: str | None = LOOP_THOUGHT) -> Script:
    """The model asks for ``search_logs({"query": "timeout"})`` ``rounds`` times, each time
    saying ``thought`` (``None``: tool calls with no text, as many models send them), then
    gives up with an answer."""
    turns = [Turn.call(LOOP_TOOL, LOOP_ARGUMENTS, thought=thought) for _ in range(rounds)]
    turns.append(Turn.answer("I could not determine the root cause of the checkout failures."))
    return Script("looping" if thought else "silent-looping", tuple(turns))


def healthy_script() -> Script:
    """Three different tool calls that each build on the last result, then an answer."""
    return Script(
        "healthy",
        (
            Turn.call(
                "search_logs",
                {"query": "timeout"},
                thought="First I will look for timeout errors in the checkout service logs.",
            ),
            Turn.call(
                "get_metrics",
                {"service": "payments-db", "metric": "p99_latency_ms"},
                thought="The timeouts point at payments-db; I will check its latency metrics.",
            ),
            Turn.call(
                "read_config",
                {"path": "payments-db/pool.yaml"},
                thought="Latency spiked when connections ran out; I will read the pool config.",
            ),
            Turn.answer(
                "Root cause: the payments-db connection pool is capped at 10, so checkout "
                "requests queue until they time out. Raise max_connections to 50."
            ),
        ),
    )


#: Six different searches: one tool, new arguments (and results) every time.
SEARCH_QUERIES = ("timeout", "connection refused", "pool exhausted", "deadlock", "503", "retry budget")


def searching_script() -> Script:
    """Legitimate repetition: the model calls ``search_logs`` once per query in
    :data:`SEARCH_QUERIES`, then answers. Same tool every time, never the same call."""
    turns = [
        Turn.call("search_logs", {"query": query}, thought=f"Next I will search the logs for {query!r}.")
        for query in SEARCH_QUERIES
    ]
    turns.append(Turn.answer("Root cause: the payments-db pool is exhausted; raise max_connections."))
    return Script("searching", tuple(turns))


@dataclass
class _State:
    script: Script
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class FakeOpenAIServer:
    """The scripted server. Use as a context manager, or :meth:`start`/:meth:`stop`.

    ``base_url`` is what ``OpenAI(base_url=...)`` takes (it ends in ``/v1``).
    """

    def __init__(self, script: Script, host: str = "127.0.0.1") -> None:
        self._state = _State(script)
        self._server = ServerThread(host, _handler_for(self._state))

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def script(self) -> Script:
        return self._state.script

    @script.setter
    def script(self, script: Script) -> None:
        with self._state.lock:
            self._state.script = script

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completion requests received so far, in order."""
        with self._state.lock:
            return list(self._state.requests)

    def start(self) -> FakeOpenAIServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _completion(state: _State, body: Mapping[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    with state.lock:
        state.requests.append(dict(body))
        script = state.script
        number = next(state.ids)
    index, turn = script.turn_for(messages)
    message: dict[str, Any] = {"role": "assistant", "content": turn.content, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{j}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
            }
            for j, call in enumerate(turn.tool_calls)
        ]
    prompt_tokens = _rough_tokens(json.dumps(messages))
    completion_tokens = _rough_tokens(json.dumps(message))
    return {
        "id": f"chatcmpl-{script.name}-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or "fake-model"),
        "system_fingerprint": f"fake-{script.name}-turn-{index}",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "stop" if turn.final else "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _rough_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _handler_for(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the openai client's httpx pool expects

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0].rstrip("/")
            if path != "/v1/chat/completions":
                self._send(404, _error(f"no route for POST {path}", "not_found"))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                self._send(400, _error(f"invalid JSON body: {exc}", "invalid_request_error"))
                return
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                self._send(400, _error("'messages' must be a list", "invalid_request_error"))
                return
            if body.get("stream"):
                self._send(400, _error("the fake server does not stream", "invalid_request_error"))
                return
            self._send(200, _completion(state, body))

        def do_GET(self) -> None:
            self._send(404, _error(f"no route for GET {self.path}", "not_found"))

        def _send(self, status: int, payload: Mapping[str, Any]) -> None:
            reply(self, status, json.dumps(payload).encode(), "application/json")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
