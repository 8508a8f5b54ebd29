"""deepeval-compatible lexical loop score (``AgentLoopDetectionMetric``, deepeval 4.3.1).

This module is the specification of the lexical detector; it reproduces deepeval's
score, sub-scores and reason text exactly (all three checks enabled, ``strict_mode``
off) on deepeval's nested span dict: each span is a mapping with ``type``, ``name``,
``input``, ``output`` and ``children`` (a list of spans).

Score polarity follows deepeval: 1.0 is a clean trace, 0.0 severe looping, and a trace
is a loop when ``score < threshold`` (default 0.5).

Spans
    All spans are collected in pre-order (a span, then its children left to right),
    skipping falsy (empty) spans. Tool spans have ``type == "tool"``, LLM spans
    ``type == "llm"``.

The three signals (each 1.0, 0.5 or 0.0)
    ``tool_repetition`` (weight 0.40)
        Tool calls are keyed by ``(name, arguments)``. A string ``input`` is parsed as
        JSON when it parses; a dict input becomes its sorted ``(str(key), str(value))``
        pairs, so argument order is ignored and ``'{"q": "x"}'`` equals ``{"q": "x"}``;
        anything else becomes ``(str(input),)``. The most frequent key (the first one
        seen on ties) with count ``n`` scores 0.0 when ``n >= 2 * repetition_threshold``
        (6 by default), 0.5 when ``n >= repetition_threshold`` (3), else 1.0. Reason:
        ``"Tool '<name>' called <n> times with identical arguments."``. The calls need
        not be consecutive.
    ``reasoning_stagnation`` (weight 0.35)
        Only *consecutive* LLM outputs (in span pre-order) are compared, and only when
        both are strings with at least 20 meaningful words: lowercase, split on
        whitespace, drop :data:`STOP_WORDS` and words of two characters or fewer. A
        pair's similarity is the larger of the bigram Jaccard of the two word lists and
        ``difflib.SequenceMatcher(None, a, b).ratio()`` on the space-joined words. The
        first pair reaching the strictly largest similarity ``m`` (steps ``i`` and
        ``i + 1``, indices into the LLM spans) is reported when ``m >=
        similarity_threshold`` (0.85): 0.0 with ``"Identical reasoning outputs at steps
        i and i+1."`` when ``m > 0.95``, else 0.5 with ``"High reasoning overlap (m:.2f)
        at steps i and i+1."``. Repeats that are not adjacent, or outputs of 19 or fewer
        meaningful words, never count.
    ``call_graph_cycles`` (weight 0.25)
        A depth-first walk of ``children`` labels each span ``type:name:input_hash``
        (``input_hash`` is ``json.dumps(input, sort_keys=True)`` for a dict input, else
        ``str(input)``, truncated to 64 characters). The first span (in DFS order) whose
        label already appears on its own root-to-span ancestry path is a cycle and
        scores 0.0 with ``"Cycle detected in execution path: type:name -> ... ->
        type:name."`` (the path from the earlier occurrence down to the repeat). The same
        label at sibling positions is *not* a cycle; that is tool repetition's job.

Combination
    ``score = total / weights`` where ``weights = 0.0 + 0.40 + 0.35 + 0.25`` and
    ``total = 0.0 + tool_repetition * 0.40 + reasoning_stagnation * 0.35 +
    call_graph_cycles * 0.25``, accumulated in that order (so floats are bit-identical
    to deepeval). The reason is ``"No loop patterns detected."`` when the score is 1.0,
    otherwise the reasons of the sub-signals below 1.0 joined by single spaces, in the
    order above. A missing trace (``None``) scores 0.0 with deepeval's "No trace data
    found" reason and an empty breakdown.

deepeval's quirk: one signal can never fail a trace
    At the default threshold 0.5 no single sub-signal fails a trace: the worst a single
    signal can do is 0.6 (tool repetition at 0.0), 0.65 (stagnation at 0.0) or 0.75
    (a cycle). So at least two signals must fire, and not every pair is enough: a
    half-strength (0.5) tool repetition or stagnation paired with the other one at 0.5,
    or with a cycle, still passes. Every combination where two or more fire:

    ===============  ============  =====  =====  =====
    tool_repetition  stagnation    cycle  score  loop
    ===============  ============  =====  =====  =====
    0.5              0.5           1.0    0.625  no
    1.0              0.5           0.0    0.575  no
    0.5              1.0           0.0    0.55   no
    0.5              0.0           1.0    0.45   yes
    0.0              0.5           1.0    0.425  yes
    1.0              0.0           0.0    0.4    yes
    0.5              0.5           0.0    0.375  yes
    0.0              1.0           0.0    0.35   yes
    0.0              0.0           1.0    0.25   yes
    0.5              0.0           0.0    0.2    yes
    0.0              0.5           0.0    0.175  yes
    0.0              0.0           0.0    0.0    yes
    ===============  ============  =====  =====  =====

Cost
    deepeval's pairwise comparison calls ``SequenceMatcher.ratio()``, which is quadratic
    in the text length, on every consecutive pair. Here each output is cleaned once, and
    ``ratio()`` runs only when an upper bound on it, the longest common subsequence
    computed by rapidfuzz's bit-parallel ``LCSseq`` in C (about a microsecond for two
    1,000-character outputs), says it could change the result (see
    :func:`score_reasoning_stagnation`). The call-graph walk serialises a span's input
    (``json.dumps``) only when an ancestor has the same type and name, the only case in
    which its label can matter. Both tree walks are iterative, so arbitrarily deep traces
    do not hit Python's recursion limit. Linear in the trace's size.

Size: the specification of one metric reproduced exactly; its three checks and its
reason text belong together.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any, ClassVar

from rapidfuzz.distance import LCSseq

from otel_semloop.model import Step, StepKind, Trace
from otel_semloop.verdict import LexicalResult

__all__ = [
    "CALL_GRAPH_CYCLES",
    "REASONING_STAGNATION",
    "STOP_WORDS",
    "TOOL_REPETITION",
    "WEIGHTS",
    "LexicalDetector",
    "deepeval_score",
    "deepeval_score_trace",
    "score_call_graph_cycles",
    "score_reasoning_stagnation",
    "score_tool_repetition",
]

TOOL_REPETITION = "tool_repetition"
REASONING_STAGNATION = "reasoning_stagnation"
CALL_GRAPH_CYCLES = "call_graph_cycles"

#: Sub-signal weights, in deepeval's accumulation order.
WEIGHTS: tuple[tuple[str, float], ...] = (
    (TOOL_REPETITION, 0.40),
    (REASONING_STAGNATION, 0.35),
    (CALL_GRAPH_CYCLES, 0.25),
)

#: Outputs with fewer meaningful words than this are never compared.
MIN_MEANINGFUL_WORDS = 20
#: Similarity strictly above this is "identical" (stagnation score 0.0).
IDENTICAL_ABOVE = 0.95
#: Characters of a span's input kept in its call-graph label.
INPUT_HASH_CHARS = 64

#: deepeval's stop words and agent boilerplate, removed before comparing LLM outputs.
STOP_WORDS = frozenset(
    {
        "the", "a", "an", "is", "are", "was", "were", "i", "will", "now", "based", "on",
        "information", "provided", "to", "of", "in", "and", "that", "this", "with", "for",
        "it", "my", "next", "step", "going", "so", "do", "be", "have", "has", "not", "but",
        "as", "or", "from", "at", "by", "about", "above", "below", "up", "its", "let",
    }
)  # fmt: skip

NO_TRACE_REASON = "No trace data found. This metric requires trace data from @observe."
NO_LOOP_REASON = "No loop patterns detected."
NO_EXPLICIT_REASON = "Loops detected but no explicit reason provided."

_END = object()


# ----------------------------------------------------------------------------------------
# Spans
# ----------------------------------------------------------------------------------------


def _tool_spans_and_llm_outputs(tree: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[Any]]:
    """The tool spans and the LLM spans' outputs, each in pre-order (a span, then its
    children left to right), skipping falsy (empty) spans: what deepeval's pre-order span
    list is filtered into, collected in one iterative walk (deepeval recurses)."""
    tools: list[Mapping[str, Any]] = []
    outputs: list[Any] = []
    stack: list[Any] = [tree]
    while stack:
        span = stack.pop()
        if not span:
            continue
        kind = span.get("type")
        if kind == "tool":
            tools.append(span)
        elif kind == "llm":
            outputs.append(span.get("output", ""))
        stack.extend(reversed(list(span.get("children", []))))
    return tools, outputs


# ----------------------------------------------------------------------------------------
# Tool repetition
# ----------------------------------------------------------------------------------------


def _call_key(span: Mapping[str, Any]) -> tuple[Any, tuple[str, ...] | tuple[tuple[str, str], ...]]:
    return _key_of(span.get("name", ""), span.get("input", {}))


def _key_of(name: Any, args: Any) -> tuple[Any, tuple[str, ...] | tuple[tuple[str, str], ...]]:
    """A tool call's key: its name and its arguments as deepeval compares them."""
    if isinstance(args, str):
        with contextlib.suppress(Exception):  # deepeval keeps the raw string on any failure
            args = json.loads(args)
    if isinstance(args, dict):
        # The sorted (str(key), str(value)) pairs, the pairs built by ``map`` in C.
        return name, tuple(sorted(zip(map(str, args), map(str, args.values()), strict=True)))
    return name, (str(args),)


def score_tool_repetition(
    tool_spans: Sequence[Mapping[str, Any]], repetition_threshold: int = 3
) -> tuple[float, str]:
    """deepeval's tool-repetition sub-score and reason for the tool spans, in order."""
    return _repetition(tool_spans, _call_key, repetition_threshold)


def _repetition(tools: Sequence[Any], key: Any, repetition_threshold: int) -> tuple[float, str]:
    """:func:`score_tool_repetition` of the tool calls ``tools``, keyed by ``key``."""
    if not tools:
        return 1.0, "No tool spans found."
    # Counted in C (one hash of each nested key tuple, not two); a Counter keeps first-seen
    # order like the dict deepeval fills.
    counts = Counter(map(key, tools))
    # max() keeps the first of equal counts, i.e. the first call seen.
    (tool_name, _), count = max(counts.items(), key=lambda item: item[1])
    if count >= repetition_threshold * 2:
        return 0.0, f"Tool '{tool_name}' called {count} times with identical arguments."
    if count >= repetition_threshold:
        return 0.5, f"Tool '{tool_name}' called {count} times with identical arguments."
    return 1.0, "Tool calls are within acceptable repetition limits."


# ----------------------------------------------------------------------------------------
# Call-graph cycles
# ----------------------------------------------------------------------------------------


def _input_hash(span: Mapping[str, Any]) -> str:
    return _hash_input(span.get("input", ""))


def _hash_input(raw: Any) -> str:
    """The ``input_hash`` part of a call-graph label, from a span's input."""
    if isinstance(raw, dict):
        try:
            raw = json.dumps(raw, sort_keys=True)
        except (TypeError, ValueError):
            raw = str(raw)
    return str(raw)[:INPUT_HASH_CHARS]


def _label(span: Mapping[str, Any]) -> str:
    return f"{span.get('type', 'unknown')}:{span.get('name', 'unnamed')}:{_input_hash(span)}"


def _children(span: Mapping[str, Any]) -> Iterator[Any]:
    return iter(span.get("children", []))


class _Node:
    """A span on the current ancestry path, its label computed only when needed."""

    __slots__ = ("_label", "prefix", "span")

    def __init__(self, span: Mapping[str, Any]) -> None:
        self.span = span
        self.prefix = f"{span.get('type', 'unknown')}:{span.get('name', 'unnamed')}:"
        self._label: str | None = None

    @property
    def label(self) -> str:
        if self._label is None:
            self._label = self.prefix + _input_hash(self.span)
        return self._label


class _Path:
    """The current ancestry path of a call-graph walk and an index of the labels on it.

    Labels on the path are distinct (a repeat ends the search), so a dict lookup equals
    deepeval's ``list.index``. Labels are ``type:name:input_hash``. While every type and
    name seen holds no colon (the prefix ``type:name:`` has exactly two), a label splits
    back into exactly those three parts, so two labels are equal if and only if their
    prefixes are equal and then their input hashes are: ``by_prefix`` maps each prefix on
    the path to its depths, and an input is serialised only on a prefix match. From the
    first node whose type or name holds a colon on, full labels are compared
    (``position``), as deepeval does. Nodes are :class:`_Node` or :class:`_Ancestor`."""

    __slots__ = ("by_prefix", "nodes", "position")

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.by_prefix: dict[str, list[int]] | None = {}
        self.position: dict[str, int] = {}

    def find(self, node: Any, keep: bool) -> int | None:
        """The depth on the path of the node with ``node``'s label (where a cycle starts),
        else None; then, with ``keep``, ``node`` is indexed as the next one pushed."""
        depth = len(self.nodes)
        by_prefix = self.by_prefix
        if by_prefix is not None and node.prefix.count(":") != 2:
            # Colons in a type or name: from here on, full labels (computed for the path).
            by_prefix = self.by_prefix = None
            self.position = {n.label: i for i, n in enumerate(self.nodes)}
        if by_prefix is None:
            start = self.position.get(node.label)
            if start is None and keep:
                self.position[node.label] = depth
            return start
        depths = by_prefix.get(node.prefix)
        if depths:
            label = node.label
            found = next((d for d in depths if self.nodes[d].label == label), None)
            if found is None and keep:
                depths.append(depth)
            return found
        if keep:
            by_prefix[node.prefix] = [depth]
        return None

    def may_hold(self, prefix: str) -> bool:
        """False when no node with this prefix can have its label on the path (a leaf
        that is then not built at all)."""
        return self.by_prefix is None or prefix.count(":") != 2 or prefix in self.by_prefix

    def pop(self) -> None:
        """Take the last node off the path and out of the index."""
        node = self.nodes.pop()
        if self.by_prefix is None:
            del self.position[node.label]
        else:
            depths = self.by_prefix[node.prefix]
            depths.pop()
            if not depths:
                del self.by_prefix[node.prefix]

    def cycle(self, start: int, node: Any) -> list[str]:
        """The labels from depth ``start`` down to ``node``, which repeats the first."""
        return [*(n.label for n in self.nodes[start:]), node.label]


def score_call_graph_cycles(tree: Mapping[str, Any] | None) -> tuple[float, str]:
    """deepeval's call-graph-cycle sub-score and reason.

    An iterative version of deepeval's recursive DFS: the same visiting order, the same
    first cycle reported (the path and its index: :class:`_Path`).
    """
    if not tree:
        return 1.0, "No call graph cycles detected."
    path = _Path()
    root = _Node(tree)
    path.find(root, keep=True)
    path.nodes.append(root)
    pending = [_children(tree)]
    cycle: list[str] | None = None
    while pending:
        child = next(pending[-1], _END)
        if child is _END:
            pending.pop()
            path.pop()
            continue
        kids = child.get("children", _END)
        leaf = kids is _END or (kids.__class__ is list and not kids)
        if leaf and not path.may_hold(f"{child.get('type', 'unknown')}:{child.get('name', 'unnamed')}:"):
            # A leaf (the usual span) whose prefix no ancestor has: no node built.
            continue
        node = _Node(child)
        start = path.find(node, keep=not leaf)
        if start is not None:
            cycle = path.cycle(start, node)
            break
        if not leaf:
            path.nodes.append(node)
            pending.append(iter(kids))
    return _cycle_score(cycle)


def _cycle_score(cycle: list[str] | None) -> tuple[float, str]:
    """The call-graph sub-score and reason of the first cycle found (its labels), if any."""
    if cycle is None:
        return 1.0, "No execution cycles detected."
    shown = []
    for label in cycle:
        parts = label.split(":", 2)
        shown.append(f"{parts[0]}:{parts[1]}")
    return 0.0, f"Cycle detected in execution path: {' -> '.join(shown)}."


# ----------------------------------------------------------------------------------------
# Reasoning stagnation
# ----------------------------------------------------------------------------------------


class _Output:
    """One LLM output, cleaned once: its meaningful words joined by spaces, their bigrams."""

    __slots__ = ("bigrams", "text")

    def __init__(self, words: list[str]) -> None:
        self.text = " ".join(words)
        self.bigrams = frozenset(itertools.pairwise(words))


def _lcs_length(a: str, b: _Output) -> int:
    """Length of the longest common subsequence of ``a`` and ``b.text`` (rapidfuzz's
    bit-parallel ``LCSseq``, in C)."""
    return LCSseq.similarity(a, b.text)


def _prepare(output: Any) -> _Output | None:
    """The comparable form of an output, or None when deepeval would skip its pairs."""
    if not isinstance(output, str):
        return None
    words = [w for w in str(output).lower().split() if len(w) > 2 and w not in STOP_WORDS]
    if len(words) < MIN_MEANINGFUL_WORDS:
        return None
    return _Output(words)


def _bigram_jaccard(a: _Output, b: _Output) -> float:
    # |A & B| / |A | B| with |A | B| = |A| + |B| - |A & B|: the same integers, same float.
    common = len(a.bigrams & b.bigrams)
    union = len(a.bigrams) + len(b.bigrams) - common
    return common / union if union else 0.0


def _ratio_can_matter(a: _Output, b: _Output, floor: float, similarity_threshold: float) -> bool:
    """False when ``SequenceMatcher(None, a, b).ratio()`` provably cannot change the result.

    ``ratio()`` is ``2.0 * M / (len(a) + len(b))`` where ``M`` is the total size of
    ``get_matching_blocks()``: non-overlapping blocks of equal characters, increasing in
    both strings. So the matched characters form a common subsequence, and ``M`` is at
    most (2) the longest common subsequence, which is at most (1) the shorter length
    (difflib's ``real_quick_ratio()``). Each bound here uses the same ``2.0 * m /
    length`` expression as difflib, so, float division being monotone in ``m``,
    ``ratio()`` never exceeds it, even by rounding. (1) is O(1); (2) is rapidfuzz's
    bit-parallel LCS in C, tighter than difflib's ``quick_ratio()`` (the character
    multiset intersection bounds the LCS from above) and cheaper than it. ``ratio()``
    is needed only when it could exceed ``floor`` (the larger of the pair's Jaccard and
    the running maximum) and reach the threshold; see :func:`score_reasoning_stagnation`
    for why skipping it otherwise is exact.
    """
    length = len(a.text) + len(b.text)
    bound = 2.0 * min(len(a.text), len(b.text)) / length  # (1) real_quick_ratio()
    if bound <= floor or not bound >= similarity_threshold:
        return False
    bound = 2.0 * LCSseq.similarity(a.text, b.text) / length  # (2) longest common subsequence
    return bound > floor and bound >= similarity_threshold


#: Distinct LLM outputs remembered while scoring stagnation (a cycle of repeated outputs is
#: usually shorter; a longer one is cleaned again, with the same result).
_RECENT_OUTPUTS = 16


def score_reasoning_stagnation(
    llm_outputs: Sequence[Any], similarity_threshold: float = 0.85
) -> tuple[float, str]:
    """deepeval's reasoning-stagnation sub-score and reason for the LLM outputs, in order.

    deepeval computes, for every consecutive pair of comparable outputs, ``sim =
    max(jaccard, ratio)``, keeps a running maximum ``M`` updated only on a strictly
    larger ``sim`` (so the first pair reaching the final maximum is reported), and
    reports only when the final ``M >= similarity_threshold``. This version computes
    every Jaccard value exactly but calls ``ratio()`` only when an upper bound ``U`` on
    it (:func:`_ratio_can_matter`) satisfies ``U > max(jaccard, M') and U >=
    threshold``, using ``sim' = jaccard`` otherwise; ``M'`` is its own running maximum.

    Why the result is identical. Invariant after every pair: ``M' <= M``, and whenever
    ``M >= threshold``, ``M' == M`` with the same reported pair. A skipped pair falls in
    one of three cases. (1) ``U <= jaccard``: then ``ratio <= jaccard``, so ``sim' ==
    sim`` exactly. (2) ``U <= M'``: then ``sim <= M' <= M``, so deepeval does not update,
    and neither does this code (``jaccard <= U <= M'``). (3) ``U < threshold``: the true
    ``sim`` is below the threshold, so it can never be (or tie) a reported maximum;
    using the smaller ``jaccard`` may only lower ``M'`` while both are below the
    threshold, and once ``M`` reaches the threshold both update on the same pair with
    the same exactly computed value, because that pair's ``sim >= threshold`` means it
    was computed exactly and ``M' <= M < sim``. Every other pair gets its exact ``sim``.
    So at the end either both maxima are below the threshold (both report no
    stagnation) or they are equal with the same first pair.

    Jaccard itself is skipped (taken as 0.0) when the bound ``min(|A|, |B|) / max(|A|,
    |B|)`` on it (the intersection is at most the smaller set, the union at least the
    larger; float division is monotone, so the computed value obeys it too) is below the
    threshold: then ``sim >= threshold`` can only come from ``ratio``, which the skip
    rules above compute whenever it can matter (with a floor that is only lower), and a
    pair below the threshold gets a value below it. An output equal to the previous one
    (one memo entry) has Jaccard exactly 1.0 and a ratio bound of 1.0, so neither is
    computed.
    """
    if len(llm_outputs) < 2:
        return 1.0, "Not enough LLM spans to check for reasoning stagnation."
    max_overlap = 0.0
    pair = (-1, -1)  # reported as is when nothing was compared and the threshold is <= 0
    # Only consecutive outputs are compared: a two-item window keeps memory (and the
    # garbage collector's work) constant however long the trace is.
    # An agent that repeats itself repeats outputs: a recent output is cleaned once. The
    # memo is bounded (cleared when full), so memory stays constant however long the trace.
    prepared: dict[str, _Output | None] = {}

    def prepare(output: Any) -> _Output | None:
        if not isinstance(output, str):
            return None
        found = prepared.get(output, _END)
        if found is _END:
            if len(prepared) >= _RECENT_OUTPUTS:
                prepared.clear()
            found = prepared[output] = _prepare(output)
        return found  # type: ignore[return-value]

    b = prepare(llm_outputs[0])
    for i in range(len(llm_outputs) - 1):
        a, b = b, prepare(llm_outputs[i + 1])
        if a is None or b is None:
            continue
        if a is b and a.bigrams:
            # The same output again (the memo returns one object for equal texts): Jaccard
            # 1.0, and no ratio can exceed it.
            similarity = 1.0
            if similarity > max_overlap:
                max_overlap = similarity
                pair = (i, i + 1)
            continue
        small, large = len(a.bigrams), len(b.bigrams)
        if small > large:
            small, large = large, small
        # Jaccard is at most min/max of the set sizes; below the threshold it cannot decide
        # the result (see the docstring) and is not computed.
        similarity = 0.0 if large and small / large < similarity_threshold else _bigram_jaccard(a, b)
        floor = max_overlap if max_overlap > similarity else similarity
        if _ratio_can_matter(a, b, floor, similarity_threshold):
            ratio = SequenceMatcher(None, a.text, b.text).ratio()
            if ratio > similarity:
                similarity = ratio
        if similarity > max_overlap:
            max_overlap = similarity
            pair = (i, i + 1)
    if max_overlap >= similarity_threshold:
        if max_overlap > IDENTICAL_ABOVE:
            return 0.0, f"Identical reasoning outputs at steps {pair[0]} and {pair[1]}."
        return 0.5, f"High reasoning overlap ({max_overlap:.2f}) at steps {pair[0]} and {pair[1]}."
    return 1.0, "No reasoning stagnation."


# ----------------------------------------------------------------------------------------
# The same, read from a trace's steps
# ----------------------------------------------------------------------------------------

#: A step kind's node ``type`` in the tree view (:meth:`otel_semloop.model.Trace.tree_view`).
_STEP_TYPES = {StepKind.AGENT: "agent", StepKind.LLM: "llm", StepKind.TOOL: "tool", StepKind.OTHER: "base"}
_TOOL, _LLM = StepKind.TOOL, StepKind.LLM


def _step_input(step: Step) -> Any:
    """A step's node ``input`` in the tree view: a tool's arguments (else its input), the
    input text of any other step that has an input (else None)."""
    if step.kind is _TOOL:
        return step.tool_arguments if step.tool_arguments is not None else step.input
    return step.input_text if step.input is not None else None


def _step_key(step: Step) -> tuple[Any, tuple[str, ...] | tuple[tuple[str, str], ...]]:
    return _key_of(step.name, _step_input(step))


class _Ancestor:
    """A step (None: the tree view's ``base`` wrapper, whose input is None) on the current
    ancestry path of :func:`_walk_steps`, its label computed only when needed."""

    __slots__ = ("_label", "prefix", "step")

    def __init__(self, prefix: str, step: Step | None) -> None:
        self.prefix = prefix
        self.step = step
        self._label: str | None = None

    @property
    def label(self) -> str:
        if self._label is None:
            self._label = self.prefix + _hash_input(None if self.step is None else _step_input(self.step))
        return self._label


def _walk_steps(trace: Trace) -> tuple[list[Step], list[Any], list[str] | None]:
    """(tool steps, LLM outputs, the first call-graph cycle's labels or None) of
    ``trace.tree_view()`` read from the steps themselves, in one walk and without building
    the view: what :func:`_tool_spans_and_llm_outputs` and :func:`score_call_graph_cycles`
    find on it (no node of the view is empty, so none is skipped). The cycle search is
    theirs: prefixes ``type:name:`` compared while none holds a colon, full labels from the
    first one that does (:class:`_Path`); it stops at the first cycle, the collection
    goes on."""
    tools: list[Step] = []
    outputs: list[Any] = []
    path = _Path()
    cycle: list[str] | None = None
    roots = trace.roots
    if len(roots) == 1:
        pending: list[Step] = [roots[0]]
    else:  # several top-level steps (or none) hang under a ``base`` node
        record = trace.spans.get(trace.root_span_id)
        wrapper = _Ancestor(f"base:{record.name if record else 'trace'}:", None)
        path.find(wrapper, keep=True)
        path.nodes.append(wrapper)
        pending = roots
    stack: list[tuple[Iterator[Step], bool]] = [(iter(pending), bool(path.nodes))]
    while stack:
        entry = stack[-1]
        step = next(entry[0], None)
        if step is None:
            stack.pop()
            if entry[1] and cycle is None:
                path.pop()
            continue
        kind = step.kind
        if kind is _TOOL:
            tools.append(step)
        elif kind is _LLM:
            outputs.append(step.output_text)
        children = step.children
        pushed = False
        if cycle is None:
            node = _Ancestor(f"{_STEP_TYPES[kind]}:{step.name}:", step)
            start = path.find(node, keep=bool(children))
            if start is not None:
                cycle = path.cycle(start, node)
            elif children:
                path.nodes.append(node)
                pushed = True
        if children:
            stack.append((iter(children), pushed))
    return tools, outputs, cycle


def deepeval_score_trace(
    trace: Trace,
    *,
    threshold: float = 0.5,
    repetition_threshold: int = 3,
    similarity_threshold: float = 0.85,
) -> LexicalResult:
    """:func:`deepeval_score` of ``trace.tree_view()``, read from the steps without building
    the view (what the scorer runs; ``tests/detectors/test_lexical_steps.py`` holds the two
    equal on every snapshot trace and on generated trees)."""
    tools, outputs, cycle = _walk_steps(trace)
    results = (
        _repetition(tools, _step_key, repetition_threshold),
        score_reasoning_stagnation(outputs, similarity_threshold),
        _cycle_score(cycle),
    )
    return _combined(results, threshold)


# ----------------------------------------------------------------------------------------
# The metric
# ----------------------------------------------------------------------------------------


def deepeval_score(
    tree: Mapping[str, Any] | None,
    *,
    threshold: float = 0.5,
    repetition_threshold: int = 3,
    similarity_threshold: float = 0.85,
) -> LexicalResult:
    """deepeval's ``AgentLoopDetectionMetric`` on one nested span dict (see module doc)."""
    if tree is None:
        return LexicalResult(score=0.0, breakdown={}, reason=NO_TRACE_REASON, threshold=threshold)
    tools, outputs = _tool_spans_and_llm_outputs(tree)
    results = (
        score_tool_repetition(tools, repetition_threshold),
        score_reasoning_stagnation(outputs, similarity_threshold),
        score_call_graph_cycles(tree),
    )
    return _combined(results, threshold)


def _combined(results: tuple[tuple[float, str], ...], threshold: float) -> LexicalResult:
    """The metric from its three sub-scores and reasons, in :data:`WEIGHTS` order."""
    weights = 0.0
    total = 0.0
    for (_, weight), (sub_score, _) in zip(WEIGHTS, results, strict=True):
        weights += weight
        total += sub_score * weight
    score = total / weights
    if score == 1.0:
        reason = NO_LOOP_REASON
    else:
        reason = " ".join(text for sub_score, text in results if sub_score < 1.0 and text)
        if not reason.strip():
            reason = NO_EXPLICIT_REASON
    breakdown = {name: sub_score for (name, _), (sub_score, _) in zip(WEIGHTS, results, strict=True)}
    return LexicalResult(score=score, breakdown=breakdown, reason=reason, threshold=threshold)


class LexicalDetector:
    """The deepeval-compatible lexical detector with its thresholds fixed."""

    name: ClassVar[str] = "deepeval_lexical"

    __slots__ = ("repetition_threshold", "similarity_threshold", "threshold")

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        repetition_threshold: int = 3,
        similarity_threshold: float = 0.85,
    ) -> None:
        self.threshold = threshold
        self.repetition_threshold = repetition_threshold
        self.similarity_threshold = similarity_threshold

    def evaluate(self, tree: Mapping[str, Any] | None) -> LexicalResult:
        return deepeval_score(
            tree,
            threshold=self.threshold,
            repetition_threshold=self.repetition_threshold,
            similarity_threshold=self.similarity_threshold,
        )

    def evaluate_trace(self, trace: Trace) -> LexicalResult:
        """``evaluate(trace.tree_view())``, without building the view (unless a subclass
        overrides :meth:`evaluate`, which then gets the lazy view)."""
        if type(self).evaluate is not LexicalDetector.evaluate:
            return self.evaluate(trace.tree_view(lazy=True))
        return deepeval_score_trace(
            trace,
            threshold=self.threshold,
            repetition_threshold=self.repetition_threshold,
            similarity_threshold=self.similarity_threshold,
        )

    def __repr__(self) -> str:
        return (
            f"LexicalDetector(threshold={self.threshold}, repetition_threshold="
            f"{self.repetition_threshold}, similarity_threshold={self.similarity_threshold})"
        )
