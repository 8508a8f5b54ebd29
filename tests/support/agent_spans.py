"""An agent run recorded with a real SDK tracer, shared by the processor and service tests.

``search_agent`` records, under an ``invoke_agent`` root in the OTel GenAI conventions, one
round per result: a ``chat`` span whose output asks for ``search({"q": "x"})`` (unless
``ask_model`` is false; it records 100 input tokens more each round, from 100, and 20 output
tokens) and the ``execute_tool search`` span returning that result. The
same arguments every round: results that never change make a loop, changing ones do not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.trace import Tracer

SEARCH_ARGUMENTS = {"q": "x"}


def tool_call_message(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "name": name, "arguments": arguments}]}]
    )


def search_agent(
    tracer: Tracer,
    results: Iterable[str],
    *,
    name: str = "researcher",
    ask_model: bool = True,
    before_step: Callable[[], None] | None = None,
) -> str:
    """Record the run; ``before_step`` is called before each round (it may raise to stop
    the agent, as a live guard does). Returns the trace id (hex)."""
    with tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "find x"}]}]
            ),
        },
    ) as root:
        for round_number, result in enumerate(results, 1):
            if before_step is not None:
                before_step()
            if ask_model:
                with tracer.start_as_current_span(
                    "chat model",
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.output.messages": tool_call_message("search", SEARCH_ARGUMENTS),
                        "gen_ai.usage.input_tokens": 100 * round_number,
                        "gen_ai.usage.output_tokens": 20,
                    },
                ):
                    pass
            with tracer.start_as_current_span(
                "execute_tool search",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search",
                    "gen_ai.tool.call.arguments": json.dumps(SEARCH_ARGUMENTS),
                    "gen_ai.tool.call.result": result,
                },
            ):
                pass
    return f"{root.get_span_context().trace_id:032x}"
