"""deepeval's reasoning-stagnation sub-score (``AgentLoopDetectionMetric``, deepeval 4.3.1).

One of the three sub-signals of the lexical metric; :mod:`otel_semloop.detectors.lexical`
holds the metric's specification (what is compared, the thresholds, the reason texts) and
combines this score with the other two. Only *consecutive* LLM outputs are compared, and
only when both are strings with at least :data:`MIN_MEANINGFUL_WORDS` meaningful words
(lowercased, split on whitespace, without :data:`STOP_WORDS` and words of two characters
or fewer); a pair's similarity is the larger of the bigram Jaccard of the two word lists
and ``difflib.SequenceMatcher(None, a, b).ratio()`` on the space-joined words.

Cost
    deepeval calls ``SequenceMatcher.ratio()``, which is quadratic in the text length, on
    every consecutive pair. Here each output is cleaned once, and ``ratio()`` runs only
    when an upper bound on it, the longest common subsequence computed by rapidfuzz's
    bit-parallel ``LCSseq`` in C (about a microsecond for two 1,000-character outputs;
    asked only whether it reaches the least length that could matter, so it can stop
    early), says it could change the result; Jaccard (and a bigram set) only when bounds from the
    words and the set sizes say it could; once a pair reaches similarity 1.0 (an output
    repeated verbatim, as looping agents do) the rest is neither cleaned nor compared. The
    proofs that the result is identical are in :func:`score_reasoning_stagnation` and
    :func:`_ratio_can_matter`. Linear in the number of outputs; memory constant (a
    two-output window and a bounded memo).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from rapidfuzz.distance import LCSseq

__all__ = ["IDENTICAL_ABOVE", "MIN_MEANINGFUL_WORDS", "STOP_WORDS", "score_reasoning_stagnation"]

#: Outputs with fewer meaningful words than this are never compared.
MIN_MEANINGFUL_WORDS = 20
#: Similarity strictly above this is "identical" (stagnation score 0.0).
IDENTICAL_ABOVE = 0.95

#: deepeval's stop words and agent boilerplate, removed before comparing LLM outputs.
STOP_WORDS = frozenset(
    {
        "the", "a", "an", "is", "are", "was", "were", "i", "will", "now", "based", "on",
        "information", "provided", "to", "of", "in", "and", "that", "this", "with", "for",
        "it", "my", "next", "step", "going", "so", "do", "be", "have", "has", "not", "but",
        "as", "or", "from", "at", "by", "about", "above", "below", "up", "its", "let",
    }
)  # fmt: skip

_END = object()

class _Output:
    """One LLM output, cleaned once: its meaningful words joined by spaces (``text``), the
    set of those words (``vocab``), one less than their count (``most``: the bigrams counted
    with repeats) and, built on first read, the set of their bigrams (``bigrams``)."""

    __slots__ = ("_bigrams", "_words", "most", "text", "vocab")

    def __init__(self, words: list[str]) -> None:
        self.text = " ".join(words)
        self.most = len(words) - 1
        self.vocab = frozenset(words)
        self._words: list[str] | None = words
        self._bigrams: frozenset[tuple[str, str]] | None = None

    @property
    def bigrams(self) -> frozenset[tuple[str, str]]:
        if self._bigrams is None:
            self._bigrams = frozenset(itertools.pairwise(self._words))  # type: ignore[arg-type]
            self._words = None  # held only until the set is built
        return self._bigrams


def _lcs_length(a: str, b: _Output) -> int:
    """Length of the longest common subsequence of ``a`` and ``b.text`` (rapidfuzz's
    bit-parallel ``LCSseq``, in C)."""
    return LCSseq.similarity(a, b.text)


def _prepare(output: Any) -> _Output | None:
    """The comparable form of an output, or None when deepeval would skip its pairs.

    The meaningful words are its words longer than two characters that are not stop words,
    lowered."""
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
    # (2) longest common subsequence, asked only whether it reaches the least length that
    # could matter (rapidfuzz returns 0 below ``score_cutoff``, the exact length from it on,
    # and stops early when it cannot be reached). Asked one below that length: rapidfuzz
    # 3.14 sometimes returns 0 when the length equals ``score_cutoff`` exactly (texts of
    # a few hundred characters), which would skip a ratio that matters; a length one below
    # the least that matters fails the bound either way.
    cutoff = _least_mattering(length, floor, similarity_threshold)
    bound = 2.0 * LCSseq.similarity(a.text, b.text, score_cutoff=max(0, cutoff - 1)) / length
    return bound > floor and bound >= similarity_threshold


def _least_mattering(length: int, floor: float, similarity_threshold: float) -> int:
    """The least ``m`` with ``2.0 * m / length > floor`` and ``>= similarity_threshold``
    (the expression as written: monotone in ``m``, so every larger ``m`` passes and every
    smaller one fails; a length below it then gives a bound that fails, 0 included).
    The caller knows that the shorter text's length passes (bound (1)): the search ends."""
    m = max(0, int(max(floor, similarity_threshold) * length / 2.0) - 1)
    while m > 0 and 2.0 * (m - 1) / length > floor and 2.0 * (m - 1) / length >= similarity_threshold:
        m -= 1
    while not (2.0 * m / length > floor and 2.0 * m / length >= similarity_threshold):
        m += 1
    return m


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

    Most pairs need no bigram set: the words bound Jaccard too. Let ``Wa``, ``Wb`` be the
    two outputs' sets of words and ``D = |Wa ^ Wb|``. Each word of ``Wa - Wb`` that occurs
    at a position after the first ends a bigram of ``A`` (the word before it, then it)
    that ``B`` cannot hold (``B``'s bigrams are made of ``Wb``'s words), and different
    words end different bigrams; only the first word may occur nowhere else. So ``|A -
    B| >= |Wa - Wb| - 1``, the same for ``B``, and ``|A ^ B| >= D - 2``. With ``u = |A |
    B| <= N = (len(a) - 1) + (len(b) - 1)``, Jaccard ``= 1 - |A ^ B| / u <= (N - (D - 2)) /
    N``. When that bound, computed as a float, is below the threshold, so is the computed
    Jaccard (both are correctly rounded quotients of integers, and rounding is monotone),
    and Jaccard is skipped as above, without building either bigram set.

    Stopping early. No similarity exceeds 1.0 (``jaccard = common / union`` with
    ``common <= union``, ``ratio = 2.0 * M / (len(a) + len(b))`` with ``2 * M <= len(a) +
    len(b)``: exact integers in floats, and a correctly rounded quotient of ``x <= y`` is at
    most 1.0), and the maximum changes only on a strictly larger value. Once it is 1.0, no
    later pair can change the maximum or the reported pair: the remaining outputs are
    neither cleaned nor compared.
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
        if a is b and a.most > 0:
            # The same output again (the memo returns one object for equal texts): Jaccard
            # 1.0 (its set of bigrams is not empty), and no ratio can exceed it.
            if max_overlap < 1.0:
                max_overlap = 1.0
                pair = (i, i + 1)
            break  # nothing exceeds 1.0: the result is decided (see the docstring)
        # Jaccard is at most (N - (D - 2)) / N from the words, and at most min/max of the
        # bigram set sizes; below the threshold it cannot decide the result (see the
        # docstring) and is not computed (nor, by the first bound, the sets).
        apart = len(a.vocab) + len(b.vocab) - 2 * len(a.vocab & b.vocab) - 2
        total = a.most + b.most
        if apart > 0 and (total - apart) / total < similarity_threshold:
            similarity = 0.0
        else:
            small, large = len(a.bigrams), len(b.bigrams)
            if small > large:
                small, large = large, small
            similarity = 0.0 if large and small / large < similarity_threshold else _bigram_jaccard(a, b)
        floor = max_overlap if max_overlap > similarity else similarity
        if _ratio_can_matter(a, b, floor, similarity_threshold):
            ratio = SequenceMatcher(None, a.text, b.text).ratio()
            if ratio > similarity:
                similarity = ratio
        if similarity > max_overlap:
            max_overlap = similarity
            pair = (i, i + 1)
            if similarity >= 1.0:
                break  # nothing exceeds 1.0: the result is decided (see the docstring)
    if max_overlap >= similarity_threshold:
        if max_overlap > IDENTICAL_ABOVE:
            return 0.0, f"Identical reasoning outputs at steps {pair[0]} and {pair[1]}."
        return 0.5, f"High reasoning overlap ({max_overlap:.2f}) at steps {pair[0]} and {pair[1]}."
    return 1.0, "No reasoning stagnation."
