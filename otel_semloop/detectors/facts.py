"""The per-step facts every detector reads: :class:`Fingerprinter` and :class:`StepFacts`.

Facts, computed once per step
    :class:`Fingerprinter` turns a step into :class:`StepFacts`: digests of the call (tool
    name + canonical arguments), of the normalised result and of the normalised assistant
    text, the near-duplicate argument signature, the failure class, the explicit progress
    figure, and novelty: whether this (action, result) pair was seen before, kept in a
    bounded LRU of digests. A suite computes facts once and hands them to every detector
    (``observe_facts``); a detector run alone owns a fingerprinter. Digests are kept,
    never arguments, results or text.

Novelty and epochs
    A tool step is *novel* when its (action, result) fingerprint has not been seen (within
    ``seen_capacity``) or when it shows explicit progress: a higher percentage or n/m, or
    a longer output, than the same call ever returned before. ``epoch`` counts novel tool steps
    so far: detectors compare epochs to ask "did anything new happen between these two
    steps?" in O(1). Transient failures (429, 5xx, timeouts) are neither novel nor
    remembered: a call that did not happen is no evidence either way. A tool step with
    neither arguments nor result (content capture off) cannot be compared and counts as
    novel: errs toward no loop. A failed tool step is fingerprinted by its tool and its
    masked message, not by its arguments: calls reworded or given an extra hint that
    fail with the same text are one failure repeated, not new attempts.

Replay and live
    Replaying a finished trace (``Fingerprinter.lazy``), what only a repeat of the same
    call needs is computed when first needed and a result or text seen again is read once;
    an assistant text is digested only when its ``text`` is read, and the text novelty
    (``text_novel``, ``text_epoch``) is settled only when read
    (:mod:`~otel_semloop.detectors.text_novelty`): the default detectors read it at agent
    steps and hand-offs alone. Live, everything is computed at once and no text is kept.
    Same facts either way.

Size: one concern, a step's facts computed against the run's state in one pass per step.
What the pass consults is elsewhere: one call's progress over the run (best figures and
size, last result, streak, a wait ended) in ``call_progress``, the assistant texts'
novelty in ``text_novelty``, the bounded maps in ``lru``, masks in ``normalize``, what
counts as the same call in ``call_identity``, failure classes in ``failure_class``.
:class:`StepFacts` stays with the fingerprinter: its signature and argument words are
computed on first read from private slots that only :meth:`Fingerprinter._tool` fills.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from otel_semloop.detectors.arguments import (
    asks_tool,
    empty_means_none_found,
    is_shell_tool,
    is_wait_call,
    writes_tool,
)
from otel_semloop.detectors.call_identity import ArgSignature, arg_signature, argument_words, canonical_args
from otel_semloop.detectors.call_progress import (
    CallProgress,
    Figures,
    ResultRead,
    result_figures,
    result_text,
    without_echo,
)
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.failure_class import Failure, FailureKind, classify_failure, failure_identity
from otel_semloop.detectors.lru import LRU
from otel_semloop.detectors.normalize import ACK_MAX_WORDS
from otel_semloop.detectors.text_novelty import MEMO_ENTRIES, UNREAD, TextNovelty, text_digest
from otel_semloop.model import Step, StepKind

_TOOL, _LLM, _AGENT = StepKind.TOOL, StepKind.LLM, StepKind.AGENT
_TRANSIENT = FailureKind.TRANSIENT

__all__ = ["Fingerprinter", "StepFacts"]


class StepFacts:
    """What the detectors know about one step (digests and flags, no content).

    ``call`` is the digest of the tool name and canonical arguments (tool steps; LLM steps
    only when they failed: name and input). ``result`` is the digest of the normalised
    result (of the failure class when a failed tool returned nothing), None when unknown.
    ``action`` is the (call, result) fingerprint. ``novel``/``epoch``, ``call_novel``/
    ``call_epoch`` and ``text_novel``/``text_epoch`` are the novelty of the (action,
    result) pair, of the call alone, and of the assistant text. ``progressed`` says the
    result shows explicit progress beyond anything the same call returned before.
    """

    __slots__ = (
        "_arg_words",
        "_arguments",
        "_signature",
        "_step",
        "_text",
        "_text_after",
        "_text_epoch",
        "_text_novel",
        "_text_raw",
        "_text_run",
        "action",
        "agent",
        "args_known",
        "call",
        "call_epoch",
        "call_novel",
        "content",
        "content_epoch",
        "content_novel",
        "end_ns",
        "epoch",
        "failure",
        "has_tool_calls",
        "index",
        "is_action",
        "kind",
        "name",
        "novel",
        "poll_ended",
        "previous_action",
        "progressed",
        "result",
        "span_id",
        "start_ns",
        "trivial",
        "unanswered",
        "wait",
    )

    def __init__(self, step: Step, index: int) -> None:
        self.index = index
        self.kind = step.kind
        self.name = step.name
        self.span_id = step.span_id
        self.start_ns = step.start_ns
        self.end_ns = step.end_ns
        self.agent = step.agent
        # ``call`` and the epochs: set by the fingerprinter (see :class:`_LazyCall`).
        self.args_known = False
        self._signature: ArgSignature | None = None
        # (arguments, volatile names, position names, shell) while the signature and the
        # argument words are not computed yet (see :attr:`signature`).
        self._arguments: tuple[Any, frozenset[str], Collection[str], bool] | None = None
        self.result: int | None = None
        self.content: int | None = None
        self.content_novel = False
        self.trivial = False
        #: A tool call that only lets time pass (:func:`~otel_semloop.detectors.arguments.is_wait_call`).
        self.wait = False
        #: A call requested by a model whose outcome was never recorded (no tool span, no
        #: result in a later model input: the run ended first).
        self.unanswered = False
        self.poll_ended = False
        self.previous_action = 0
        self._arg_words: frozenset[int] | None = None  # None: not computed yet
        self.action = 0
        self.failure: Failure | None = None
        self.novel = False
        self.progressed = False
        self.call_novel = False
        # ``text``, ``text_novel``, ``text_epoch``: private slots the fingerprinter sets
        # (in a replay, an assistant text's on first read: see ``text_novelty``).
        #: A tool step that counts for repetition and novelty (not a transient failure);
        #: set once the failure is known (``Fingerprinter._tool``).
        self.is_action = False
        self.has_tool_calls = bool(step.tool_calls)
        # (Tokens and cost: the budget detector reads them from the step, off by default.)

    @property
    def signature(self) -> ArgSignature | None:
        """The near-duplicate signature of the arguments (None when they are unknown).

        Computed on first use when the fingerprinter was replaying a finished trace (most
        steps never need it; the arguments are held by the trace anyway), at once live."""
        if self._signature is None and self._arguments is not None:
            arguments, volatile, positions, shell = self._arguments
            self._signature = arg_signature(arguments, volatile, positions, shell=shell)
        return self._signature

    @property
    def arg_words(self) -> frozenset[int]:
        """The argument words (:func:`~otel_semloop.detectors.call_identity.argument_words`),
        computed on first use like :attr:`signature`."""
        if self._arg_words is None:
            self._arg_words = (
                argument_words(self._arguments[0], self._arguments[1])
                if self._arguments is not None
                else frozenset()
            )
        return self._arg_words

    def same_arguments(self, other: StepFacts) -> bool:
        """True when ``other`` called the same tool with the same arguments, both as
        canonical text (``call``) and as values (``==``): then their :attr:`signature` s
        are equal, and need not be computed (loops repeat calls verbatim). False says
        nothing: compare the signatures.

        Why equal: the canonical text keeps every key and value in its JSON spelling, so
        equal texts mean the same keys (``1`` and ``True`` are one key for ``==`` but not
        in the text) and values equal as JSON (``1``, ``1.0`` and ``true`` differ there),
        and equal values mean equal strings; a signature is computed from the tool's
        settings (one per name) and those keys and values alone."""
        mine, theirs = self._arguments, other._arguments
        if mine is None or theirs is None or self.call != other.call or self.name != other.name:
            return False
        try:
            return bool(mine[0] == theirs[0])
        except Exception:  # values whose equality is not a truth value (arrays)
            return False

    def _read_arguments(self) -> None:
        """Compute both now and let go of the arguments (live: no content is kept)."""
        _ = self.signature, self.arg_words
        self._arguments = None

    # The text fields are properties over private slots rather than slots filled by a
    # ``__getattr__``: a class with ``__getattr__`` has every attribute read take the slow
    # generic path on Python 3.11 (no specialisation), about three times a slot read.

    @property
    def text(self) -> int | None:
        """The digest of the normalised output text (LLM and agent steps; None when there
        is none or nothing is left once normalised)."""
        text = self._text
        if text is UNREAD:
            text = self._text = self._text_run.digest(self._text_raw)  # type: ignore[union-attr]
        return text  # type: ignore[return-value]

    @property
    def text_novel(self) -> bool:
        """Whether this LLM step's text was not said before in the run (``text_epoch``)."""
        try:
            return self._text_novel
        except AttributeError:  # replay: not settled yet
            TextNovelty.settle(self)
            return self._text_novel

    @property
    def text_epoch(self) -> int:
        """How many LLM steps up to this one said something not said before."""
        try:
            return self._text_epoch
        except AttributeError:  # replay: not settled yet
            TextNovelty.settle(self)
            return self._text_epoch

    @property
    def time_ns(self) -> int | None:
        """When the step finished (or started, when it has no end)."""
        return self.end_ns if self.end_ns is not None else self.start_ns

    @property
    def transient_failure(self) -> bool:
        return self.failure is not None and self.failure.kind is _TRANSIENT


class Fingerprinter:
    """Computes :class:`StepFacts` for each step, with the novelty state of one run.

    Cost per step: O(size of the step) to normalise and hash its arguments, result and
    text, plus O(1) dictionary work; memory O(seen_capacity) digests (and, replaying, up
    to :data:`MEMO_ENTRIES` references to texts of the trace).

    The digests (``call``, ``result``, ``content``, ``action``, ``text``) are Python
    hashes of the normalised strings: they are only compared with each other, within one
    run, in one process (a string's hash is salted per process), and never printed or
    sent anywhere. A 64-bit hash errs toward "same" with the same negligible odds as a
    64-bit blake2b, at a small fraction of its cost.
    """

    __slots__ = (
        "_call_epoch",
        "_calls",
        "_config",
        "_content_epoch",
        "_contents",
        "_epoch",
        "_read_figures",
        "_read_result",
        "_reads",
        "_seen",
        "_text_anchor",
        "_text_reads",
        "_texts",
        "_tools",
        "_unique",
        "lazy",
    )

    def __init__(self, config: DetectorConfig) -> None:
        self._config = config
        # Per tool name: (volatile argument names, position argument names, runs commands,
        # a short answer acknowledges: the tool writes, or does not ask).
        self._tools: dict[str, tuple[frozenset[str], Collection[str], bool, bool]] = {}
        #: Replaying a finished trace: figures only a repeat of the same call or a
        #: comparison with a neighbour needs (progress figures, counts and numbers of a
        #: result, the argument signature and words, an LLM request's identity) are
        #: computed when first needed, from the step's own text and arguments, which the
        #: trace holds anyway, and a result or assistant text seen again in the run is not
        #: read again (:meth:`_read`). Live (False), everything is computed at once and no
        #: text is kept. Same facts either way.
        self.lazy = False
        #: :meth:`_figures` and :meth:`_read`, bound once (each call's progress reads
        #: figures and earlier results through them).
        self._read_figures = self._figures
        self._read_result = self._read
        self.reset()

    def reset(self) -> None:
        """Forget the run: every map emptied in place (a scorer resets for each trace,
        often twice: after scoring to let go of the text, and before the next)."""
        try:
            self._seen.clear()
            self._calls.clear()
            if self._texts.done < len(self._texts.pending):
                # Facts of the last run may still read their texts' novelty: they keep
                # that run's state; this run gets its own.
                self._texts = TextNovelty(self._config.seen_capacity, self._text_reads)
            else:
                self._texts.clear()
            self._contents.clear()
            self._reads.clear()
            self._text_reads.clear()
        except AttributeError:  # the first reset (from ``__init__``)
            capacity = self._config.seen_capacity
            self._seen = LRU(capacity)  # action fingerprints
            self._calls = LRU(capacity)  # call digest -> its CallProgress (or first pair)
            self._contents = LRU(capacity)  # result content digests (digits kept)
            self._reads: dict[str, ResultRead] = {}  # replay only: result text -> what it reads as
            self._text_reads: dict[str, int | None] = {}  # replay only: assistant text -> digest
            self._texts = TextNovelty(capacity, self._text_reads)  # assistant text digests
        #: Replay: the latest assistant text whose novelty is not settled yet (None before
        #: the run's first one): a later step's ``text_epoch`` is that text's.
        self._text_anchor: StepFacts | None = None
        self._content_epoch = 0
        self._epoch = 0
        self._call_epoch = 0
        self._unique = 0

    def facts(self, step: Step, index: int) -> StepFacts:
        kind = step.kind
        if kind is _TOOL:
            facts = StepFacts(step, index)
            facts._text = None
            facts._text_novel = False
            self._tool(step, facts)
        elif kind is _LLM:
            # The request's identity (name and whole input), so a retried call can be told
            # from a new one: only the failure detector reads it, and only about failures.
            if self.lazy:
                facts = _LazyCall(step, index)
                facts._step = step
            else:
                facts = StepFacts(step, index)
                facts.call = _llm_call(step)
            facts.failure = classify_failure(step)
            self._text(step, facts, novelty=True)
        else:
            facts = StepFacts(step, index)
            facts.call = 0
            facts._text_novel = False
            if kind is _AGENT:
                self._text(step, facts, novelty=False)
            else:
                facts._text = None
        facts.epoch = self._epoch
        facts.call_epoch = self._call_epoch
        anchor = self._text_anchor
        if anchor is None:
            facts._text_epoch = self._texts.epoch
        else:
            facts._text_after = anchor  # ``text_epoch``: that text's, once settled
        facts.content_epoch = self._content_epoch
        return facts

    def _tool(self, step: Step, facts: StepFacts) -> None:
        name = step.name
        tool = self._tools.get(name)
        if tool is None:
            config = self._config
            tool = self._tools[name] = (
                config.volatile_for(name),
                config.position_args,
                is_shell_tool(name),
                not is_shell_tool(name) and (writes_tool(name) or not asks_tool(name)),
            )
        volatile, positions, shell, short_acknowledges = tool
        arguments = step.tool_arguments
        if arguments is None and step.handoff_to:
            arguments = {"handoff_to": step.handoff_to}  # a hand-off is identified by its target
        args_known = facts.args_known = arguments is not None
        if args_known:
            call = facts.call = hash(f"{name}\0{canonical_args(arguments, volatile, shell=shell)}")
            facts._arguments = (arguments, volatile, positions, shell)
            if not self.lazy:
                facts._read_arguments()
        else:
            call = facts.call = hash(f"{name}\0<no arguments>")
        raw = result_text(step)
        if raw is None and step.synthetic and not step.is_error:
            # Requested, but nothing says what happened: no evidence either way (neither
            # new work nor a repeat, neither a failure nor a success).
            facts.unanswered = True
            return
        failure = classify_failure(step, raw)
        facts.failure = failure
        if failure is not None and failure.kind is _TRANSIENT:
            return  # neither novel nor remembered (nor an action): the call did not happen
        if failure is None and is_wait_call(name, arguments, shell=shell):
            # A sleep between polls or retries says nothing about the world: neither new
            # work (a longer sleep is not progress) nor a repeat (the same sleep is no loop).
            facts.wait = True
            return
        facts.is_action = True
        read = None
        if raw is not None and failure is None and args_known:
            raw = without_echo(raw, arguments, name)  # a question quoted back in a "nothing found"
        if raw is not None:
            read = self._read(raw)
            result = facts.result = read.result
            facts.content = read.content
            # A short answer from a tool that writes or does not ask acknowledges ("Draft
            # saved.", "Your thought has been logged.") whatever its words, unless it says
            # "nothing" or carries a figure ("Globex's employees: 7,930"); an empty answer
            # to a question is an answer.
            facts.trivial = (
                read.acknowledges or (short_acknowledges and read.says_nothing and read.size <= ACK_MAX_WORDS)
            ) and not (read.empty and empty_means_none_found(name, arguments, shell=shell))
            if not self._contents.add(read.content):
                self._content_epoch += 1
                facts.content_novel = True
        elif failure is not None:
            result = facts.result = hash(f"<failure>{failure.label}")
        else:
            result = None
        if not args_known and result is None:
            # Nothing to compare: a unique fingerprint, novel by construction.
            self._unique += 1
            facts.action = hash(f"<opaque>{self._unique}")
        elif failure is not None:
            # A failure is identified by what failed and how, not by how it was asked: a
            # re-worded edit, an added hint argument, a wobbling search string that fail
            # with the same message learned nothing the first failure did not.
            identity, names_the_tool = failure_identity(step, raw, failure)
            # A rejection of the tool's name itself ("search_docs is not a valid tool, try
            # one of [...]") is the same failure under every name the model tries.
            facts.action = hash(f"{'' if names_the_tool else name}\0<failed>\0{identity}")
        else:
            facts.action = hash((call, result))
        seen = self._seen.add(facts.action)
        # Progress per call (``call_progress``); replaying, a first call is (text, digest) until it recurs.
        state = (calls := self._calls).get(call)
        first, figures = CallProgress.first, self._read_figures
        if state is None:
            facts.call_novel = True
            self._call_epoch += 1
            calls.put(call, (raw, result) if self.lazy else first(raw, read, result, False, figures))
        else:
            if state.__class__ is tuple:  # (the most recent already: its value replaced)
                calls.put(call, state := first(state[0], None, state[1], True, figures))  # type: ignore[index]
            state.next(facts, raw, read, seen, self._read_figures, self._read_result)  # type: ignore[attr-defined]
        novel = facts.novel = not seen or facts.progressed
        if novel:
            self._epoch += 1

    def _read(self, raw: str) -> ResultRead:
        """What a result's text reads as; replaying, remembered for the run by the text
        (loops repeat results verbatim), at most :data:`MEMO_ENTRIES` of them."""
        if not self.lazy:
            return ResultRead(raw)
        reads = self._reads
        read = reads.get(raw)
        if read is None:
            read = reads[raw] = ResultRead(raw)
            if len(reads) > MEMO_ENTRIES:
                del reads[next(iter(reads))]
        return read

    def _figures(self, raw: str, read: ResultRead | None = None) -> Figures:
        """(progress figure, remaining counts, numbers) of a result's text, read once per
        :class:`~otel_semloop.detectors.call_progress.ResultRead` (so once per distinct
        result text in a replay)."""
        if read is None:
            read = self._reads.get(raw) if self.lazy else None
            if read is None:
                return result_figures(raw)
        if read.figures is None:
            read.figures = result_figures(raw)
        return read.figures

    def _text(self, step: Step, facts: StepFacts, *, novelty: bool) -> None:
        """Digest the output text (``text``); only assistant (LLM) text counts toward text
        novelty (``text_novel``, set only when ``novelty``). Replaying, an assistant
        text's digest and novelty wait until first read (:class:`TextNovelty`)."""
        text = step.output_text
        if not text:
            facts._text = None
            if novelty:
                facts._text_novel = False
            return
        if not self.lazy:
            facts._text = digest = text_digest(text)
            if novelty:
                facts._text_novel = digest is not None and self._texts.add(digest)
            return
        if novelty:
            facts._text = UNREAD
            facts._text_raw = text
            facts._text_run = texts = self._texts
            texts.pending.append(facts)
            self._text_anchor = facts
            return
        facts._text = self._texts.digest(text)


def _llm_call(step: Step) -> int:
    """An LLM request's identity: its name and whole input."""
    return hash(f"{step.name}\0{step.input_text}")


class _LazyCall(StepFacts):
    """The facts of an LLM step in a replay: ``call`` (:func:`_llm_call`, which reads the
    whole input history) is computed on first read, so a step nobody asks about never
    flattens or hashes its input. ``call`` is a property here (over the base class's
    slot, with the step in ``_step`` until then); not a ``__getattr__``, which would make
    every other attribute read of these facts take the slow generic path."""

    __slots__ = ()

    @property  # type: ignore[override]
    def call(self) -> int:
        step = self._step
        if step is not None:
            self._step = None
            _CALL.__set__(self, _llm_call(step))
        return _CALL.__get__(self)  # type: ignore[no-any-return]


#: The ``call`` slot of :class:`StepFacts` (which :class:`_LazyCall`'s property shadows).
_CALL = StepFacts.__dict__["call"]
