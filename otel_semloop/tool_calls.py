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


class _ArgumentsText:
    """ToolCall's base: the slot ``_arguments_text`` holds the JSON text a call read from an
    LLM output (:func:`requested_call`) leaves ``arguments`` to be decoded from on first read
    (see :class:`_LazyArguments`). Only a tool step without arguments of its own, or a call
    no tool span recorded, needs them (:mod:`otel_semloop.builder`); the detectors read
    whether there are calls at all.

    (No ``__getattr__`` for that: on CPython 3.11 a class with one has every attribute read
    of its instances take the generic path, ``name`` and ``call_id`` included.)"""

    __slots__ = ("_arguments_text",)


_ARGUMENTS_TEXT = _ArgumentsText.__dict__["_arguments_text"]


@dataclass(frozen=True, slots=True)
class ToolCall(_ArgumentsText):
    """A tool call an LLM asked for inside its output messages.

    ``arguments`` is the structured value when the arguments were JSON, else the raw text.
    (Read from an output, JSON arguments are decoded on first read: values, equality,
    ``repr``, copies and pickles are as if they had been decoded at once.)
    """

    name: str
    arguments: Any = None
    call_id: str | None = None


#: The slot of ``arguments`` (its member descriptor): what it holds without decoding
#: anything, :data:`UNDECODED` until the first read of a call's lazy arguments.
ARGUMENTS_SLOT = ToolCall.__dict__["arguments"]


class _Undecoded:
    """The stand-in in ``arguments``'s slot until the first read (see :class:`_LazyArguments`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<arguments not decoded yet>"


UNDECODED: Any = _Undecoded()


class _LazyArguments:
    """The class attribute ``ToolCall.arguments``, over its slot: the slot's value, except
    :data:`UNDECODED` there (set by :func:`requested_call`), which the first read replaces
    with the JSON text of ``_arguments_text`` decoded. Writes and deletes go to the slot (a
    frozen dataclass makes them only through ``object.__setattr__``, as copies and pickles
    do). (A stand-in, not an unset slot: catching the AttributeError of an unset slot costs
    more than the decoding it saves.)"""

    __slots__ = ()

    def __get__(self, call: ToolCall | None, owner: type | None = None) -> Any:
        if call is None:
            return self
        value = _get_arguments(call)
        if value is UNDECODED:
            value = decode_json(_ARGUMENTS_TEXT.__get__(call))
            _set_arguments(call, value)
        return value

    def __set__(self, call: ToolCall, value: Any) -> None:
        _set_arguments(call, value)

    def __delete__(self, call: ToolCall) -> None:
        ARGUMENTS_SLOT.__delete__(call)


_get_arguments = ARGUMENTS_SLOT.__get__
_set_arguments = ARGUMENTS_SLOT.__set__
_set_arguments_text = _ARGUMENTS_TEXT.__set__
ToolCall.arguments = _LazyArguments()  # type: ignore[assignment,method-assign]


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
    """A call as an LLM output names it (name and call id as text); JSON arguments (what
    :func:`~otel_semloop.envelopes.decode_json` decodes) are decoded on first read (see
    :class:`_LazyArguments`)."""
    call = ToolCall(
        name if isinstance(name, str) else str(name or ""),
        arguments,
        (call_id if isinstance(call_id, str) else str(call_id)) if call_id else None,
    )
    if isinstance(arguments, str) and arguments[:1] in _JSON_OPENERS:
        _set_arguments_text(call, arguments)
        _set_arguments(call, UNDECODED)
    return call


_JSON_OPENERS = ("{", "[")  # as decode_json reads them


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
