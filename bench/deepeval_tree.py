"""deepeval-style trace trees (``type``, ``name``, ``input``, ``output``, ``children``) as
real spans.

deepeval's golden traces and the semloop benchmark carry no ids or times. They are turned
into spans in the OpenTelemetry GenAI conventions (``invoke_agent``, ``chat``,
``execute_tool``) with invented, deterministic ids and one-millisecond steps, then read
back by the same code that reads production spans. A tree that survives the round trip
scores the same as the original: that is what the benchmark checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from otel_semloop.builder import build_trace
from otel_semloop.model import SpanRecord, Trace

#: Where invented times start: 2026-01-01T00:00:00Z, so files sort sensibly in backends.
EPOCH_NS = 1_767_225_600_000_000_000
STEP_NS = 1_000_000
SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3


def tree_to_spans(tree: Mapping[str, Any], key: str, *, start_ns: int = EPOCH_NS) -> list[SpanRecord]:
    """Spans (GenAI conventions) for a deepeval tree; ids derive from ``key``."""
    trace_id = _hex_digest(f"trace:{key}", 32)
    records: list[SpanRecord] = []
    clock = start_ns
    # Iterative pre-order walk; an exit marker closes a span after its children.
    stack: list[tuple[Mapping[str, Any], str, bool, SpanRecord | None]] = [(tree, "", False, None)]
    while stack:
        node, parent_id, closing, record = stack.pop()
        if closing:
            assert record is not None
            clock += STEP_NS
            record.end_ns = clock
            continue
        span_id = _hex_digest(f"span:{key}:{len(records)}", 16)
        clock += STEP_NS
        record = SpanRecord(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_id,
            name="",
            start_ns=clock,
            end_ns=clock,
        )
        record.name, record.kind, record.attributes = _genai_span(node)
        records.append(record)
        stack.append((node, parent_id, True, record))
        for child in reversed(node.get("children") or ()):
            stack.append((child, span_id, False, None))
    return records


def trace_from_tree(tree: Mapping[str, Any], key: str = "tree") -> Trace:
    """The :class:`Trace` a deepeval tree becomes once it has been through spans."""
    return build_trace(tree_to_spans(tree, key))


def trace_from_bench_row(row: Mapping[str, Any]) -> Trace:
    """A row of the semloop benchmark (``trace_id``, ``root``, ...) as a :class:`Trace`."""
    return trace_from_tree(row["root"], str(row["trace_id"]))


def _genai_span(node: Mapping[str, Any]) -> tuple[str, int, dict[str, Any]]:
    node_type = node.get("type")
    name = str(node.get("name", ""))
    node_input = node.get("input")
    node_output = node.get("output")
    attrs: dict[str, Any] = {}
    if node_type == "agent":
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = name
        _set_messages(attrs, "gen_ai.input.messages", "user", node_input)
        _set_messages(attrs, "gen_ai.output.messages", "assistant", node_output, skip_empty=True)
        return f"invoke_agent {name}", SPAN_KIND_INTERNAL, attrs
    if node_type == "llm":
        attrs["gen_ai.operation.name"] = "chat"
        _set_messages(attrs, "gen_ai.input.messages", "user", node_input)
        _set_messages(attrs, "gen_ai.output.messages", "assistant", node_output)
        return name, SPAN_KIND_CLIENT, attrs
    if node_type in ("tool", "retriever"):
        attrs["gen_ai.operation.name"] = "execute_tool"
        attrs["gen_ai.tool.name"] = name
        if node_input is not None:
            attrs["gen_ai.tool.call.arguments"] = _as_text(node_input)
        if node_output is not None:
            attrs["gen_ai.tool.call.result"] = _as_text(node_output)
        return f"execute_tool {name}", SPAN_KIND_INTERNAL, attrs
    return name, SPAN_KIND_INTERNAL, attrs


def _set_messages(
    attrs: dict[str, Any], key: str, role: str, content: Any, *, skip_empty: bool = False
) -> None:
    if content is None or (skip_empty and content == ""):
        return
    message = {"role": role, "parts": [{"type": "text", "content": _as_text(content)}]}
    attrs[key] = orjson.dumps([message]).decode()


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _hex_digest(text: str, length: int) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()[:length]
