"""The novelty of one run's assistant texts, settled in a replay only when read.

Live, the fingerprinter (:mod:`otel_semloop.detectors.facts`) digests each assistant text
at once and records it here (:meth:`TextNovelty.add`): new or said before, and how many new
ones so far (``epoch``). Replaying a finished trace it defers that work to the first read
of a step's ``text``, ``text_novel`` or ``text_epoch``
(:class:`~otel_semloop.detectors.facts.StepFacts` properties over private slots), and
:meth:`TextNovelty.settle` then settles the pending texts in order, the same digests added
to the same LRU in the same order, so the values are the live ones. The settling writes
those private slots (``_text``, ``_text_novel``, ``_text_epoch``, ``_text_run``,
``_text_raw``; ``_text_after`` names the latest pending text before a step): the two
modules share them, and nothing else does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_semloop.detectors.lru import LRU
from otel_semloop.detectors.normalize import normalize_text

if TYPE_CHECKING:
    from otel_semloop.detectors.facts import StepFacts

__all__ = ["MEMO_ENTRIES", "UNREAD", "TextNovelty", "text_digest"]

#: Distinct result texts (and assistant texts) a replay remembers what they read as: a
#: bound on memory, not on correctness (a forgotten text is read again, the same way).
MEMO_ENTRIES = 256

#: A replayed assistant text's digest before it is read.
UNREAD: Any = object()


class TextNovelty:
    """The novelty of one run's assistant texts: which digests were seen (an LRU), how many
    were new (``epoch``) and, replaying, the texts not settled yet (``pending``, in order).

    Replaying a finished trace, an assistant text's digest is computed only when its
    ``text`` is read (the monologue detector reads the texts of LLM steps that call no
    tool), and its novelty and every later step's ``text_epoch`` only when one of those is
    read (the hand-off detector reads ``text_epoch`` at agent steps and hand-offs): then
    the pending texts up to it are settled in order, exactly as the live fingerprinter
    settles each at once (the same digests added to the same LRU in the same order), so
    the values read are the same. A step's facts hold the latest pending text before it
    (``_text_after``); settling stops there. Facts of a finished run keep their run's state
    (a reset gives the next run a new one while texts are pending), so they read the same
    values after the reset; the texts are the trace's own strings."""

    __slots__ = ("_reads", "done", "epoch", "pending", "seen")

    def __init__(self, capacity: int, reads: dict[str, int | None]) -> None:
        self.seen = LRU(capacity)
        self._reads = reads  # text -> digest (a pure function: shared across runs)
        self.epoch = 0
        self.pending: list[StepFacts | None] = []
        self.done = 0  # pending[:done] are settled

    def clear(self) -> None:
        """Forget the run (every pending text settled: no facts still need it)."""
        self.seen.clear()
        self.epoch = 0
        self.pending.clear()
        self.done = 0

    def add(self, digest: int) -> bool:
        """Record an assistant text's digest; whether it is new (then ``epoch`` counts it)."""
        if self.seen.add(digest):
            return False
        self.epoch += 1
        return True

    def digest(self, text: str) -> int | None:
        """:func:`text_digest`, remembered for up to :data:`MEMO_ENTRIES` texts."""
        reads = self._reads
        if text in reads:
            return reads[text]
        digest = reads[text] = text_digest(text)
        if len(reads) > MEMO_ENTRIES:
            del reads[next(iter(reads))]
        return digest

    @staticmethod
    def settle(facts: StepFacts) -> None:
        """Set ``facts``' ``text_epoch`` (and, for an assistant text, ``text_novel``):
        settle the pending texts up to the latest one before it."""
        anchor = facts._text_after
        run = anchor._text_run
        if run is not None:
            run._through(anchor)
        if anchor is not facts:
            facts._text_epoch = anchor._text_epoch

    def _through(self, anchor: StepFacts) -> None:
        """Settle the pending texts up to and including ``anchor``'s, in order."""
        pending = self.pending
        while True:
            facts = pending[self.done]
            assert facts is not None  # (the anchor is at or after ``done``)
            pending[self.done] = None  # let go of it
            self.done += 1
            digest = facts.text  # computed now unless read before
            facts._text_novel = digest is not None and self.add(digest)
            facts._text_epoch = self.epoch
            facts._text_run = None  # settled
            facts._text_raw = None
            if facts is anchor:
                return


def text_digest(text: str) -> int | None:
    """The digest of an output text's normalised form (None when nothing is left)."""
    normalised = normalize_text(text)
    return hash(normalised) if normalised else None
