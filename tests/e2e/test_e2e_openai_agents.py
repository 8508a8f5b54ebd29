"""End to end with the ``openai-agents`` SDK and ``openinference-instrumentation-openai-agents``.

A real ``Agent`` with ``@function_tool`` tools runs through ``Runner.run`` on
``OpenAIChatCompletionsModel`` against the scripted OpenAI-compatible server on loopback.
The instrumentor replaces the SDK's own trace processors for the test (so nothing is sent
to OpenAI's trace backend; there is no network here anyway) and turns the SDK's traces
into OpenTelemetry spans on this test's provider: workflow AGENT > CHAIN > agent AGENT >
``turn`` CHAIN > ``generation`` LLM / function TOOL. They go through
``SemloopSpanProcessor`` and a real OTLP exporter to a real OTLP receiver.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator

import pytest
from agents import RunConfig, Runner, RunResult
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

from tests.e2e.agent_app import AGENT_NAME, QUESTION, build_agents_sdk_agent
from tests.e2e.contract import (
    assert_delivered_exactly_once,
    assert_healthy_run_not_flagged,
    assert_looping_run_flagged,
    assert_no_loop_verdict,
    assert_runs_get_their_own_verdicts,
    tool_spans,
)
from tests.e2e.fake_openai import (
    LOOP_THOUGHT,
    SEARCH_QUERIES,
    FakeOpenAIServer,
    Script,
    healthy_script,
    looping_script,
    searching_script,
)
from tests.e2e.fixtures import Pipeline, Run

LOOP_ROUNDS = 8
WORKFLOW = "checkout-incident"


@pytest.fixture
def run_agent(pipeline: Pipeline, fake_openai: FakeOpenAIServer) -> Iterator[Callable[[Script], Run]]:
    """Runs the SDK agent on a script, instrumented on this test's provider only."""
    instrumentor = OpenAIAgentsInstrumentor()
    # exclusive_processor: for the test, the instrumentor's processor replaces the SDK's own
    # (which would export to OpenAI); uninstrument() puts the SDK's back.
    instrumentor.instrument(tracer_provider=pipeline.provider, exclusive_processor=True)

    async def run_to_the_end() -> RunResult:
        async with AsyncOpenAI(
            base_url=fake_openai.base_url, api_key="test", max_retries=0, timeout=10
        ) as client:
            return await Runner.run(
                build_agents_sdk_agent(client),
                QUESTION,
                max_turns=LOOP_ROUNDS + 4,
                run_config=RunConfig(workflow_name=WORKFLOW),
            )

    def run(script: Script) -> Run:
        fake_openai.script = script
        # Runner.run on a loop of our own (rather than run_sync) so the client is closed
        # on the loop that opened its connections.
        return pipeline.run_once(lambda: str(asyncio.run(run_to_the_end()).final_output))

    try:
        yield run
    finally:
        instrumentor.uninstrument()


@pytest.mark.parametrize(
    ("thought", "deepeval_flags_it"),
    [(LOOP_THOUGHT, True), (None, False)],
    ids=["repeating-its-reasoning", "tool-calls-only"],
)
def test_looping_sdk_agent_is_flagged_on_its_root_span(
    run_agent, pipeline: Pipeline, fake_openai, thought: str | None, deepeval_flags_it: bool
) -> None:
    """The model asks for ``search_logs({"query": "timeout"})`` 8 times and gets the same
    result every time, either repeating its reasoning word for word or saying nothing
    (tool calls only). deepeval's metric needs two signals, so it misses the silent one."""
    run = run_agent(looping_script(rounds=LOOP_ROUNDS, thought=thought))

    received = assert_looping_run_flagged(
        pipeline,
        fake_openai,
        run,
        rounds=LOOP_ROUNDS,
        root_name=WORKFLOW,
        deepeval_flags_it=deepeval_flags_it,
    )
    assert any(s.name == AGENT_NAME and s.attributes.get("agent.name") == AGENT_NAME for s in received)


def test_healthy_sdk_agent_is_not_flagged(run_agent, pipeline: Pipeline) -> None:
    run = run_agent(healthy_script())

    assert_healthy_run_not_flagged(pipeline, run, root_name=WORKFLOW)


def test_sdk_agent_searching_with_new_arguments_each_time_is_not_flagged(
    run_agent, pipeline: Pipeline
) -> None:
    """Six calls of one tool with different arguments: every function span carries the
    same ``tool.parameters`` (the tool's schema), which must not be read as the arguments."""
    run = run_agent(searching_script())

    received = pipeline.wait_delivered()

    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    tools = tool_spans(received)
    assert [json.loads(s.attributes["input.value"])["query"] for s in tools] == list(SEARCH_QUERIES)
    assert len({s.attributes.get("tool.parameters") for s in tools}) == 1
    root = pipeline.receiver.root_of(run.trace_id)
    assert_no_loop_verdict(root)
    assert root.attributes["semloop.deepeval.score"] == 1.0


@pytest.mark.parametrize("otlp_receiver", ["grpc", "http"], indirect=True)
def test_loop_and_healthy_sdk_runs_in_one_provider_get_their_own_verdicts_and_arrive_once(
    run_agent, pipeline: Pipeline
) -> None:
    looping = run_agent(looping_script(rounds=LOOP_ROUNDS))
    healthy = run_agent(healthy_script())

    assert_runs_get_their_own_verdicts(pipeline, looping, healthy)
