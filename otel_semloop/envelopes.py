"""The value inside an attribute string: JSON decoded, and the call's arguments or the
tool's result taken out of the envelopes instrumentations wrap them in.

Instrumentations record structured values as strings: JSON (:func:`decode_json`), a
tool's result sometimes as a JSON-encoded string (:func:`decode_json_string`). Around the
value they often put a wrapper that changes on every call (a run id, a tool call id) and
would make every call look new to the detectors:

* OpenLLMetry's decorator envelope (``{"args": [...], "kwargs": {...}}``,
  :func:`unwrap_envelope`, :func:`decode_input`);
* LangChain's tool-start callback payload (:func:`unwrap_callback_input`);
* the objects around a tool's result (LangChain's tool-end payload and serialized
  messages, LlamaIndex's ``ToolOutput``: :func:`unwrap_tool_result`).

Every reader returns what it cannot take apart unchanged and never raises on malformed
content. Imports no other module of the package.
"""

from __future__ import annotations

import ast
from typing import Any

import orjson

__all__ = [
    "decode_input",
    "decode_json",
    "decode_json_string",
    "unwrap_callback_input",
    "unwrap_envelope",
    "unwrap_tool_result",
]


def decode_json(value: Any) -> Any:
    """Parse a string that holds a JSON object or array; leave anything else as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def decode_json_string(value: Any) -> Any:
    """A JSON-encoded string (``"\\"no matches\\""``) decoded to its text."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        return decode_json(decoded) if isinstance(decoded, str) else decoded
    return value


def decode_input(raw: Any, envelope: bool) -> Any:
    """A call's input from its raw attribute: JSON decoded, and the arguments inside an
    OpenLLMetry decorator envelope when ``envelope`` (the span has ``traceloop.entity.*``)."""
    value = decode_json(raw)
    return unwrap_envelope(value) if envelope else value


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
        return decode_json(args[0])
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
    decoded = decode_json(text)
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
        value = decode_json(value["output"])
        if not isinstance(value, dict):
            return value
    if value.get("lc") == 1 and value.get("type") == "constructor":
        kwargs = value.get("kwargs")
        if isinstance(kwargs, dict):
            return decode_json(kwargs["content"]) if "content" in kwargs else kwargs
    data = value.get("data")
    if set(value) == {"type", "data"} and isinstance(data, dict) and "content" in data:
        return decode_json(data["content"])
    if "tool_name" in value and "raw_output" in value:
        return decode_json(value["raw_output"])
    return value
