"""Failures: permanent errors stop fast, transient ones that recover are not loops, storms."""

from __future__ import annotations

from otel_semloop.detectors.failures import (
    PERMANENT_ERROR,
    REPEATED_ERROR,
    RETRY_STORM,
    TRANSIENT_ERROR,
    FailureDetector,
)
from otel_semloop.verdict import Action, Label
from tests.support.scenarios import Scenario, found

CALL = {"url": "https://api.example.com/orders"}


def test_the_second_identical_401_is_a_conclusive_permanent_error():
    run = Scenario().fail("http_get", CALL, "401 Unauthorized").fail("http_get", CALL, "401 Unauthorized")
    verdict = run.verdict()
    finding = found(verdict, PERMANENT_ERROR)
    assert finding is not None and finding.conclusive and finding.permanent
    assert verdict.action is Action.STOP and verdict.label is Label.LOOP


def test_a_single_401_is_not_a_loop():
    assert Scenario().fail("http_get", CALL, "401 Unauthorized").verdict().label is Label.NO_LOOP


def test_repeated_403_and_invalid_arguments_are_permanent():
    for error in ("HTTP 403 Forbidden", "invalid argument: limit must be > 0"):
        run = Scenario().fail("call", CALL, error).think("Trying again.").fail("call", CALL, error)
        assert found(run.verdict(), PERMANENT_ERROR) is not None, error


def test_the_same_call_failing_the_same_way_three_times_is_conclusive():
    run = Scenario()
    for _ in range(3):
        run.think("Building again.")
        run.tool("build", {"target": "app"}, "error: undefined symbol foo at main.c:12")
    finding = found(run.verdict(), REPEATED_ERROR)
    assert finding is not None and finding.conclusive and finding.no_progress


def test_the_same_call_failing_twice_only_warns():
    run = Scenario()
    for _ in range(2):
        run.tool("build", {"target": "app"}, "error: undefined symbol foo")
    finding = found(run.verdict(), REPEATED_ERROR)
    assert finding is not None and not finding.conclusive


def test_an_edit_between_failing_builds_restarts_the_count():
    run = Scenario()
    for i in range(4):
        run.tool("edit", {"file": "main.c", "patch": f"fix attempt {i}"}, "applied")
        run.tool("build", {"target": "app"}, "error: undefined symbol foo")
    assert found(run.verdict(), REPEATED_ERROR) is None


def test_five_transient_errors_without_success_are_conclusive_but_not_a_loop():
    run = Scenario()
    for _ in range(5):
        run.fail("search_api", CALL, "429 Too Many Requests").wait(2)
    verdict = run.verdict()
    finding = found(verdict, TRANSIENT_ERROR)
    assert finding is not None and finding.conclusive and not finding.no_progress
    assert verdict.label is Label.SUSPECTED and verdict.action is Action.WARN


def test_transient_errors_that_end_in_success_are_dropped_from_the_verdict():
    run = Scenario()
    for _ in range(5):
        run.fail("search_api", CALL, "503 Service Unavailable")
    run.tool("search_api", CALL, "12 results")
    assert found(run.verdict(), TRANSIENT_ERROR) is None


def test_transient_errors_still_warn_live_before_the_success_arrives():
    detector = FailureDetector()
    run = Scenario()
    for _ in range(5):
        run.fail("search_api", CALL, "timed out")
    live = [f for i, s in enumerate(run.trace().steps) for f in detector.observe(s, i)]
    assert any(f.signal == TRANSIENT_ERROR and f.conclusive for f in live)


def test_six_failed_calls_in_a_row_are_a_retry_storm():
    run = Scenario()
    for i in range(6):
        run.llm_fail("overloaded_error", prompt=f"prompt {i}")
    finding = found(run.verdict(), RETRY_STORM)
    assert finding is not None and finding.conclusive and finding.repeats == 6


def test_a_completed_step_ends_a_retry_storm():
    run = Scenario()
    for i in range(5):
        run.fail("fetch", {"n": i}, "connection reset")
        if i == 2:
            run.think("Waiting a bit before the next request.")
    finding = found(run.verdict(), RETRY_STORM)
    assert finding is None or not finding.conclusive


def test_a_failing_llm_request_repeated_is_the_same_call():
    run = Scenario()
    for _ in range(2):
        run.llm_fail("context length exceeded: invalid request", prompt="very long prompt")
    assert found(run.verdict(), PERMANENT_ERROR) is not None
