"""The lexical score read from a trace's steps equals the score of its tree view.

The scorer does not build ``trace.tree_view()`` for the lexical metric: it walks the steps
once (:func:`~otel_semloop.detectors.lexical.deepeval_score_trace`), collecting tool calls
and LLM outputs and searching the call graph for a cycle on the way. Every field of the
result must equal :func:`~otel_semloop.detectors.lexical.deepeval_score` of the view, on
the snapshot's traces and on generated step trees that reach the edge cases: labels that
repeat on the ancestry path, at sibling positions or only after a leaf, colons in a type or
name (full-label comparison), several top-level steps under a ``base`` node, empty traces.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.verdict_snapshot import inputs
from otel_semloop.builder import build_trace
from otel_semloop.detectors.lexical import LexicalDetector, deepeval_score, deepeval_score_trace
from otel_semloop.model import SpanRecord, Step, StepKind, Trace

#: Few names, so that type:name prefixes collide often; one with a colon; the name of the
#: root span (an ``other`` step named so, without input, has the ``base`` wrapper's label).
_NAMES = ("search", "plan", "a:b", "invoke_agent")
_INPUTS = (None, {"q": "x"}, {"q": "y", "n": 2}, '{"q": "x"}', "plain", "")
_TEXT = "alpha beta gamma delta epsilon zeta theta iota kappa lambda sigma omega "
_OUTPUTS = ("", "short", _TEXT * 3, _TEXT * 3 + "different ending words here", (_TEXT + "more ") * 2)


@st.composite
def _trees(draw: st.DrawFn) -> Trace:
    steps: list[Step] = []

    def node(depth: int) -> Step:
        kind = draw(st.sampled_from((StepKind.AGENT, StepKind.LLM, StepKind.TOOL, StepKind.OTHER)))
        name = draw(st.sampled_from(_NAMES))
        value = draw(st.sampled_from(_INPUTS))
        output = draw(st.sampled_from(_OUTPUTS))
        if kind is StepKind.TOOL:
            step = Step(kind, name, tool_arguments=value, tool_result=output, output_text=output)
        else:
            step = Step(
                kind,
                name,
                input=value,
                input_text="" if value is None else str(value),
                output_text=output,
            )
        steps.append(step)
        if depth < 4:
            step.children = [node(depth + 1) for _ in range(draw(st.integers(0, 3 if depth < 2 else 1)))]
        return step

    roots = [node(0) for _ in range(draw(st.integers(0, 3)))]
    root_name = draw(st.sampled_from(("invoke_agent", "x:y", None)))
    spans = {} if root_name is None else {"r": SpanRecord("t", "r", "", root_name, 0, 1, {})}
    return Trace(trace_id="t", steps=steps, roots=roots, spans=spans, root_span_id="r")


@settings(max_examples=400, deadline=None)
@given(_trees(), st.sampled_from((0.85, 0.5, 0.0)), st.sampled_from((2, 3)))
def test_the_score_read_from_steps_equals_the_score_of_the_tree_view(
    trace: Trace, similarity: float, repetition: int
) -> None:
    expected = deepeval_score(
        trace.tree_view(), similarity_threshold=similarity, repetition_threshold=repetition
    )
    assert (
        deepeval_score_trace(trace, similarity_threshold=similarity, repetition_threshold=repetition)
        == expected
    )


def test_a_repeat_under_its_own_ancestor_is_a_cycle_and_at_a_sibling_position_is_not() -> None:
    leaf = Step(StepKind.TOOL, "search", tool_arguments={"q": "x"})
    inner = Step(StepKind.AGENT, "plan", input="go", input_text="go", children=[leaf])
    top = Step(StepKind.AGENT, "plan", input="go", input_text="go", children=[inner])
    cyclic = Trace("t", [top, inner, leaf], roots=[top])
    assert deepeval_score_trace(cyclic).breakdown["call_graph_cycles"] == 0.0
    assert deepeval_score_trace(cyclic) == deepeval_score(cyclic.tree_view())
    siblings = Step(StepKind.AGENT, "plan", input="go", input_text="go", children=[leaf, leaf])
    flat = Trace("t", [siblings, leaf, leaf], roots=[siblings])
    assert deepeval_score_trace(flat).breakdown["call_graph_cycles"] == 1.0


def test_a_leaf_sharing_an_ancestors_prefix_leaves_no_trace_on_the_path() -> None:
    def agent(text: str, *children: Step) -> Step:
        return Step(StepKind.AGENT, "plan", input=text, input_text=text, children=list(children))

    # ``mid`` shares ``top``'s prefix, so does its leaf; after ``mid`` ends, ``tail`` has
    # ``mid``'s label but only ``top`` is its ancestor: no cycle.
    leaf = agent("third")
    mid = agent("other", leaf)
    tail = agent("other")
    top = agent("go", mid, tail)
    trace = Trace("t", [top, mid, leaf, tail], roots=[top])
    assert deepeval_score_trace(trace) == deepeval_score(trace.tree_view())
    assert deepeval_score_trace(trace).breakdown["call_graph_cycles"] == 1.0


@pytest.mark.parametrize(("ancestor", "leaf"), [("a", "a:b"), ("a:b", "a")])
def test_a_leaf_whose_label_equals_an_ancestors_across_a_colon_is_a_cycle(ancestor: str, leaf: str) -> None:
    # ``agent:a:b:go``: the ancestor ``a`` with input ``b:go`` and the leaf ``a:b`` with
    # input ``go`` (or the other way round) have one label but different names: a leaf
    # is skipped by its kind and name only while no name holds a colon.
    def agent(name: str, text: str, *children: Step) -> Step:
        return Step(StepKind.AGENT, name, input=text, input_text=text, children=list(children))

    low = agent(leaf, "go" if leaf == "a:b" else "b:go")
    top = agent(ancestor, "b:go" if ancestor == "a" else "go", low)
    trace = Trace("t", [top, low], roots=[top])
    assert deepeval_score(trace.tree_view()).breakdown["call_graph_cycles"] == 0.0
    assert deepeval_score_trace(trace) == deepeval_score(trace.tree_view())


@pytest.mark.parametrize("every", [7])
def test_the_snapshot_traces_score_the_same_read_from_steps(every: int) -> None:
    detector = LexicalDetector()
    for _, records in list(inputs())[::every]:
        trace = build_trace(records)
        if trace.steps:
            assert detector.evaluate_trace(trace) == detector.evaluate(trace.tree_view()), trace.trace_id


def test_a_subclass_that_scores_trees_its_own_way_is_given_the_tree() -> None:
    class Constant(LexicalDetector):
        def evaluate(self, tree):  # type: ignore[no-untyped-def]
            return deepeval_score(None)

    trace = Trace("t", [Step(StepKind.LLM, "chat")], roots=[Step(StepKind.LLM, "chat")])
    assert Constant().evaluate_trace(trace) == deepeval_score(None)
