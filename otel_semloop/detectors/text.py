"""Text: an assistant repeating itself between actions, or inside one output.

Signals
    ``monologue``
        Consecutive assistant (LLM) messages that are identical once normalised (digits,
        ids and timestamps masked, case and punctuation ignored), with no tool call
        between: conclusive at ``monologue_repeats`` (3), OpenHands' 3 identical agent
        messages. "Near-identical" means exactly that and no more: a fixed preamble in
        front of a different update, or one sentence shape naming different files, is a
        different message. A tool step, an LLM output that requests tool calls, or an
        agent step ends the run; an empty output (content not captured) neither extends
        nor ends it. ``no_progress``: nothing happened between the messages.
    ``chanting``
        One line or sentence repeated inside a single LLM output (or the arguments of a
        final-answer tool, :data:`ANSWER_TOOL`): conclusive when one
        normalised unit of at least ``chant_min_chars`` characters occurs
        ``chant_repeats`` (10) times, Gemini CLI's content-loop threshold. Lines inside
        fenced or indented code blocks, list items and table rows never count: repeated
        structure there is normal. Numbers are kept (identifiers masked): lines that differ
        only in a number are an enumeration ("Migrated table 3", "Migrated table 4").
        Shorter units ("Checking.", two short sentences alternating) count too when the
        output is degenerate: a short unit repeated ``chant_repeats`` times, with repeated
        short units making up at least :data:`SHORT_CHANT_SHARE` of the output's units.
        So does one token repeated back to back inside a line (``court court court``,
        ``courtcourt``, ``上一轮上一轮``) when that run makes up the same share of an
        output at least ``chant_repeats`` units of ``chant_min_chars`` long
        (:func:`degenerate_run`).
        ``no_progress``: the repeats say nothing new.
    ``restated_conclusion``
        Consecutive assistant messages, with no tool call between, that assert the same
        thing in new words: each shares at least :data:`RESTATED_MIN_SHARED` of the figures
        and names asserted so far in the run of messages
        (:func:`~otel_semloop.detectors.claims.claims`: ``$12,480`` and ``12480 dollars``
        are one figure) and adds at most :data:`RESTATED_MAX_NEW` new ones, or any number
        when it concludes with the run's result by other working (``9 + 8 + ... = 45``
        after ``10 x 9 / 2 = 45``: :func:`~otel_semloop.detectors.claims.conclusion`). A model asked
        to confirm that reconsiders again and again, reaching the same total and the same
        names every time, worded differently each time. Conclusive at
        ``restatement_repeats`` (4) messages of one agent: a loop of agents taking turns
        (a worker and its checker) goes on across their hand-offs, while agents that each
        restate the figures once (an analyst, a writer, a reviewer) are a pipeline. A tool
        call or a message that asserts something new (a correction, the next subtotal, a
        critique naming what to change) ends the run; a message that
        asserts nothing new and too little to compare ("Done. Nothing further to
        change.") neither counts nor ends it. Messages in a row that each say the work
        is over ("Inspection complete.", "Nothing is pending.", "I'll wait for your next
        instruction.": :func:`~otel_semloop.detectors.claims.declares_done`) restate one
        conclusion too, whatever they assert: conclusive at the same count. ``no_progress``:
        the same conclusion, nothing new arrived.

Kept
    Monologue: the digest of the previous message and the run length. Restatement: the
    hashes of the figures and names asserted in the current run of messages, and how many
    of them each agent said. Chanting: nothing
    between steps (one output's unit counts live only while that output is examined).

Cost
    O(length of the output) per LLM step; an output with fewer lines and sentences than a
    warning needs (5) is split but not normalised. O(1) memory between steps.

Size: one concern, what assistant text repeats (the same message, the same conclusion,
the same unit inside one output); the chanting units' splitting is most of it.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import ClassVar

from otel_semloop.detectors.base import Episode, IncrementalDetector
from otel_semloop.detectors.claims import claims, conclusion, declares_done
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.detectors.normalize import normalize_words
from otel_semloop.model import Step, StepKind
from otel_semloop.verdict import Finding

__all__ = [
    "CHANTING",
    "MONOLOGUE",
    "RESTATED_CONCLUSION",
    "ChantingDetector",
    "MonologueDetector",
    "RestatementDetector",
    "chant_units",
    "is_answer_tool",
]

MONOLOGUE = "monologue"
CHANTING = "chanting"
RESTATED_CONCLUSION = "restated_conclusion"
#: Figures and names a message must share with the run so far to restate it: one shared
#: number is a coincidence (a year, a count), two are the same conclusion.
RESTATED_MIN_SHARED = 2
#: New figures or names a restating message may add (a unit spelled out, a name that
#: started a sentence before): more is new content.
RESTATED_MAX_NEW = 1

_LLM, _TOOL, _AGENT = StepKind.LLM, StepKind.TOOL, StepKind.AGENT


class MonologueDetector(IncrementalDetector):
    """``monologue``: the same assistant message again and again with nothing between."""

    signals = (MONOLOGUE,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): LLM messages, and the
    #: tool and agent steps that end a run of them.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.LLM, StepKind.TOOL, StepKind.AGENT})

    def reset(self) -> None:
        super().reset()
        self._last: int | None = None
        self._run = 0
        self._episode: Episode | None = None
        self._first: StepFacts | None = None

    def _break(self) -> None:
        self._last = None
        self._run = 0
        self._episode = None

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        kind = step.kind  # (not ``facts.kind``: see ``suite``, dispatch by step kind)
        if kind is not _LLM:
            if (kind is _TOOL or kind is _AGENT) and self._last is not None:
                self._break()  # (a run already broken has nothing to break)
            return []
        if facts.has_tool_calls:
            if self._last is not None:
                self._break()  # (a run already broken has nothing to break: no call)
            return []
        if facts.text is None:
            return []
        if facts.text != self._last:
            self._last = facts.text
            self._run = 1
            self._first = facts
            self._episode = None
            return []
        self._run += 1
        if self._episode is None:
            assert self._first is not None
            self._episode = Episode(
                MONOLOGUE,
                self.config.monologue_repeats,
                self._first,
                description="the assistant said the same thing {count} times in a row with no action between",
                config=self.config,
                period=1,
                no_progress=True,
                span_ids=(self._first.span_id,),
            )
        self._episode.add(facts.span_id)
        out: list[Finding] = []
        self._track(self._episode, self._run, facts, out)
        return out


class RestatementDetector(IncrementalDetector):
    """``restated_conclusion``: the same figures and names asserted again and again in new
    words, with no action between (see the module doc)."""

    signals = (RESTATED_CONCLUSION,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): LLM messages, and the
    #: tool and agent steps that end a run of them.
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.LLM, StepKind.TOOL, StepKind.AGENT})

    def reset(self) -> None:
        super().reset()
        self._asserted: frozenset[int] = frozenset()
        self._concluded: int | None = None  # the result the run of messages gives
        self._run = 0
        self._episode: Episode | None = None
        self._first: StepFacts | None = None
        # The agent speaking (the last agent step's name) and its messages in the run.
        self._agent: str | None = None
        self._spoken: dict[str | None, int] = {}
        # Completion statements in a row (see ``_done``).
        self._done_run = 0
        self._done_episode: Episode | None = None
        self._done_first: StepFacts | None = None

    def _break(self) -> None:
        self._asserted = frozenset()
        self._concluded = None
        self._run = 0
        self._episode = None
        self._spoken = {}

    def _act(self) -> None:
        """An action (a tool call, a tool call's hand-off) ends both runs."""
        if self._run:
            self._break()
        self._done_run = 0
        self._done_episode = None

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        kind = step.kind  # (not ``facts.kind``: see ``suite``, dispatch by step kind)
        if kind is not _LLM:
            if kind is _AGENT:
                # A turn handed to another agent of the crew or loop brings nothing new by
                # itself: the run goes on, counted per agent (see the module doc).
                self._agent = step.name
                self._done_run = 0
                self._done_episode = None
            elif kind is _TOOL and not facts.wait:
                self._act()
            return []
        if facts.has_tool_calls:
            self._act()
            return []
        text = step.output_text
        if not text:
            return []  # content not captured: neither extends nor ends the run
        out = self._done(facts, text)
        asserted = claims(text)
        shared = len(asserted & self._asserted)
        concluded = conclusion(text)
        # The same result reached by other working (``9 + 8 + ... = 45`` after
        # ``10 x 9 / 2 = 45``): its operands are no news.
        same_result = concluded is not None and concluded == self._concluded and shared >= RESTATED_MIN_SHARED
        if self._run and shared < RESTATED_MIN_SHARED and asserted <= self._asserted:
            # Nothing new asserted, and too little to restate ("Done. Nothing further to
            # change."): the same conclusion is not over; the message does not count.
            return out
        if not same_result and (
            len(asserted) < RESTATED_MIN_SHARED
            or shared < RESTATED_MIN_SHARED
            or len(asserted) - shared > RESTATED_MAX_NEW
        ):
            # Something new (or too little to compare): a run starts here, if anything.
            self._break()
            if len(asserted) >= RESTATED_MIN_SHARED:
                self._asserted = asserted
                self._concluded = concluded
                self._run = 1
                self._spoken = {self._agent: 1}
                self._first = facts
            return out
        self._asserted = self._asserted | asserted
        if self._concluded is None:
            self._concluded = concluded
        self._run += 1
        restated = self._spoken[self._agent] = self._spoken.get(self._agent, 0) + 1
        if self._episode is None:
            assert self._first is not None
            self._episode = Episode(
                RESTATED_CONCLUSION,
                self.config.restatement_repeats,
                self._first,
                description=(
                    "the assistant restated the same figures and names {count} times in new words "
                    "with no action between"
                ),
                config=self.config,
                period=1,
                no_progress=True,
                span_ids=(self._first.span_id,),
            )
        self._episode.add(facts.span_id)
        self._track(self._episode, restated, facts, out)
        return out

    def _done(self, facts: StepFacts, text: str) -> list[Finding]:
        """Count messages in a row that say the work is over (a message that does not
        ends the count): the conclusion "done" restated, whatever the wording."""
        out: list[Finding] = []
        if not declares_done(text):
            self._done_run = 0
            self._done_episode = None
            return out
        self._done_run += 1
        if self._done_run == 1:
            self._done_first = facts
            return out
        if self._done_episode is None:
            assert self._done_first is not None
            self._done_episode = Episode(
                RESTATED_CONCLUSION,
                self.config.restatement_repeats,
                self._done_first,
                description="the assistant said the work is done {count} times in a row, no action between",
                config=self.config,
                period=1,
                no_progress=True,
                span_ids=(self._done_first.span_id,),
            )
        self._done_episode.add(facts.span_id)
        self._track(self._done_episode, self._done_run, facts, out)
        return out


_FENCE = ("```", "~~~")
_LIST_ITEM = re.compile(r"^(?:[-*+\u2022]|\d{1,3}[.)]|[a-zA-Z][.)])\s")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _most_units(text: str) -> int:
    """An upper bound on the units :func:`chant_units` can find in ``text``: its lines, plus
    one per sentence end in them (``[.!?]``, a line is split only after one)."""
    return len(text.splitlines()) + text.count(".") + text.count("?") + text.count("!")


#: Share of an output's units that repeated short units must make up for short units to
#: count as chanting: a reply that is three quarters "Checking." is degenerate; a reply with a few
#: "Done." lines among real sentences is not.
SHORT_CHANT_SHARE = 0.75


def chant_units(text: str, min_chars: int, min_units: int = 2) -> Counter[str]:
    """Normalised lines and sentences of ``text`` outside code blocks, lists and tables,
    with their counts: those at least ``min_chars`` long, and shorter ones when repeated
    short units make up :data:`SHORT_CHANT_SHARE` of all units (a degenerate output).
    Empty when there are fewer than ``min_units`` candidate units (no count could reach
    it), without normalising any."""
    if _most_units(text) < min_units:
        return Counter()
    return _unit_counts(text, min_chars, min_units)


def _unit_counts(text: str, min_chars: int, min_units: int) -> Counter[str]:
    """:func:`chant_units` without the bound (the caller checked it)."""
    units: list[str] = []
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            in_fence = not in_fence
            continue
        if in_fence or not stripped:
            continue
        if line.startswith(("    ", "\t")):
            continue  # indented code block
        if _LIST_ITEM.match(stripped) or stripped.startswith("|") or stripped.count("|") >= 2:
            continue
        units.extend(_SENTENCE_END.split(stripped))
    counts: Counter[str] = Counter()
    if len(units) < min_units:
        return counts
    short: Counter[str] = Counter()
    for unit in units:
        normalised = normalize_words(unit)
        if not normalised:
            continue
        if len(normalised) >= min_chars:
            counts[normalised] += 1
        else:
            short[normalised] += 1
    repeated_short = sum(count for count in short.values() if count > 1)
    if short and repeated_short >= SHORT_CHANT_SHARE * len(units):
        counts.update({unit: count for unit, count in short.items() if count > 1})
    return counts


#: Longest unit a degenerate run is made of ("court", "the ", "上一轮"): a token or two.
RUN_UNIT_CHARS = 32
#: Characters of the middle of an output examined for a run (see :func:`degenerate_run`).
RUN_SAMPLE_CHARS = 2048
#: Characters of the sample's start looked for again to find its period.
_RUN_HEAD_CHARS = 8


def degenerate_run(text: str, min_chars: int) -> tuple[str, int] | None:
    """The unit and repeat count of an output that is mostly one short unit repeated back to
    back: one token emitted hundreds of times (``court court court``, ``courtcourt``,
    ``上一轮上一轮``), which has no lines or sentences to count. None unless such a unit,
    holding a letter and no line break, makes up :data:`SHORT_CHANT_SHARE` of the output
    and the output is at least ``min_chars`` long.

    A run that covers three quarters of the text covers its middle half, so the middle
    (at most :data:`RUN_SAMPLE_CHARS` characters of it) must be exactly periodic with a
    period of at most :data:`RUN_UNIT_CHARS`: found by looking for its first characters
    again within that distance and comparing the sample with itself shifted.
    """
    size = len(text)
    if size < min_chars:
        return None
    middle = text[size // 4 : size - size // 4]
    if len(middle) > RUN_SAMPLE_CHARS:
        start = (len(middle) - RUN_SAMPLE_CHARS) // 2
        middle = middle[start : start + RUN_SAMPLE_CHARS]
    if len(middle) < 2 * _RUN_HEAD_CHARS:
        return None
    head = middle[:_RUN_HEAD_CHARS]
    limit = RUN_UNIT_CHARS + _RUN_HEAD_CHARS
    period = middle.find(head, 1, limit)
    while period != -1 and middle[period:] != middle[:-period]:
        period = middle.find(head, period + 1, limit)
    if period == -1:
        return None
    unit = middle[:period]
    if "\n" in unit or not any(c.isalpha() for c in unit):
        # Whole lines repeated are left to the line counts (which skip code and tables);
        # rules, separators and padding ("-----", "0000") say nothing.
        return None
    count = text.count(unit)
    if count * len(unit) < SHORT_CHANT_SHARE * len(text.strip()):
        return None
    return unit, count


#: Tools through which agent frameworks deliver the model's final answer (smolagents'
#: ``final_answer``, pydantic-ai's ``final_result``): their arguments are what the model
#: said, so they are read for chanting like an LLM output.
ANSWER_TOOL = re.compile(
    r"^(?:final[_ ]?(?:answer|result|response)|submit[_ ]?(?:answer|result))$", re.IGNORECASE
)


@functools.lru_cache(maxsize=256)
def is_answer_tool(name: str) -> bool:
    """Whether ``name`` is a final-answer tool (:data:`ANSWER_TOOL`); tool names repeat, the
    match is remembered."""
    return ANSWER_TOOL.match(name) is not None


def _string_leaves(value: object, depth: int = 0) -> str:
    """The strings inside a tool's arguments, one per line (keys and envelopes left out)."""
    if isinstance(value, str):
        return value
    if depth >= 4:
        return ""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return "\n".join(text for item in value if (text := _string_leaves(item, depth + 1)))
    return ""


class ChantingDetector(IncrementalDetector):
    """``chanting``: one line or sentence repeated many times inside one LLM output."""

    signals = (CHANTING,)
    #: Step kinds read (see :mod:`~otel_semloop.detectors.suite`): LLM outputs and the
    #: arguments of final-answer tools (no other tool step).
    kinds: ClassVar[frozenset[StepKind]] = frozenset({StepKind.LLM, StepKind.TOOL})
    plain_tool_steps: ClassVar[bool] = False

    def reset(self) -> None:
        super().reset()
        config = self.config
        # Fewer units than a warning needs cannot be reported; only calibration wants them.
        self._floor = 2 if config.calibration else max(2, math.ceil(config.report_at * config.chant_repeats))
        #: The least output :func:`degenerate_run` examines (shorter: None, without a call).
        self._run_chars = config.chant_min_chars * config.chant_repeats

    def observe_facts(self, facts: StepFacts, step: Step) -> list[Finding]:
        kind = step.kind  # (not ``facts.kind``: see ``suite``, dispatch by step kind)
        if kind is _LLM:
            text = step.output_text
        elif kind is _TOOL and is_answer_tool(step.name):
            text = _string_leaves(step.tool_arguments)  # the answer given through the tool
        else:
            return []
        if not text:
            return []
        config = self.config
        floor = self._floor
        # Fewer units than a warning needs cannot be reported (the bound is checked here so
        # that most outputs cost a few C scans and no counter).
        top = 0
        if _most_units(text) >= floor:
            counts = _unit_counts(text, config.chant_min_chars, floor)
            if counts:
                top = max(counts.values())
        if top < config.chant_repeats and len(text) >= self._run_chars:
            # One token repeated back to back has no lines or sentences to count.
            run = degenerate_run(text, self._run_chars)
            if run is not None:
                top = max(top, run[1])
        if top < 2:
            return []
        episode = Episode(
            CHANTING,
            self.config.chant_repeats,
            facts,
            description="one line repeated {count} times inside a single LLM output",
            config=self.config,
            no_progress=True,
            span_ids=(facts.span_id,),
        )
        out: list[Finding] = []
        self._track(episode, top, facts, out)
        return out
