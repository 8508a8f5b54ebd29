"""Read agent steps out of span attributes, whichever convention wrote them.

Supported, checked in this order on each span:

* deepeval's own ``confident.*`` attributes (``confident.span.type`` etc.);
* OpenInference (``openinference.span.kind``, ``input.value``, ``llm.output_messages.*``);
* OpenLLMetry / Traceloop (``traceloop.span.kind``, ``traceloop.entity.*``,
  indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``);
* the OpenTelemetry GenAI conventions (``gen_ai.operation.name``, ``gen_ai.input.messages``
  and ``gen_ai.output.messages`` with typed parts, ``gen_ai.tool.*``).

Message lists are JSON, not text: they are flattened to their text contents (joined by
newlines) so detectors compare what was said, not the JSON around it. Tool calls an LLM
requested inside its output are kept structured (:class:`~otel_semloop.model.ToolCall`).
A span that matches none of these is not a step (kind ``OTHER``): HTTP, DB and framework
spans stay in the trace for write-back and forwarding but detectors ignore them.

Where the messages are
    Span attributes first (the forms above). When an LLM or tool span has none, its span
    events are read: the GenAI details event (``gen_ai.input.messages`` /
    ``gen_ai.output.messages`` as event attributes), the per-message GenAI events
    (``gen_ai.user.message``, ``gen_ai.tool.message``, ``gen_ai.choice``, ...) and
    OpenLLMetry's ``gen_ai.content.prompt`` / ``gen_ai.content.completion``. GenAI events
    emitted as log records are read the same way once :func:`attach_log_records` has put
    them on their span. OpenLLMetry's decorator envelopes (``{"args": [...], "kwargs":
    {...}}`` inputs, JSON-encoded outputs) are unwrapped (:func:`unwrap_envelope`), and so
    are LangChain's callback payload around a tool's arguments
    (:func:`unwrap_callback_input`) and the framework objects around a tool's result
    (LangChain messages, LlamaIndex's ``ToolOutput``: :func:`unwrap_tool_result`).

Size: one reader per convention and per place a convention puts messages (attributes,
indexed attributes, span events, log records, hand-off forms); they share the message
flattening, so splitting them would spread one definition of "what was said" over files.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_semloop.model import STATUS_ERROR, EventRecord, SpanRecord, Step, StepKind, ToolCall

#: Enum members as module constants (cheaper to read per step: see otel_semloop.model).
_AGENT = StepKind.AGENT
_LLM = StepKind.LLM
_OTHER = StepKind.OTHER
_TOOL = StepKind.TOOL
_GENAI_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
_GENAI_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_OPENINFERENCE_KINDS = {
    "AGENT": _AGENT,
    "LLM": _LLM,
    "TOOL": _TOOL,
    # A retriever call is an action whose repetition is loop evidence like a tool's.
    "RETRIEVER": _TOOL,
}
_TRACELOOP_KINDS = {"agent": _AGENT, "workflow": _AGENT, "tool": _TOOL}
_CONFIDENT_KINDS = {
    "agent": _AGENT,
    "llm": _LLM,
    "tool": _TOOL,
    "retriever": _TOOL,
}
_INDEXED_TOOL_CALL = re.compile(r"^tool_calls\.(\d+)\.(.+)$")
_INDEXED = re.compile(r"^(gen_ai\.(?:prompt|completion)|llm\.(?:input|output)_messages)\.(\d+)\.(.+)$")
_INDEXED_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")


def step_kind(attributes: Mapping[str, Any], *, top_level: bool = False) -> StepKind:
    """Classify a span. ``top_level`` marks a span with no step above it: an OpenInference
    ``CHAIN`` there is the agent run itself, deeper down it is plumbing."""
    confident = attributes.get("confident.span.type")
    if isinstance(confident, str) and confident in _CONFIDENT_KINDS:
        return _CONFIDENT_KINDS[confident]
    oi_kind = attributes.get("openinference.span.kind")
    if isinstance(oi_kind, str):
        oi_kind = oi_kind.upper()
        if oi_kind in _OPENINFERENCE_KINDS:
            return _OPENINFERENCE_KINDS[oi_kind]
        if oi_kind == "CHAIN" and top_level:
            return _AGENT
        return _OTHER
    tl_kind = attributes.get("traceloop.span.kind")
    if isinstance(tl_kind, str) and tl_kind in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[tl_kind]
    operation = attributes.get("gen_ai.operation.name")
    if not isinstance(operation, str):
        operation = ""
    if operation == "execute_tool":
        return _TOOL
    if operation in _GENAI_AGENT_OPERATIONS:
        return _AGENT
    if operation in _GENAI_LLM_OPERATIONS or "llm.request.type" in attributes:
        return _LLM
    return _OTHER


def read_step(record: SpanRecord, kind: StepKind) -> Step:
    """Build the :class:`Step` for a span already classified as ``kind``.

    The step's ``input``/``input_text`` (and an LLM or agent step's decoded ``output``)
    are left for their first read when decoding them would build something (see
    :func:`resolve_deferred`): an LLM call's input is the whole message history, read by the
    detectors only in rare cases. The step's values are the same either way.
    """
    attrs = record.attributes
    get = attrs.get
    name = record.name
    for key in _NAME_KEYS.get(kind, _SPAN_NAME_KEYS):
        value = get(key)
        if isinstance(value, str) and value:
            name = value
            break
    raw_in = raw_out = None
    if kind is _LLM:
        # Message lists first: OpenInference's input.value/output.value on an LLM span is
        # the whole request/response body, not what was said.
        # Indexed messages are collected only when a message list attribute is missing.
        raw_in = get("gen_ai.input.messages")
        raw_out = get("gen_ai.output.messages")
        if not raw_in or not raw_out:
            indexed = _indexed_messages(attrs)
            raw_in = raw_in or _first_indexed(indexed, "llm.input_messages", "gen_ai.prompt")
            raw_out = raw_out or _first_indexed(indexed, "llm.output_messages", "gen_ai.completion")
    if raw_in is None:
        for key in _INPUT_KEYS:
            raw_in = get(key)
            if raw_in is not None:
                break
    if raw_out is None:
        for key in _OUTPUT_KEYS:
            raw_out = get(key)
            if raw_out is not None:
                break
    events = record.events
    if events and kind is not _AGENT and (raw_in is None or raw_out is None):
        events_in, events_out = _event_messages(events)
        if kind is _TOOL:
            # On a tool span the tool message holds the arguments, the choice the result.
            events_in, events_out = _message_content(events_in), _message_content(events_out)
        if raw_in is None:
            raw_in = events_in
        if raw_out is None:
            raw_out = events_out
    # OpenLLMetry's decorators record json.dumps({"args": [...], "kwargs": {...}}) as the
    # input and json.dumps(return value) as the output: both are unwrapped.
    envelope = "traceloop.entity.input" in attrs or "traceloop.entity.output" in attrs

    output = _decode_json(raw_out)
    if envelope:
        output = _decode_json_string(output)
    output_text = flatten_text(output)

    tool_calls: tuple[ToolCall, ...] = ()
    tool_arguments = tool_result = handoff_to = None
    step_input: Any = _UNREAD
    # The input is kept undecoded unless it is plain text (its own text) or nothing.
    defer_input = raw_in is not None and not (isinstance(raw_in, str) and raw_in[:1] not in _JSON_OPENERS)
    if kind is _TOOL:
        # Not OpenInference's ``tool.parameters``: that is the tool's JSON *schema*, the same
        # on every call (set by OITracer's @tool and the openai-agents instrumentor), so
        # reading it as arguments would make every call of a tool look identical.
        arguments = get("gen_ai.tool.call.arguments")
        if arguments is not None:
            tool_arguments = _decode_json(arguments)
        else:
            # The arguments are the input itself (the same object): decoded now.
            defer_input = False
            tool_arguments = step_input = _decode_input(raw_in, envelope)
        result = get("gen_ai.tool.call.result")
        tool_result = _decode_json(result) if result is not None else output
        if isinstance(tool_arguments, dict) and "input_str" in tool_arguments:
            tool_arguments = unwrap_callback_input(tool_arguments)
        if isinstance(tool_result, dict):
            tool_result = unwrap_tool_result(tool_result)
        handoff_to = handoff_target(attrs, name, tool_arguments)
        # The tool result may be the decoded output itself: the output stays decoded.
        defer_output = False
    else:
        if kind is _LLM:
            tool_calls = tuple(_tool_calls(output))
        # Only the text and the tool calls are read at once: the decoded messages are
        # dropped (decoded again on a read of ``output``), fewer objects live per step.
        defer_output = output is not raw_out and isinstance(raw_out, str)

    if defer_input:
        step_input = None
        input_text = ""
    else:
        if step_input is _UNREAD:
            step_input = _decode_input(raw_in, envelope)
        input_text = flatten_text(step_input)

    # Error and usage, read as _read_error / _read_usage do.
    error_type = get("error.type")
    message = record.status_message
    for event in events:
        if event.name == "exception":
            error_type = error_type or event.attributes.get("exception.type")
            message = message or str(event.attributes.get("exception.message", ""))
            break
    is_error = record.status_code == STATUS_ERROR or error_type is not None
    if _USAGE_KEYS.isdisjoint(attrs):  # most spans but LLM calls: one pass in C
        input_tokens = output_tokens = cost = None
    else:
        input_tokens = _as_int(_first_present(attrs, *_INPUT_TOKEN_KEYS))
        output_tokens = _as_int(_first_present(attrs, *_OUTPUT_TOKEN_KEYS))
        cost = _first_present(attrs, *_COST_KEYS)
    # Positional: a keyword call matches each name against the parameters (several times
    # the cost of the call itself for this many); the order is checked at import below.
    step = Step(
        kind,
        name,
        record.span_id,
        record.trace_id,
        record.parent_span_id,
        step_input,
        output,
        input_text,
        output_text,
        tool_arguments,
        tool_result,
        tool_calls,
        is_error,
        str(error_type or "") if is_error else "",
        (message or "") if is_error else "",
        record.start_ns or None,
        record.end_ns or None,
        None,  # agent: set by the builder
        input_tokens,
        output_tokens,
        float(cost) if isinstance(cost, (int, float)) else None,
        0,  # depth
        False,  # synthetic
        handoff_to,
    )
    if defer_input or defer_output:
        step._deferred = (raw_in, envelope, raw_out)
        if defer_input:
            del step.input, step.input_text
        if defer_output:
            del step.output
    return step


_STEP_FIELDS = (
    "kind", "name", "span_id", "trace_id", "parent_span_id", "input", "output", "input_text",
    "output_text", "tool_arguments", "tool_result", "tool_calls", "is_error", "error_type",
    "error_message", "start_ns", "end_ns", "agent", "input_tokens", "output_tokens", "cost",
    "depth", "synthetic", "handoff_to",
)  # fmt: skip
if tuple(f.name for f in dataclasses.fields(Step))[: len(_STEP_FIELDS)] != _STEP_FIELDS:
    raise ImportError("read_step builds a Step positionally: update it to Step's field order")
_JSON_OPENERS = ("{", "[")
_UNREAD: Any = object()
_NAME_KEYS = {
    _TOOL: ("confident.tool.name", "gen_ai.tool.name", "tool.name", "traceloop.entity.name"),
    _AGENT: ("confident.agent.name", "gen_ai.agent.name", "agent.name", "traceloop.entity.name"),
}
_SPAN_NAME_KEYS = ("confident.span.name",)
_INPUT_TOKEN_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "confident.llm.input_token_count",
)
_OUTPUT_TOKEN_KEYS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "confident.llm.output_token_count",
)
_COST_KEYS = ("gen_ai.usage.cost", "llm.cost.total")
_USAGE_KEYS = frozenset(_INPUT_TOKEN_KEYS + _OUTPUT_TOKEN_KEYS + _COST_KEYS)


def _decode_input(raw: Any, envelope: bool) -> Any:
    """A step's input value from its raw attribute (see :func:`read_step`)."""
    value = _decode_json(raw)
    return unwrap_envelope(value) if envelope else value


def resolve_deferred(step: Step, deferred: tuple[Any, bool, Any], name: str) -> Any:
    """Decode field ``name`` (``input``, ``input_text`` or ``output``) of a step that
    :func:`read_step` left undecoded, store it on the step and return it: exactly what
    reading everything at once gave. ``deferred`` is the step's ``(raw input, envelope,
    raw output)``: the attribute values themselves (strings, in the common case), a tuple
    of which the garbage collector stops tracking, so a step keeps no decoded messages and
    no extra tracked object. Called by :class:`~otel_semloop.model.Step` on a first read.
    """
    raw_input, envelope, raw_output = deferred
    if name == "output":
        value = _decode_json(raw_output)
        if envelope:
            value = _decode_json_string(value)
        step.output = value
        return value
    value = _decode_input(raw_input, envelope)
    if name == "input":
        step.input = value
        return value
    if not step.is_decoded("input"):
        step.input = value  # decoded anyway: kept (an assigned input is left alone)
    text = step.input_text = flatten_text(value)
    return text


#: Hand-off tools named after their target: ``transfer_to_billing`` (OpenAI Agents SDK,
#: LangGraph swarm/supervisor, AutoGen), ``handoff_to_billing``, and the OpenInference
#: openai-agents instrumentation's ``handoff to billing`` span.
_HANDOFF_NAME = re.compile(
    r"^(?:transfer_to_|handoff_to_|transfer to |handoff to |hand off to )(.+)$", re.IGNORECASE
)
#: Hand-off tools that name their target in an argument: Google ADK's
#: ``transfer_to_agent(agent_name=...)``, CrewAI's "Delegate work to coworker" (``coworker``).
_HANDOFF_TOOLS = frozenset(
    {"transfer_to_agent", "handoff", "transfer", "delegate work to coworker", "delegate_work"}
)
_HANDOFF_ARGS = ("agent_name", "agent", "coworker", "target", "to", "to_agent", "assignee")


@functools.lru_cache(maxsize=1024)
def _handoff_name(name: str) -> tuple[str | None, bool]:
    """(the target a hand-off tool's name gives, whether the tool names it in an argument):
    a function of the name alone, cached (a trace calls a few tools many times)."""
    match = _HANDOFF_NAME.match(name)
    if match and match.group(1) != "agent":
        return match.group(1).strip(), False
    return None, name.lower() in _HANDOFF_TOOLS


def handoff_target(attrs: Mapping[str, Any], name: str, arguments: Any) -> str | None:
    """The agent a tool call hands the work to, or None when it is not a hand-off.

    Read from the GenAI transfer attributes (``gen_ai.transfer.target.name`` on an
    ``execute_tool`` span, with ``gen_ai.transfer.mode``), then from hand-off tool names
    and their target argument (see ``_HANDOFF_NAME`` / ``_HANDOFF_TOOLS``)."""
    target = attrs.get("gen_ai.transfer.target.name") or attrs.get("gen_ai.transfer.target")
    if isinstance(target, str) and target:
        return target
    named, by_argument = _handoff_name(name)
    if named is not None:
        return named
    if by_argument and isinstance(arguments, Mapping):
        for key in _HANDOFF_ARGS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
    return None


_INPUT_KEYS = (
    "confident.span.input",
    "gen_ai.input.messages",
    "input.value",
    "traceloop.entity.input",
    "gen_ai.tool.call.arguments",
)
_OUTPUT_KEYS = (
    "confident.span.output",
    "gen_ai.output.messages",
    "output.value",
    "traceloop.entity.output",
    "gen_ai.tool.call.result",
)


def _first_indexed(indexed: Mapping[str, list[dict[str, Any]]], *prefixes: str) -> Any:
    for prefix in prefixes:
        if indexed.get(prefix):
            return indexed[prefix]
    return None


def _first_present(attrs: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def _decode_json(value: Any) -> Any:
    """Parse a string that holds a JSON object or array; leave anything else as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _decode_json_string(value: Any) -> Any:
    """A JSON-encoded string (``"\\"no matches\\""``) decoded to its text."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        return _decode_json(decoded) if isinstance(decoded, str) else decoded
    return value


def unwrap_envelope(value: Any) -> Any:
    """The call's arguments inside an instrumentation envelope.

    OpenLLMetry's ``@tool``/``@task`` decorators record ``{"args": [...], "kwargs":
    {...}}``: keyword arguments alone become a plain object, a single positional argument
    becomes itself (merged with the keywords when it is an object), several positional
    arguments become ``{"args": [...], **kwargs}``. Anything else is returned unchanged.
    """
    if not isinstance(value, dict) or not value or not set(value) <= {"args", "kwargs"}:
        return value
    args = value.get("args") or []
    kwargs = value.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return value
    if not args:
        return kwargs
    if len(args) == 1 and not kwargs:
        return _decode_json(args[0])
    if len(args) == 1 and isinstance(args[0], dict):
        return {**args[0], **kwargs}
    return {"args": args, **kwargs}


#: Keys of LangChain's tool-start callback payload as instrumentations record it
#: (OpenLLMetry's LangChain instrumentation): the arguments are in ``inputs`` (an object)
#: or ``input_str`` (its ``str()``, a Python literal); ``tags``, ``metadata`` (LangGraph
#: checkpoint ids, new on every step) and ``kwargs`` (the tool call id) identify the run.
_CALLBACK_INPUT_KEYS = frozenset(
    {"input_str", "inputs", "tags", "metadata", "kwargs", "run_id", "parent_run_id"}
)
_LITERAL_MAX_CHARS = 65536


def unwrap_callback_input(value: Any) -> Any:
    """A tool's arguments inside a LangChain callback payload (see
    :data:`_CALLBACK_INPUT_KEYS`); anything else unchanged. Without this every call looks
    new: the payload carries a fresh checkpoint id and tool call id each time."""
    if not isinstance(value, dict) or "input_str" not in value or not set(value) <= _CALLBACK_INPUT_KEYS:
        return value
    inputs = value.get("inputs")
    if isinstance(inputs, dict) and inputs:
        return inputs
    text = value.get("input_str")
    if not isinstance(text, str):
        return text
    decoded = _decode_json(text)
    if decoded is not text or len(text) > _LITERAL_MAX_CHARS or text[:1] not in ("{", "["):
        return decoded
    try:
        return ast.literal_eval(text)  # the str() of a dict: a literal, never code
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text


def unwrap_tool_result(value: Any) -> Any:
    """A tool's result inside the objects frameworks record around it; anything else
    unchanged. Without this, a tool call id or run metadata inside the object makes every
    result look new.

    * LangChain's tool-end callback payload (``{"output": ..., "kwargs": {...}}``);
    * a serialized LangChain message (``{"lc": 1, "type": "constructor", "kwargs":
      {"content": ..., "tool_call_id": ...}}``) and its dict dump (``{"type": "tool",
      "data": {"content": ..., "tool_call_id": ...}}``): the content;
    * LlamaIndex's ``ToolOutput`` (``tool_name``, ``raw_output``, ``blocks``): the raw
      output.
    """
    if not isinstance(value, dict):
        return value
    if "output" in value and set(value) <= {"output", "kwargs"}:
        value = _decode_json(value["output"])
        if not isinstance(value, dict):
            return value
    if value.get("lc") == 1 and value.get("type") == "constructor":
        kwargs = value.get("kwargs")
        if isinstance(kwargs, dict):
            return _decode_json(kwargs["content"]) if "content" in kwargs else kwargs
    data = value.get("data")
    if set(value) == {"type", "data"} and isinstance(data, dict) and "content" in data:
        return _decode_json(data["content"])
    if "tool_name" in value and "raw_output" in value:
        return _decode_json(value["raw_output"])
    return value


#: Span events (and log records attached to their span, see :func:`attach_log_records`)
#: that carry an LLM call's messages, by name: (side, role or None).
_MESSAGE_EVENTS = {
    "gen_ai.system.message": ("input", "system"),
    "gen_ai.user.message": ("input", "user"),
    "gen_ai.assistant.message": ("input", "assistant"),
    "gen_ai.tool.message": ("input", "tool"),
    "gen_ai.choice": ("output", "assistant"),
}
_CONTENT_EVENTS = {
    "gen_ai.content.prompt": ("input", "gen_ai.prompt"),
    "gen_ai.content.completion": ("output", "gen_ai.completion"),
}


def _event_messages(events: Any) -> tuple[Any, Any]:
    """(input, output) message lists read from span events, in the forms instrumentations
    emit: the GenAI details event (``gen_ai.input.messages``/``gen_ai.output.messages``
    attributes on any event), the per-message events (``gen_ai.user.message``,
    ``gen_ai.choice``, ... with ``content``/``message``/``tool_calls`` attributes or a log
    ``body``), and OpenLLMetry's ``gen_ai.content.prompt``/``.completion`` events."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    whole_in: Any = None
    whole_out: Any = None
    for event in events:
        attrs = event.attributes
        if not attrs:
            continue
        name = event.name or str(attrs.get("event.name", ""))
        if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
            whole_in = whole_in if whole_in is not None else attrs.get("gen_ai.input.messages")
            whole_out = whole_out if whole_out is not None else attrs.get("gen_ai.output.messages")
            continue
        if name in _CONTENT_EVENTS:
            side, key = _CONTENT_EVENTS[name]
            value = attrs.get(key, attrs.get("body"))
            if value is not None:
                (inputs if side == "input" else outputs).append(_decode_json(value))
            continue
        if name not in _MESSAGE_EVENTS:
            continue
        side, role = _MESSAGE_EVENTS[name]
        body = _decode_json(attrs.get("body", attrs.get("gen_ai.event.content")))
        message: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
        if isinstance(message.get("message"), dict):  # gen_ai.choice: {"message": {...}}
            message = dict(message["message"])
        for key in ("content", "tool_calls", "id", "role"):
            if key in attrs and key not in message:
                message[key] = _decode_json(attrs[key])
        if "content" not in message and "message" in attrs:
            message["content"] = _decode_json(attrs["message"])  # gen_ai.choice's message attribute
        if isinstance(body, str) and "content" not in message:
            message["content"] = body
        message.setdefault("role", role)
        if message.get("role") == "tool" and "id" in message and "tool_call_id" not in message:
            message["tool_call_id"] = message["id"]
        (inputs if side == "input" else outputs).append(message)
    event_in = whole_in if whole_in is not None else (_flat(inputs) if inputs else None)
    event_out = whole_out if whole_out is not None else (_flat(outputs) if outputs else None)
    return event_in, event_out


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A log record that belongs to a span (the Logs API form of GenAI events): its span
    id, event name (``event.name`` or the record's own), time, attributes and body."""

    span_id: str
    name: str
    time_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None


def attach_log_records(records: Iterable[SpanRecord], logs: Iterable[LogEvent]) -> list[SpanRecord]:
    """``records`` with each log event added to the events of the span it names, so the
    readers above see messages whatever way they were emitted (span attributes, span
    events or log records). The body is kept under the ``body`` attribute. Spans without
    logs are returned as they are; logs naming no span of ``records`` are ignored."""
    by_span: dict[str, list[EventRecord]] = {}
    for log in logs:
        attributes = dict(log.attributes)
        if log.body is not None:
            attributes["body"] = log.body
        by_span.setdefault(log.span_id, []).append(EventRecord(log.name, log.time_ns, attributes))
    out = []
    for record in records:
        extra = by_span.get(record.span_id)
        if extra:
            record = dataclasses.replace(
                record, events=[*record.events, *sorted(extra, key=lambda e: e.time_ns)]
            )
        out.append(record)
    return out


def _message_content(value: Any) -> Any:
    """The content of a single message read from events (content blocks as their text);
    anything else unchanged."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict) or "content" not in value:
        return value
    content = value["content"]
    if isinstance(content, list) and content and all(isinstance(b, dict) for b in content):
        text = block_text(content)
        return text or content
    return content


def _flat(items: list[Any]) -> Any:
    """Messages from several events as one list (an event may hold a whole list)."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    if len(out) == 1 and isinstance(out[0], str):
        return out[0]
    return out


def _indexed_messages(attrs: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Collect indexed message attributes (``gen_ai.completion.0.content``,
    ``llm.output_messages.0.message.tool_calls.1.tool_call.function.name``) into message
    dicts per prefix, in index order."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attrs.items():
        if not key.startswith(_INDEXED_PREFIXES):  # in C; the pattern needs one of them
            continue
        match = _INDEXED.match(key)
        if match is None:
            continue
        prefix, index, rest = match.group(1), int(match.group(2)), match.group(3)
        rest = rest.removeprefix("message.")
        message = found.setdefault(prefix, {}).setdefault(index, {})
        if rest.startswith("tool_calls."):
            call = _INDEXED_TOOL_CALL.match(rest)
            if call is None:
                continue
            calls = message.setdefault("tool_calls", {})
            field = call.group(2).removeprefix("tool_call.").removeprefix("function.")
            calls.setdefault(int(call.group(1)), {})[field] = value
        else:
            message[rest] = value
    result: dict[str, list[dict[str, Any]]] = {}
    for prefix, by_index in found.items():
        messages = []
        for _, message in sorted(by_index.items()):
            calls = message.get("tool_calls")
            if isinstance(calls, dict):
                message["tool_calls"] = [call for _, call in sorted(calls.items())]
            messages.append(message)
        result[prefix] = messages
    return result


def flatten_text(value: Any) -> str:
    """The text a person would read in a message list or structured value.

    Strings pass through; GenAI messages contribute their text ``parts``; chat messages
    their ``content`` (string or list of ``{"type": "text", "text": ...}``); other dicts
    and lists are rendered as compact JSON with sorted keys, so equal values give equal text.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value:
        texts = []
        message_seen = False
        for message in value:
            if not isinstance(message, dict):
                break  # not a message list: rendered as JSON below
            text = _message_text(message)
            if text is not None:
                message_seen = True
                if text:
                    texts.append(text)
        else:
            if message_seen:
                return "\n".join(texts)
    if isinstance(value, dict):
        text = _message_text(value)
        if text is not None:
            return text
    if isinstance(value, (list, dict)):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:
            return str(value)
    return str(value)


_PART_TEXT_TYPES = ("text", "reasoning")  # a tuple: a part's type may be unhashable
_ABSENT: Any = object()


def _message_text(message: Mapping[str, Any]) -> str | None:
    """Text of one message, or None when the dict is not a message."""
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = []
        for part in parts:
            if isinstance(part, dict) and part.get("type") in _PART_TEXT_TYPES:
                content = part.get("content", _ABSENT)
                if content is _ABSENT:
                    content = part.get("text")
                if isinstance(content, str):
                    texts.append(content)
        return "\n".join(texts)
    if "content" in message or "role" in message:
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return block_text(content)
        return ""
    return None


_TEXT_TYPES = frozenset({"text", "output_text", "input_text"})


def block_text(blocks: list[Any]) -> str:
    """The text of a list of content blocks: typed parts (``{"type": "text", "text":
    ...}``) and the untyped blocks of the Bedrock Converse shape that Strands records
    (``{"text": ...}``, and ``{"toolResult": {"content": [...]}}`` whose text is the
    result's)."""
    texts: list[str] = []
    for part in blocks:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        # (A type that is not a string, even an unhashable list, is no text type.)
        is_text = isinstance(kind, str) and kind in _TEXT_TYPES
        if is_text or (kind is None and isinstance(part.get("text"), str)):
            texts.append(str(part.get("text", "")))
        elif isinstance(part.get("toolResult"), dict) and isinstance(part["toolResult"].get("content"), list):
            texts.append(block_text(part["toolResult"]["content"]))
    return "\n".join(texts)


def _tool_calls(output: Any) -> list[ToolCall]:
    """Tool calls requested inside LLM output messages (GenAI parts, chat ``tool_calls``)."""
    messages = output if isinstance(output, list) else [output] if isinstance(output, dict) else []
    calls: list[ToolCall] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        parts = message.get("parts")
        if isinstance(parts, _SEQUENCES):
            for part in parts:
                if isinstance(part, dict) and part.get("type") == "tool_call":
                    calls.append(_tool_call(part.get("name"), part.get("arguments"), part.get("id")))
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                use = part.get("toolUse") if isinstance(part, dict) else None
                if isinstance(use, dict):  # a Bedrock Converse block (Strands)
                    calls.append(_tool_call(use.get("name"), use.get("input"), use.get("toolUseId")))
        requested = message.get("tool_calls")
        if not isinstance(requested, _SEQUENCES):
            continue
        for call in requested:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            calls.append(_tool_call(function.get("name"), function.get("arguments"), call.get("id")))
    return calls


#: Message parts and tool calls are read from these only (iterating a string or a dict
#: yielded no parts either; a bool or a number there raised TypeError).
_SEQUENCES = (list, tuple)


def _items(value: Any) -> Any:
    """The entries of a list or tuple; nothing for anything else (see ``_SEQUENCES``)."""
    return value if isinstance(value, _SEQUENCES) else ()


def _tool_call(name: Any, arguments: Any, call_id: Any) -> ToolCall:
    return ToolCall(str(name or ""), _decode_json(arguments), str(call_id) if call_id else None)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None  # NaN and infinities (OTLP JSON allows them) are no count


def tool_responses(messages: Any) -> dict[str, Any]:
    """Tool results an LLM call was given back, by tool call id: chat ``tool`` messages
    (``tool_call_id``, ``content``) and GenAI ``tool_call_response`` parts (``id``,
    ``response``). Used when the tool calls themselves were not recorded as spans."""
    found: dict[str, Any] = {}
    if not isinstance(messages, list):
        return found
    for message in messages:
        if not isinstance(message, dict):
            continue
        call_id = message.get("tool_call_id")
        if call_id and message.get("role") == "tool":
            found[str(call_id)] = _decode_json(message.get("content"))
        for part in _items(message.get("parts")):
            if isinstance(part, dict) and part.get("type") == "tool_call_response" and part.get("id"):
                found[str(part["id"])] = _decode_json(part.get("response"))
    return found
