"""What was said in a span: message content in every shape instrumentations record it.

:mod:`otel_semloop.conventions` finds the attribute or event that carries a step's input
or output; this module turns it into messages and text, one definition for every
convention:

* messages in span events (the GenAI details event, per-message GenAI events,
  OpenLLMetry's ``gen_ai.content.*``: :func:`event_messages`), log records included once
  :func:`otel_semloop.conventions.attach_log_records` has put them on their span;
* indexed message attributes (``gen_ai.prompt.N.*``, ``llm.output_messages.N.*``:
  :func:`llm_indexed_messages`, the output made at once);
* for an LLM span, whose input is the whole history the agent resent, the input made on
  first read (:func:`llm_event_messages`, :func:`llm_indexed_messages`): making it for
  every step would cost O(n^2) per trace;
* the text of a message list or content blocks (:func:`flatten_text`, :func:`block_text`),
  so detectors compare what was said, not the JSON around it.

Malformed content (a part whose ``type`` is a list, ``"tool_calls": true``) reads as no
text and no calls, never as an error: one odd span must not lose a trace's verdict.

``tests/core/test_build_fast_paths.py`` holds each LLM variant to the plain reading.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from otel_semloop.envelopes import decode_json

#: Span events (and log records attached to their span, see
#: :func:`otel_semloop.conventions.attach_log_records`) that carry an LLM call's messages,
#: by name: (side, role or None).
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


def event_messages(events: Any) -> tuple[Any, Any]:
    """(input, output) message lists read from span events, in the forms instrumentations
    emit: the GenAI details event (``gen_ai.input.messages``/``gen_ai.output.messages``
    attributes on any event), the per-message events (``gen_ai.user.message``,
    ``gen_ai.choice``, ... with ``content``/``message``/``tool_calls`` attributes or a log
    ``body``), and OpenLLMetry's ``gen_ai.content.prompt``/``.completion`` events."""
    inputs: list[Any] = []
    whole_in, outputs = _read_message_events(events, inputs)
    event_in = whole_in if whole_in is not None else (_flat(inputs) if inputs else None)
    return event_in, outputs


def llm_event_messages(events: Any) -> tuple[Any, Any]:
    """:func:`event_messages` for an LLM span, whose input events are the whole history the
    agent resent: an input made from message events comes as an :class:`EventMessages`,
    made on first read."""
    noted: list[Any] = []
    whole_in, outputs = _read_message_events(events, noted, make_inputs=False)
    if whole_in is not None:
        return whole_in, outputs
    return (EventMessages(tuple(events)) if noted else None), outputs


def _read_message_events(events: Any, inputs: list[Any], *, make_inputs: bool = True) -> tuple[Any, Any]:
    """(the details event's whole input or None, the output) of :func:`event_messages`,
    appending each input message event's message to ``inputs`` (with ``make_inputs``
    false, only a ``True`` to note that there was one)."""
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
                if side != "input":
                    outputs.append(decode_json(value))
                elif make_inputs:
                    inputs.append(decode_json(value))
                elif not inputs:
                    inputs.append(True)
            continue
        if name not in _MESSAGE_EVENTS:
            continue
        side, role = _MESSAGE_EVENTS[name]
        if side != "input":
            outputs.append(_event_message(attrs, role))
        elif make_inputs:
            inputs.append(_event_message(attrs, role))
        elif not inputs:
            inputs.append(True)
    event_out = whole_out if whole_out is not None else (_flat(outputs) if outputs else None)
    return whole_in, event_out


class EventMessages:
    """An LLM span's input messages from its events, not made yet (see
    :func:`llm_event_messages`): :meth:`messages` gives what :func:`event_messages` gives."""

    __slots__ = ("events",)

    def __init__(self, events: tuple[Any, ...]) -> None:
        self.events = events

    def messages(self) -> Any:
        return event_messages(self.events)[0]


def _event_message(attrs: Mapping[str, Any], role: str) -> dict[str, Any]:
    """The message of a per-message event (``gen_ai.user.message``, ``gen_ai.choice``, ...)."""
    body = decode_json(attrs.get("body", attrs.get("gen_ai.event.content")))
    message: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if isinstance(message.get("message"), dict):  # gen_ai.choice: {"message": {...}}
        message = dict(message["message"])
    for key in ("content", "tool_calls", "id", "role"):
        if key in attrs and key not in message:
            message[key] = decode_json(attrs[key])
    if "content" not in message and "message" in attrs:
        message["content"] = decode_json(attrs["message"])  # gen_ai.choice's message attribute
    if isinstance(body, str) and "content" not in message:
        message["content"] = body
    message.setdefault("role", role)
    if message.get("role") == "tool" and "id" in message and "tool_call_id" not in message:
        message["tool_call_id"] = message["id"]
    return message


def message_content(value: Any) -> Any:
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


_INDEXED_TOOL_CALL = re.compile(r"^tool_calls\.(\d+)\.(.+)$")
_INDEXED = re.compile(r"^(gen_ai\.(?:prompt|completion)|llm\.(?:input|output)_messages)\.(\d+)\.(.+)$")


def llm_indexed_messages(attrs: Mapping[str, Any]) -> tuple[IndexedMessages | None, Any]:
    """``(input, output)`` of an LLM span's indexed message attributes: the messages of
    the first prefix that has any, for the input prefixes
    (``llm.input_messages``, ``gen_ai.prompt``) and the output ones (``llm.output_messages``,
    ``gen_ai.completion``), None where there is none. The input (the whole resent history)
    comes as an :class:`IndexedMessages`, made on first read from the attributes copied here."""
    keys = tuple(attrs)
    found = _collect((key, attrs[key]) for key in keys if key.startswith(_OUTPUT_PREFIXES))
    output = None
    for prefix in _OUTPUT_INDEXED:  # (each prefix found holds at least one message)
        if prefix in found:
            output = _in_order(found[prefix])
            break
    # The first input key the pattern matches (the first of the prefixes read first wins).
    first = next((m for key in keys if key.startswith(_INPUT_PREFIXES) and (m := _INDEXED.match(key))), None)
    if first is None:
        return None, output
    prefix = first.group(1)
    if prefix != _LLM_INPUT and any(
        _INDEXED.match(key) for key in keys if key.startswith(_LLM_INPUT_DOT)
    ):  # (gen_ai.prompt came first: llm.input_messages still wins)
        prefix = _LLM_INPUT
    return IndexedMessages(prefix, keys, tuple(attrs.values())), output


class IndexedMessages:
    """An LLM span's indexed input messages not made yet (see :func:`llm_indexed_messages`):
    the span's attribute keys and values, and the prefix; :meth:`messages` makes them."""

    __slots__ = ("keys", "prefix", "values")

    def __init__(self, prefix: str, keys: tuple[str, ...], values: tuple[Any, ...]) -> None:
        self.prefix = prefix
        self.keys = keys
        self.values = values

    def messages(self) -> list[dict[str, Any]]:
        dotted = self.prefix + "."
        items = (item for item in zip(self.keys, self.values, strict=True) if item[0].startswith(dotted))
        return _in_order(_collect(items)[self.prefix])


_LLM_INPUT = "llm.input_messages"
_LLM_INPUT_DOT = _LLM_INPUT + "."
_INPUT_PREFIXES = (_LLM_INPUT_DOT, "gen_ai.prompt.")
_OUTPUT_INDEXED = ("llm.output_messages", "gen_ai.completion")
_OUTPUT_PREFIXES = ("llm.output_messages.", "gen_ai.completion.")


def _collect(items: Any) -> dict[str, dict[int, dict[str, Any]]]:
    """The messages of indexed attribute ``(key, value)`` items, by prefix and index."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in items:
        match = _INDEXED.match(key)
        if match is None:
            continue
        prefix, number, rest = match.groups()
        rest = rest.removeprefix("message.")
        message = found.setdefault(prefix, {}).setdefault(int(number), {})
        if rest.startswith("tool_calls."):
            call = _INDEXED_TOOL_CALL.match(rest)
            if call is None:
                continue
            calls = message.setdefault("tool_calls", {})  # (may hold an attribute's value)
            call_number, field = call.groups()
            field = field.removeprefix("tool_call.").removeprefix("function.")
            calls.setdefault(int(call_number), {})[field] = value
        else:
            message[rest] = value
    return found


def _in_order(by_index: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    messages = []
    for _, message in sorted(by_index.items()):
        calls = message.get("tool_calls")
        if isinstance(calls, dict):
            message["tool_calls"] = [call for _, call in sorted(calls.items())]
        messages.append(message)
    return messages


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
    if isinstance(value, list) and value and all(isinstance(message, dict) for message in value):
        texts = [_message_text(message) for message in value]
        if any(text is not None for text in texts):
            return "\n".join(text for text in texts if text)
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


def _message_text(message: Mapping[str, Any]) -> str | None:
    """Text of one message, or None when the dict is not a message."""
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = []
        for part in parts:
            if isinstance(part, dict) and part.get("type") in _PART_TEXT_TYPES:
                content = part.get("content", part.get("text"))
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
