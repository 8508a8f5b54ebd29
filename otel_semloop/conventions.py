"""Read agent steps out of span attributes, whichever convention wrote them.

Supported, checked in this order on each span:

* deepeval's own ``confident.*`` attributes (``confident.span.type`` etc.);
* OpenInference (``openinference.span.kind``, ``input.value``, ``llm.output_messages.*``);
* OpenLLMetry / Traceloop (``traceloop.span.kind``, ``traceloop.entity.*``,
  indexed ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``);
* the OpenTelemetry GenAI conventions (``gen_ai.operation.name``, ``gen_ai.input.messages``
  and ``gen_ai.output.messages`` with typed parts, ``gen_ai.tool.*``), with what Pydantic
  AI's instrumentation versions 1 and 2 write in their place (``running tool`` spans with
  ``tool_arguments`` / ``tool_response``; in version 1 an LLM span's messages as GenAI
  events listed in its ``events`` attribute; an agent run's answer in ``final_result``);
* the Vercel AI SDK's telemetry (``ai.operationId``: ``ai.generateText`` /
  ``ai.streamText`` runs, their ``.doGenerate`` / ``.doStream`` model calls with
  ``ai.prompt.messages``, ``ai.response.text`` and ``ai.response.toolCalls``, and
  ``ai.toolCall`` spans with ``ai.toolCall.name`` / ``.args`` / ``.result``).

:func:`step_kind` classifies a span; :func:`read_step` reads it into a
:class:`~otel_semloop.model.Step` (input, output, name, error, usage, hand-off target). A
span that matches none is not a step (kind ``OTHER``): it stays in the trace for
write-back and forwarding, and detectors ignore it. When an LLM or tool span has no
message attributes, its span events are read (GenAI details and per-message events,
OpenLLMetry's ``gen_ai.content.*``), including GenAI log records once
:func:`attach_log_records` has put them on their span; :mod:`otel_semloop.messages` and
:mod:`otel_semloop.envelopes` read what the messages say, for every convention.

Size: the readers of every convention, one per step field, change together.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.envelopes import (
    decode_input,
    decode_json,
    decode_json_string,
    unwrap_callback_input,
    unwrap_tool_result,
)
from otel_semloop.handoffs import handoff_target
from otel_semloop.messages import (
    event_messages,
    flatten_text,
    llm_event_messages,
    llm_indexed_messages,
    message_content,
)
from otel_semloop.model import (
    STATUS_ERROR,
    EventRecord,
    SpanRecord,
    Step,
    StepKind,
    ToolCall,
)
from otel_semloop.tool_calls import requested_tool_calls

_GENAI_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
_GENAI_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent"})
_OPENINFERENCE_KINDS = {
    "AGENT": StepKind.AGENT,
    "LLM": StepKind.LLM,
    "TOOL": StepKind.TOOL,
    # A retriever call is an action whose repetition is loop evidence like a tool's.
    "RETRIEVER": StepKind.TOOL,
}
_TRACELOOP_KINDS = {"agent": StepKind.AGENT, "workflow": StepKind.AGENT, "tool": StepKind.TOOL}
_CONFIDENT_KINDS = {
    "agent": StepKind.AGENT,
    "llm": StepKind.LLM,
    "tool": StepKind.TOOL,
    "retriever": StepKind.TOOL,
}
#: The Vercel AI SDK's ``ai.operationId``: a run with its tool loop, its model calls, its
#: tool executions (embedding and the other operations are not agent steps).
_AI_SDK_KINDS = {
    "ai.generateText": StepKind.AGENT,
    "ai.streamText": StepKind.AGENT,
    "ai.generateText.doGenerate": StepKind.LLM,
    "ai.streamText.doStream": StepKind.LLM,
    "ai.generateObject.doGenerate": StepKind.LLM,
    "ai.streamObject.doStream": StepKind.LLM,
    "ai.toolCall": StepKind.TOOL,
}


#: The attributes :func:`step_kind` reads: a span with none of them is no step.
KIND_KEYS = frozenset(
    {
        "confident.span.type",
        "openinference.span.kind",
        "traceloop.span.kind",
        "ai.operationId",
        "gen_ai.operation.name",
        "llm.request.type",
    }
)


def step_kind(attributes: Mapping[str, Any], top_level: bool = False) -> StepKind:
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
            return StepKind.AGENT
        return StepKind.OTHER
    tl_kind = attributes.get("traceloop.span.kind")
    if isinstance(tl_kind, str) and tl_kind in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[tl_kind]
    ai_operation = attributes.get("ai.operationId")
    if isinstance(ai_operation, str) and ai_operation in _AI_SDK_KINDS:
        return _AI_SDK_KINDS[ai_operation]
    operation = attributes.get("gen_ai.operation.name")
    if not isinstance(operation, str):
        operation = ""
    if operation == "execute_tool":
        return StepKind.TOOL
    if operation in _GENAI_AGENT_OPERATIONS:
        return StepKind.AGENT
    if operation in _GENAI_LLM_OPERATIONS or "llm.request.type" in attributes:
        return StepKind.LLM
    return StepKind.OTHER


def read_step(record: SpanRecord, kind: StepKind) -> Step:
    """Build the :class:`Step` for a span already classified as ``kind``.

    The step's ``input``/``input_text`` (and an LLM or agent step's decoded ``output``)
    are left for their first read when decoding them would build something (see
    :class:`~otel_semloop.model.Step`): an LLM call's input is the whole message history, read by the
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
    if kind is StepKind.LLM:
        # Message lists first: OpenInference's input.value/output.value on an LLM span is
        # the whole request/response body, not what was said.
        # Indexed messages are collected only when a message list attribute is missing; the
        # input ones on first read (an IndexedMessages: see _resolve_deferred in model.py).
        raw_in = get("gen_ai.input.messages")
        raw_out = get("gen_ai.output.messages")
        if not raw_in or not raw_out:
            indexed_in, indexed_out = llm_indexed_messages(attrs)
            raw_in, raw_out = raw_in or indexed_in, raw_out or indexed_out
    if raw_in is None:
        raw_in = _first_value(attrs, _INPUT_KEYS)
    if raw_out is None:
        raw_out = _first_value(attrs, _OUTPUT_KEYS)
    events = record.events
    if kind is StepKind.LLM and _LISTED_EVENTS in attrs and (raw_in is None or raw_out is None):
        events = [*events, *_listed_events(get(_LISTED_EVENTS))]
    if events and kind is not StepKind.AGENT and (raw_in is None or raw_out is None):
        if kind is StepKind.LLM:  # (input messages made on first read: see llm_event_messages)
            events_in, events_out = llm_event_messages(events)
        else:
            events_in, events_out = event_messages(events)
        if kind is StepKind.TOOL:
            # On a tool span the tool message holds the arguments, the choice the result.
            events_in, events_out = message_content(events_in), message_content(events_out)
        if raw_in is None:
            raw_in = events_in
        if raw_out is None:
            raw_out = events_out
    # OpenLLMetry's decorators record json.dumps({"args": [...], "kwargs": {...}}) as the
    # input and json.dumps(return value) as the output: both are unwrapped.
    envelope = "traceloop.entity.input" in attrs or "traceloop.entity.output" in attrs

    output = decode_json(raw_out)
    if envelope or (kind is StepKind.TOOL and _AI_SDK_RESULT in attrs):
        # (the AI SDK records a tool's result as JSON: a text result as a quoted string)
        output = decode_json_string(output)

    tool_calls: tuple[ToolCall, ...] = ()
    tool_arguments = tool_result = handoff_to = None
    step_input: Any = _UNREAD
    # The input is kept undecoded unless it is plain text (its own text) or nothing.
    defer_input = raw_in is not None and not (isinstance(raw_in, str) and raw_in[:1] not in _JSON_OPENERS)
    if kind is StepKind.TOOL:
        # Not OpenInference's ``tool.parameters``: that is the tool's JSON *schema*, the same
        # on every call (set by OITracer's @tool and the openai-agents instrumentor), so
        # reading it as arguments would make every call of a tool look identical.
        arguments = _first_value(attrs, _ARGUMENT_KEYS)
        if arguments is not None:
            tool_arguments = decode_json(arguments)
        else:
            # The arguments are the input itself (the same object): decoded now.
            defer_input = False
            tool_arguments = step_input = decode_input(raw_in, envelope)
        result = _first_value(attrs, _RESULT_KEYS)
        # (the output decoded from this very value: not decoded twice)
        same = result is None or (result is raw_out and not envelope)
        tool_result = output if same else decode_json(result)
        if isinstance(tool_arguments, dict) and "input_str" in tool_arguments:
            tool_arguments = unwrap_callback_input(tool_arguments)
        if isinstance(tool_result, dict):
            tool_result = unwrap_tool_result(tool_result)
        handoff_to = handoff_target(attrs, name, tool_arguments)
        # The tool result may be the decoded output itself: the output stays decoded.
        defer_output = False
        output_text = flatten_text(output)
    else:
        if kind is StepKind.LLM:
            output_text, tool_calls = flatten_text(output), tuple(requested_tool_calls(output))
            listed = get(_AI_SDK_TOOL_CALLS)  # (the AI SDK: the text and the calls apart)
            if listed is not None:
                tool_calls += tuple(requested_tool_calls(decode_json(listed)))
        else:
            output_text = flatten_text(output)
        # Only the text and the tool calls are read at once: the decoded messages are
        # dropped (decoded again on a read of ``output``), fewer objects live per step.
        defer_output = output is not raw_out and isinstance(raw_out, str)

    if defer_input or raw_in is None:  # (no input: None and "", as decode_input and flatten_text give)
        step_input = None
        input_text = ""
    else:
        if step_input is _UNREAD:
            step_input = decode_input(raw_in, envelope)
        input_text = flatten_text(step_input)

    error_type = get("error.type")
    message = record.status_message
    for event in events:
        if event.name == "exception":
            error_type = error_type or event.attributes.get("exception.type")
            message = message or str(event.attributes.get("exception.message", ""))
            break
    is_error = record.status_code == STATUS_ERROR or error_type is not None
    input_tokens = _as_int(_first_value(attrs, _INPUT_TOKEN_KEYS))
    output_tokens = _as_int(_first_value(attrs, _OUTPUT_TOKEN_KEYS))
    cost = _first_value(attrs, _COST_KEYS)
    if cost is not None:
        cost = float(cost) if isinstance(cost, (int, float)) else None
    step = Step(
        kind=kind,
        name=name,
        span_id=record.span_id,
        trace_id=record.trace_id,
        parent_span_id=record.parent_span_id,
        input=step_input,
        output=output,
        input_text=input_text,
        output_text=output_text,
        tool_arguments=tool_arguments,
        tool_result=tool_result,
        tool_calls=tool_calls,
        is_error=is_error,
        error_type=str(error_type or "") if is_error else "",
        error_message=(message or "") if is_error else "",
        start_ns=record.start_ns or None,
        end_ns=record.end_ns or None,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        handoff_to=handoff_to,
    )
    # A deferred field's slot is left unset: its first read decodes it from _deferred.
    if defer_input or defer_output:
        step._deferred = (raw_in, envelope, raw_out)
    if defer_input:
        del step.input, step.input_text
    if defer_output:
        del step.output
    return step


_JSON_OPENERS = ("{", "[")
_UNREAD: Any = object()
_NAME_KEYS = {
    StepKind.TOOL: (
        "confident.tool.name",
        "gen_ai.tool.name",
        "tool.name",
        "traceloop.entity.name",
        "ai.toolCall.name",
    ),
    StepKind.AGENT: (
        "confident.agent.name",
        "gen_ai.agent.name",
        "agent.name",
        "traceloop.entity.name",
        "ai.telemetry.functionId",
    ),
}
_SPAN_NAME_KEYS = ("confident.span.name",)
_INPUT_TOKEN_KEYS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "confident.llm.input_token_count",
    "ai.usage.inputTokens",
    "ai.usage.promptTokens",
)
_OUTPUT_TOKEN_KEYS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "confident.llm.output_token_count",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)
#: US dollars: OpenLIT and Langfuse's mapping, OpenInference, pydantic-ai / Logfire.
_COST_KEYS = ("gen_ai.usage.cost", "llm.cost.total", "operation.cost")


#: A tool call's arguments and result: the GenAI attributes, Pydantic AI's (versions 1
#: and 2), the AI SDK's. Each is also the input or output of its span.
_ARGUMENT_KEYS = ("gen_ai.tool.call.arguments", "tool_arguments", "ai.toolCall.args")
_RESULT_KEYS = ("gen_ai.tool.call.result", "tool_response", "ai.toolCall.result")
_INPUT_KEYS = (
    "confident.span.input",
    "gen_ai.input.messages",
    "input.value",
    "traceloop.entity.input",
    "ai.prompt.messages",
    "ai.prompt",
    *_ARGUMENT_KEYS,
)
_OUTPUT_KEYS = (
    "confident.span.output",
    "gen_ai.output.messages",
    "output.value",
    "traceloop.entity.output",
    "final_result",
    "ai.response.text",
    *_RESULT_KEYS,
)


_AI_SDK_TOOL_CALLS = "ai.response.toolCalls"
_AI_SDK_RESULT = "ai.toolCall.result"
#: Pydantic AI's instrumentation version 1: an LLM call's GenAI events as a JSON list in
#: one attribute (its ``event_mode="attributes"``, the default).
_LISTED_EVENTS = "events"


def _first_value(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` that ``attrs`` holds (not None), else None."""
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def _listed_events(value: Any) -> list[EventRecord]:
    """The GenAI events listed in one attribute (see :data:`_LISTED_EVENTS`), each as a span
    event whose ``body`` is the listed event, as a log record's is (the message readers then
    read it as they read a GenAI log event). Entries that are not named ``gen_ai.*`` events
    are left out; anything but a list of them gives none."""
    listed = decode_json(value)
    if not isinstance(listed, list):
        return []
    events = []
    for entry in listed:
        if isinstance(entry, dict):
            name = entry.get("event.name")
            if isinstance(name, str) and name.startswith("gen_ai."):
                events.append(EventRecord(name, 0, {"body": entry}))
    return events


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None  # NaN and infinities (OTLP JSON allows them) are no count


#: Log records whose event name starts with this carry GenAI content (messages, choices,
#: tool calls) and are put on their span before scoring.
GENAI_EVENT_PREFIX = "gen_ai."


def is_genai_event(name: Any) -> bool:
    """Whether ``name`` (a log record's event name) is a GenAI event's."""
    return isinstance(name, str) and name.startswith(GENAI_EVENT_PREFIX)


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
