"""No progress: repeated results, cosmetic argument changes, the same answer, call ceilings.

"Progress" here means a tool step that is *novel*: an (action, result) pair not seen
before in the run, or a result that shows explicit progress beyond anything the same call
returned before (a higher percentage or n/m, a longer output). See
:mod:`otel_semloop.detectors.facts`.

Signals
    ``repeated_result``
        The same call returning results it already returned (the same normalised result,
        or acknowledgements worded differently each time: "ok", "saved", "ok"), with no
        novel tool step between consecutive occurrences; a failing call counts by how it
        failed (the same tool, the same masked message, whatever its arguments). The
        occurrences need not be adjacent (A B A C A counts A three times when B and C are
        themselves repeats), which catches rotating loops the cycle tracker misses; a
        novel step between two occurrences restarts the count, which keeps edit-and-test
        rounds out (each edit is new). Conclusive at ``repeated_result_repeats`` (4); at
        ``rewrite_repeats`` (3) for a call that sets a value
        (:func:`~otel_semloop.detectors.arguments.sets_value`: ``set_email``,
        ``save_draft``) and is acknowledged in words: such a write waits on nothing, and
        the same value set again changes nothing (an empty answer may be a wait). Such a
        call requested again with no recorded answer (the run ended first) counts too:
        its answer is known. ``no_progress``. A poll that ends (the call's first new
        answer after repeating itself) resolves the repetition since the last new step,
        unless, with nothing new since, the call goes back to an answer it gave before
        that "end", or another call of the repetition answers as before and no new work
        follows (the new answer led back to the same work).
    ``near_duplicate_args``
        Consecutive calls of one tool whose arguments differ only cosmetically from the
        first call of the run (a trailing slash, an added flag, reordered keys, a tweaked
        limit; see :func:`otel_semloop.detectors.call_identity.near_duplicate`) and that return the same
        normalised result without explicit progress. Reported only when the run holds at
        least two different argument sets (identical calls are the other signals' job).
        Conclusive at ``near_duplicate_repeats`` (4). ``no_progress``.
    ``same_answer``
        Calls of one tool with *different* arguments that get the same answer: the same
        result content (identifiers and timestamps masked, numbers kept), with no new
        result content anywhere in the run between them. A reworded search query, a
        toggled flag, an edited URL parameter or date range that keeps returning the same
        text, the same ``[]`` or the same "not found". Acknowledgements ("ok", "saved",
        ``{"status": "ok"}``; :func:`otel_semloop.detectors.normalize.is_acknowledgement`) never
        count: batch work writing many targets gets the same "ok" each time. An *empty*
        result is an answer, not an acknowledgement, when the call asked a question (a
        ``grep``/``find``/``ls`` pipeline, a tool named ``search_*``, ``get_*``...:
        :func:`otel_semloop.detectors.arguments.empty_means_none_found`); a "nothing
        found" that quotes the question back is read without the quote
        (:func:`~otel_semloop.detectors.call_progress.without_echo`). A call counts when
        its argument words ask again what an earlier call of the chain asked (it narrows
        or widens one, or shares a word not every call used), or when it keeps the
        chain's topic once the chain came back to a question: calls about different
        things (two users, two cities; "iphone 15 case", "iphone 15 charger") that find
        nothing alike are a batch, not a reworded question. They neither count nor end
        the chain: a reworded question may come back to words asked before ("civitai",
        "lora", then "civitai lora"). Conclusive at ``same_answer_repeats``
        (4), reported once the chain holds two different calls. A later *new* answer
        from the same tool resolves the episode (the reworded search finally worked): it
        stays out of the verdict. ``no_progress``.
    ``call_ceiling``
        The same call (tool and canonical arguments) made again and again with no new call
        in between, *whatever its results*: the absolute ceiling that holds even when
        results change or report progress (a poller that never finishes). Conclusive at
        ``call_ceiling`` (30). A ceiling is not proof: the results may keep being new
        (reading a long process's output in chunks), so the finding is repetition alone
        (``suspected`` at most); when the results stop being new the other signals prove
        the loop.

Kept
    Per call or (action, result) digest: a count, the epoch it was last seen in and the
    open episode, in LRU maps bounded by ``seen_capacity`` (an evicted chain restarts:
    errs toward no loop). The first call of a near-duplicate run as an argument signature
    (names, classes, digests). Never arguments or results.

Cost
    O(1) per tool step for each signal, plus O(number of arguments) for near-duplicates.

Stretches of tool steps with nothing novel at all (by count, time and window) are
:mod:`otel_semloop.detectors.stale`.

Size: the four signals share one pass over a tool step and one notion of "novel since
the last occurrence"; split apart, each would keep its own copy of the epoch bookkeeping.
"""

from __future__ import annotations

from typing import ClassVar

from otel_semloop.detectors.arguments import sets_value
from otel_semloop.detectors.base import Episode, IncrementalDetector
from otel_semloop.detectors.call_identity import near_duplicate
from otel_semloop.detectors.call_progress import result_text
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.detectors.lru import LRU
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = [
    "CALL_CEILING",
    "NEAR_DUPLICATE_ARGS",
    "REPEATED_RESULT",
    "SAME_ANSWER",
    "CallCeilingDetector",
    "NearDuplicateDetector",
    "RepeatedResultDetector",
    "SameAnswerDetector",
]

REPEATED_RESULT = "repeated_result"
NEAR_DUPLICATE_ARGS = "near_duplicate_args"
CALL_CEILING = "call_ceiling"
SAME_ANSWER = "same_answer"


class _Chain:
    """Occurrences of one digest with no novelty between them."""

    __slots__ = ("calls", "count", "episode", "epoch", "first", "held", "last", "returned", "words")

    def __init__(self, epoch: int, first: StepFacts) -> None:
        self.count = 1
        self.calls = 1
        self.last = first
        self.epoch = epoch
        self.first = first
        self.episode: Episode | None = None
        #: ``same_answer``: the argument words of the chain's calls so far (None: the first's),
        #: whether one of them asked again what an earlier one asked, and how many kept
        #: only the chain's topic before that (not counted until then).
        self.words: list[frozenset[int]] | None = None
        self.returned = False
        self.held = 0


class _ChainMap(LRU):
    """An LRU of chains keyed by digest (:class:`~otel_semloop.detectors.lru.LRU`), bounded
    by ``capacity``. O(1) per operation.

    A chain of one occurrence is kept as the pair ``(epoch, facts)`` and becomes a
    :class:`_Chain` at its second occurrence: most digests occur once, and need no object."""

    __slots__ = ()

    def advance(self, key: int, epoch: int, facts: StepFacts) -> _Chain | None:
        """The chain of ``key`` extended by this occurrence (so of two or more), or None
        when this occurrence starts a new one: the first, or ``epoch`` moved on since the
        last occurrence (something new happened in between)."""
        data = self.data
        found: _Chain | tuple[int, StepFacts] | None = data.pop(key, None)  # type: ignore[assignment]
        if found is not None:
            if found.__class__ is tuple:
                if found[0] == epoch:  # type: ignore[index]
                    chain = _Chain(epoch, found[1])  # type: ignore[index]
                    chain.count = 2
                    data[key] = chain
                    return chain
            elif found.epoch == epoch:  # type: ignore[union-attr]
                found.count += 1  # type: ignore[union-attr]
                data[key] = found
                return found  # type: ignore[return-value]
        # ``self.put(key, (epoch, facts))`` written out: three detectors pass every tool
        # step through here, and the call would cost about 1% of the detectors' time.
        data[key] = (epoch, facts)
        if len(data) > self.capacity:
            del data[next(iter(data))]
        return None

    def continues(self, key: int, epoch: int) -> bool:
        """Whether an occurrence of ``key`` in ``epoch`` would extend its chain."""
        found = self.data.get(key)
        if found is None:
            return False
        return (found[0] if found.__class__ is tuple else found.epoch) == epoch  # type: ignore[index,union-attr]

    def chain(self, key: int) -> _Chain | None:
        """The chain of ``key`` when it holds two occurrences or more (its recency unchanged)."""
        found = self.data.get(key)
        return found if found.__class__ is _Chain else None  # type: ignore[return-value]

    def restart(self, key: int, epoch: int, facts: StepFacts) -> None:
        """A new chain for ``key`` starting at this occurrence (``key`` just advanced)."""
        self.data[key] = (epoch, facts)


def _clear_chains(detector: IncrementalDetector) -> None:
    """A detector's ``_chains`` at its reset: emptied when there is one, else a new one."""
    chains: _ChainMap | None = getattr(detector, "_chains", None)
    if chains is None:
        detector._chains = _ChainMap(detector.config.seen_capacity)  # type: ignore[attr-defined]
    else:
        chains.clear()


class _ChainDetector(IncrementalDetector):
    """Base of the detectors that report a chain of one digest (its only signal) from its
    second occurrence on, as an episode that starts at the chain's first step."""

    #: The episode's description, a ``str.format`` template: ``{name}`` is the step's
    #: name; ``{{count}}`` leaves ``{count}`` for the episode to fill in.
    _description: ClassVar[str]

    def reset(self) -> None:
        super().reset()
        _clear_chains(self)

    #: Whether the chain proves a lack of progress (see :class:`~otel_semloop.verdict.Finding`).
    _no_progress: ClassVar[bool] = True

    def _extend(self, key: int, epoch: int, facts: StepFacts, threshold: float) -> list[Finding]:
        """Extend the chain of ``key`` (see :meth:`_ChainMap.advance`) and track its episode."""
        chain = self._chains.advance(key, epoch, facts)
        if chain is None:  # the first occurrence of its chain
            return []
        out: list[Finding] = []
        if chain.episode is None:
            chain.episode = Episode(
                self.signals[0],
                threshold,
                chain.first,
                description=self._description.format(name=facts.name),
                config=self.config,
                period=1,
                no_progress=self._no_progress,
                span_ids=(chain.first.span_id,),
            )
        chain.episode.add(facts.span_id)
        self._track(chain.episode, chain.count, facts, out)
        return out


class RepeatedResultDetector(_ChainDetector):
    """``repeated_result``: the same call returning the same result with nothing new between."""

    signals = (REPEATED_RESULT,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool steps alone.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL})
    _description = "{name} returned nothing new {{count}} times with nothing new between"

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        if facts.unanswered or (facts.is_action and facts.result is None and facts.failure is None):
            # A value set and acknowledged, requested again with nothing new since: its
            # answer is known (the same acknowledgement), whether or not it was recorded
            # (the run ended first). Any other call without a recorded outcome is no
            # evidence either way.
            # (A missing result is novel for the fingerprinter, once: not news here.)
            epoch = facts.epoch - 1 if facts.novel else facts.epoch
            if facts.call in self._set_values.data and self._chains.continues(facts.call, epoch):
                return self._extend(facts.call, epoch, facts, self.config.rewrite_repeats)
            return []
        if not facts.is_action or facts.result is None or not facts.args_known:
            return []
        if facts.poll_ended:
            # A poll that ended: every repetition since the last new step was the wait
            # (the status call and what it was interleaved with, a sleep), not a loop; and
            # so was every earlier repetition of this same call (a wait checked on between
            # other, new calls: the event log whose step count rises).
            ended = self._stretch + self._by_call.pop(facts.call, [])
            for episode in ended:
                episode.resolved = True
            self._ended = (facts.call, facts.result, facts.epoch, ended, self._stretch_calls)
            self._resumed = False
        elif (ended_poll := self._ended) is not None and facts.failure is None:
            self._after_poll(facts, ended_poll)
        if facts.epoch != self._stretch_epoch:
            self._stretch = []
            self._stretch_calls = set()
            self._stretch_epoch = facts.epoch
        # A successful call is followed by its call alone: with nothing novel between
        # occurrences, each returned a result the call had already returned (the same
        # one, or writes answered "ok", "saved", "ok"). A failure by how it failed.
        key = facts.action if facts.failure is not None else facts.call
        threshold = self.config.repeated_result_repeats
        if facts.trivial and facts.failure is None and sets_value(facts.name) and _in_words(step):
            threshold = self.config.rewrite_repeats  # the same value set again (see config)
            self._set_values.add(facts.call)
        else:
            self._set_values.pop(facts.call)
        found = self._extend(key, facts.epoch, facts, threshold)
        if found:
            chain = self._chains.chain(key)
            if chain is not None and chain.episode is not None:
                if chain.episode not in self._stretch:
                    self._stretch.append(chain.episode)
                self._stretch_calls.add(facts.call)
                if facts.failure is None:
                    episodes = self._by_call.setdefault(facts.call, [])
                    if chain.episode not in episodes:
                        episodes.append(chain.episode)
        return found

    def _after_poll(
        self, facts: StepFacts, ended_poll: tuple[int, int | None, int, list[Episode], set[int]]
    ) -> None:
        """Whether what follows a poll's end (``ended_poll``) undoes it, or redoes it."""
        polled, answer, epoch, episodes, calls = ended_poll
        if facts.epoch == epoch and facts.call == polled and facts.result != answer:
            # With nothing new since, the call went back to an answer it gave before the
            # "end" (a write acknowledged "stored", then "saved", then "stored" again): the
            # wait had not ended, it was the loop going on.
            for episode in episodes:
                episode.resolved = False
            self._ended = None
        elif facts.epoch == epoch and not self._resumed and facts.call != polled and facts.call in calls:
            # With nothing new since, another call of the repetition answered as it did
            # before (a new mention answered by the same review of the same commit): the
            # new answer led back to the same work. The repetition goes on...
            for episode in episodes:
                episode.resolved = False
            self._resumed = True
        elif self._resumed and facts.novel and facts.call != polled and facts.call not in calls:
            # ...unless new work follows after all (the log read once more, then the
            # artifact downloaded): the wait did end.
            for episode in episodes:
                episode.resolved = True
            self._ended = None

    def reset(self) -> None:
        super().reset()
        self._stretch: list[Episode] = []  # episodes reported since the last novel step
        self._stretch_calls: set[int] = set()  # the calls they repeat
        self._stretch_epoch = -1
        # Per call digest, the episodes of its successful repeats (resolved when its poll ends).
        self._by_call: dict[int, list[Episode]] = {}
        # The latest ended poll: (call, its new result, epoch, the episodes it resolved,
        # the calls they repeated).
        self._ended: tuple[int, int | None, int, list[Episode], set[int]] | None = None
        self._resumed = False  # the repetition went on after that end
        # Calls that set a value, last answered by an acknowledgement (bounded like the chains).
        self._set_values = LRU(self.config.seen_capacity)


class NearDuplicateDetector(IncrementalDetector):
    """``near_duplicate_args``: one tool, cosmetically different arguments, the same result."""

    signals = (NEAR_DUPLICATE_ARGS,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool steps alone.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL})

    def reset(self) -> None:
        super().reset()
        self._anchor: tuple[str, StepFacts, int] | None = None
        self._anchor_facts: StepFacts | None = None
        self._calls: set[int] = set()
        self._count = 0
        self._spans: list[str] = []
        self._episode: Episode | None = None

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        if not facts.is_action:
            return []
        if not facts.args_known or facts.result is None:  # no signature (or no result)
            self._anchor = None
            return []
        anchor = self._anchor
        if (
            anchor is not None
            and facts.name == anchor[0]
            and facts.result == anchor[2]
            and not facts.progressed
            and (facts.same_arguments(anchor[1]) or near_duplicate(anchor[1].signature, facts.signature))
        ):
            self._count += 1
            if len(self._calls) < 2:
                self._calls.add(facts.call)
            if len(self._spans) < self.config.max_evidence_spans:
                self._spans.append(facts.span_id)
        else:
            # The signature is read only when a later call is compared with it.
            self._anchor = (facts.name, facts, facts.result)
            self._anchor_facts = facts
            self._calls = {facts.call}
            self._count = 1
            self._spans = [facts.span_id]
            self._episode = None
            return []
        if len(self._calls) < 2:
            return []  # identical calls so far: not this signal's business
        out: list[Finding] = []
        if self._episode is None:
            assert self._anchor_facts is not None
            self._episode = Episode(
                NEAR_DUPLICATE_ARGS,
                self.config.near_duplicate_repeats,
                self._anchor_facts,
                description=(
                    f"{facts.name} called {{count}} times with only cosmetic argument changes "
                    "and the same result"
                ),
                config=self.config,
                period=1,
                no_progress=True,
                span_ids=self._spans,
            )
        else:
            self._episode.add(facts.span_id)
        self._track(self._episode, self._count, facts, out)
        return out


class SameAnswerDetector(IncrementalDetector):
    """``same_answer``: one tool, different arguments, the same non-trivial answer (see module doc)."""

    signals = (SAME_ANSWER,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool steps alone.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL})

    def reset(self) -> None:
        super().reset()
        _clear_chains(self)
        self._open: dict[str, list[Episode]] = {}

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        if not facts.is_action or facts.content is None or not facts.args_known:
            return []
        if facts.content_novel:
            # A new answer from this tool: the reworded question finally got somewhere.
            for episode in self._open.pop(facts.name, ()):
                episode.resolved = True
        if facts.trivial:
            return []
        key = hash((facts.name, facts.content))  # digest_pair, inline
        chain = self._chains.advance(key, facts.content_epoch, facts)
        if chain is None:  # the first occurrence of its chain (kept with its facts)
            return []
        previous = chain.last
        # (Each ``arg_words`` read once: a property, computed on its first read.)
        if chain.words is None:
            chain.words = [chain.first.arg_words]
        asked = chain.words
        words = facts.arg_words
        if words and asked[0]:
            again = _asks_again(words, asked)
            topic = not again and any(not words.isdisjoint(earlier) for earlier in asked)
            if len(asked) < _CHAIN_QUESTIONS:
                asked.append(words)
            if again and not chain.returned:
                # The first return to an earlier question: the calls held back for keeping
                # only the chain's topic were rewordings too.
                chain.count += chain.held
                chain.returned, chain.held = True, 0
            elif not again and not (topic and chain.returned):
                # Not (yet) a return to an earlier question: a batch over different targets
                # (two users, two cities; "iphone 15 case", then "iphone 15 charger")
                # counts for nothing, unless the chain comes back to a question later and
                # this call kept its topic ("Globex employees", "Globex staff count"). It
                # does not end the chain either: a reworded question comes back to words
                # asked before ("civitai", "lora", then "civitai lora").
                chain.count -= 1
                chain.held += topic
                return []
        if previous.call != facts.call:
            chain.calls += 1
        chain.last = facts
        if chain.calls < 2:
            return []
        out: list[Finding] = []
        if chain.episode is None:
            chain.episode = Episode(
                SAME_ANSWER,
                self.config.same_answer_repeats,
                chain.first,
                description=f"{facts.name} got the same answer {{count}} times to changing arguments",
                config=self.config,
                period=1,
                no_progress=True,
                span_ids=(chain.first.span_id,),
            )
            self._open.setdefault(facts.name, []).append(chain.episode)
        chain.episode.add(facts.span_id)
        self._track(chain.episode, chain.count, facts, out)
        return out


def _in_words(step: Step) -> bool:
    """Whether a tool step's answer says something (an empty answer to a write may be a
    wait: a terminal written an empty input that has printed nothing yet)."""
    result = result_text(step)
    return bool(result and not result.isspace())


#: Calls whose argument words a ``same_answer`` chain remembers.
_CHAIN_QUESTIONS = 32


def _asks_again(words: frozenset[int], asked: list[frozenset[int]]) -> bool:
    """Whether a call with argument ``words`` asks again what earlier calls of a chain
    (their words: ``asked``) asked: it narrows or widens one of them ("civitai", "civitai
    lora"), or shares a word with some of them that not all of them used (a word every
    call used is the topic a batch shares: "iphone 15 case", "iphone 15 charger")."""
    worded = [earlier for earlier in asked if earlier]
    for earlier in worded:
        if words <= earlier or earlier <= words:
            return True
    for word in words:
        uses = sum(1 for earlier in worded if word in earlier)
        if 0 < uses < len(worded):
            return True
    return False


def digest_pair(name: str, value: int) -> int:
    """A dictionary key for (tool name, digest): Python's tuple hash is enough in-process."""
    return hash((name, value))


class CallCeilingDetector(_ChainDetector):
    """``call_ceiling``: the same call repeated past the absolute ceiling, whatever its results."""

    signals = (CALL_CEILING,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): tool steps alone.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.TOOL})
    _no_progress = False
    _description = (
        "{name} called {{count}} times with identical arguments and no other new call "
        "(a ceiling, not proof: its results may still be new)"
    )

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        if not facts.is_action or not facts.args_known:
            return []
        return self._extend(facts.call, facts.call_epoch, facts, self.config.call_ceiling)
