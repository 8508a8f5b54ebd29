"""A replay's facts equal the live guard's, step by step.

Replaying a finished trace (``Fingerprinter.lazy``) the fingerprinter leaves a call's
progress figures unread until the call repeats, keeps them unread while it repeats
verbatim, and reads a result or text seen before from its memo; live, everything is
computed at once, the plain way. Generated runs of tool calls that repeat with the same,
other or missing results (figures that rise, fall and stay), failures among them, must
give the same facts either way, and a reset between runs must forget everything.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.facts import Fingerprinter, StepFacts
from otel_semloop.model import Step, StepKind

#: Results whose figures move every way: percentages, n/m, work remaining, bare numbers,
#: several numbers at once, an acknowledgement, nothing, an error.
_RESULTS = (
    None,
    "",
    "ok",
    "progress 40%",
    "progress 70%",
    "progress 40%",
    "3/10 done",
    "7/10 done",
    "remaining: 12",
    "remaining: 4",
    "rows 10 20 30",
    "rows 11 25 31",
    "rows 9 20 30",
    "no results",
    "Error: not found",
    "Error: connection timed out",
    "line one\nline two 5",
)
_ARGUMENTS = (None, {"q": "a"}, {"q": "b"}, {"q": "a", "page": 2}, "raw text")
_FIELDS = (
    *(name for name in StepFacts.__slots__ if not name.startswith("_")),
    "signature",
    "arg_words",
    "transient_failure",
)

_STEP = st.tuples(
    st.sampled_from(("search", "read", "poll")),
    st.sampled_from(range(len(_ARGUMENTS))),
    st.sampled_from(range(len(_RESULTS))),
    st.booleans(),  # an LLM step before it
)


def _steps(plan: list[tuple[str, int, int, bool]]) -> list[Step]:
    steps: list[Step] = []
    for i, (name, args, result, llm_first) in enumerate(plan):
        if llm_first:
            steps.append(Step(StepKind.LLM, "chat", output_text=f"thinking {i % 3}", start_ns=i))
        text = _RESULTS[result]
        # Results as new string objects (a replay memo must compare text, not identity).
        fresh = None if text is None else "".join(list(text))
        steps.append(
            Step(
                StepKind.TOOL,
                name,
                span_id=f"s{i}",
                tool_arguments=_ARGUMENTS[args],
                tool_result=fresh,
                start_ns=i,
                end_ns=i + 1,
            )
        )
    return steps


def _facts(fingerprinter: Fingerprinter, steps: list[Step]) -> list[tuple[object, ...]]:
    fingerprinter.reset()
    return [
        tuple(getattr(facts, field) for field in _FIELDS)
        for facts in (fingerprinter.facts(step, index) for index, step in enumerate(steps))
    ]


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, max_size=30), st.lists(_STEP, max_size=10))
def test_replayed_facts_equal_live_facts(
    plan: list[tuple[str, int, int, bool]], other: list[tuple[str, int, int, bool]]
) -> None:
    config = DetectorConfig()
    live, replay = Fingerprinter(config), Fingerprinter(config)
    replay.lazy = True
    for run in (_steps(plan), _steps(other), _steps(plan)):  # a reset between runs
        assert _facts(replay, run) == _facts(live, run)


def test_a_call_repeated_verbatim_then_answered_otherwise_compares_with_its_figures() -> None:
    # The same call, the same result three times (figures never read), then a higher one.
    plan = [("poll", 1, 3, False)] * 3 + [("poll", 1, 4, False), ("poll", 1, 5, False)]
    config = DetectorConfig()
    live, replay = Fingerprinter(config), Fingerprinter(config)
    replay.lazy = True
    steps = _steps(plan)
    replayed = _facts(replay, steps)
    assert replayed == _facts(live, steps)
    progressed = _FIELDS.index("progressed")
    assert [row[progressed] for row in replayed] == [False, False, False, True, False]


#: Argument values that are equal for ``==`` but not as JSON (1, 1.0, True; "1"), nested
#: ones, a position name, a volatile name, a command, keys that collide for ``==``.
_VALUES = st.sampled_from((1, 1.0, True, "1", "x", " X ", None, [1], [1.0], {"a": 1}, {"a": True}))
_KEYS = st.sampled_from(("q", "page", "request_id", "command", "path", 1, True))
_ARGS = st.dictionaries(_KEYS, _VALUES, max_size=3)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(("search", "bash")), _ARGS, _ARGS)
def test_calls_with_the_same_arguments_have_the_same_signature(name: str, left: dict, right: dict) -> None:
    replay = Fingerprinter(DetectorConfig())
    replay.lazy = True
    one = replay.facts(Step(StepKind.TOOL, name, tool_arguments=left, tool_result="r"), 0)
    two = replay.facts(Step(StepKind.TOOL, name, tool_arguments=right, tool_result="r"), 1)
    if two.same_arguments(one):
        assert one.signature == two.signature
    if left == right and one.call == two.call:
        assert two.same_arguments(one)
