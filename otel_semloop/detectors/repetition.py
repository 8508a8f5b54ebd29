"""deepeval's tool-repetition sub-score (``AgentLoopDetectionMetric``, deepeval 4.3.1).

One of the three sub-signals of the lexical metric; :mod:`otel_semloop.detectors.lexical`
holds the metric's specification and combines this score with the other two. Tool calls
are keyed by their name and their arguments as deepeval compares them (a JSON string
parsed, a dict as its sorted ``(str(key), str(value))`` pairs, anything else as
``str``); the most frequent key (the first seen on ties) decides. Cost: one key per tool
call, counted in C; linear in the number of tool calls.
"""

from __future__ import annotations

import contextlib
import json
import operator
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["score_tool_repetition"]


def _call_key(span: Mapping[str, Any]) -> tuple[Any, tuple[str, ...] | tuple[tuple[str, str], ...]]:
    return _key_of(span.get("name", ""), span.get("input", {}))


def _key_of(name: Any, args: Any) -> tuple[Any, tuple[str, ...] | tuple[tuple[str, str], ...]]:
    """A tool call's key: its name and its arguments as deepeval compares them."""
    if type(args) is not dict and isinstance(args, str):  # (a dict is no string: one test)
        with contextlib.suppress(Exception):  # deepeval keeps the raw string on any failure
            args = json.loads(args)
    if isinstance(args, dict):
        # The sorted (str(key), str(value)) pairs. ``str(x)`` written out: Python 3.11
        # specialises that call (``map(str, ...)`` calls the type, parsing its arguments
        # each time: half again the cost).
        return name, tuple(sorted([(str(key), str(value)) for key, value in args.items()]))
    return name, (str(args),)


def score_tool_repetition(
    tool_spans: Sequence[Mapping[str, Any]], repetition_threshold: int = 3
) -> tuple[float, str]:
    """deepeval's tool-repetition sub-score and reason for the tool spans, in order."""
    return _repetition(tool_spans, _call_key, repetition_threshold)


#: A (key, count) item's count (a C callable: ``max`` calls it once per distinct call).
_COUNT = operator.itemgetter(1)


def _repetition(tools: Sequence[Any], key: Any, repetition_threshold: int) -> tuple[float, str]:
    """:func:`score_tool_repetition` of the tool calls ``tools``, keyed by ``key``."""
    if not tools:
        return 1.0, "No tool spans found."
    # Counted in C (one hash of each nested key tuple, not two); a Counter keeps first-seen
    # order like the dict deepeval fills.
    counts = Counter(map(key, tools))
    # max() keeps the first of equal counts, i.e. the first call seen.
    (tool_name, _), count = max(counts.items(), key=_COUNT)
    if count >= repetition_threshold * 2:
        return 0.0, f"Tool '{tool_name}' called {count} times with identical arguments."
    if count >= repetition_threshold:
        return 0.5, f"Tool '{tool_name}' called {count} times with identical arguments."
    return 1.0, "Tool calls are within acceptable repetition limits."
