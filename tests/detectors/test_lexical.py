"""The deepeval-compatible lexical detector: golden answers, boundaries, bounded cost."""

from __future__ import annotations

import random
import string
import sys
from difflib import SequenceMatcher
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.detectors.lexical import LexicalDetector, deepeval_score
from otel_semloop.detectors.stagnation import (
    STOP_WORDS,
    _lcs_length,
    _least_mattering,
    _Output,
    _ratio_can_matter,
    score_reasoning_stagnation,
)
from tests.support.repo_data import GOLDEN, read_jsonl

GOLDEN_COUNT = 78


# Read at collection: a missing golden file is a collection error, never a silent skip.
GOLDEN_ROWS = read_jsonl(GOLDEN)
GOLDEN_LINES: dict[str, dict[str, Any]] = {line["case"]: line for line in GOLDEN_ROWS}


# ----------------------------------------------------------------------------------------
# Golden answers recorded from deepeval 4.3.1
# ----------------------------------------------------------------------------------------


def test_golden_file_has_every_line() -> None:
    assert len(GOLDEN_ROWS) == GOLDEN_COUNT
    assert len(GOLDEN_LINES) == GOLDEN_COUNT, "case names must be unique"


@pytest.mark.parametrize("case", sorted(GOLDEN_LINES))
def test_golden_matches_deepeval(case: str) -> None:
    line = GOLDEN_LINES[case]
    result = deepeval_score(line["trace"])
    assert result.score == line["score"]  # bit-identical, not approximately equal
    assert dict(result.breakdown) == line["breakdown"]
    assert result.reason == line["reason"]
    assert LexicalDetector().evaluate(line["trace"]) == result


# ----------------------------------------------------------------------------------------
# Helpers for hand-built traces
# ----------------------------------------------------------------------------------------


def span(type_: str, name: str, input_: Any = "", output: Any = "", children: Any = ()) -> dict[str, Any]:
    return {"type": type_, "name": name, "input": input_, "output": output, "children": list(children)}


def agent(*children: dict[str, Any]) -> dict[str, Any]:
    return span("agent", "agent", "do the task", "done", children)


def tool(name: str = "search", input_: Any = None) -> dict[str, Any]:
    return span("tool", name, {"q": "x", "k": 3} if input_ is None else input_, "ok")


def llm(output: Any) -> dict[str, Any]:
    return span("llm", "model", "prompt", output)


def words(count: int, prefix: str = "word") -> str:
    """``count`` distinct meaningful words (longer than two characters, not stop words)."""
    return " ".join(f"{prefix}{i:03d}" for i in range(count))


def prose(seed: int, count: int = 25) -> str:
    """``count`` pseudo-random meaningful words, different for every seed."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(count))


# ----------------------------------------------------------------------------------------
# Tool repetition
# ----------------------------------------------------------------------------------------


def test_two_identical_tool_calls_do_not_count() -> None:
    result = deepeval_score(agent(tool(), tool()))
    assert result.breakdown["tool_repetition"] == 1.0
    assert result.reason == "No loop patterns detected."


def test_three_identical_tool_calls_score_half() -> None:
    result = deepeval_score(agent(tool(), tool(), tool()))
    assert result.breakdown["tool_repetition"] == 0.5
    assert result.score == 0.8
    assert result.reason == "Tool 'search' called 3 times with identical arguments."


def test_five_identical_tool_calls_still_score_half() -> None:
    result = deepeval_score(agent(*[tool() for _ in range(5)]))
    assert result.breakdown["tool_repetition"] == 0.5


def test_six_identical_tool_calls_score_zero_but_alone_do_not_fail() -> None:
    result = deepeval_score(agent(*[tool() for _ in range(6)]))
    assert result.breakdown["tool_repetition"] == 0.0
    assert result.score == 0.6
    assert not result.loop
    assert result.reason == "Tool 'search' called 6 times with identical arguments."


def test_repetition_threshold_moves_both_bounds() -> None:
    calls = agent(*[tool() for _ in range(4)])
    assert deepeval_score(calls, repetition_threshold=2).breakdown["tool_repetition"] == 0.0
    assert deepeval_score(calls, repetition_threshold=5).breakdown["tool_repetition"] == 1.0


def test_argument_order_is_ignored() -> None:
    result = deepeval_score(agent(tool(input_={"q": "x", "k": 3}), tool(input_={"k": 3, "q": "x"}), tool()))
    assert result.breakdown["tool_repetition"] == 0.5


def test_different_arguments_are_different_calls() -> None:
    result = deepeval_score(agent(tool(input_={"q": "x"}), tool(input_={"q": "y"}), tool(input_={"q": "x"})))
    assert result.breakdown["tool_repetition"] == 1.0


def test_json_string_arguments_equal_dict_arguments() -> None:
    result = deepeval_score(
        agent(tool(input_='{"q": "x"}'), tool(input_={"q": "x"}), tool(input_='{"q": "x"}'))
    )
    assert result.breakdown["tool_repetition"] == 0.5


def test_argument_values_are_compared_as_their_str() -> None:
    # deepeval keys a dict by (str(key), str(value)): 1, "1" and a JSON string's 1 are one
    # value; [1] and "[1]" too; 1 and 1.0 are not ("1" vs "1.0").
    same = deepeval_score(agent(tool(input_={"n": 1}), tool(input_={"n": "1"}), tool(input_='{"n": 1}')))
    listed = deepeval_score(
        agent(tool(input_={"n": [1]}), tool(input_={"n": "[1]"}), tool(input_={"n": [1]}))
    )
    floats = deepeval_score(agent(tool(input_={"n": 1}), tool(input_={"n": 1.0}), tool(input_={"n": 1})))
    assert same.breakdown["tool_repetition"] == 0.5
    assert listed.breakdown["tool_repetition"] == 0.5
    assert floats.breakdown["tool_repetition"] == 1.0


def test_plain_string_arguments_are_compared_as_strings() -> None:
    same = deepeval_score(agent(*[tool("shell", "ls -la") for _ in range(3)]))
    different = deepeval_score(agent(tool("shell", "ls -la"), tool("shell", "ls"), tool("shell", "ls -la")))
    assert same.breakdown["tool_repetition"] == 0.5
    assert different.breakdown["tool_repetition"] == 1.0


def test_most_repeated_call_ties_report_the_first_seen() -> None:
    calls = [tool("a"), tool("b"), tool("b"), tool("a"), tool("a"), tool("b")]
    assert deepeval_score(agent(*calls)).reason == "Tool 'a' called 3 times with identical arguments."


# ----------------------------------------------------------------------------------------
# Reasoning stagnation
# ----------------------------------------------------------------------------------------


def test_identical_outputs_of_19_meaningful_words_are_not_compared() -> None:
    text = words(19)
    result = deepeval_score(agent(llm(text), llm(text)))
    assert result.breakdown["reasoning_stagnation"] == 1.0


def test_identical_outputs_of_20_meaningful_words_are_identical_reasoning() -> None:
    text = words(20)
    result = deepeval_score(agent(llm(text), llm(text)))
    assert result.breakdown["reasoning_stagnation"] == 0.0
    assert result.score == 0.65
    assert not result.loop
    assert result.reason == "Identical reasoning outputs at steps 0 and 1."


def test_stop_words_and_short_words_are_not_meaningful() -> None:
    padding = " ".join(sorted(STOP_WORDS)) + " ok no x 42"
    text = f"{words(19)} {padding}"
    assert deepeval_score(agent(llm(text), llm(text))).breakdown["reasoning_stagnation"] == 1.0


def test_only_consecutive_outputs_are_compared() -> None:
    text = words(30)
    other = words(30, prefix="other")
    assert deepeval_score(agent(llm(text), llm(other), llm(text))).breakdown["reasoning_stagnation"] == 1.0


def test_llm_steps_are_counted_among_llm_spans_only() -> None:
    text = words(30)
    result = deepeval_score(agent(llm(words(30, "first")), tool(), llm(text), tool("read"), llm(text)))
    assert result.reason == "Identical reasoning outputs at steps 1 and 2."


def test_high_overlap_between_085_and_095_scores_half() -> None:
    base = words(30).split()
    edited = list(base)
    edited[10] = "changedword"
    edited[20] = "otherchange"
    result = deepeval_score(agent(llm(" ".join(base)), llm(" ".join(edited))))
    assert result.breakdown["reasoning_stagnation"] == 0.5
    assert result.reason.startswith("High reasoning overlap (0.9")
    assert result.reason.endswith(") at steps 0 and 1.")


def test_non_string_outputs_are_skipped() -> None:
    text = words(30)
    assert (
        deepeval_score(agent(llm(text), llm({"text": text}), llm(text))).breakdown["reasoning_stagnation"]
        == 1.0
    )


# ----------------------------------------------------------------------------------------
# Call-graph cycles
# ----------------------------------------------------------------------------------------


def test_sibling_repeats_are_not_a_cycle() -> None:
    result = deepeval_score(agent(tool("t", {"a": 1}), tool("t", {"a": 1})))
    assert result.breakdown["call_graph_cycles"] == 1.0


def test_nested_same_label_is_a_cycle() -> None:
    inner = span("agent", "sub", "same")
    result = deepeval_score(agent(span("agent", "sub", "same", children=[inner])))
    assert result.breakdown["call_graph_cycles"] == 0.0
    assert result.score == 0.75
    assert result.reason == "Cycle detected in execution path: agent:sub -> agent:sub."


def test_nested_same_name_with_different_input_is_not_a_cycle() -> None:
    inner = span("agent", "sub", "other")
    assert (
        deepeval_score(agent(span("agent", "sub", "same", children=[inner]))).breakdown["call_graph_cycles"]
        == 1.0
    )


def test_input_hash_is_truncated_at_64_characters() -> None:
    prefix = "p" * 64
    beyond = span("tool", "t", prefix + "A", children=[span("tool", "t", prefix + "B")])
    within = span("tool", "t", "p" * 63 + "A", children=[span("tool", "t", "p" * 63 + "B")])
    assert deepeval_score(agent(beyond)).breakdown["call_graph_cycles"] == 0.0
    assert deepeval_score(agent(within)).breakdown["call_graph_cycles"] == 1.0


def test_cycle_path_runs_from_the_earlier_occurrence() -> None:
    loop_back = span("agent", "planner", "plan", children=[span("tool", "search", "q")])
    tree = agent(span("agent", "planner", "plan", children=[span("llm", "think", "x", children=[loop_back])]))
    assert deepeval_score(tree).reason == (
        "Cycle detected in execution path: agent:planner -> llm:think -> agent:planner."
    )


def test_first_cycle_in_depth_first_order_is_reported() -> None:
    first = span("agent", "a", "1", children=[span("x", "mid", children=[span("agent", "a", "1")])])
    second = span("agent", "b", "2", children=[span("agent", "b", "2")])
    assert deepeval_score(agent(first, second)).reason == (
        "Cycle detected in execution path: agent:a -> x:mid -> agent:a."
    )
    assert deepeval_score(agent(second, first)).reason == (
        "Cycle detected in execution path: agent:b -> agent:b."
    )


# ----------------------------------------------------------------------------------------
# Combination
# ----------------------------------------------------------------------------------------


def test_two_signals_fail_a_trace() -> None:
    text = words(30)
    result = deepeval_score(agent(llm(text), tool(), llm(text), tool(), tool()))
    assert result.breakdown == {"tool_repetition": 0.5, "reasoning_stagnation": 0.0, "call_graph_cycles": 1.0}
    assert result.score == 0.45
    assert result.loop
    assert result.reason == (
        "Tool 'search' called 3 times with identical arguments. Identical reasoning outputs at steps 0 and 1."
    )


def test_missing_trace_scores_zero_like_deepeval() -> None:
    result = deepeval_score(None)
    assert result.score == 0.0
    assert result.reason == "No trace data found. This metric requires trace data from @observe."


def test_empty_trace_is_clean() -> None:
    assert deepeval_score({}).reason == "No loop patterns detected."
    assert deepeval_score(agent()).score == 1.0


def test_detector_wraps_the_function_with_its_thresholds() -> None:
    tree = agent(*[tool() for _ in range(4)])
    detector = LexicalDetector(threshold=0.9, repetition_threshold=2)
    assert LexicalDetector.name == "deepeval_lexical"
    result = detector.evaluate(tree)
    assert result == deepeval_score(tree, threshold=0.9, repetition_threshold=2)
    assert result.threshold == 0.9
    assert result.loop


# ----------------------------------------------------------------------------------------
# Bounded stagnation scoring equals deepeval's plain pairwise comparison
# ----------------------------------------------------------------------------------------


def plain_stagnation(outputs: list[Any], similarity_threshold: float = 0.85) -> tuple[float, str]:
    """deepeval's algorithm without shortcuts: every consecutive pair, always ``ratio()``."""
    if len(outputs) < 2:
        return 1.0, "Not enough LLM spans to check for reasoning stagnation."

    def clean(text: str) -> list[str]:
        return [w for w in str(text).lower().split() if w not in STOP_WORDS and len(w) > 2]

    best, pair = 0.0, (-1, -1)
    for i in range(len(outputs) - 1):
        a, b = outputs[i], outputs[i + 1]
        if not isinstance(a, str) or not isinstance(b, str):
            continue
        wa, wb = clean(a), clean(b)
        if len(wa) < 20 or len(wb) < 20:
            continue
        ga, gb = set(zip(wa, wa[1:])), set(zip(wb, wb[1:]))  # noqa: B905, RUF007 - as deepeval
        jaccard = len(ga & gb) / len(ga | gb) if ga | gb else 0.0
        ratio = SequenceMatcher(None, " ".join(wa), " ".join(wb)).ratio()
        similarity = max(jaccard, ratio)
        if similarity > best:
            best, pair = similarity, (i, i + 1)
    if best >= similarity_threshold:
        if best > 0.95:
            return 0.0, f"Identical reasoning outputs at steps {pair[0]} and {pair[1]}."
        return 0.5, f"High reasoning overlap ({best:.2f}) at steps {pair[0]} and {pair[1]}."
    return 1.0, "No reasoning stagnation."


VOCAB = ["search", "retry", "error", "handler", "config", "fix", "read", "file", "the", "a", "ok", "step"]


@st.composite
def llm_outputs(draw: st.DrawFn) -> list[Any]:
    """Runs of LLM outputs where near-duplicates of the previous output are common."""
    previous = draw(st.lists(st.sampled_from(VOCAB), min_size=15, max_size=40))
    outputs: list[Any] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["edit", "edit", "edit", "same", "fresh", "none"]))
        if kind == "none":
            outputs.append(None)
            continue
        if kind == "fresh":
            current = draw(st.lists(st.sampled_from(VOCAB), min_size=15, max_size=40))
        else:
            current = list(previous)
        if kind == "edit":
            for _ in range(draw(st.integers(1, 4))):
                position = draw(st.integers(0, len(current) - 1))
                current[position] = draw(st.sampled_from(VOCAB))
        previous = current
        outputs.append(" ".join(current))
    return outputs


@settings(max_examples=300, deadline=None)
@given(outputs=llm_outputs(), threshold=st.sampled_from([0.85, 0.85, 0.5, 0.7, 0.9, 0.95, 0.0]))
def test_bounded_stagnation_equals_plain_pairwise(outputs: list[Any], threshold: float) -> None:
    assert score_reasoning_stagnation(outputs, threshold) == plain_stagnation(outputs, threshold)


#: Meaningful words (three characters or more, no stop words): every word of an output counts.
_LONG_WORDS = ["alpha", "beta", "gamma", "delta", "omega"]


@st.composite
def repetitive_outputs(draw: st.DrawFn) -> list[Any]:
    """Outputs whose bigram sets are far smaller than their word counts (a short cycle of
    words repeated: ``alpha beta alpha beta ...`` has two bigrams however long it is), of
    very different lengths, edited, respaced (the same words again in another string) or
    repeated verbatim: where a bound on the Jaccard taken from word counts, or stopping
    at the wrong similarity, would go wrong."""
    outputs: list[Any] = []
    previous: list[str] | None = None
    for _ in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["cycle", "cycle", "edit", "respaced", "same", "none"]))
        if kind == "none":
            outputs.append(None)
            continue
        if kind in ("same", "respaced", "edit") and previous is not None:
            words = list(previous)
            if kind == "edit":
                for _ in range(draw(st.integers(1, 3))):
                    at = draw(st.integers(0, len(words) - 1))
                    words[at] = draw(st.sampled_from(_LONG_WORDS))
        else:
            period = draw(st.lists(st.sampled_from(_LONG_WORDS), min_size=1, max_size=4))
            length = draw(st.integers(18, 120))
            words = [period[i % len(period)] for i in range(length)]
        previous = words
        outputs.append(("  " if kind == "respaced" else " ").join(words))
    return outputs


@settings(max_examples=300, deadline=None)
@given(outputs=repetitive_outputs(), threshold=st.sampled_from([0.85, 0.85, 0.5, 0.95, 1.0, 0.0]))
def test_stagnation_shortcuts_equal_plain_pairwise_on_repetitive_outputs(
    outputs: list[Any], threshold: float
) -> None:
    assert score_reasoning_stagnation(outputs, threshold) == plain_stagnation(outputs, threshold)


def test_a_long_repetitive_output_matches_a_short_one_by_its_bigrams() -> None:
    """Two bigrams each, 20 and 120 words: Jaccard 1.0, which no word-count bound sees."""
    short = " ".join(["alpha", "beta"] * 10)
    long = " ".join(["alpha", "beta"] * 60)
    assert score_reasoning_stagnation([short, long]) == (0.0, "Identical reasoning outputs at steps 0 and 1.")
    assert plain_stagnation([short, long]) == score_reasoning_stagnation([short, long])


def _swapped_superset(n_words: int, extra: int) -> tuple[str, str]:
    """An output of ``n_words`` distinct words and one holding all its bigrams (its two
    halves swapped around a new word, then ``extra`` new words): Jaccard is the first's
    bigram count over the second's, while ``ratio()`` stays near one half."""
    words = [f"w{i:02d}" for i in range(n_words)]
    middle = n_words // 2
    swapped = [*words[middle:], "xxx", *words[: middle + 1], *(f"y{i:02d}" for i in range(extra))]
    return " ".join(words), " ".join(swapped)


def test_jaccard_is_computed_when_the_word_count_bound_is_just_above_the_threshold() -> None:
    """20 bigrams against 23: the size bound ``20 / 23`` is above 0.85, so Jaccard is
    computed, and 0.87 is the pair's similarity (its ``ratio()`` is far lower). A
    shortcut that took Jaccard for 0.0 a little too eagerly would report no overlap."""
    short, long = _swapped_superset(21, 1)
    assert SequenceMatcher(None, short, long).ratio() < 0.7
    expected = (0.5, "High reasoning overlap (0.87) at steps 0 and 1.")
    assert plain_stagnation([short, long]) == expected
    assert score_reasoning_stagnation([short, long]) == expected
    assert score_reasoning_stagnation([long, short]) == expected


def test_jaccard_equal_to_the_threshold_is_computed() -> None:
    """34 bigrams against 40: Jaccard and its size bound exactly 0.85, the threshold
    (reached, not exceeded): still computed."""
    short, long = _swapped_superset(35, 4)
    expected = (0.5, "High reasoning overlap (0.85) at steps 0 and 1.")
    assert plain_stagnation([short, long]) == expected
    assert score_reasoning_stagnation([short, long]) == expected


def test_jaccard_of_outputs_differing_in_a_few_words_is_computed() -> None:
    """80 distinct words against the same with its halves swapped and two words replaced:
    five words tell the two apart, yet Jaccard is 0.88 (its ``ratio()`` far lower), so the
    bound from the words must not skip it."""
    words = [f"w{i:02d}" for i in range(80)]
    swapped = [*words[40:], "xxx", *words[:41]]
    swapped[3], swapped[10] = "z00", "z01"
    expected = (0.5, "High reasoning overlap (0.88) at steps 0 and 1.")
    outputs = [" ".join(words), " ".join(swapped)]
    assert plain_stagnation(outputs) == expected
    assert score_reasoning_stagnation(outputs) == expected


def test_the_word_bound_counts_the_bigrams_of_both_outputs() -> None:
    """201 distinct words, then the same twice over with 33 new words inside: Jaccard
    200/235 = 0.851. The bound's denominator is both outputs' bigram counts (634); with the
    shorter one's alone (200) it would fall to 0.845 and wrongly skip the pair."""
    words = [f"w{i:03d}" for i in range(201)]
    longer = [*words, *words[:100], *(f"n{i:02d}" for i in range(33)), *words[100:]]
    outputs = [" ".join(words), " ".join(longer)]
    expected = (0.5, "High reasoning overlap (0.85) at steps 0 and 1.")
    assert plain_stagnation(outputs) == expected
    assert score_reasoning_stagnation(outputs) == expected


def test_the_first_identical_pair_stays_reported_after_later_ones() -> None:
    """Once a pair reaches 1.0 nothing later can replace it (the scoring stops there)."""
    text = " ".join(f"word{i:02d}" for i in range(30))
    respaced = text.replace(" ", "  ")
    outputs = [text, respaced, text, "other " * 25, text, text]
    assert score_reasoning_stagnation(outputs) == (0.0, "Identical reasoning outputs at steps 0 and 1.")
    assert plain_stagnation(outputs) == score_reasoning_stagnation(outputs)


@settings(max_examples=200, deadline=None)
@given(a=st.text("abc de", max_size=40), b=st.text("abc de", max_size=40))
def test_lcs_bound_is_exact_and_above_sequence_matcher(a: str, b: str) -> None:
    lengths = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            lengths[i + 1][j + 1] = lengths[i][j] + 1 if x == y else max(lengths[i][j + 1], lengths[i + 1][j])
    assert _lcs_length(a, _Output(b.split(" "))) == lengths[len(a)][len(b)]
    assert _lcs_length(b, _Output(a.split(" "))) == lengths[len(a)][len(b)]
    matched = sum(block.size for block in SequenceMatcher(None, a, b).get_matching_blocks())
    assert matched <= lengths[len(a)][len(b)]


# ----------------------------------------------------------------------------------------
# Size: deep and long traces
# ----------------------------------------------------------------------------------------


def test_a_chain_three_times_the_recursion_limit_scores_without_recursion_error() -> None:
    depth = 3 * sys.getrecursionlimit()
    leaf = span("tool", "step", f"call {depth}", "ok")
    for level in range(depth - 1, -1, -1):
        kind = "llm" if level % 2 else "tool"
        leaf = span(kind, "step", f"call {level}", prose(level), [leaf])
    result = deepeval_score(agent(leaf))
    assert result.breakdown == {"tool_repetition": 1.0, "reasoning_stagnation": 1.0, "call_graph_cycles": 1.0}


def test_a_chain_three_times_the_recursion_limit_reports_a_cycle_at_the_bottom() -> None:
    depth = 3 * sys.getrecursionlimit()
    node = span("agent", "sub", "call 0")
    for level in range(depth - 1, -1, -1):
        node = span("agent", "sub", f"call {level}", children=[node])
    result = deepeval_score(agent(node))
    assert result.breakdown["call_graph_cycles"] == 0.0
    assert result.reason.count("agent:sub") == depth + 1


def test_ten_thousand_step_flat_trace_scores_without_error() -> None:
    steps = []
    for i in range(5_000):
        steps.append(llm(prose(i)))
        steps.append(tool("search", {"q": "same"}))
    result = deepeval_score(agent(*steps))
    assert result.breakdown == {"tool_repetition": 0.0, "reasoning_stagnation": 1.0, "call_graph_cycles": 1.0}
    assert result.reason == "Tool 'search' called 5000 times with identical arguments."


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from([*_LONG_WORDS, "al", "ph"]), min_size=1, max_size=30),
    st.lists(st.sampled_from([*_LONG_WORDS, "al", "ph"]), min_size=1, max_size=30),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_the_lcs_asked_with_a_cutoff_decides_as_the_exact_lcs(
    left: list[str], right: list[str], floor: float, threshold: float
) -> None:
    # ``_ratio_can_matter`` asks rapidfuzz only whether the LCS reaches the least length
    # that could matter (``_least_mattering``): the same answer as the exact length, and
    # that least length is the least one (a larger one would turn lengths between them away).
    a, b = _Output(left), _Output(right)
    length = len(a.text) + len(b.text)
    quick = 2.0 * min(len(a.text), len(b.text)) / length

    def passes(m: int) -> bool:
        return 2.0 * m / length > floor and 2.0 * m / length >= threshold

    expected = passes(min(len(a.text), len(b.text))) and quick > floor and passes(_lcs_length(a.text, b))
    assert _ratio_can_matter(a, b, floor, threshold) == expected
    if passes(min(len(a.text), len(b.text))):
        least = _least_mattering(length, floor, threshold)
        assert passes(least) and (least == 0 or not passes(least - 1))
