"""The tool calls an LLM requested in its output, and the results it was given back.

An LLM asks for tools inside its output messages: GenAI ``tool_call`` parts, chat
``tool_calls`` (``function.name``/``function.arguments``), Bedrock Converse ``toolUse``
blocks, the Vercel AI SDK's calls (``toolName``/``input``, listed in
``ai.response.toolCalls`` or as ``tool-call`` parts) (:func:`requested_tool_calls`, each a
:class:`ToolCall`); the results come back in the next call's input as ``tool`` messages,
``tool_call_response`` parts or the AI SDK's ``tool-result`` parts
(:func:`tool_responses`). The builder reads them to fill tool steps whose spans lack their
arguments or results, and to make steps for calls no tool span recorded
(:mod:`otel_semloop.builder`); the detectors read only whether an LLM step asked for any.

Malformed content (``"tool_calls": true``, a part that is not an object) gives no calls,
never an error. Imports only :mod:`otel_semloop.envelopes`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from otel_semloop.envelopes import decode_json

__all__ = ["ToolCall", "requested_call", "requested_tool_calls", "tool_responses"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call an LLM asked for inside its output messages.

    ``arguments`` is the structured value when the arguments were JSON, else the raw text.
    """

    name: str
    arguments: Any = None
    call_id: str | None = None


def requested_tool_calls(output: Any) -> list[ToolCall]:
    """Tool calls requested inside LLM output messages (GenAI parts, chat ``tool_calls``,
    Bedrock ``toolUse`` blocks, the AI SDK's calls and ``tool-call`` parts)."""
    messages = output if isinstance(output, list) else [output] if isinstance(output, dict) else []
    calls: list[ToolCall] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        if "toolName" in message:  # one of the AI SDK's listed calls (ai.response.toolCalls)
            calls.append(_ai_sdk_call(message))
            continue
        parts = message.get("parts")
        if isinstance(parts, _SEQUENCES):
            for part in parts:
                if isinstance(part, dict) and part.get("type") == "tool_call":
                    calls.append(requested_call(part.get("name"), part.get("arguments"), part.get("id")))
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                use = part.get("toolUse")
                if isinstance(use, dict):  # a Bedrock Converse block (Strands)
                    calls.append(requested_call(use.get("name"), use.get("input"), use.get("toolUseId")))
                elif part.get("type") == "tool-call":  # an AI SDK message part
                    calls.append(_ai_sdk_call(part))
        requested = message.get("tool_calls")
        if not isinstance(requested, _SEQUENCES):
            continue
        for call in requested:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            calls.append(requested_call(function.get("name"), function.get("arguments"), call.get("id")))
    return calls


def _ai_sdk_call(call: dict[str, Any]) -> ToolCall:
    """A call as the AI SDK records it: ``toolName``, ``toolCallId`` and the arguments as
    ``input`` (``args`` before its version 5), JSON text or an object."""
    arguments = call.get("input", call.get("args"))
    return requested_call(call.get("toolName"), arguments, call.get("toolCallId"))


#: Message parts and tool calls are read from these only (iterating a string or a dict
#: yielded no parts either; a bool or a number there raised TypeError).
_SEQUENCES = (list, tuple)


def _items(value: Any) -> Any:
    """The entries of a list or tuple; nothing for anything else (see ``_SEQUENCES``)."""
    return value if isinstance(value, _SEQUENCES) else ()


def requested_call(name: Any, arguments: Any, call_id: Any) -> ToolCall:
    """A call as an LLM output names it (name and call id as text, JSON arguments decoded)."""
    return ToolCall(
        name if isinstance(name, str) else str(name or ""),
        decode_json(arguments),
        (call_id if isinstance(call_id, str) else str(call_id)) if call_id else None,
    )


def tool_responses(messages: Any) -> dict[str, Any]:
    """Tool results an LLM call was given back, by tool call id: chat ``tool`` messages
    (``tool_call_id``, ``content``), GenAI ``tool_call_response`` parts (``id``,
    ``response``; Pydantic AI writes ``result``) and the AI SDK's ``tool-result`` parts of
    a ``tool`` message (``toolCallId``; ``output.value``, ``result`` before its version 5).
    Used when the tool calls themselves were not recorded as spans, or not their results."""
    found: dict[str, Any] = {}
    if not isinstance(messages, list):
        return found
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            content = message.get("content")
            if call_id:
                found[str(call_id)] = decode_json(content)
            else:
                for part in _items(content):
                    if isinstance(part, dict) and part.get("type") == "tool-result":
                        result_id = part.get("toolCallId")
                        if result_id:
                            found[str(result_id)] = _ai_sdk_result(part)
        for part in _items(message.get("parts")):
            if isinstance(part, dict) and part.get("type") == "tool_call_response" and part.get("id"):
                response = part.get("response", part.get("result"))
                found[str(part["id"])] = decode_json(response)
    return found


def _ai_sdk_result(part: dict[str, Any]) -> Any:
    """The result in an AI SDK ``tool-result`` part: ``output`` is typed (``{"type": "text",
    "value": ...}``, ``json``, ``error-text``...), its value is the result."""
    output = part.get("output")
    if isinstance(output, dict) and "value" in output:
        return decode_json(output["value"])
    return decode_json(part.get("result", output))
