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
from otel_semloop.tool_calls import ToolCall

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
    "text",
    "text_novel",
    "text_epoch",
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


#: Assistant texts: repeats, texts equal once normalised (case, punctuation, numbers),
#: texts that normalise to nothing, and none.
_TEXTS = (
    "",
    "Checking the logs.",
    "checking the LOGS!",
    "Checking the logs 42.",
    "...",
    "done",
    "Done.",
    "other",
)
_TEXT_FIELDS = ("text", "text_novel", "text_epoch")

_TEXT_STEP = st.tuples(
    st.sampled_from(("llm", "llm_calls_tool", "tool", "handoff", "agent", "other")),
    st.sampled_from(range(len(_TEXTS))),
)


def _text_steps(plan: list[tuple[str, int]]) -> list[Step]:
    steps: list[Step] = []
    for i, (kind, text) in enumerate(plan):
        output = "".join(list(_TEXTS[text]))  # a new string object each time
        if kind in ("llm", "llm_calls_tool"):
            calls = (ToolCall("search"),) if kind == "llm_calls_tool" else ()
            steps.append(Step(StepKind.LLM, "chat", output_text=output, tool_calls=calls, start_ns=i))
        elif kind in ("tool", "handoff"):
            handoff = "billing" if kind == "handoff" else None
            steps.append(
                Step(
                    StepKind.TOOL,
                    "search",
                    tool_arguments={"q": output},
                    tool_result=output,
                    handoff_to=handoff,
                    start_ns=i,
                )
            )
        elif kind == "agent":
            steps.append(Step(StepKind.AGENT, "coder", output_text=output, start_ns=i))
        else:
            steps.append(Step(StepKind.OTHER, "misc", output_text=output, start_ns=i))
    return steps


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_TEXT_STEP, max_size=25),
    st.lists(_TEXT_STEP, max_size=10),
    st.lists(st.tuples(st.integers(0, 30), st.sampled_from(_TEXT_FIELDS)), max_size=12),
)
def test_replayed_text_novelty_equals_live_whenever_it_is_read(
    plan: list[tuple[str, int]], other: list[tuple[str, int]], reads: list[tuple[int, str]]
) -> None:
    # A replay settles assistant texts only when one of their fields is read (in any order,
    # at any time, also after the next run started): the values equal the live ones.
    config = DetectorConfig()
    live, replay = Fingerprinter(config), Fingerprinter(config)
    replay.lazy = True
    first, second = _text_steps(plan), _text_steps(other)
    expected = [_facts(live, first), _facts(live, second)]
    replay.reset()
    replayed = []
    for index, step in enumerate(first):
        replayed.append(replay.facts(step, index))
        for at, field in reads:  # read some field of an earlier step now
            if at == index:
                getattr(replayed[at // 2], field)
    replay.reset()  # the next run; the first run's facts are read after it
    again = [replay.facts(step, index) for index, step in enumerate(second)]
    for facts, want in zip(replayed, expected[0], strict=True):
        assert tuple(getattr(facts, field) for field in _FIELDS) == want
    assert [tuple(getattr(f, field) for field in _FIELDS) for f in again] == expected[1]


def test_a_replay_digests_no_assistant_text_nobody_reads() -> None:
    replay = Fingerprinter(DetectorConfig())
    replay.lazy = True
    replay.reset()
    steps = _text_steps([("llm_calls_tool", 1), ("tool", 2), ("llm_calls_tool", 2), ("tool", 1)])
    facts = [replay.facts(step, index) for index, step in enumerate(steps)]
    assert not replay._text_reads  # nothing read, nothing digested
    assert facts[3].text_epoch == 1  # "checking the logs" said twice: one new text
    assert len(replay._text_reads) == 2


def test_a_replay_leaves_llm_inputs_unread_until_their_call_is_read() -> None:
    # An LLM step's ``call`` (its name and whole input) is computed on first read in a
    # replay (the facts are built as plain StepFacts, then made lazy-call facts): a whole
    # trace detected reads no LLM input, and a later read gives the live value.
    from bench.detector_speed import genai_records
    from otel_semloop.builder import build_trace
    from otel_semloop.detectors.suite import DetectorSuite

    config = DetectorConfig()
    trace = build_trace(genai_records(30))
    llm = [index for index, step in enumerate(trace.steps) if step.kind is StepKind.LLM]
    assert llm
    suite = DetectorSuite(config)
    suite.detect(trace)
    assert not any(trace.steps[index].is_decoded("input_text") for index in llm)
    replay, live = Fingerprinter(config), Fingerprinter(config)
    replay.lazy = True
    replayed = [replay.facts(step, index) for index, step in enumerate(trace.steps)]
    assert not any(trace.steps[index].is_decoded("input_text") for index in llm)
    expected = [live.facts(step, index) for index, step in enumerate(trace.steps)]
    for index in llm:
        assert replayed[index].call == expected[index].call != 0
        assert replayed[index].call == expected[index].call  # (read twice: kept)
    for facts, want in zip(replayed, expected, strict=True):
        assert tuple(getattr(facts, f) for f in _FIELDS) == tuple(getattr(want, f) for f in _FIELDS)
