"""End to end with the plain ``openai`` client and ``openinference-instrumentation-openai``.

A hand-written agent loop (AGENT span, OpenInference TOOL spans, instrumented
``chat.completions`` LLM spans) runs against the scripted OpenAI-compatible server on
loopback. Its spans go through ``SemloopSpanProcessor`` and a real OTLP exporter to a real
OTLP receiver; the tests read the verdict where a backend would show it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from e2e.agent_app import AGENT_NAME, run_chat_agent
from e2e.contract import assert_delivered_exactly_once, assert_loop_verdict, assert_no_loop_verdict
from e2e.fake_openai import (
    LOOP_ARGUMENTS,
    LOOP_THOUGHT,
    LOOP_TOOL,
    FakeOpenAIServer,
    Script,
    healthy_script,
    looping_script,
)
from e2e.fixtures import Pipeline, hex_trace_id
from openai import OpenAI
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor

pytest_plugins = ("e2e.fixtures",)

LOOP_ROUNDS = 8


@dataclass(frozen=True)
class Run:
    trace_id: str
    answer: str


@pytest.fixture
def run_agent(pipeline: Pipeline, fake_openai: FakeOpenAIServer) -> Iterator[Callable[[Script], Run]]:
    """Runs the chat agent on a script, instrumented on this test's provider only."""
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider)
    client = OpenAI(base_url=fake_openai.base_url, api_key="test", max_retries=0, timeout=10)
    tracer = OITracer(pipeline.provider.get_tracer("e2e.agent_app"), config=TraceConfig())

    def run(script: Script) -> Run:
        before = {hex_trace_id(s) for s in pipeline.produced_spans()}
        fake_openai.script = script
        answer = run_chat_agent(client, tracer)
        new = {hex_trace_id(s) for s in pipeline.produced_spans()} - before
        assert len(new) == 1, f"one run should make one trace, got {len(new)}"
        return Run(trace_id=new.pop(), answer=answer)

    try:
        yield run
    finally:
        instrumentor.uninstrument()
        client.close()


@pytest.mark.parametrize(
    ("thought", "deepeval_flags_it"),
    [(LOOP_THOUGHT, True), (None, False)],
    ids=["repeating-its-reasoning", "tool-calls-only"],
)
def test_looping_agent_is_flagged_on_its_root_span(
    run_agent, pipeline: Pipeline, fake_openai, thought: str | None, deepeval_flags_it: bool
) -> None:
    """The model asks for ``search_logs({"query": "timeout"})`` 8 times and gets the same
    result every time, either repeating its reasoning word for word or saying nothing
    (tool calls only). deepeval's metric needs two signals, so it misses the silent one."""
    run = run_agent(looping_script(rounds=LOOP_ROUNDS, thought=thought))

    received = pipeline.wait_delivered()

    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    assert len(fake_openai.requests) == LOOP_ROUNDS + 1
    tools = [s for s in received if s.attributes.get("openinference.span.kind") == "TOOL"]
    assert [(s.attributes["tool.name"], json.loads(s.attributes["input.value"])) for s in tools] == [
        (LOOP_TOOL, LOOP_ARGUMENTS)
    ] * LOOP_ROUNDS
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == AGENT_NAME
    assert_loop_verdict(root)
    assert root.attributes["semloop.deepeval.loop"] is deepeval_flags_it
    marked = {s.span_id for s in received if s.attributes.get("semloop.in_loop") is True}
    assert {s.span_id for s in tools} <= marked, "the repeated calls are marked as the loop"


def test_healthy_agent_is_not_flagged(run_agent, pipeline: Pipeline) -> None:
    run = run_agent(healthy_script())

    received = pipeline.wait_delivered()

    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    assert run.answer.startswith("Root cause:")
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == AGENT_NAME
    assert_no_loop_verdict(root)
    assert not any(s.attributes.get("semloop.in_loop") for s in received)


@pytest.mark.parametrize("otlp_receiver", ["grpc", "http"], indirect=True)
def test_loop_and_healthy_runs_in_one_provider_get_their_own_verdicts_and_arrive_once(
    run_agent, pipeline: Pipeline
) -> None:
    looping = run_agent(looping_script(rounds=LOOP_ROUNDS))
    healthy = run_agent(healthy_script())

    pipeline.wait_delivered()
    pipeline.shutdown()  # a shutdown after delivery must not send anything again

    received = pipeline.receiver.spans
    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    assert {s.trace_id for s in received} == {looping.trace_id, healthy.trace_id}
    assert_loop_verdict(pipeline.receiver.root_of(looping.trace_id))
    assert_no_loop_verdict(pipeline.receiver.root_of(healthy.trace_id))
    assert {s.trace_id for s in received if s.attributes.get("semloop.in_loop")} == {looping.trace_id}
