"""The judge's options go through the project's one settings mechanism: every option is read
from its ``SEMLOOP_JUDGE*`` variable, refused past its bound naming the variable, and an
explicit option (a flag) wins over the variable."""

from __future__ import annotations

import pytest

from otel_semloop.errors import ConfigError
from otel_semloop.judges.settings import ENV_PREFIX, JudgeSettings
from otel_semloop.settings import environment_variables, specs

VARIABLES = {
    "judge": "SEMLOOP_JUDGE",
    "escalate": "SEMLOOP_JUDGE_ESCALATE",
    "model": "SEMLOOP_JUDGE_MODEL",
    "base_url": "SEMLOOP_JUDGE_BASE_URL",
    "timeout": "SEMLOOP_JUDGE_TIMEOUT",
    "concurrency": "SEMLOOP_JUDGE_CONCURRENCY",
    "cache": "SEMLOOP_JUDGE_CACHE",
    "input_usd_per_million": "SEMLOOP_JUDGE_INPUT_PRICE",
    "output_usd_per_million": "SEMLOOP_JUDGE_OUTPUT_PRICE",
}
SAMPLES = {
    "judge": ("local", "local"),
    "escalate": ("0.25", "0.25"),
    "model": ("gpt-4o-mini", "gpt-4o-mini"),
    "base_url": ("http://127.0.0.1:9", "http://127.0.0.1:9"),
    "timeout": ("2.5", 2.5),
    "concurrency": ("3", 3),
    "cache": ("answers.sqlite", "answers.sqlite"),
    "input_usd_per_million": ("0.042", 0.042),
    "output_usd_per_million": ("1.5", 1.5),
}


def test_every_judge_option_is_a_declared_setting_with_its_variable():
    assert environment_variables(JudgeSettings, ENV_PREFIX) == VARIABLES
    assert set(specs(JudgeSettings)) == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_option_is_read_from_its_variable_and_a_flag_wins(name):
    text, value = SAMPLES[name]
    assert getattr(JudgeSettings.from_env({VARIABLES[name]: text}), name) == value
    default = getattr(JudgeSettings(), name)
    if default is not None:
        assert getattr(JudgeSettings.from_env({VARIABLES[name]: text}, **{name: default}), name) == default


@pytest.mark.parametrize(
    ("name", "inside", "outside"),
    [("timeout", 0.0005, 0), ("concurrency", 1, 0), ("input_usd_per_million", 0, -0.0005)],
)
def test_numbers_are_refused_just_past_their_bound_naming_the_variable(name, inside, outside):
    assert getattr(JudgeSettings.from_env({}, **{name: inside}), name) == inside
    with pytest.raises(ConfigError, match=VARIABLES[name]):
        JudgeSettings.from_env({VARIABLES[name]: str(outside)})
    with pytest.raises(ConfigError, match=name):
        JudgeSettings(**{name: outside})
    with pytest.raises(ConfigError, match=VARIABLES[name]):
        JudgeSettings.from_env({VARIABLES[name]: "many"})


def test_backend_names_are_normalised_and_unknown_ones_refused_naming_the_variable():
    assert JudgeSettings(judge="Jev").judge == "system-one"
    assert JudgeSettings.from_env({"SEMLOOP_JUDGE": "off"}).enabled is False
    assert JudgeSettings.from_env({"SEMLOOP_JUDGE": ""}).judge == "none"
    with pytest.raises(ConfigError, match="SEMLOOP_JUDGE"):
        JudgeSettings.from_env({"SEMLOOP_JUDGE": "oracle"})
    with pytest.raises(ConfigError, match="escalate"):
        JudgeSettings.from_env({"SEMLOOP_JUDGE_ESCALATE": "sometimes"})
    with pytest.raises(ConfigError, match="unknown option"):
        JudgeSettings.from_env({}, temperature=0.5)
    assert JudgeSettings(escalate=0.25).escalate == "0.25"  # a rate given as a number
