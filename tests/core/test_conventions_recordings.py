"""Steps read from the committed recordings of Pydantic AI and the Vercel AI SDK
(``bench/corpus/recordings``, recorded from the real packages by ``bench/corpus/record``):
each framework's own telemetry read into agent, model and tool steps with what the model
said and asked for, what each tool was given and answered, failures and token counts; the
recorded loops found and the healthy runs passed.

* Pydantic AI 1.x at each instrumentation version: 1 and 2 write ``agent run`` /
  ``running tool`` spans with ``tool_arguments`` / ``tool_response`` (version 1 lists an LLM
  call's GenAI events in its ``events`` attribute; version 2 gives tool results back under
  a ``result`` key), 3 to 5 the GenAI ``invoke_agent`` / ``execute_tool`` spans;
* the Vercel AI SDK (6, and 4: ``args`` for a call's arguments, ``promptTokens`` /
  ``completionTokens``): ``ai.generateText`` (``ai.streamText``) runs, their ``.doGenerate``
  (``.doStream``) model calls with ``ai.prompt.messages`` / ``ai.response.text`` /
  ``ai.response.toolCalls``, ``ai.toolCall`` spans with ``ai.toolCall.args`` / ``.result``.

The expected values come from the scenarios the recordings ran (``harness.SCENARIOS``).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from functools import cache
from typing import Any

import pytest

from bench.corpus.record.harness import SCENARIOS
from otel_semloop.batch.inputs import read_records
from otel_semloop.builder import build_trace
from otel_semloop.conventions import step_kind
from otel_semloop.model import SpanRecord, Step, StepKind, Trace, peek_input
from otel_semloop.scoring import UNREADABLE_REASON, Scorer
from otel_semloop.tool_calls import tool_responses
from otel_semloop.verdict import Label
from tests.support.repo_data import ROOT

RECORDINGS = ROOT / "bench" / "corpus" / "recordings"
PYDANTIC_AI = [f"pydantic-ai-native-v{version}" for version in range(1, 6)]
AI_SDK = ["vercel-ai-sdk", "vercel-ai-sdk-stream"]
#: The AI SDK 4 ends a run on a tool's exception: its recordings answer failures as results.
AI_SDK_4 = ["vercel-ai-sdk-v4", "vercel-ai-sdk-v4-stream"]
FRAMEWORKS = PYDANTIC_AI + AI_SDK + AI_SDK_4
AGENT, LLM, TOOL = StepKind.AGENT, StepKind.LLM, StepKind.TOOL


@cache
def recording(framework: str) -> dict[str, tuple[str, list[SpanRecord]]]:
    """The recording's traces by situation: (label, span records)."""
    folder = RECORDINGS / framework
    labels = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line]
    spans: dict[str, list[SpanRecord]] = defaultdict(list)
    for path in folder.glob("*.otlp.jsonl*"):
        for record in read_records(path):
            spans[record.trace_id].append(record)
    return {row["situation"]: (row["label"], spans[row["trace_id"]]) for row in labels}


def trace_of(framework: str, situation: str) -> Trace:
    return build_trace(recording(framework)[situation][1])


def of_kind(trace: Trace, kind: StepKind) -> list[Step]:
    return [step for step in trace.steps if step.kind is kind]


def expected_calls(situation: str) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, result) of each call the scenario's model asks for, as its tools
    answered them (the n-th call of a tool gets the n-th answer)."""
    scenario = SCENARIOS[situation]
    world = scenario.world()
    calls = []
    for turn in scenario.turns:
        for call in turn.tool_calls:
            calls.append((call.name, dict(call.arguments), world(call.name, **call.arguments)))
    return calls


# --- what each step holds ----------------------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_run_reads_as_one_agent_step_then_model_and_tool_steps_in_turn(framework: str) -> None:
    trace = trace_of(framework, "healthy-investigation")
    assert [step.kind for step in trace.steps] == [AGENT, LLM, TOOL, LLM, TOOL, LLM, TOOL, LLM]
    assert not any(step.synthetic for step in trace.steps)
    assert of_kind(trace, AGENT)[0].name == "oncall-agent"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_tool_steps_hold_the_arguments_they_were_called_with_and_what_they_answered(framework: str) -> None:
    tools = of_kind(trace_of(framework, "healthy-investigation"), TOOL)
    read = [(step.name, step.tool_arguments, step.tool_result) for step in tools]
    assert read == expected_calls("healthy-investigation")
    assert not any(step.is_error for step in tools)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_model_steps_hold_what_the_model_said_the_calls_it_asked_for_and_its_tokens(framework: str) -> None:
    models = of_kind(trace_of(framework, "healthy-investigation"), LLM)
    turns = SCENARIOS["healthy-investigation"].turns
    assert [step.output_text for step in models] == [turn.content for turn in turns]
    asked = [[(call.name, call.arguments) for call in step.tool_calls] for step in models]
    assert asked == [[(call.name, dict(call.arguments)) for call in turn.tool_calls] for turn in turns]
    assert all(step.input_tokens and step.output_tokens for step in models)
    assert all(SCENARIOS["healthy-investigation"].goal in step.input_text for step in models)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_agent_step_holds_the_final_answer_and_the_run_s_tokens(framework: str) -> None:
    """(The SDK 4's run records its own figures: the last step's usage after generateText,
    every step's text after streamText; its token counts are ``promptTokens`` and
    ``completionTokens``.)"""
    _, records = recording(framework)["healthy-investigation"]
    trace = build_trace(records)
    agent, models = of_kind(trace, AGENT)[0], of_kind(trace, LLM)
    assert agent.output_text.endswith(SCENARIOS["healthy-investigation"].turns[-1].content)
    if framework in AI_SDK_4:
        (root,) = [r for r in records if r.span_id == agent.span_id]
        recorded = (root.attributes["ai.usage.promptTokens"], root.attributes["ai.usage.completionTokens"])
        assert (agent.input_tokens, agent.output_tokens) == recorded
    else:
        assert agent.output_text == SCENARIOS["healthy-investigation"].turns[-1].content
        assert agent.input_tokens == sum(step.input_tokens or 0 for step in models)


@pytest.mark.parametrize("framework", PYDANTIC_AI + AI_SDK)
def test_a_failing_tool_call_is_an_error_step_with_the_tool_s_message(framework: str) -> None:
    tools = of_kind(trace_of(framework, "loop-missing-file"), TOOL)
    assert len(tools) == 6
    assert all(step.is_error and step.tool_arguments == {"path": "config/missing.yaml"} for step in tools)
    assert all("No such file or directory" in step.error_message for step in tools)


def test_pydantic_ai_version_1_messages_are_read_from_the_listed_events() -> None:
    """Version 1 keeps an LLM call's GenAI events as one JSON list in ``events``: the system
    and user messages are its input, the ``gen_ai.choice`` its output and calls."""
    first = of_kind(trace_of("pydantic-ai-native-v1", "healthy-investigation"), LLM)[0]
    assert first.input_text == (
        "You are an on-call assistant. Use the tools, then answer.\n"
        + SCENARIOS["healthy-investigation"].goal
    )
    assert [call.call_id for call in first.tool_calls] == [first.tool_calls[0].call_id]
    assert first.tool_calls[0].call_id


@pytest.mark.parametrize("framework", ["pydantic-ai-native-v2", "vercel-ai-sdk", "vercel-ai-sdk-v4"])
def test_the_results_given_back_to_the_model_are_read_by_call_id(framework: str) -> None:
    """Pydantic AI (version 2 on) gives a result back as a ``tool_call_response`` part under
    ``result``; the AI SDK as a ``tool-result`` part of a ``tool`` message (``output.value``,
    ``result`` in the SDK 4)."""
    trace = trace_of(framework, "healthy-investigation")
    models, tools = of_kind(trace, LLM), of_kind(trace, TOOL)
    given_back = tool_responses(peek_input(models[-1]))
    asked = [call.call_id for step in models for call in step.tool_calls]
    assert given_back == {call_id: tool.tool_result for call_id, tool in zip(asked, tools, strict=True)}


def test_an_ai_sdk_tool_error_given_back_is_read_as_its_text() -> None:
    models = of_kind(trace_of("vercel-ai-sdk", "loop-missing-file"), LLM)
    given_back = tool_responses(peek_input(models[1]))
    assert list(given_back.values()) == [
        "FileNotFoundError: [Errno 2] No such file or directory: 'config/missing.yaml'"
    ]


# --- spans whose content is missing: filled from the model calls, or reported unscored ----------


def without(records: list[SpanRecord], *keys: str) -> list[SpanRecord]:
    """The records with ``keys`` removed from every span's attributes."""
    return [
        dataclasses.replace(r, attributes={k: v for k, v in r.attributes.items() if k not in keys})
        for r in records
    ]


def test_ai_sdk_tool_steps_without_their_content_are_filled_from_the_model_calls() -> None:
    """A tool span without arguments or result (as with ``recordOutputs: false`` on the
    tool): the arguments come from the call the model asked for, the result from the
    ``tool-result`` part the next call was given."""
    _, records = recording("vercel-ai-sdk")["healthy-investigation"]
    trace = build_trace(without(records, "ai.toolCall.args", "ai.toolCall.result"))
    read = [(step.name, step.tool_arguments, step.tool_result) for step in of_kind(trace, TOOL)]
    assert read == expected_calls("healthy-investigation")


def test_ai_sdk_tool_calls_without_tool_spans_become_steps_and_the_loop_is_found() -> None:
    """Tools the application runs itself record no ``ai.toolCall`` span: the calls asked for
    become tool steps with the results given back, and the loop is still found."""
    _, records = recording("vercel-ai-sdk")["loop-same-search"]
    trace = build_trace([r for r in records if r.attributes.get("ai.operationId") != "ai.toolCall"])
    tools = of_kind(trace, TOOL)
    assert len(tools) == 8 and all(step.synthetic for step in tools)
    assert {step.tool_result for step in tools} == {expected_calls("loop-same-search")[0][2]}
    assert Scorer().score(trace).label is Label.LOOP


#: The content attributes the AI SDK leaves out with ``recordInputs: false`` and
#: ``recordOutputs: false`` (its spans keep their names, ids, statuses and token counts).
AI_SDK_CONTENT = (
    "ai.prompt",
    "ai.prompt.messages",
    "ai.response.text",
    "ai.response.toolCalls",
    "ai.toolCall.args",
    "ai.toolCall.result",
)


@pytest.mark.parametrize("situation", ["healthy-investigation", "loop-same-search"])
def test_a_run_whose_content_is_not_readable_is_unscored_with_the_reason(situation: str) -> None:
    _, records = recording("vercel-ai-sdk")[situation]
    trace = build_trace(without(records, *AI_SDK_CONTENT))
    assert len(of_kind(trace, TOOL)) >= 3  # (the steps are read: only their content is not)
    verdict = Scorer().score(trace)
    assert verdict.label is Label.UNSCORED
    assert (
        verdict.unscored_reason
        == f"{UNREADABLE_REASON} ({len(of_kind(trace, LLM) + of_kind(trace, TOOL))} steps)"
    )


def test_a_run_with_any_content_readable_is_scored() -> None:
    """The other side: the tools' results alone are enough to tell a healthy run."""
    _, records = recording("vercel-ai-sdk")["healthy-investigation"]
    content_but_results = [key for key in AI_SDK_CONTENT if key != "ai.toolCall.result"]
    verdict = Scorer().score(build_trace(without(records, *content_but_results)))
    assert verdict.label is Label.NO_LOOP


def test_a_run_without_content_whose_failures_prove_a_loop_keeps_its_verdict() -> None:
    """The same call failing the same way six times is a loop from the span statuses alone."""
    _, records = recording("vercel-ai-sdk")["loop-missing-file"]
    verdict = Scorer().score(build_trace(without(records, *AI_SDK_CONTENT)))
    assert verdict.label is Label.LOOP


# --- the recordings as the corpus reads them -------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_recorded_loop_is_found_and_no_healthy_run_is_flagged(framework: str) -> None:
    scorer = Scorer()
    verdicts = {
        situation: (label, scorer.score(build_trace(records)).label)
        for situation, (label, records) in recording(framework).items()
    }
    assert len(verdicts) == len(SCENARIOS)
    wrong = {s: v for s, (label, v) in verdicts.items() if (v is Label.LOOP) != (label == "loop")}
    assert not wrong
    assert all(v is Label.NO_LOOP for label, v in verdicts.values() if label == "healthy")


# --- the same conventions in shapes not recorded here --------------------------------------------


def span(attributes: dict[str, Any], name: str = "span") -> SpanRecord:
    return SpanRecord("0" * 31 + "1", "00000000000000a1", "", name, 1, 2, attributes)


def test_ai_sdk_calls_and_results_before_its_version_5_are_read() -> None:
    """Before version 5 the AI SDK named a call's arguments ``args``, a result ``result``
    and the token counts ``promptTokens`` / ``completionTokens``."""
    call = {"toolCallId": "c1", "toolName": "search_logs", "args": {"query": "timeout"}}
    model = span(
        {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.response.toolCalls": json.dumps([call]),
            "ai.usage.promptTokens": 12,
            "ai.usage.completionTokens": 3,
        }
    )
    (step,) = build_trace([model]).steps[:1]
    assert [(c.name, c.arguments, c.call_id) for c in step.tool_calls] == [
        ("search_logs", {"query": "timeout"}, "c1")
    ]
    assert (step.input_tokens, step.output_tokens) == (12, 3)
    given_back = [{"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "result": "ok"}]}]
    assert tool_responses(given_back) == {"c1": "ok"}


@pytest.mark.parametrize(
    ("operation", "kind"),
    [
        ("ai.generateText", StepKind.AGENT),
        ("ai.streamObject.doStream", StepKind.LLM),
        ("ai.toolCall", StepKind.TOOL),
        ("ai.embed", StepKind.OTHER),
    ],
)
def test_ai_sdk_spans_are_classified_by_their_operation(operation: str, kind: StepKind) -> None:
    assert step_kind({"ai.operationId": operation}) is kind


def test_listed_events_are_read_only_when_they_are_genai_events_on_a_model_call() -> None:
    choice = {"event.name": "gen_ai.choice", "message": {"role": "assistant", "content": "done"}}
    listed = json.dumps([{"event.name": "other", "content": "ignored"}, choice])
    model = build_trace([span({"gen_ai.operation.name": "chat", "events": listed})]).steps[0]
    assert model.output_text == "done"
    not_events = build_trace([span({"gen_ai.operation.name": "chat", "events": '{"a": 1}'})]).steps[0]
    assert not_events.output_text == "" and not_events.input is None
    tool = build_trace([span({"gen_ai.operation.name": "execute_tool", "events": listed})]).steps[0]
    assert tool.output_text == "" and tool.tool_result is None
