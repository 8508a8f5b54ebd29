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
    :mod:`otel_semloop.detectors.stagnation`). The call-graph walk serialises a span's
    input (``json.dumps``) only when an ancestor has the same type and name, the only case
    in which its label can matter (:mod:`otel_semloop.detectors.call_graph`). Both tree
    walks are iterative, so arbitrarily deep traces do not hit Python's recursion limit.
    Linear in the trace's size.

Here: the specification, the span-dict and step readers, the combination; the sub-scores
are :mod:`~otel_semloop.detectors.repetition`, :mod:`~otel_semloop.detectors.stagnation`
and :mod:`~otel_semloop.detectors.call_graph`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from otel_semloop.detectors.call_graph import _cycle_score, _hash_input, _Path, score_call_graph_cycles
from otel_semloop.detectors.repetition import _key_of, _repetition, score_tool_repetition
from otel_semloop.detectors.stagnation import STOP_WORDS, score_reasoning_stagnation
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

NO_TRACE_REASON = "No trace data found. This metric requires trace data from @observe."
NO_LOOP_REASON = "No loop patterns detected."
NO_EXPLICIT_REASON = "Loops detected but no explicit reason provided."


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
# The same, read from a trace's steps
# ----------------------------------------------------------------------------------------

#: A step kind's node ``type`` in the tree view (:meth:`otel_semloop.model.Trace.tree_view`).
_STEP_TYPES = {StepKind.AGENT: "agent", StepKind.LLM: "llm", StepKind.TOOL: "tool", StepKind.OTHER: "base"}
_TOOL, _LLM, _OTHER = StepKind.TOOL, StepKind.LLM, StepKind.OTHER


def _step_input(step: Step) -> Any:
    """A step's node ``input`` in the tree view: a tool's arguments (else its input), the
    input text of any other step that has an input (else None)."""
    if step.kind is _TOOL:
        return step.tool_arguments if step.tool_arguments is not None else step.input
    return step.input_text if step.input is not None else None


def _step_key(step: Step) -> tuple[Any, tuple[str, ...] | tuple[tuple[str, str], ...]]:
    """A tool step's repetition key (:func:`_walk_steps` collects tool steps alone): its
    tree-view input, as :func:`_step_input` reads it for a tool, written out (one call
    less per tool step)."""
    arguments = step.tool_arguments
    return _key_of(step.name, step.input if arguments is None else arguments)


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
    goes on.

    A leaf (most steps) gets no node when no ancestor can hold its prefix
    (:meth:`_Path.may_hold`), and that is decided without writing the prefix out: while
    prefixes are compared (no colon in a type or name; types hold none), equal prefixes
    mean the same type and name, so an ancestor holding a leaf's prefix has its kind
    (``base`` is the wrapper's and other steps': the wrapper counts as one of those) and
    its name. ``parents`` holds those of every step put on the path so far, a superset of
    the ancestors: a leaf whose kind and name it lacks is skipped at once."""
    tools: list[Step] = []
    outputs: list[Any] = []
    path = _Path()
    cycle: list[str] | None = None
    parents: set[tuple[StepKind, str]] = set()
    roots = trace.roots
    if len(roots) == 1:
        pending: list[Step] = [roots[0]]
    else:  # several top-level steps (or none) hang under a ``base`` node
        record = trace.spans.get(trace.root_span_id)
        name = record.name if record else "trace"
        parents.add((_OTHER, name))
        wrapper = _Ancestor(f"base:{name}:", None)
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
        if cycle is None and (
            children or (kind, step.name) in parents or ":" in step.name or path.by_prefix is None
        ):
            prefix = f"{_STEP_TYPES[kind]}:{step.name}:"
            if children or path.may_hold(prefix):  # else a leaf no ancestor can match: no node
                node = _Ancestor(prefix, step)
                start = path.find(node, keep=bool(children))
                if start is not None:
                    cycle = path.cycle(start, node)
                elif children:
                    path.nodes.append(node)
                    parents.add((kind, step.name))
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
        overrides :meth:`evaluate`, which then gets the view)."""
        if type(self).evaluate is not LexicalDetector.evaluate:
            return self.evaluate(trace.tree_view())
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
