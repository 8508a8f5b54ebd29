"""Hand-offs: the agent a tool call passes the work to, in the forms agent frameworks record.

A multi-agent run moves work between agents through tool calls (``transfer_to_billing``,
``transfer_to_agent(agent_name=...)``, CrewAI's delegation tool) or, in the GenAI
conventions, through the transfer attributes of an ``execute_tool`` span. The hand-off
detectors compare these targets, so every form reads to the same agent name here;
:func:`~otel_semloop.conventions.read_step` stores it as ``Step.handoff_to``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

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
def handoff_name(name: str) -> tuple[str | None, bool]:
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
    named, by_argument = handoff_name(name)
    if named is not None:
        return named
    if by_argument and isinstance(arguments, Mapping):
        for key in _HANDOFF_ARGS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
    return None
