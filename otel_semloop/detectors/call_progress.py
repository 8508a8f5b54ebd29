"""One tool call's results over a run: what a result reads as and whether it shows progress.

:func:`without_echo` reads a "nothing found" (:func:`finds_nothing`) without the
question it quotes back. :class:`ResultRead` is what one result text reads as (the
digests of its normalised form and of its content, a retriever's scored documents read
as a set: :func:`~otel_semloop.detectors.retrieval.as_document_set`, its size in words,
whether it only acknowledges, its figures once read). :class:`CallProgress` is the state
the fingerprinter keeps per call (tool and canonical arguments): the best figures and
size the call ever showed, its last result and how many calls in a row it answered with
results it had given before. From them each new call of the same call gets
``progressed`` (explicit progress beyond anything the call showed before),
``poll_ended`` and ``previous_action`` (see
:class:`~otel_semloop.detectors.facts.StepFacts`).

An answer that reads as the last one but names other identifiers (:meth:`ResultRead.ids`)
than the answers before it, which all named the same ones, shows progress and ends a
wait: a head commit or a revision that held over several polls and then changed is news,
though masking reads both alike; identifiers new on every answer (request ids) never hold.

Progress is measured against the best this call ever showed, not its last result: a
result alternating between a short and a long form, or a percentage going down and up
again, must not count as progress on every upswing. Counts (work remaining) are compared
with the previous result: each fall is progress.

Replaying a finished trace (the fingerprinter's ``lazy``), a call's first result is not
read for figures or size: only a later call of the same call compares them, and most calls are
made once. Until then the state holds the text itself, as a 1-tuple (figures are floats or
None, never tuples), and reads it when a second call comes, which gives what reading it
at once would have given. The fingerprinter (:mod:`otel_semloop.detectors.facts`) holds
these in an LRU by call digest and owns the memo of result texts (``figures``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from otel_semloop.detectors.arguments import writes_tool
from otel_semloop.detectors.call_identity import canonical_args
from otel_semloop.detectors.figures import (
    best_numbers,
    counts_fell,
    numbers_progressed,
    progress_value,
    remaining_counts,
    result_numbers,
)
from otel_semloop.detectors.normalize import (
    has_digit,
    identifiers,
    is_acknowledgement,
    is_time_reading,
    normalize_result_and_content,
    says_none_found,
)
from otel_semloop.detectors.retrieval import as_document_set
from otel_semloop.model import Step

__all__ = [
    "CallProgress",
    "Figures",
    "ResultRead",
    "finds_nothing",
    "result_figures",
    "result_text",
    "without_echo",
]

#: (progress figure, remaining counts, numbers) of a result's text.
Figures = tuple[float | None, tuple[int, ...] | None, tuple[float, ...] | None]

#: Results longer than this are sized by characters (about six per word) instead of being
#: split: the bound keeps sizing O(1) extra allocations on huge outputs.
_SIZE_SPLIT_CHARS = 65536


def result_text(step: Step) -> str | None:
    """A tool step's result as text, or None when the span carried none."""
    result = step.tool_result
    if result is None:
        return step.output_text or None
    if isinstance(result, str):
        return result
    return canonical_args(result, (), rewrite=False)


#: What an argument quoted back in a result is read as (see :func:`without_echo`).
ECHO = "<arg>"
#: Argument values quoted back that are read as :data:`ECHO`: long enough to be a quote
#: rather than a common word (``"a"``), short enough to be a query or a name rather than
#: the content written (a file's text quoted back is the result itself).
_ECHO_MIN_CHARS, _ECHO_MAX_CHARS = 3, 200
#: Argument values (strings, lists, objects) looked at per call: a query's few values,
#: bounded for a call whose arguments hold a whole document.
_ECHO_MAX_VALUES = 64


def without_echo(raw: str, arguments: Any, name: str) -> str:
    """``raw`` with the call's own string argument values replaced by :data:`ECHO`, when
    it quotes them back and says that nothing was found: the question quoted back is no
    news in a "nothing" ("No tools matched 'flux'." and "No tools matched 'lora'." are
    the same answer to two queries). Any other result is returned as it is: an answer
    naming what it is about (a status per job) is about that, and so is what a tool
    that writes (``name``: :func:`~otel_semloop.detectors.arguments.writes_tool`)
    answers about the target it wrote."""
    if len(raw) > _NOTHING_MAX_CHARS:
        return raw  # (no "nothing found": the quotes are looked for first, the cheaper test)
    values: list[str] = []
    stack = [arguments]
    looked = 0
    while stack and looked < _ECHO_MAX_VALUES:
        value = stack.pop()
        looked += 1
        if isinstance(value, str):
            if _ECHO_MIN_CHARS <= len(value) <= _ECHO_MAX_CHARS and value in raw:
                values.append(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    if not values or writes_tool(name) or not finds_nothing(raw):
        return raw
    unquoted = raw
    for value in sorted(values, key=len, reverse=True):  # "civitai lora" before "lora"
        unquoted = unquoted.replace(value, ECHO)
    return unquoted if finds_nothing(unquoted) else raw


#: A "nothing found": a search's negative in words ("No tools matched", "No memories
#: found", "not found"), a zero count of what was looked for, or an empty list of results.
#: Not any "no" or "not": "Job build-api is not started yet" is a status of that job.
_NOTHING = re.compile(
    r"\bno\b[^.;\n]{0,40}?\b(?:found|match(?:es|ed|ing)?|results?|hits?)\b"
    r"|\b(?:not|nothing|none)\s+(?:found|matched|matching)\b"
    r"|(?<![\w.])(?:0|zero)\s+(?:results?|match(?:es)?|hits?|items?|entries|records?|documents?|files?|memories|tools?)\b"
    r"|\"(?:total|count|hits|matches|found)\"\s*:\s*0(?![\w.])"
    r"|\"(?:results|matches|hits|items|tools|memories|documents|records|entries|data)\"\s*:\s*\[\s*\]",
    re.IGNORECASE,
)
#: A "nothing found" is short: a longer result says something.
_NOTHING_MAX_CHARS = 300


def finds_nothing(text: str) -> bool:
    """True when a short result says that nothing was found ("No tools matched",
    "0 results for", ``{"tools": [], "total": 0}``)."""
    return len(text) <= _NOTHING_MAX_CHARS and _NOTHING.search(text) is not None


def result_figures(raw: str) -> Figures:
    """(progress figure, remaining counts, numbers) of a result's text."""
    return progress_value(raw), remaining_counts(raw), result_numbers(raw)


#: :meth:`ResultRead.ids` not read yet (no string's hash is -1).
_UNREAD = -1


class ResultRead:
    """What one result text reads as: the digests of its normalised form (``result``) and
    of its content (``content``, numbers kept; both read a retrieval's documents as a set:
    :func:`~otel_semloop.detectors.retrieval.as_document_set`), its size in words
    (:attr:`size`), whether it only acknowledges, whether it says nothing beyond that (no
    figure, no "nothing found"), whether it is empty, and its figures once read
    (:func:`result_figures`)."""

    __slots__ = (
        "_ids",
        "_normalised",
        "_size",
        "acknowledges",
        "content",
        "empty",
        "figures",
        "result",
        "says_nothing",
    )

    def __init__(self, raw: str) -> None:
        normalised, content = normalize_result_and_content(as_document_set(raw))
        if is_time_reading(normalised):
            # A clock reading: its time is the answer (see ``is_time_reading``).
            normalised = content = " ".join(raw.casefold().split())
        self.result = hash(normalised)
        self.content = hash(content) if content != normalised else self.result
        self._normalised = normalised
        self._size = -1  # not counted yet
        self.acknowledges = is_acknowledgement(normalised)
        #: Short of a figure or a "nothing found": what an acknowledgement says. A figure
        #: is a number of the content (identifiers masked there: "Stored memory
        #: mem-8f3a2c" carries none).
        self.says_nothing = not has_digit(content) and not says_none_found(normalised)
        self.empty = not normalised
        self.figures: Figures | None = None
        # Identifiers are read (:meth:`ids`) only where masking hid one.
        names_ids = "<" in content and ("<hex>" in content or "<id>" in content or "<uuid>" in content)
        self._ids: int | None = _UNREAD if names_ids else None

    def ids(self, raw: str) -> int | None:
        """The digest of the identifiers the masks hide in ``raw`` (this read's text),
        whatever their order (:func:`~otel_semloop.detectors.normalize.identifiers`),
        read on first use; None when it names none."""
        ids = self._ids
        if ids == _UNREAD:
            found = identifiers(raw)
            ids = self._ids = hash(" ".join(sorted(found.split()))) if found else None
        return ids

    @property
    def size(self) -> int:
        """The size in words, not characters (an id one character longer is not more
        output), counted on first read: only a later call of the same call compares it,
        and counting blanks costs about a fifth of normalising the text (a branch per
        character the processor cannot predict)."""
        size = self._size
        if size < 0:
            normalised = self._normalised
            # (``normalised`` is words joined by single blanks: counting blanks is splitting.)
            if len(normalised) < _SIZE_SPLIT_CHARS:
                size = normalised.count(" ") + 1 if normalised else 0
            else:
                size = len(normalised) // 6
            self._size = size
            self._normalised = ""  # not needed any more
        return size


class CallProgress:
    """One call's state: the best progress figure it showed (or its first result's text,
    unread, as a 1-tuple), its best size, its last counts and numbers, its top numbers,
    its last result digest and its streak (calls in a row answered with results it had
    already given: the same one again, or a status flapping between known states), and
    the identifiers its last answer named with how many answers in a row named them.

    Made by :meth:`first` for a call's first occurrence and moved on by :meth:`next` for
    each later one (no ``__init__``: one is made per new call, the usual tool step)."""

    __slots__ = (
        "best_numbers",
        "best_progress",
        "best_size",
        "ids_held",
        "last_counts",
        "last_ids",
        "last_numbers",
        "last_result",
        "streak",
    )

    @staticmethod
    def first(
        raw: str | None, read: ResultRead | None, result: int | None, lazy: bool,
        figures: Callable[[str, ResultRead | None], Figures],
    ) -> CallProgress:  # fmt: skip
        """The state after a call's first occurrence (``read``: what its result ``raw``
        reads as, ``result``: its digest; ``figures`` reads a result's figures through the
        fingerprinter's memo). Nothing to compare with: no progress, no poll ended, a
        streak of one answer. Replaying (``lazy``), a result is left unread: its figures
        and its size (``best_size`` None) are read if the call comes again."""
        state = CallProgress()
        if raw is None:
            state.best_progress = state.last_counts = state.last_numbers = state.best_numbers = None
            state.best_size = 0
        elif lazy:
            state.best_progress = (raw,)
            state.last_counts = state.last_numbers = state.best_numbers = None
            state.best_size = None
        else:
            state.best_progress, state.last_counts, numbers = figures(raw, read)
            state.last_numbers = state.best_numbers = numbers
            state.best_size = read.size if read is not None else 0
        state.last_result = result
        state.streak = 1 if result is not None else 0
        # Replaying, the first result's identifiers are read with the rest if it recurs.
        state.last_ids = read.ids(raw) if read is not None and raw is not None else None
        state.ids_held = 1 if state.last_ids is not None else 0
        return state

    def next(
        self, facts: Any, raw: str | None, read: ResultRead | None, seen: bool,
        figures: Callable[[str, ResultRead | None], Figures], read_result: Callable[[str], ResultRead],
    ) -> None:  # fmt: skip
        """Move on by a later call of this call, whose facts (``result``, ``failure``,
        ``call``, ``args_known`` already set) get ``progressed`` and, when a wait ended,
        ``poll_ended`` and ``previous_action``. ``seen``: its (action, result) pair was
        seen before; ``read_result``: what a result text reads as (the fingerprinter's
        memo), for a first result left unread."""
        result = facts.result
        failure = facts.failure
        best_progress = self.best_progress
        best_size = self.best_size
        last_counts = self.last_counts
        last_numbers = self.last_numbers
        top_numbers = self.best_numbers
        counts = numbers = None
        ids = read.ids(raw) if raw is not None and read is not None and failure is None else None
        last_ids = self.last_ids
        if best_progress.__class__ is tuple:
            text = best_progress[0]  # type: ignore[index]
            if self.last_result is not None:
                last_ids = ids if raw == text else read_result(text).ids(text)
                self.ids_held = 1 if last_ids is not None else 0
            if raw is not None and raw == text:
                # Every result of this call so far was this same text (a call repeated
                # verbatim, as loops do): its figures and size equal the best, the last
                # and the top ones, so they show no progress (no figure exceeds or falls
                # below itself) and the call's state is what it was. Still not read.
                progress: Any = best_progress
            else:
                # The call's results so far were one text whose figures and size were not
                # read yet: read them now (what storing them at the time would have
                # stored; the best of one text, however often it came, is itself).
                first = read_result(text)
                best_progress, last_counts, last_numbers = figures(text, first)
                best_size = first.size
                top_numbers = last_numbers
                if raw is None:
                    progress = None
                else:
                    progress, counts, numbers = figures(raw, read)
        elif raw is None:
            progress = None
        else:
            progress, counts, numbers = figures(raw, read)
        last_result = self.last_result
        if result is not None and (result == last_result or (seen and failure is None)):
            self.streak += 1
        else:
            if (
                self.streak >= 2
                and not seen
                and result is not None
                and failure is None
                and last_result is not None
                and facts.args_known
            ):
                # The same call, after answering with results it had already given, gives
                # one it never gave before: it was waiting on something outside that has
                # now changed (a poll that ended). The repetition was not a loop. A result
                # it already gave (writes answered "ok", then "saved", then "ok") ends no
                # wait.
                facts.poll_ended = True
                facts.previous_action = hash((facts.call, last_result))
            self.streak = 1 if result is not None else 0
        renewed = False
        if ids is not None and result == last_result and ids == last_ids:
            self.ids_held += 1
        else:
            if (
                ids is not None
                and last_ids is not None
                and result == last_result
                and self.ids_held >= 2
                and facts.args_known
            ):
                # The same answer, but naming other things than the answers before it,
                # which all named the same ones (a pull request's head commit, a
                # document's revision): what the call reads changed. Identifiers that
                # change on every answer (request ids) never hold twice.
                renewed = facts.poll_ended = True
                facts.previous_action = hash((facts.call, last_result))
            self.ids_held = 1 if ids is not None else 0
        self.last_ids = ids
        if progress.__class__ is not tuple:  # (a tuple: the same unread text again)
            size = read.size if read is not None else 0
            facts.progressed = renewed or (
                (progress is not None and best_progress is not None and progress > best_progress)
                or (size > best_size > 0)  # type: ignore[operator]
                or counts_fell(last_counts, counts)
                or numbers_progressed(last_numbers, top_numbers, numbers)
            )
            self.best_size = size if size > best_size else best_size  # type: ignore[operator]
        if progress is not None and (
            progress.__class__ is tuple or best_progress is None or progress > best_progress
        ):
            best_progress = progress
        self.best_progress = best_progress
        self.last_counts = counts
        self.last_numbers = numbers
        self.best_numbers = best_numbers(top_numbers, numbers)
        self.last_result = result
