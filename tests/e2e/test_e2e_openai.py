"""End to end with the plain ``openai`` client and ``openinference-instrumentation-openai``.

A hand-written agent loop (AGENT span, OpenInference TOOL spans, instrumented
``chat.completions`` LLM spans) runs against the scripted OpenAI-compatible server on
loopback. Its spans go through ``SemloopSpanProcessor`` and a real OTLP exporter to a real
OTLP receiver; the tests read the verdict where a backend would show it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor

from tests.e2e.agent_app import AGENT_NAME, run_chat_agent, run_untraced_tools_agent
from tests.e2e.contract import (
    assert_healthy_run_not_flagged,
    assert_looping_run_flagged,
    assert_runs_get_their_own_verdicts,
)
from tests.e2e.fake_openai import LOOP_THOUGHT, FakeOpenAIServer, Script, healthy_script, looping_script
from tests.e2e.fixtures import Pipeline, Run, chat_agent_runner

LOOP_ROUNDS = 8


@pytest.fixture
def run_agent(pipeline: Pipeline, fake_openai: FakeOpenAIServer) -> Iterator[Callable[[Script], Run]]:
    """Runs the chat agent on a script, instrumented on this test's provider only."""
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=pipeline.provider)
    tracer = OITracer(pipeline.provider.get_tracer("e2e.agent_app"), config=TraceConfig())
    try:
        with chat_agent_runner(pipeline, fake_openai, tracer, run_chat_agent) as run:
            yield run
    finally:
        instrumentor.uninstrument()


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

    assert_looping_run_flagged(
        pipeline,
        fake_openai,
        run,
        rounds=LOOP_ROUNDS,
        root_name=AGENT_NAME,
        deepeval_flags_it=deepeval_flags_it,
    )


def test_healthy_agent_is_not_flagged(run_agent, pipeline: Pipeline) -> None:
    run = run_agent(healthy_script())

    assert_healthy_run_not_flagged(pipeline, run, root_name=AGENT_NAME)


@pytest.mark.parametrize("otlp_receiver", ["grpc", "http"], indirect=True)
def test_loop_and_healthy_runs_in_one_provider_get_their_own_verdicts_and_arrive_once(
    run_agent, pipeline: Pipeline
) -> None:
    looping = run_agent(looping_script(rounds=LOOP_ROUNDS))
    healthy = run_agent(healthy_script())

    assert_runs_get_their_own_verdicts(pipeline, looping, healthy)


def test_a_loop_seen_only_through_instrumented_llm_calls_is_flagged(run_agent, pipeline: Pipeline) -> None:
    """No AGENT or TOOL spans at all: the repeated tool calls exist only inside the LLM
    spans' output messages and their results in the next call's input. The verdict still
    lands on the trace's root (a plain request span) and the LLM spans that asked are marked."""
    run = run_agent(looping_script(rounds=LOOP_ROUNDS), run_untraced_tools_agent)

    received = pipeline.wait_delivered()
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == "POST /triage"
    assert root.attributes["semloop.loop.detected"] is True, root.attributes
    assert root.attributes["semloop.label"] == "loop"
    llm_spans = [s for s in received if s.attributes.get("openinference.span.kind") == "LLM"]
    assert len(llm_spans) == LOOP_ROUNDS + 1
    assert any(s.attributes.get("semloop.in_loop") for s in llm_spans)
    assert len({s.span_id for s in received}) == len(received) == len(pipeline.produced_spans())


def test_healthy_llm_only_run_is_not_flagged(run_agent, pipeline: Pipeline) -> None:
    run = run_agent(healthy_script(), run_untraced_tools_agent)

    pipeline.wait_delivered()
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.attributes["semloop.label"] == "no_loop", root.attributes  # scored, not unscored
    assert root.attributes["semloop.loop.detected"] is False, root.attributes
