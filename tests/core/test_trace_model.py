"""The trace model: ordering, tree view, root choice and the deepeval round trip."""

from __future__ import annotations

from bench.deepeval_tree import trace_from_tree, tree_to_spans
from otel_semloop.builder import build_trace
from otel_semloop.detectors.lexical import deepeval_score
from otel_semloop.model import SpanRecord, StepKind
from tests.support.repo_data import GOLDEN, read_jsonl

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def tool(span_id: str, parent: str, start: int, name: str = "t", **extra) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        end_ns=start + 5,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **extra},
    )


def agent(span_id: str, parent: str = "", start: int = 0, name: str = "agent") -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        end_ns=start + 100,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
    )


def test_steps_are_ordered_by_start_time_not_span_id():
    trace = build_trace([agent("a0"), tool("ff", "a0", 10, "first"), tool("00", "a0", 20, "second")])
    assert [s.name for s in trace.steps] == ["agent", "first", "second"]


def test_equal_start_times_keep_tree_order_parent_first():
    records = [tool("c1", "b1", 5, "child"), agent("a0"), agent("b1", "a0", 5, "sub")]
    trace = build_trace(records)
    assert [s.name for s in trace.steps] == ["agent", "sub", "child"]


def test_plumbing_spans_stay_in_the_trace_but_are_not_steps():
    http = SpanRecord(TRACE, "h1", "a0", "POST /v1/chat", 3, 4, {"http.request.method": "POST"})
    inner = tool("t1", "h1", 5, "under_http")
    trace = build_trace([agent("a0"), http, inner])
    assert [s.kind for s in trace.steps] == [StepKind.AGENT, StepKind.TOOL]
    assert trace.other_spans == [http]
    # the tool under the HTTP span hangs off the nearest step: the agent
    assert trace.root.children == [trace.steps[1]]
    assert set(trace.spans) == {"a0", "h1", "t1"}


def test_root_is_the_span_without_parent_else_the_earliest_local_root():
    assert build_trace([agent("a0"), tool("t1", "a0", 1)]).root_span_id == "a0"
    remote = agent("a1", parent="ffffffffffffffff", start=0)
    assert build_trace([tool("t1", "a1", 1), remote]).root_span_id == "a1"


def test_parent_id_cycles_in_hostile_input_terminate_and_keep_every_span():
    a = tool("aa", "bb", 1)
    b = tool("bb", "aa", 2)
    trace = build_trace([agent("r0"), a, b])
    assert set(trace.spans) == {"r0", "aa", "bb"}


def test_a_deep_chain_builds_without_recursion():
    records = [agent("0")] + [agent(str(i), str(i - 1), i) for i in range(1, 20_000)]
    trace = build_trace(records)
    assert len(trace.steps) == 20_000
    view = trace.tree_view()
    depth = 0
    while view["children"]:
        view = view["children"][0]
        depth += 1
    assert depth == 19_999


def test_tree_view_shows_tool_arguments_and_llm_text():
    tree = {
        "type": "agent",
        "name": "a",
        "input": "goal",
        "output": "",
        "children": [
            {"type": "llm", "name": "think", "input": None, "output": "plan", "children": []},
            {"type": "tool", "name": "grep", "input": {"q": "x", "k": 2}, "output": "none", "children": []},
        ],
    }
    assert trace_from_tree(tree).tree_view() == tree
    assert trace_from_tree(tree).goal == "goal"


def test_invented_ids_are_valid_and_times_are_ordered():
    spans = tree_to_spans({"type": "agent", "name": "a", "children": [{"type": "tool", "name": "t"}]}, "k")
    assert all(len(s.trace_id) == 32 and len(s.span_id) == 16 for s in spans)
    assert spans[0].start_ns < spans[1].start_ns <= spans[1].end_ns < spans[0].end_ns


def _golden() -> list[dict]:
    return read_jsonl(GOLDEN)


def test_every_golden_trace_scores_the_same_after_a_round_trip_through_genai_spans():
    rows = _golden()
    mismatched = []
    for row in rows:
        result = deepeval_score(trace_from_tree(row["trace"], row["case"]).tree_view())
        if (result.score, dict(result.breakdown), result.reason) != (
            row["score"],
            row["breakdown"],
            row["reason"],
        ):
            mismatched.append(row["case"])
    assert len(rows) == 78
    assert mismatched == []


def test_goal_falls_back_to_the_first_user_message_when_the_root_agent_has_no_input():
    chat = SpanRecord(
        TRACE,
        "c1",
        "a0",
        "generation",
        1,
        2,
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "You are terse.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Why is checkout failing?",
        },
    )
    assert build_trace([agent("a0"), chat]).goal == "Why is checkout failing?"


def _openai_llm_span(span_id: str, start: int, call_id: str, previous_result: str | None) -> SpanRecord:
    """An LLM span as openinference-instrumentation-openai records it, with no tool span."""
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Why do orders time out?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": call_id,
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search_logs",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"query": "timeout"}',
    }
    if previous_result is not None:
        attributes |= {
            "llm.input_messages.1.message.role": "tool",
            "llm.input_messages.1.message.tool_call_id": f"prev-{span_id}",
            "llm.input_messages.1.message.content": previous_result,
        }
    return SpanRecord(TRACE, span_id, "a0", "ChatCompletion", start, start + 5, attributes)


def test_tool_calls_no_span_recorded_become_steps_with_their_results_from_the_next_call():
    first = _openai_llm_span("l1", 10, "prev-l2", None)
    second = _openai_llm_span("l2", 20, "prev-l3", "2 matches in app.log")
    trace = build_trace([agent("a0"), first, second])
    kinds = [(s.kind.value, s.synthetic) for s in trace.steps]
    assert kinds == [("agent", False), ("llm", False), ("tool", True), ("llm", False), ("tool", True)]
    call = trace.steps[2]
    assert (call.name, call.tool_arguments, call.tool_result) == (
        "search_logs",
        {"query": "timeout"},
        "2 matches in app.log",
    )
    assert call.span_id == "l1"
    assert trace.steps[4].tool_result is None  # its result was never sent back
    # deepeval's view stays what deepeval would see: no invented tool nodes
    assert [c["type"] for c in trace.tree_view()["children"]] == ["llm", "llm"]


def test_recorded_tool_spans_are_not_doubled_by_the_calls_that_requested_them():
    request = _openai_llm_span("l1", 10, "c1", None)
    ran = tool("t1", "a0", 15, "search_logs")
    trace = build_trace([agent("a0"), request, ran])
    assert [s.synthetic for s in trace.steps] == [False, False, False]


def test_a_tool_loop_recorded_only_inside_llm_calls_is_still_a_loop():
    from otel_semloop.scoring import Scorer

    spans = [agent("a0")]
    for i in range(8):
        result = "0 matches" if i else None
        spans.append(_openai_llm_span(f"l{i}", 10 * (i + 1), f"prev-l{i + 1}", result))
    verdict = Scorer().score(build_trace(spans))
    assert verdict.label.value == "loop"
    assert verdict.in_loop_span_ids <= {s.span_id for s in spans}


def test_a_trace_whose_every_span_sits_in_a_parent_cycle_still_gets_a_root():
    trace = build_trace([tool("aa", "bb", 1), tool("bb", "aa", 2)])
    assert trace.root_span_id == "aa"
    assert set(trace.spans) == {"aa", "bb"}
