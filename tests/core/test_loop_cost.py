"""What a loop cost, on framework recordings whose token usage is known (``bench/corpus/recordings``):
the figures written on the root are checked to the token against sums made by hand from the
recorded spans' attributes, listed here as the recording holds them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from otel_semloop.batch.inputs import read_records
from otel_semloop.builder import build_trace
from otel_semloop.loop_cost import loop_cost
from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.scoring import DetectorScorer
from otel_semloop.verdict import Finding, Label, Verdict
from otel_semloop.writeback import patches_for
from tests.support.traces import flat_trace

RECORDINGS = Path(__file__).resolve().parents[2] / "bench" / "corpus" / "recordings"
#: pydantic-ai's own telemetry: a search repeated with the same result; every chat span
#: records gen_ai.usage.* and operation.cost, the agent span gen_ai.aggregated_usage.*.
PYDANTIC_LOOP = "b8bd8dcba87ac513011f527ff06aabf4"
#: The chat spans of that trace in order: (input tokens, output tokens, operation.cost).
PYDANTIC_CHATS = [
    (47, 68, 4.785e-05),
    (142, 68, 6.21e-05),
    (237, 68, 7.635e-05),
    (332, 68, 9.06e-05),
    (427, 68, 0.00010485),
    (522, 68, 0.0001191),
    (617, 68, 0.00013335),
    (712, 68, 0.0001476),
    (807, 22, 0.00013425),
]
PYDANTIC_HEALTHY = "74586db35ad77116296a4946a2ab9491"


@cache
def recorded(framework: str) -> dict[str, list]:
    path = next((RECORDINGS / framework).glob("*.otlp.jsonl*"))
    by_trace: dict[str, list] = {}
    for record in read_records(path):
        by_trace.setdefault(record.trace_id, []).append(record)
    return by_trace


def scored(framework: str, trace_id: str) -> tuple[Trace, Verdict]:
    trace = build_trace(recorded(framework)[trace_id])
    return trace, DetectorScorer().score(trace)


def test_the_loop_begins_at_the_first_repeated_call() -> None:
    trace, verdict = scored("pydantic-ai-native", PYDANTIC_LOOP)
    cost = loop_cost(trace, verdict)
    assert verdict.label is Label.LOOP and cost is not None
    # Steps: 1 the agent, 2 the first chat, 3 the first search_logs (the loop's first call).
    assert cost.onset_step == 3
    assert trace.steps[cost.onset_step - 1].name == "search_logs"
    assert cost.onset_ns == trace.steps[2].start_ns


def test_tokens_and_cost_from_the_onset_are_the_hand_sum_of_the_chats_after_it() -> None:
    trace, verdict = scored("pydantic-ai-native", PYDANTIC_LOOP)
    cost = loop_cost(trace, verdict)
    assert cost is not None
    after_onset = PYDANTIC_CHATS[1:]  # the first chat (step 2) came before the loop
    assert cost.loop.model_calls == 8
    assert cost.loop.input_tokens == 142 + 237 + 332 + 427 + 522 + 617 + 712 + 807 == 3796
    assert cost.loop.output_tokens == 68 * 7 + 22 == 498
    assert cost.loop.cost == pytest.approx(sum(c for _, _, c in after_onset), abs=1e-12)
    assert cost.loop.steps == 18 - 2


def test_trace_totals_match_the_agent_spans_own_aggregate() -> None:
    trace, verdict = scored("pydantic-ai-native", PYDANTIC_LOOP)
    cost = loop_cost(trace, verdict)
    assert cost is not None
    root = trace.spans[trace.root_span_id]
    assert cost.trace.input_tokens == root.attributes["gen_ai.aggregated_usage.input_tokens"] == 3843
    assert cost.trace.output_tokens == root.attributes["gen_ai.aggregated_usage.output_tokens"] == 566
    assert cost.trace.model_calls == len(PYDANTIC_CHATS)
    assert cost.trace.cost == pytest.approx(sum(c for _, _, c in PYDANTIC_CHATS), abs=1e-12)


def test_wall_time_runs_from_the_onset_to_the_end_of_the_trace() -> None:
    trace, verdict = scored("pydantic-ai-native", PYDANTIC_LOOP)
    cost = loop_cost(trace, verdict)
    assert cost is not None
    end = max(record.end_ns for record in trace.spans.values())
    start = min(record.start_ns for record in trace.spans.values())
    assert cost.loop.duration_s == pytest.approx((end - trace.steps[2].start_ns) / 1e9, abs=1e-6)
    assert cost.trace.duration_s == pytest.approx((end - start) / 1e9, abs=1e-6)
    assert 0 < cost.loop.duration_s < cost.trace.duration_s


def test_an_agent_spans_aggregate_usage_is_not_counted_again() -> None:
    # Strands puts the run's total on its agent span in the same gen_ai.usage.* attributes.
    trace_id = next(iter(recorded("strands-native")))
    trace, verdict = scored("strands-native", trace_id)
    cost = loop_cost(trace, verdict)
    assert cost is not None
    agent = trace.spans[trace.root_span_id]
    assert cost.trace.input_tokens == agent.attributes["gen_ai.usage.input_tokens"]
    assert cost.trace.output_tokens == agent.attributes["gen_ai.usage.output_tokens"]


def test_wrapper_llm_spans_without_usage_are_not_model_calls() -> None:
    # LlamaIndex: each call is a _prepare_chat_with_tool span (no usage) and an astream_chat span.
    trace_id = next(iter(recorded("llamaindex-openinference")))
    trace, verdict = scored("llamaindex-openinference", trace_id)
    cost = loop_cost(trace, verdict)
    assert cost is not None
    chats = [s for s in trace.steps if s.name == "OpenAI.astream_chat"]
    assert len([s for s in trace.steps if s.kind is StepKind.LLM]) == 2 * len(chats)
    assert cost.trace.model_calls == len(chats)
    assert cost.trace.input_tokens == sum(s.input_tokens for s in chats)


def test_a_model_call_inside_another_is_counted_once() -> None:
    outer = Step(StepKind.LLM, "chain.llm", span_id="a", input_tokens=100, output_tokens=10, start_ns=1)
    inner = Step(
        StepKind.LLM,
        "openai.chat",
        span_id="b",
        parent_span_id="a",
        input_tokens=100,
        output_tokens=10,
        start_ns=2,
    )
    trace = flat_trace([outer, inner])
    verdict = Verdict(
        Label.LOOP, 0.4, findings=(Finding("action_cycle", 1.0, "x", started_step=0, no_progress=True),)
    )
    cost = loop_cost(trace, verdict)
    assert cost is not None
    assert (cost.trace.model_calls, cost.trace.input_tokens) == (1, 100)


def test_tokens_are_absent_not_zero_when_no_span_records_them() -> None:
    # OpenAI Agents SDK through OpenLLMetry records no token usage in this recording.
    trace_id = next(iter(recorded("openai-agents-openllmetry")))
    trace, verdict = scored("openai-agents-openllmetry", trace_id)
    cost = loop_cost(trace, verdict)
    assert cost is not None and cost.loop.model_calls > 0
    attributes = cost.attributes()
    assert "semloop.loop.input_tokens" not in attributes
    assert "semloop.loop.cost" not in attributes
    assert attributes["semloop.loop.model_calls"] == cost.loop.model_calls


def test_cost_is_absent_when_tokens_are_recorded_but_no_cost() -> None:
    trace_id = next(iter(recorded("openai-chat-loop-openinference")))
    trace, verdict = scored("openai-chat-loop-openinference", trace_id)
    cost = loop_cost(trace, verdict)
    assert cost is not None
    attributes = cost.attributes()
    assert attributes["semloop.loop.input_tokens"] > 0
    assert "semloop.loop.cost" not in attributes and "semloop.trace.cost" not in attributes


def test_a_healthy_trace_has_no_loop_cost() -> None:
    trace, verdict = scored("pydantic-ai-native", PYDANTIC_HEALTHY)
    assert verdict.label is Label.NO_LOOP
    assert loop_cost(trace, verdict) is None
    root = patches_for(trace, verdict)[trace.root_span_id].attributes
    assert not any(key.startswith(("semloop.loop.onset", "semloop.trace.")) for key in root)


def test_the_root_span_carries_the_loop_cost() -> None:
    trace, verdict = scored("pydantic-ai-native", PYDANTIC_LOOP)
    root = patches_for(trace, verdict)[trace.root_span_id].attributes
    assert root["semloop.loop.onset_step"] == 3
    assert root["semloop.loop.onset_time_unix_nano"] == trace.steps[2].start_ns
    assert root["semloop.loop.input_tokens"] == 3796
    assert root["semloop.loop.output_tokens"] == 498
    assert root["semloop.trace.input_tokens"] == 3843
    assert root["semloop.loop.model_calls"] == 8
    assert isinstance(root["semloop.loop.cost"], float)
    assert isinstance(root["semloop.loop.duration_s"], float)


def test_a_suspected_loop_begins_at_its_conclusive_finding() -> None:
    steps = [Step(StepKind.TOOL, f"t{i}", span_id=f"s{i}", start_ns=i + 1, end_ns=i + 2) for i in range(6)]
    trace = flat_trace(steps)
    warning = Finding("stale_steps", 0.6, "w", started_step=1)
    conclusive = Finding("action_cycle", 1.0, "c", started_step=3)
    verdict = Verdict(Label.SUSPECTED, 0.6, findings=(warning, conclusive))
    cost = loop_cost(trace, verdict)
    assert cost is not None
    assert cost.onset_step == 4
    assert cost.loop.steps == 3


def test_figures_an_attribute_cannot_carry_are_left_out_not_written_wrong() -> None:
    from otel_semloop.loop_cost import LoopCost, Usage

    hostile = Usage(steps=3, model_calls=2, input_tokens=2**63, output_tokens=2**63 - 1, cost=float("inf"))
    attrs = LoopCost(onset_step=2, onset_ns=2**64 - 1, loop=hostile, trace=hostile).attributes()
    assert "semloop.loop.input_tokens" not in attrs and "semloop.loop.cost" not in attrs
    assert "semloop.loop.onset_time_unix_nano" not in attrs
    assert attrs["semloop.loop.output_tokens"] == 2**63 - 1  # the largest int64 is kept
    assert attrs["semloop.loop.steps"] == 3 and attrs["semloop.trace.model_calls"] == 2
