"""The suite's dispatch by step kind cannot silently skip a step a detector reads.

:class:`~otel_semloop.detectors.suite.DetectorSuite` calls a detector only for the step
kinds its class declares (``kinds``). Each default detector is held to its declaration on
every trace the verdict snapshot scores (the evaluation corpus in three conventions and
every framework recording, the semloop benchmark, deepeval's golden file, generated agent
runs) and on runs built here to reach the rarer paths (failures, retry storms, hand-offs,
final-answer tools, budgets): fed every step, or only the steps of the kinds it declares,
it reports the same findings after every step, and the same findings and calibration at
the end. A detector that starts reading a kind it did not declare fails here, not in a
verdict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from bench.verdict_snapshot import inputs
from otel_semloop.builder import build_trace
from otel_semloop.detectors.base import IncrementalDetector
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.facts import Fingerprinter, StepFacts
from otel_semloop.detectors.suite import (
    DetectorSuite,
    default_detectors,
    kinds_read,
    plain_tool_step,
    reads_step,
)
from otel_semloop.model import Step, StepKind, ToolCall, Trace
from otel_semloop.verdict import Finding
from tests.support.traces import flat_trace

#: Budgets on (the budget detector reads every kind) and calibration on (peaks below a
#: warning are compared too), besides the defaults.
CONFIGS = (
    DetectorConfig(),
    DetectorConfig(calibration=True, max_steps=40, max_tool_calls=20, max_tokens=5000, max_wall_seconds=30),
)


def _constructed() -> Iterator[Trace]:
    """Runs that reach the paths the recordings rarely take."""
    tool = StepKind.TOOL
    llm = StepKind.LLM
    agent = StepKind.AGENT
    steps: list[Step] = []
    clock = 1_000_000_000
    for i in range(60):
        clock += 1_000_000_000
        phase = i % 10
        if phase in (0, 5):
            steps.append(Step(agent, ("planner", "coder")[i % 2], output_text="handing over", start_ns=clock))
        elif phase == 1:
            steps.append(
                Step(
                    llm,
                    "chat",
                    output_text="Checking.\n" * 12,
                    tool_calls=(ToolCall("search"),),
                    start_ns=clock,
                )
            )
        elif phase == 2:
            steps.append(
                Step(
                    tool,
                    "search",
                    tool_arguments={"q": f"x{i % 3}"},
                    tool_result="[]",
                    start_ns=clock,
                    end_ns=clock,
                )
            )
        elif phase == 3:
            steps.append(
                Step(
                    tool,
                    "fetch",
                    tool_arguments={"url": "https://example.test/a"},
                    is_error=True,
                    error_type="503",
                    error_message="service unavailable",
                    start_ns=clock,
                )
            )
        elif phase == 4:
            steps.append(
                Step(llm, "chat", is_error=True, error_type="429", input_text="retry", start_ns=clock)
            )
        elif phase == 6:
            steps.append(Step(tool, "transfer_to_coder", handoff_to="coder", start_ns=clock))
        elif phase == 7:
            steps.append(Step(tool, "final_answer", tool_arguments={"answer": "Done. " * 15}, start_ns=clock))
        elif phase == 8:
            steps.append(
                Step(llm, "chat", output_text="I will read the file again.", input_tokens=400, start_ns=clock)
            )
        else:
            steps.append(Step(StepKind.OTHER, "http", start_ns=clock))
    yield flat_trace(steps)
    yield flat_trace([dataclasses.replace(s, children=[]) for s in reversed(steps)])


def _traces() -> list[Trace]:
    traces = [build_trace(records) for _, records in inputs()]
    return [trace for trace in traces if trace.steps] + list(_constructed())


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    return _traces()


def _facts(trace: Trace, config: DetectorConfig) -> list[tuple[StepFacts, Step]]:
    fingerprinter = Fingerprinter(config)
    fingerprinter.lazy = True  # as DetectorSuite.detect replays a finished trace
    return [(fingerprinter.facts(step, index), step) for index, step in enumerate(trace.steps)]


def _key(findings: list[Finding]) -> list[tuple[object, ...]]:
    return [dataclasses.astuple(finding) for finding in findings]


@pytest.mark.parametrize("config", CONFIGS, ids=("defaults", "budgets+calibration"))
def test_each_detector_reads_only_the_kinds_it_declares(traces: list[Trace], config: DetectorConfig) -> None:
    names = [type(d).__name__ for d in default_detectors(config)]
    skipped = dict.fromkeys(names, 0)
    skipped_plain = dict.fromkeys(names, 0)
    # The second configuration on every other trace keeps the test's cost near 10 s.
    for trace in traces if config is CONFIGS[0] else traces[::2]:
        facts = _facts(trace, config)
        every: list[IncrementalDetector] = default_detectors(config)
        declared: list[IncrementalDetector] = default_detectors(config)
        for name, full, some in zip(names, every, declared, strict=True):
            for f, step in facts:
                seen = full.observe_facts(f, step)
                if reads_step(some, step):
                    assert _key(some.observe_facts(f, step)) == _key(seen), (name, trace.trace_id, f.index)
                else:
                    skipped[name] += 1
                    if f.kind is StepKind.TOOL:
                        skipped_plain[name] += 1
                    assert not seen, (name, "reported on a step it does not declare", f.kind)
            assert _key(some.findings()) == _key(full.findings()), (name, trace.trace_id)
            assert some.calibration == full.calibration, (name, trace.trace_id)
    # The check has teeth: every detector that declares kinds had steps withheld from it,
    # plain tool calls from those that do not read them.
    for detector in default_detectors(config):
        if kinds_read(detector) != frozenset(StepKind):
            assert skipped[type(detector).__name__] > 0, type(detector).__name__
        if StepKind.TOOL in kinds_read(detector) and not getattr(type(detector), "plain_tool_steps", True):
            assert skipped_plain[type(detector).__name__] > 0, type(detector).__name__


def test_the_suite_reports_what_every_detector_fed_every_step_reports(traces: list[Trace]) -> None:
    config = CONFIGS[1]
    suite = DetectorSuite(config)
    for trace in traces[::7]:
        detectors = default_detectors(config)
        facts = _facts(trace, config)
        suite.reset()
        for (f, step), index in zip(facts, range(len(facts)), strict=True):
            plain = [found for d in detectors for found in d.observe_facts(f, step)]
            assert _key(suite.observe(step, index)) == _key(plain), (trace.trace_id, index)
        assert _key(suite.findings()) == _key([x for d in detectors for x in d.findings()])
        assert suite.calibration == DetectorSuite(config, detectors).calibration


def test_an_llm_step_reaches_only_the_detectors_that_read_llm_steps() -> None:
    suite = DetectorSuite(DetectorConfig())
    llm_readers = {type(d).__name__ for d in suite.detectors if StepKind.LLM in kinds_read(d)}
    assert llm_readers == {
        "FailureDetector",
        "RetryStormDetector",
        "MonologueDetector",
        "RestatementDetector",
        "ChantingDetector",
    }
    assert len(suite._observers[StepKind.LLM]) == len(llm_readers)
    assert len(suite._observers[StepKind.TOOL]) == len(suite.detectors)


def test_a_plain_tool_call_skips_the_hand_off_and_chanting_detectors() -> None:
    suite = DetectorSuite(DetectorConfig())
    skipping = {type(d).__name__ for d in suite.detectors if not getattr(type(d), "plain_tool_steps", True)}
    assert skipping == {"HandoffCycleDetector", "ChantingDetector"}
    assert len(suite._plain_tool_observers) == len(suite.detectors) - 2
    assert plain_tool_step(Step(StepKind.TOOL, "search"))
    assert not plain_tool_step(Step(StepKind.TOOL, "transfer", handoff_to="coder"))
    assert not plain_tool_step(Step(StepKind.TOOL, "final_answer"))
    assert not plain_tool_step(Step(StepKind.LLM, "search"))


def test_detect_reports_what_every_detector_fed_every_step_reports(traces: list[Trace]) -> None:
    # ``detect`` writes the dispatch rule out (kind, then plain tool call): it must hand
    # each detector every step it reads, like ``observe`` (the test above).
    for config in CONFIGS:
        suite = DetectorSuite(config)
        for trace in traces[::3] + list(_constructed()):
            detectors = default_detectors(config)
            for f, step in _facts(trace, config):
                for detector in detectors:
                    detector.observe_facts(f, step)
            expected = [x for d in detectors for x in d.findings()]
            assert _key(suite.detect(trace)) == _key(expected), trace.trace_id
            assert suite.calibration == DetectorSuite(config, detectors).calibration, trace.trace_id
            # (A replay builds no per-step finding, ``reporting`` off: the same findings.)
            assert all(d.reporting for d in suite.detectors)
            for detector in detectors:
                alone = type(detector)(config)
                assert _key(alone.detect(trace)) == _key(detector.findings()), type(detector).__name__
                assert alone.calibration == detector.calibration and alone.reporting
