"""Shortcuts in scoring (detectors and lexical metric) give exactly what the plain code gives.

Each test compares the function that takes a shortcut with the plain computation it
replaces, on generated input that favours the cases where the shortcut could go wrong;
each was checked to fail with its shortcut broken by hand.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from otel_semloop.detectors import arguments
from otel_semloop.detectors import text as text_detectors
from otel_semloop.detectors.base import Episode
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.facts import StepFacts
from otel_semloop.detectors.stagnation import (
    score_reasoning_stagnation,
)
from otel_semloop.model import Step, StepKind
from otel_semloop.policy import Policy
from otel_semloop.verdict import Label, LexicalResult
from tests.support.traces import flat_trace

# -- shell forms: a command of plain words is its own canonical and near form --------------

_SHELL_PIECES = [
    "ls", "grep", "src/a.py", "tests", "-la", "-", "--all", "--", "x/", "/", "./a", "./", ".",
    "a./b", " ", " ", " ", "  ", "\t", "\n", "\x0b", "\xa0", "\u2003", "'", '"', "\\", "#", "|",
    "&&", ";", "(", ">", "\x7f", "\u00e9", "q=1", "*.py", "~",
]  # fmt: skip


def plain_shell_form(command: str, *, keep_flags: bool) -> str:
    segments = arguments._shell_segments(command)
    if segments is None:
        return " ".join(command.split())
    return " ".join(arguments._segment_form(words, keep_flags=keep_flags) for words in segments)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_SHELL_PIECES), max_size=12).map("".join))
@example("src/a.py then plans")
@example("ls src/a.py x/")
@example("ls x/ a")
@example("ls ./a")
@example("./a b")
@example("ls -la")
@example("ls\xa0a")
@example("ls\x0ba")
@example("ls  a")
@example(" ls a")
@example("a" * 2001)
def test_plain_shell_words_are_their_own_forms(command: str) -> None:
    assert arguments.canonical_shell(command) == plain_shell_form(command, keep_flags=True)
    assert arguments.shell_near_form(command) == plain_shell_form(command, keep_flags=False)


def test_plain_shell_words_take_the_shortcut() -> None:
    """The shortcut is taken for plain words (else the test above tests nothing)."""
    for command in ("src/a.py", "then the plans", "ls src a.py q=1 *.py ~", "a./b x-y"):
        assert arguments._shell_as_is(command)
    for command in ("ls -la", "ls x/", "./a", "ls ./a", "a  b", " a", "a ", "a|b", "a\tb", "\u00e9"):
        assert not arguments._shell_as_is(command)


# -- stagnation: the LCS bound asked below the least length that matters -------------------


def test_a_ratio_whose_lcs_bound_is_exact_is_not_skipped() -> None:
    """Pair (1, 2)'s ratio equals its LCS bound (0.9487, above pair (0, 1)'s 0.9444):
    rapidfuzz 3.14 answers 0 when asked whether the LCS reaches exactly its length."""
    outputs = [
        "error search search search search search search search search search search search search"
        " search retry fix search search search search search search search search retry config"
        " search search search",
        "search search search search search search search search search search search search search"
        " search search retry search search search search search search search search retry config"
        " search search search",
        "handler search search search search search search search search search search search search"
        " search search search search retry search search search search search search search search"
        " config search search search",
    ]
    expected = (0.5, "High reasoning overlap (0.95) at steps 1 and 2.")
    assert score_reasoning_stagnation(outputs) == expected


# -- episodes: the time of a step is its end, else its start --------------------------------


def test_an_episode_update_takes_the_step_end_else_its_start() -> None:
    config = DetectorConfig()
    ended = StepFacts(Step(kind=StepKind.TOOL, name="t", span_id="a", start_ns=10, end_ns=25), 3)
    open_ = StepFacts(Step(kind=StepKind.TOOL, name="t", span_id="b", start_ns=40), 4)
    episode = Episode("s", 2, ended, description="{count}", config=config)
    assert episode.update(2, ended) is not None
    found = episode.finding()
    assert (found.detected_step, found.detected_ns, found.repeats, found.severity) == (3, 25, 2, 1.0)
    episode.update(3.5, open_, repeats=7)
    found = episode.finding()
    assert (found.detected_step, found.detected_ns, found.repeats, found.severity) == (4, 40, 7, 1.75)
    assert (episode.detected_step, episode.detected_ns, episode.count) == (4, 40, 3.5)
    assert Episode("s", 0, ended, description="", config=config).update(5, ended) is None  # severity 0


# -- policy: no finding, no sorting or deciding ----------------------------------------------


@pytest.mark.parametrize("empty", [[], ()])
@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("calibration", [None, {}, {"action_cycle": 0.25}])
def test_no_findings_give_the_verdict_the_full_policy_path_gives(empty, partial, calibration) -> None:
    # An empty list or tuple takes a shortcut; a generator (whose truth says nothing) the
    # full path: the verdicts must be equal, field by field.
    lexical = LexicalResult(score=0.8, breakdown={"tool_repetition": 1.0}, reason="ok")
    policy = Policy(threshold=0.4)
    short = policy.verdict(empty, lexical=lexical, partial=partial, calibration=calibration)
    full = policy.verdict(iter(empty), lexical=lexical, partial=partial, calibration=calibration)
    assert dataclasses.astuple(short) == dataclasses.astuple(full)
    assert short == full and short.label is Label.NO_LOOP
    assert short.calibration is not calibration  # (a copy, as the full path makes)


# -- a reset copies the zero peaks rather than building them -----------------------------


def test_a_reset_detector_reports_the_calibration_of_a_new_one() -> None:
    # Each detector's peaks start from a copy of its zeroed signals: a run that raised them
    # must leave nothing behind for the next (the copy, not the template, is written).
    from bench.detector_speed import genai_records
    from otel_semloop.builder import build_trace
    from otel_semloop.detectors.suite import default_detectors

    config = DetectorConfig(calibration=True)
    loop = flat_trace(
        [Step(StepKind.TOOL, "search", tool_arguments={"q": "a"}, tool_result="none")] * 12
    )
    other = build_trace(genai_records(20))
    for detector in default_detectors(config):
        detector.detect(loop)
        assert any(detector.calibration.values()) or type(detector).__name__ not in _RAISED
        for trace in (other, loop):
            fresh = type(detector)(config)
            assert detector.detect(trace) == fresh.detect(trace)
            assert detector.calibration == fresh.calibration, type(detector).__name__
        detector.reset()
        assert detector.calibration == dict.fromkeys(detector.signals, 0.0)


#: Detectors whose peaks the looping run above raises (so the check has teeth).
_RAISED = {"ActionCycleDetector", "RepeatedResultDetector", "StaleDetector", "CallCeilingDetector"}


# -- stale time: a step's time read from its slots (``time_ns`` written out) ---------------


@pytest.mark.parametrize("last_end", [31, None])
def test_stale_time_counts_from_the_last_novel_steps_end_to_each_steps_end_or_start(last_end) -> None:
    from otel_semloop.detectors.stale import STALE_TIME, StaleDetector

    second = 1_000_000_000
    config = DetectorConfig(calibration=True, stale_seconds=100)

    def read(start_s: int, end_s: int | None) -> Step:
        end_ns = None if end_s is None else end_s * second
        return Step(
            StepKind.TOOL,
            "read",
            tool_arguments={"p": "a"},
            tool_result="x",
            start_ns=start_s * second,
            end_ns=end_ns,
        )

    steps = [read(0, 10), read(20, 21), read(30, last_end)]
    detector = StaleDetector(config)
    detector.detect(flat_trace(steps))
    # Since the novel step's end (10 s) to the last step's end, or its start when it has none.
    expected = ((30 if last_end is None else last_end) - 10) / 100
    assert detector.calibration[STALE_TIME] == round(expected, 4)


# -- monologue: an LLM output that calls tools ends a run (and one broken stays broken) ----


def test_an_llm_output_calling_tools_ends_a_monologue_run() -> None:
    from otel_semloop.detectors.text import MONOLOGUE, MonologueDetector
    from otel_semloop.tool_calls import ToolCall

    said = "I will check the build log again."
    calls = (ToolCall("read_log"),)
    plain = [Step(StepKind.LLM, "chat", output_text=said, start_ns=i) for i in range(3)]
    broken = [
        Step(StepKind.LLM, "chat", output_text=said, start_ns=0),
        Step(StepKind.LLM, "chat", output_text=said, tool_calls=calls, start_ns=1),
        Step(StepKind.LLM, "chat", output_text=said, tool_calls=calls, start_ns=2),  # (already broken)
        Step(StepKind.LLM, "chat", output_text=said, start_ns=3),
        Step(StepKind.LLM, "chat", output_text=said, start_ns=4),
    ]
    config = DetectorConfig(calibration=True)
    detector = MonologueDetector(config)
    assert [f.signal for f in detector.detect(flat_trace(plain))] == [MONOLOGUE]
    assert [(f.repeats, f.started_step) for f in detector.detect(flat_trace(broken))] == [(2, 3)]
    assert detector.calibration[MONOLOGUE] == round(2 / config.monologue_repeats, 4)


# -- chanting: an output too short for a degenerate run is not examined for one ------------


@pytest.mark.parametrize("size", [119, 120, 121, 240])
def test_a_degenerate_run_is_found_from_the_least_length_it_needs(size: int) -> None:
    # ``degenerate_run`` is called only from ``chant_min_chars * chant_repeats`` characters
    # (below, it returns None itself): the detector must agree with it at the boundary.
    config = DetectorConfig(calibration=True)
    text = ("court" * 60)[:size]
    expected = text_detectors.degenerate_run(text, config.chant_min_chars * config.chant_repeats)
    detector = text_detectors.ChantingDetector(config)
    detector.detect(flat_trace([Step(StepKind.LLM, "chat", output_text=text)]))
    peak = detector.calibration[text_detectors.CHANTING]
    assert peak == (0.0 if expected is None else round(expected[1] / config.chant_repeats, 4))
    assert (expected is None) == (size < 120)
