"""What every recording script shares: the scripted model, the tools' world, and the
real OTLP export path into a JSON lines file.

* :class:`FakeModel` serves the scenario's script from the e2e tests' fake
  OpenAI-compatible server (``tests/e2e/fake_openai.py``: the turn is chosen from the
  number of assistant messages in the request), and also answers ``stream: true``
  requests as server-sent events, which several frameworks always send.
* :class:`World` holds the scenario's tool behaviour: the tools are ordinary Python
  functions that each framework wraps its own way, answering from the scenario.
* :class:`OtlpJsonLinesReceiver` is an OTLP/HTTP endpoint on loopback: the framework's
  real ``OTLPSpanExporter`` posts protobuf to it and every request becomes one line of
  OTLP JSON, as the Collector's file exporter writes it (one export batch per line).
  The protobuf-to-JSON conversion is written here, independent of otel_semloop's codec.

Runs only against 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.e2e.fake_openai import Script, ToolCallSpec, Turn, _completion, _State  # noqa: E402
from tests.e2e.http_thread import ServerThread, reply  # noqa: E402

__all__ = [
    "SCENARIOS",
    "FakeModel",
    "OtlpJsonLinesReceiver",
    "Recorder",
    "Scenario",
    "World",
]

# --- the scripted model -----------------------------------------------------------------


class FakeModel:
    """The e2e fake server's scripted completions, plus SSE streaming."""

    def __init__(self, script: Script) -> None:
        self._state = _State(script)
        self._server = ServerThread("127.0.0.1", _handler(self._state))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1"

    @property
    def script(self) -> Script:
        return self._state.script

    @script.setter
    def script(self, script: Script) -> None:
        with self._state.lock:
            self._state.script = script
            self._state.requests.clear()

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._state.lock:
            return list(self._state.requests)

    def __enter__(self) -> FakeModel:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


def _sse_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    choice = completion["choices"][0]
    msg = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        base
        | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
    ]
    if msg.get("content"):
        chunks.append(
            base | {"choices": [{"index": 0, "delta": {"content": msg["content"]}, "finish_reason": None}]}
        )
    for j, call in enumerate(msg.get("tool_calls") or []):
        delta = {
            "tool_calls": [{"index": j, "id": call["id"], "type": "function", "function": call["function"]}]
        }
        chunks.append(base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    chunks.append(base | {"choices": [], "usage": completion["usage"]})
    return chunks


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?", 1)[0].rstrip("/")
            if not path.endswith("/chat/completions"):
                reply(self, 404, b'{"error":{"message":"not found"}}', "application/json")
                return
            body = json.loads(raw or b"{}")
            completion = _completion(state, body)
            if not body.get("stream"):
                reply(self, 200, json.dumps(completion).encode(), "application/json")
                return
            payload = (
                b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in _sse_chunks(completion))
                + b"data: [DONE]\n\n"
            )
            reply(self, 200, payload, "text/event-stream")

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                reply(
                    self,
                    200,
                    b'{"object":"list","data":[{"id":"gpt-4o-mini","object":"model"}]}',
                    "application/json",
                )
                return
            reply(self, 404, b"{}", "application/json")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


# --- the receiver ------------------------------------------------------------------------


def _any(v: Any) -> dict[str, Any]:
    which = v.WhichOneof("value")
    if which == "string_value":
        return {"stringValue": v.string_value}
    if which == "bool_value":
        return {"boolValue": v.bool_value}
    if which == "int_value":
        return {"intValue": str(v.int_value)}
    if which == "double_value":
        return {"doubleValue": v.double_value}
    if which == "array_value":
        return {"arrayValue": {"values": [_any(x) for x in v.array_value.values]}}
    if which == "kvlist_value":
        return {"kvlistValue": {"values": _kvs(v.kvlist_value.values)}}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(v.bytes_value).decode()}
    return {}


def _kvs(kvs: Any) -> list[dict[str, Any]]:
    return [{"key": kv.key, "value": _any(kv.value)} for kv in kvs]


def request_to_json(req: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` as an OTLP JSON ``TracesData`` dict."""
    out = []
    for rs in req.resource_spans:
        scopes = []
        for ss in rs.scope_spans:
            spans = []
            for s in ss.spans:
                span: dict[str, Any] = {
                    "traceId": s.trace_id.hex(),
                    "spanId": s.span_id.hex(),
                    "name": s.name,
                    "kind": int(s.kind),
                    "startTimeUnixNano": str(s.start_time_unix_nano),
                    "endTimeUnixNano": str(s.end_time_unix_nano),
                    "attributes": _kvs(s.attributes),
                }
                if s.parent_span_id:
                    span["parentSpanId"] = s.parent_span_id.hex()
                if s.events:
                    span["events"] = [
                        {
                            "timeUnixNano": str(e.time_unix_nano),
                            "name": e.name,
                            "attributes": _kvs(e.attributes),
                        }
                        for e in s.events
                    ]
                if s.links:
                    span["links"] = [
                        {
                            "traceId": ln.trace_id.hex(),
                            "spanId": ln.span_id.hex(),
                            "attributes": _kvs(ln.attributes),
                        }
                        for ln in s.links
                    ]
                if s.HasField("status") and (s.status.code or s.status.message):
                    span["status"] = {"code": int(s.status.code), "message": s.status.message}
                spans.append(span)
            scopes.append({"scope": {"name": ss.scope.name, "version": ss.scope.version}, "spans": spans})
        out.append({"resource": {"attributes": _kvs(rs.resource.attributes)}, "scopeSpans": scopes})
    return {"resourceSpans": out}


def request_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request's body, sized by ``Content-Length`` or sent in chunks (Node.js's HTTP
    client streams an OTLP export with ``Transfer-Encoding: chunked``)."""
    if "chunked" not in handler.headers.get("Transfer-Encoding", "").lower():
        return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    chunks = []
    while True:
        size = int(handler.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while handler.rfile.readline().strip():  # (trailer lines, up to the blank one)
                pass
            return b"".join(chunks)
        chunks.append(handler.rfile.read(size))
        handler.rfile.readline()  # (the CRLF after each chunk)


class OtlpJsonLinesReceiver:
    """OTLP/HTTP protobuf ``POST /v1/traces`` on loopback; each request is one JSON line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._server = ServerThread("127.0.0.1", self._make_handler())

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1/traces"

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = request_body(self)
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                req = ExportTraceServiceRequest()
                req.ParseFromString(raw)
                with receiver.lock:
                    receiver.lines.append(request_to_json(req))
                reply(self, 200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def trace_ids(self) -> list[str]:
        with self.lock:
            seen = dict.fromkeys(
                s["traceId"]
                for line in self.lines
                for rs in line["resourceSpans"]
                for ss in rs["scopeSpans"]
                for s in ss["spans"]
            )
        return list(seen)

    def __enter__(self) -> OtlpJsonLinesReceiver:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()


# --- scenarios ---------------------------------------------------------------------------


class ToolFailure(Exception):
    """What a scenario's tool raises to fail a call."""


@dataclass
class World:
    """Answers tool calls for one scenario; ``calls`` counts them per tool."""

    answer: Callable[[str, dict[str, Any], int], str]
    calls: dict[str, int] = field(default_factory=dict)

    def __call__(self, tool: str, **args: Any) -> str:
        n = self.calls.get(tool, 0)
        self.calls[tool] = n + 1
        return self.answer(tool, args, n)


@dataclass(frozen=True)
class Scenario:
    name: str
    label: str
    goal: str
    turns: tuple[Turn, ...]
    answer: Callable[[str, dict[str, Any], int], str]
    why: str

    def script(self, final_tool: str | None = None) -> Script:
        """The model's script. ``final_tool`` names a tool the framework wants for the
        final answer (smolagents' ``final_answer``): the closing text becomes that call."""
        turns = list(self.turns)
        if final_tool and turns and turns[-1].final:
            turns[-1] = Turn.call(final_tool, {"answer": turns[-1].content or "done"})
        return Script(self.name, tuple(turns))

    def world(self) -> World:
        return World(self.answer)


LOOP_RESULT = "3 matches: 'upstream request timeout after 30s' (checkout-api)"
THOUGHT = "The checkout service keeps failing. I should search the logs for timeout errors again."


def _same_search(tool: str, args: dict[str, Any], n: int) -> str:
    return LOOP_RESULT if tool == "search_logs" else "ok"


def _no_matches(tool: str, args: dict[str, Any], n: int) -> str:
    return "No matches."


def _missing(tool: str, args: dict[str, Any], n: int) -> str:
    raise ToolFailure(f"FileNotFoundError: [Errno 2] No such file or directory: '{args.get('path')}'")


def _cycle(tool: str, args: dict[str, Any], n: int) -> str:
    if tool == "read_file":
        return "pool:\n  max_connections: 10\n  timeout_s: 30\n"
    return LOOP_RESULT


def _investigation(tool: str, args: dict[str, Any], n: int) -> str:
    return {
        "search_logs": "42 matches: 'upstream timeout' from checkout-api -> payments-db",
        "get_metrics": "payments-db p99_latency_ms: 30012 (was 45 before 09:12)",
        "read_file": "pool:\n  max_connections: 10\n",
    }.get(tool, "ok")


def _poll(tool: str, args: dict[str, Any], n: int) -> str:
    if tool != "get_job_status":
        return "ok"
    pct = min(100, 15 * (n + 1))
    state = "succeeded" if pct >= 90 else "running"
    return json.dumps({"job": args.get("job_id"), "state": state, "progress": pct, "checked_at": time.time()})


def _pages(tool: str, args: dict[str, Any], n: int) -> str:
    page = int(args.get("page", 1))
    items = [{"id": 100 * page + i, "title": f"issue {100 * page + i}"} for i in range(3)]
    return json.dumps({"page": page, "items": items, "has_more": page < 5})


SEARCHES = ("timeout", "connection refused", "pool exhausted", "deadlock", "503", "retry budget")


def _searching(tool: str, args: dict[str, Any], n: int) -> str:
    q = str(args.get("query", ""))
    return f"{3 + len(q)} matches for '{q}': first at 09:{10 + len(q):02d} in service-{len(q) % 4}"


def _call(name: str, args: Mapping[str, Any], thought: str | None = None) -> Turn:
    return Turn(content=thought, tool_calls=(ToolCallSpec(name, dict(args)),))


def _flaky(tool: str, args: dict[str, Any], n: int) -> str:
    if tool == "read_file" and n < 2:
        raise ToolFailure("503 Service Unavailable: config store is restarting")
    return _investigation(tool, args, n)


CHANT = "\n".join(["I will now check the logs again."] * 25)
TABLE = "| service | p99 ms | errors |\n|---|---|---|\n" + "\n".join(
    f"| svc-{i:02d} | {40 + 7 * i} | {i % 5} |" for i in range(25)
)


def _then(calls: list[Turn], answer: str) -> tuple[Turn, ...]:
    return (*calls, Turn.answer(answer))


REWORDINGS = (
    "checkout timeout",
    "timeout checkout",
    "checkout time out",
    "CHECKOUT_TIMEOUT",
    "checkout-timeout",
    "timeout for checkout",
)
CYCLE = [
    _call("read_file", {"path": "payments-db/pool.yaml"}, "Let me check the pool config."),
    _call("search_logs", {"query": "timeout"}, "And the logs again."),
]

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "loop-same-search",
            "loop",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            _then(
                [_call("search_logs", {"query": "timeout"}, THOUGHT)] * 8,
                "I could not determine the root cause.",
            ),
            _same_search,
            "the same search, the same result, eight times",
        ),
        Scenario(
            "loop-silent-same-search",
            "loop",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            _then([_call("search_logs", {"query": "timeout"})] * 7, "I could not determine the root cause."),
            _same_search,
            "the same search and result, no text from the model",
        ),
        Scenario(
            "loop-reworded-no-matches",
            "loop",
            "Find where the checkout timeout is configured.",
            _then(
                [_call("search_logs", {"query": q}, "Let me try another wording.") for q in REWORDINGS],
                "I could not find it.",
            ),
            _no_matches,
            "six rewordings, the same 'No matches.' each time",
        ),
        Scenario(
            "loop-missing-file",
            "loop",
            "Summarise config/missing.yaml.",
            _then(
                [_call("read_file", {"path": "config/missing.yaml"}, "Let me read the file.")] * 6,
                "The file could not be read.",
            ),
            _missing,
            "the same missing path read six times, the same error",
        ),
        Scenario(
            "loop-cycle-read-search",
            "loop",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            _then(CYCLE * 4, "Still unsure."),
            _cycle,
            "read / search alternating four rounds, identical results",
        ),
        Scenario(
            "loop-chanting-answer",
            "loop",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            _then([_call("search_logs", {"query": "timeout"}, "First the timeout errors.")], CHANT),
            _same_search,
            "one search, then an answer that is the same sentence 25 times",
        ),
        Scenario(
            "healthy-long-table-answer",
            "healthy",
            "Give me the p99 latency and error count of every service.",
            _then(
                [
                    _call(
                        "get_metrics", {"service": "all", "metric": "p99_latency_ms"}, "Reading the metrics."
                    )
                ],
                TABLE,
            ),
            _investigation,
            "one call, then a 25-row table whose rows all differ",
        ),
        Scenario(
            "healthy-transient-tool-errors",
            "healthy",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            (
                *[_call("read_file", {"path": "payments-db/pool.yaml"}, "Reading the pool config.")] * 3,
                _call(
                    "get_metrics", {"service": "payments-db", "metric": "p99_latency_ms"}, "Now the latency."
                ),
                Turn.answer("Root cause: the pool is capped at 10 connections; raise it to 50."),
            ),
            _flaky,
            "the config store fails twice (503), the third read works, the work goes on",
        ),
        Scenario(
            "healthy-investigation",
            "healthy",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            (
                _call("search_logs", {"query": "timeout"}, "First the timeout errors."),
                _call(
                    "get_metrics",
                    {"service": "payments-db", "metric": "p99_latency_ms"},
                    "Now the database latency.",
                ),
                _call("read_file", {"path": "payments-db/pool.yaml"}, "And the pool configuration."),
                Turn.answer("Root cause: the payments-db pool is capped at 10 connections; raise it to 50."),
            ),
            _investigation,
            "three different calls, each building on the last",
        ),
        Scenario(
            "healthy-poll-progress",
            "healthy",
            "Start the nightly reindex job and tell me when it has finished.",
            _then(
                [_call("get_job_status", {"job_id": "reindex-7"}, "Checking the job.")] * 6,
                "The reindex job succeeded.",
            ),
            _poll,
            "the same poll six times, progress rising to 'succeeded'",
        ),
        Scenario(
            "healthy-pagination",
            "healthy",
            "List every open issue and group them by area.",
            _then(
                [_call("list_items", {"page": p}, f"Fetching page {p}.") for p in range(1, 6)],
                "15 issues grouped by area.",
            ),
            _pages,
            "five pages, new items on each",
        ),
        Scenario(
            "healthy-searching",
            "healthy",
            "Why is checkout failing? Investigate the logs and recommend a fix.",
            _then(
                [_call("search_logs", {"query": q}, f"Next I will search for {q!r}.") for q in SEARCHES],
                "Root cause: the payments-db pool is exhausted.",
            ),
            _searching,
            "one tool, six different searches with different results",
        ),
    )
}


TOOL_DOCS = {
    "search_logs": "Search the service logs for a query string.",
    "get_metrics": "Read one metric of a service.",
    "read_file": "Read a file from the repository.",
    "get_job_status": "Get the status of a background job.",
    "list_items": "List open issues, one page at a time.",
}


# --- one framework's session --------------------------------------------------------------


class Recorder:
    """Runs scenarios one at a time, attributing each new trace to the scenario that made it,
    and writes ``<name>.otlp.jsonl`` and ``labels.jsonl`` into ``out``."""

    def __init__(self, framework: str, convention: str, out: Path, receiver: OtlpJsonLinesReceiver) -> None:
        self.framework = framework
        self.convention = convention
        self.out = out
        self.receiver = receiver
        self.labels: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def record(self, scenario: Scenario, run: Callable[[], Any], flush: Callable[[], Any]) -> None:
        before = set(self.receiver.trace_ids())
        try:
            run()
        except Exception as exc:  # a looping run may end in the framework's own limit error
            self.notes.append(f"{scenario.name}: run ended with {type(exc).__name__}: {str(exc)[:160]}")
        flush()
        new = [t for t in self.receiver.trace_ids() if t not in before]
        if len(new) != 1:
            self.notes.append(f"{scenario.name}: {len(new)} traces for one run")
        for trace_id in new:
            self.labels.append(
                {
                    "trace_id": trace_id,
                    "situation": scenario.name,
                    "label": scenario.label,
                    "convention": self.convention,
                    "framework": self.framework,
                    "source": "recording",
                }
            )

    def write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / f"{self.framework}.otlp.jsonl.gz"
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as fp:
            for line in self.receiver.lines:
                fp.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        with (self.out / "labels.jsonl").open("w") as fp:
            for row in self.labels:
                fp.write(json.dumps(row, separators=(",", ":")) + "\n")
        if self.notes:
            (self.out / "NOTES.txt").write_text("\n".join(self.notes) + "\n")
        print(
            f"{self.framework}: {len(self.labels)} traces, "
            f"{len(self.receiver.lines)} export batches -> {self.out}"
        )
        for note in self.notes:
            print("  note:", note)


# --- the tools, as plain typed functions each framework wraps its own way ----------------------


class Tools:
    """The scenario tools as typed Python functions answering from :attr:`world`.

    Set :attr:`world` before each run (``tools.world = scenario.world()``).
    """

    def __init__(self) -> None:
        self.world: World = World(_same_search)

    def functions(self) -> list[Callable[..., str]]:
        tools = self

        def search_logs(query: str) -> str:
            """Search the service logs for a query string."""
            return tools.world("search_logs", query=query)

        def get_metrics(service: str, metric: str) -> str:
            """Read one metric of a service."""
            return tools.world("get_metrics", service=service, metric=metric)

        def read_file(path: str) -> str:
            """Read a file from the repository."""
            return tools.world("read_file", path=path)

        def get_job_status(job_id: str) -> str:
            """Get the status of a background job."""
            return tools.world("get_job_status", job_id=job_id)

        def list_items(page: int) -> str:
            """List open issues, one page at a time."""
            return tools.world("list_items", page=page)

        return [search_logs, get_metrics, read_file, get_job_status, list_items]


def otlp_provider(endpoint: str, service: str) -> Any:
    """A real SDK ``TracerProvider`` exporting with the real OTLP/HTTP exporter."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def out_dir(framework: str) -> Path:
    return ROOT / "bench" / "corpus" / "recordings" / framework
