"""Detector thresholds: refused when impossible, settable from SEMLOOP_DETECT_* variables."""

from __future__ import annotations

import pytest

from bench.deepeval_tree import tree_to_spans
from otel_semloop.builder import build_trace
from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.errors import ConfigError
from otel_semloop.scoring import Scorer


def _identical_calls(count: int) -> dict:
    call = {"type": "tool", "name": "grep", "input": {"pattern": "x"}, "output": "no matches", "children": []}
    return {"type": "agent", "name": "a", "input": "find x", "output": "", "children": [call] * count}


def test_variables_override_the_defaults_and_arguments_override_the_variables():
    env = {
        "SEMLOOP_DETECT_IDENTICAL_REPEATS": "6",
        "SEMLOOP_DETECT_MAX_STEPS": "200",
        "SEMLOOP_DETECT_STALE_SECONDS": "none",
        "SEMLOOP_DETECT_CALIBRATION": "true",
    }
    config = DetectorConfig.from_env(env)
    assert (config.identical_repeats, config.max_steps, config.stale_seconds, config.calibration) == (
        6,
        200.0,
        None,
        True,
    )
    assert DetectorConfig.from_env(env, identical_repeats=5).identical_repeats == 5
    assert DetectorConfig.from_env({}) == DetectorConfig()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("SEMLOOP_DETECT_IDENTICAL_REPEATS", "four"),
        ("SEMLOOP_DETECT_IDENTICAL_REPEATS", "0"),
        ("SEMLOOP_DETECT_MAX_COST", "-1"),
        ("SEMLOOP_DETECT_CALIBRATION", "maybe"),
    ],
)
def test_a_bad_value_is_refused_naming_what_is_wrong(variable, value):
    with pytest.raises(ConfigError, match=variable):
        DetectorConfig.from_env({variable: value})


def test_the_default_scorer_reads_the_environment(monkeypatch):
    trace = build_trace(tree_to_spans(_identical_calls(4), "env"))
    assert Scorer().score(trace).label.value == "loop"
    monkeypatch.setenv("SEMLOOP_DETECT_IDENTICAL_REPEATS", "8")
    monkeypatch.setenv("SEMLOOP_DETECT_REPEATED_RESULT_REPEATS", "8")
    monkeypatch.setenv("SEMLOOP_DETECT_CYCLE_REPEATS", "8")
    monkeypatch.setenv("SEMLOOP_DETECT_STALE_STEPS", "16")
    assert Scorer().score(trace).label.value == "no_loop"
