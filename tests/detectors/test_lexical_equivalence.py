"""The fast lexical score equals deepeval's plain algorithm on random traces.

:mod:`otel_semloop.detectors.lexical` skips ``SequenceMatcher.ratio()`` when a rapidfuzz
LCS bound proves it cannot change the result, and serialises a span's input for the
call-graph check only when an ancestor shares its type and name. The reference here does
neither: every consecutive pair gets ``ratio()``, every span its full label, ancestors are
searched with ``list.index`` by a recursive walk, as deepeval 4.3.1 does. Generated traces
favour the cases where a shortcut could go wrong: near-duplicate outputs around the 0.85
and 0.95 thresholds, outputs long enough for difflib's autojunk heuristic, non-ASCII text,
colons in types and names (labels that split ambiguously), nested repeats.
"""

from __future__ import annotations

import contextlib
import json
from difflib import SequenceMatcher
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import LCSseq

from otel_semloop.detectors.lexical import deepeval_score
from otel_semloop.detectors.stagnation import STOP_WORDS


def reference_score(tree: dict[str, Any], similarity_threshold: float = 0.85) -> tuple[float, dict, str]:
    """deepeval's AgentLoopDetectionMetric without shortcuts: (score, breakdown, reason)."""
    spans: list[dict[str, Any]] = []

    def collect(span: Any) -> None:
        if not span:
            return
        spans.append(span)
        for child in span.get("children", []):
            collect(child)

    collect(tree)

    # Tool repetition.
    tools = [s for s in spans if s.get("type") == "tool"]
    if not tools:
        tool = (1.0, "No tool spans found.")
    else:
        counts: dict[Any, int] = {}
        for span in tools:
            args = span.get("input", {})
            if isinstance(args, str):
                with contextlib.suppress(Exception):  # deepeval keeps the raw string
                    args = json.loads(args)
            if isinstance(args, dict):
                key = (span.get("name", ""), tuple(sorted((str(k), str(v)) for k, v in args.items())))
            else:
                key = (span.get("name", ""), (str(args),))
            counts[key] = counts.get(key, 0) + 1
        (name, _), count = max(counts.items(), key=lambda item: item[1])
        if count >= 6:
            tool = (0.0, f"Tool '{name}' called {count} times with identical arguments.")
        elif count >= 3:
            tool = (0.5, f"Tool '{name}' called {count} times with identical arguments.")
        else:
            tool = (1.0, "Tool calls are within acceptable repetition limits.")

    # Reasoning stagnation: every consecutive pair, always ratio().
    outputs = [s.get("output", "") for s in spans if s.get("type") == "llm"]
    if len(outputs) < 2:
        stagnation = (1.0, "Not enough LLM spans to check for reasoning stagnation.")
    else:
        best, pair = 0.0, (-1, -1)
        for i in range(len(outputs) - 1):
            a, b = outputs[i], outputs[i + 1]
            if not isinstance(a, str) or not isinstance(b, str):
                continue
            wa = [w for w in a.lower().split() if w not in STOP_WORDS and len(w) > 2]
            wb = [w for w in b.lower().split() if w not in STOP_WORDS and len(w) > 2]
            if len(wa) < 20 or len(wb) < 20:
                continue
            ga, gb = set(zip(wa, wa[1:])), set(zip(wb, wb[1:]))  # noqa: B905, RUF007 - as deepeval
            jaccard = len(ga & gb) / len(ga | gb) if ga | gb else 0.0
            similarity = max(jaccard, SequenceMatcher(None, " ".join(wa), " ".join(wb)).ratio())
            if similarity > best:
                best, pair = similarity, (i, i + 1)
        if best >= similarity_threshold:
            if best > 0.95:
                stagnation = (0.0, f"Identical reasoning outputs at steps {pair[0]} and {pair[1]}.")
            else:
                stagnation = (0.5, f"High reasoning overlap ({best:.2f}) at steps {pair[0]} and {pair[1]}.")
        else:
            stagnation = (1.0, "No reasoning stagnation.")

    # Call-graph cycles: full labels, list.index on the ancestry path.
    def label(span: dict[str, Any]) -> str:
        raw = span.get("input", "")
        if isinstance(raw, dict):
            raw = json.dumps(raw, sort_keys=True)
        return f"{span.get('type', 'unknown')}:{span.get('name', 'unnamed')}:{str(raw)[:64]}"

    def walk(span: dict[str, Any], path: list[str]) -> list[str] | None:
        own = label(span)
        if own in path:
            return [*path[path.index(own) :], own]
        for child in span.get("children", []):
            found = walk(child, [*path, own])
            if found:
                return found
        return None

    cycle_path = walk(tree, [])
    if cycle_path is None:
        cycle = (1.0, "No execution cycles detected.")
    else:
        shown = " -> ".join(":".join(lab.split(":", 2)[:2]) for lab in cycle_path)
        cycle = (0.0, f"Cycle detected in execution path: {shown}.")

    results = (tool, stagnation, cycle)
    weights = total = 0.0
    for weight, (sub, _) in zip((0.40, 0.35, 0.25), results, strict=True):
        weights += weight
        total += sub * weight
    score = total / weights
    if score == 1.0:
        reason = "No loop patterns detected."
    else:
        reason = " ".join(text for sub, text in results if sub < 1.0 and text)
    breakdown = {
        "tool_repetition": tool[0],
        "reasoning_stagnation": stagnation[0],
        "call_graph_cycles": cycle[0],
    }
    return score, breakdown, reason


# -- generated traces ----------------------------------------------------------------------

VOCAB = [
    "search", "retry", "error", "handler", "config", "fix", "read", "file", "the", "a", "ok",
    "step", "résumé", "naïve", "größe", "数据", "ok:go", "eeeeee", "ee", "tests", "order",
]  # fmt: skip


@st.composite
def texts(draw: st.DrawFn, previous: list[str]) -> tuple[str, list[str]]:
    """An output: a near-duplicate of the previous one (a few words edited, dropped or
    added), the previous one again, or a fresh one; 15 to 90 words."""
    kind = draw(st.sampled_from(["edit", "edit", "edit", "same", "fresh"]))
    if kind == "fresh" or not previous:
        words = draw(st.lists(st.sampled_from(VOCAB), min_size=15, max_size=90))
    else:
        words = list(previous)
        if kind == "edit":
            for _ in range(draw(st.integers(1, 6))):
                op = draw(st.sampled_from(["replace", "drop", "add"]))
                at = draw(st.integers(0, max(0, len(words) - 1)))
                if op == "replace" and words:
                    words[at] = draw(st.sampled_from(VOCAB))
                elif op == "drop" and len(words) > 1:
                    del words[at]
                else:
                    words.insert(at, draw(st.sampled_from(VOCAB)))
    separator = draw(st.sampled_from([" ", " ", "  ", "\n"]))
    return separator.join(words), words


@st.composite
def agent_runs(draw: st.DrawFn) -> dict[str, Any]:
    """An agent span over LLM outputs (near-duplicates common, some missing) and tool calls."""
    previous: list[str] = []
    children: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 10))):
        if draw(st.integers(0, 3)) == 0:
            query = draw(st.sampled_from(["x", "y"]))
            children.append({"type": "tool", "name": "search", "input": {"q": query}, "output": "ok"})
            continue
        output: Any = None
        if draw(st.integers(0, 9)):
            output, previous = draw(texts(previous))
        children.append({"type": "llm", "name": "model", "input": "prompt", "output": output})
    return {"type": "agent", "name": "agent", "input": "task", "output": "", "children": children}


#: Few names, types and inputs, several holding colons: labels collide often, and some
#: split ambiguously (``tool`` + ``a`` + ``b:c`` and ``tool`` + ``a:b`` + ``c`` are both
#: ``tool:a:b:c``), which the fast walk must still compare as deepeval does.
NAMES = ["a", "a:b", "b", "search"]
TYPES = ["tool", "tool", "agent", "tool:a"]
INPUTS: list[Any] = [
    "b:c", "c", "a:b:c", "call", {"q": "x"}, {"q": "x", "k": 1}, None, "p" * 64 + "1", "p" * 65,
]  # fmt: skip


@st.composite
def call_graphs(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    limit = 4 if depth == 0 else 2
    children = [draw(call_graphs(depth + 1)) for _ in range(draw(st.integers(0, limit)))] if depth < 4 else []
    return {
        "type": draw(st.sampled_from(TYPES)),
        "name": draw(st.sampled_from(NAMES)),
        "input": draw(st.sampled_from(INPUTS)),
        "output": "",
        "children": children,
    }


def assert_same(tree: dict[str, Any], threshold: float = 0.85) -> None:
    result = deepeval_score(tree, similarity_threshold=threshold)
    score, breakdown, reason = reference_score(tree, threshold)
    assert result.score == score  # bit-identical
    assert dict(result.breakdown) == breakdown
    assert result.reason == reason


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=agent_runs(), threshold=st.sampled_from([0.85, 0.85, 0.85, 0.5, 0.9, 0.95, 0.0]))
def test_stagnation_equals_plain_deepeval(tree: dict[str, Any], threshold: float) -> None:
    assert_same(tree, threshold)


@settings(max_examples=400, deadline=None)
@given(tree=call_graphs())
def test_call_graph_cycles_equal_plain_deepeval(tree: dict[str, Any]) -> None:
    assert_same(tree)


def test_ambiguous_labels_are_compared_in_full() -> None:
    """``tool`` + ``a:b`` + ``c`` under ``tool`` + ``a`` + ``b:c``: one label, a cycle."""
    inner = {"type": "tool", "name": "a:b", "input": "c", "output": "", "children": []}
    outer = {"type": "tool", "name": "a", "input": "b:c", "output": "", "children": [inner]}
    result = deepeval_score(outer)
    assert result.breakdown["call_graph_cycles"] == 0.0
    assert result.reason.endswith("Cycle detected in execution path: tool:a -> tool:a.")
    assert_same(outer)


@settings(max_examples=300, deadline=None)
@given(a=st.text(max_size=300), b=st.text(max_size=300))
def test_rapidfuzz_lcs_bounds_difflib_matches(a: str, b: str) -> None:
    """The bound the fast path relies on: difflib's matched characters never exceed
    rapidfuzz's LCS, so ``2.0 * lcs / length`` is at or above ``ratio()``, bit for bit."""
    matched = sum(block.size for block in SequenceMatcher(None, a, b).get_matching_blocks())
    lcs = LCSseq.similarity(a, b)
    assert matched <= lcs <= min(len(a), len(b))
    if a or b:
        assert SequenceMatcher(None, a, b).ratio() <= 2.0 * lcs / (len(a) + len(b))
