"""OTLP traffic for the service's tests and benchmarks, built as protobuf directly (fast
enough to saturate the service from a few sender processes).

An agent trace is what ``tests/support/agent_spans.search_agent`` records, in the OTel
GenAI conventions: an ``invoke_agent`` root, then per round a ``chat`` span asking for
``search({"q": "x"})`` and the ``execute_tool search`` span returning a result. Results that
never change for the same query make a loop; a new query with a new result each round
does not. A plain trace is an HTTP server span
with a DB child (no agent steps). Ids are derived from ``(seed, index)``, so two runs (and
two processes) can build the same traces.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from otel_semloop.otlp import encode_any_pb

_Request = trace_service_pb2.ExportTraceServiceRequest
_START = 1_767_225_600_000_000_000


def _ask(query: str) -> str:
    return json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "name": "search", "arguments": {"q": query}}]}]
    )


def trace_id_of(seed: int, index: int) -> bytes:
    return hashlib.blake2b(f"{seed}/{index}".encode(), digest_size=16).digest()


def _span_id(trace_id: bytes, n: int) -> bytes:
    return hashlib.blake2b(trace_id + n.to_bytes(4, "big"), digest_size=8).digest()


def _attrs(span: trace_pb2.Span, values: dict[str, str]) -> None:
    for key, value in values.items():
        span.attributes.append(common_pb2.KeyValue(key=key, value=common_pb2.AnyValue(string_value=value)))


def agent_spans(trace_id: bytes, rounds: int, loop: bool, padding: int = 0) -> list[trace_pb2.Span]:
    """An agent trace's spans, root first."""
    root_id = _span_id(trace_id, 0)
    spans = []
    root = trace_pb2.Span(
        trace_id=trace_id,
        span_id=root_id,
        name="invoke_agent researcher",
        kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=_START,
        end_time_unix_nano=_START + (rounds * 2 + 1) * 1_000_000,
    )
    _attrs(root, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"})
    spans.append(root)
    for i in range(rounds):
        t = _START + (2 * i + 1) * 1_000_000
        chat = trace_pb2.Span(
            trace_id=trace_id,
            span_id=_span_id(trace_id, 2 * i + 1),
            parent_span_id=root_id,
            name="chat model",
            start_time_unix_nano=t,
            end_time_unix_nano=t + 400_000,
        )
        query = "x" if loop else f"topic {i}"
        _attrs(chat, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": _ask(query)})
        tool = trace_pb2.Span(
            trace_id=trace_id,
            span_id=_span_id(trace_id, 2 * i + 2),
            parent_span_id=root_id,
            name="execute_tool search",
            start_time_unix_nano=t + 500_000,
            end_time_unix_nano=t + 900_000,
        )
        result = "no results" if loop else f"found {i + 3} papers on topic {i} (page {i})"
        _attrs(
            tool,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": json.dumps({"q": query}),
                "gen_ai.tool.call.result": result + ("." * padding),
            },
        )
        spans.extend((chat, tool))
    return spans


def genai_log_records(trace_id: bytes, rounds: int, loop: bool) -> list[logs_pb2.LogRecord]:
    """The GenAI log records ``opentelemetry-instrumentation-openai-v2`` would emit beside
    :func:`agent_spans`' chat spans: per round a ``gen_ai.user.message`` and a
    ``gen_ai.choice`` asking for the search, in the chat span's context (each at its own
    time, so ``trace id + span id + time`` names a record)."""
    records = []
    for i in range(rounds):
        span_id = _span_id(trace_id, 2 * i + 1)
        query = "x" if loop else f"topic {i}"
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "search", "arguments": json.dumps({"q": query})},
        }
        bodies = (
            ("gen_ai.user.message", {"content": "find papers"}),
            ("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [call]}}),
        )
        for k, (name, body) in enumerate(bodies):
            record = logs_pb2.LogRecord(
                time_unix_nano=_START + (2 * i + 1) * 1_000_000 + k,
                trace_id=trace_id,
                span_id=span_id,
                event_name=name,
            )
            encode_any_pb(body, record.body)  # a map, as the instrumentation emits it
            record.attributes.append(
                common_pb2.KeyValue(key="gen_ai.system", value=common_pb2.AnyValue(string_value="openai"))
            )
            records.append(record)
    return records


def _service_name(resource: resource_pb2.Resource, service: str) -> None:
    resource.attributes.append(
        common_pb2.KeyValue(key="service.name", value=common_pb2.AnyValue(string_value=service))
    )


def logs_request_of(
    records: Iterable[logs_pb2.LogRecord], service: str = "research-agent"
) -> logs_service_pb2.ExportLogsServiceRequest:
    request = logs_service_pb2.ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    _service_name(rl.resource, service)
    sl = rl.scope_logs.add()
    sl.scope.name = "opentelemetry.instrumentation.openai_v2"
    sl.log_records.extend(records)
    return request


def plain_spans(trace_id: bytes) -> list[trace_pb2.Span]:
    root_id = _span_id(trace_id, 0)
    root = trace_pb2.Span(
        trace_id=trace_id,
        span_id=root_id,
        name="GET /orders",
        kind=trace_pb2.Span.SPAN_KIND_SERVER,
        start_time_unix_nano=_START,
        end_time_unix_nano=_START + 2_000_000,
    )
    _attrs(root, {"http.request.method": "GET", "url.path": "/orders"})
    child = trace_pb2.Span(
        trace_id=trace_id,
        span_id=_span_id(trace_id, 1),
        parent_span_id=root_id,
        name="SELECT orders",
        start_time_unix_nano=_START + 100_000,
        end_time_unix_nano=_START + 900_000,
    )
    _attrs(child, {"db.system": "postgresql"})
    return [root, child]


def request_of(spans: Iterable[trace_pb2.Span], service: str = "research-agent") -> _Request:
    request = _Request()
    rs = request.resource_spans.add()
    _service_name(rs.resource, service)
    ss = rs.scope_spans.add()
    ss.scope.name = "agent.instrumentation"
    ss.spans.extend(spans)
    return request


def mixed_traces(seed: int, count: int, rounds: int = 4) -> Iterator[tuple[bytes, str, list[trace_pb2.Span]]]:
    """``count`` traces: ``(trace id, kind, spans)``, kind ``loop``, ``healthy`` or
    ``plain`` in turn."""
    for index in range(count):
        trace_id = trace_id_of(seed, index)
        kind = ("loop", "healthy", "plain")[index % 3]
        if kind == "plain":
            yield trace_id, kind, plain_spans(trace_id)
        else:
            yield trace_id, kind, agent_spans(trace_id, rounds, loop=kind == "loop")
