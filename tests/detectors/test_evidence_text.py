"""Degenerate text of one token repeated back to back (no lines or sentences to count), on
both sides, in every convention (``convention_runs``)."""

from __future__ import annotations

import pytest

from otel_semloop.detectors.text import CHANTING, degenerate_run
from otel_semloop.verdict import Label
from tests.support.convention_runs import CONVENTIONS, score_in
from tests.support.scenarios import Scenario, found

TOKENS = [
    "Plan: " + "court" * 300,
    "Now I will update the handler so that " + " ".join(["the"] * 300),
    "上一轮" * 300,
    "加油\uff01 " * 250,  # with a full-width exclamation mark
]


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("text", TOKENS, ids=["glued", "spaced", "cjk", "cjk-spaced"])
def test_one_token_repeated_hundreds_of_times_is_a_loop(convention, text):
    run = Scenario("update the webhook handler").think("Reading.", calls=[("read", {"path": "hook.py"})])
    run.tool("read", {"path": "hook.py"}, "def hook(req):\n    return 200").think(text)
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP and found(verdict, CHANTING) is not None


LOOKALIKES = [
    # a long answer with a rule, padding and a table whose rows repeat
    "## Report\n\n" + "=" * 400 + "\n\nAll twelve services answered; the slowest was billing.\n",
    "| id | state |\n|----|-------|\n" + "| 7 | ok |\n" * 60 + "\nSixty rows, all ok.",
    "```python\n" + "x = 1\n" * 80 + "```\nThe generated fixture sets x eighty times on purpose.",
    # emphasis and laughter inside real prose
    "Ha" * 12 + "! That bug was in the retry loop all along. I fixed the off-by-one and the tests pass; "
    "the handler now validates signatures before parsing the body, as the spec requires.",
    "A base64 blob follows: " + "QUFB" * 20 + " and then the decoded header, which names the signing key.",
]


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("text", LOOKALIKES, ids=["rule", "table", "code", "laughter", "blob"])
def test_repeated_structure_inside_a_real_answer_is_healthy(convention, text):
    assert score_in(Scenario("report").think(text), convention).label is Label.NO_LOOP


def test_a_run_must_make_up_most_of_a_long_enough_output():
    run = degenerate_run("court" * 30, 120)
    assert run is not None and run[1] >= 29 and sorted(run[0]) == sorted("court")  # a rotation of it
    assert degenerate_run("court" * 20, 120) is None  # 100 characters: too short to judge
    assert degenerate_run("Intro. " * 40 + "court" * 30, 120) is None  # a quarter of it
