"""The Vercel AI SDK shape of the corpus renders a run the way the SDK's telemetry records it.

Nothing here scores a trace: these check where the shape puts what the run did.
"""

from __future__ import annotations

import json
import random

import pytest

from bench.corpus.runs import Run, ToolUse, Turn
from bench.corpus.shapes import render_any

TRACE = "ab" * 16


def _attributes(span: dict) -> dict:
    return {kv["key"]: next(iter(kv["value"].values())) for kv in span["attributes"]}


def _run() -> Run:
    return Run(
        "Has invoice INV-1 been paid?",
        "billing",
        "gpt-4o-mini",
        [
            Turn("Looking it up.", [ToolUse("get_invoice", {"id": "INV-1"}, '{"status":"open"}')]),
            Turn(
                None, [ToolUse("list_payments", {"ref": "INV-1"}, error="HTTP 503", error_type="HTTPError")]
            ),
            Turn(error="Too many requests", error_type="RateLimitError"),
            Turn(None, [ToolUse("list_payments", {"ref": "INV-1"}, '[{"amount":10}]')]),
        ],
        "Yes, it was paid.",
    )


@pytest.fixture(scope="module")
def spans() -> list[dict]:
    return render_any(_run(), "vercel-ai-sdk", TRACE, random.Random(7), 10**18)


def test_the_run_is_a_generate_text_span_with_the_goal_and_the_answer(spans: list[dict]) -> None:
    root = spans[0]
    attributes = _attributes(root)
    assert root["name"] == "ai.generateText" and "parentSpanId" not in root
    assert json.loads(attributes["ai.prompt"]) == {"prompt": "Has invoice INV-1 been paid?"}
    assert attributes["ai.response.text"] == "Yes, it was paid."
    assert attributes["ai.telemetry.functionId"] == "billing"


def test_each_tool_call_is_a_tool_call_span_with_its_name_arguments_and_result(spans: list[dict]) -> None:
    tools = [s for s in spans if s["name"] == "ai.toolCall"]
    read = [_attributes(s) for s in tools]
    assert [a["ai.toolCall.name"] for a in read] == ["get_invoice", "list_payments", "list_payments"]
    assert json.loads(read[0]["ai.toolCall.args"]) == {"id": "INV-1"}
    assert json.loads(read[0]["ai.toolCall.result"]) == '{"status":"open"}'
    assert "ai.toolCall.result" not in read[1] and tools[1]["status"]["code"] == 2


def test_a_model_call_lists_the_calls_it_asked_for(spans: list[dict]) -> None:
    first = _attributes(next(s for s in spans if s["name"] == "ai.generateText.doGenerate"))
    assert first["ai.response.finishReason"] == "tool-calls"
    assert first["ai.response.text"] == "Looking it up."
    (call,) = json.loads(first["ai.response.toolCalls"])
    assert call["toolName"] == "get_invoice" and json.loads(call["input"]) == {"id": "INV-1"}


def test_tool_results_reach_the_next_model_call_named_and_a_failure_as_error_text(spans: list[dict]) -> None:
    model_calls = [_attributes(s) for s in spans if s["name"] == "ai.generateText.doGenerate"]
    after_success = json.loads(model_calls[1]["ai.prompt.messages"])[-1]
    after_failure = json.loads(model_calls[2]["ai.prompt.messages"])[-1]
    assert after_success["role"] == "tool"
    assert after_success["content"][0]["toolName"] == "get_invoice"
    assert after_success["content"][0]["output"] == {"type": "text", "value": '{"status":"open"}'}
    assert after_failure["content"][0]["output"]["type"] == "error-text"


def test_a_failed_model_call_keeps_its_error_and_reports_no_response(spans: list[dict]) -> None:
    failed = [
        s for s in spans if s["name"] == "ai.generateText.doGenerate" and s.get("status", {}).get("code") == 2
    ]
    assert len(failed) == 1
    assert failed[0]["status"]["message"] == "Too many requests"
    assert not any(key.startswith("ai.response.") for key in _attributes(failed[0]))
