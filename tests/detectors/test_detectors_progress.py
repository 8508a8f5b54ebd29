"""No progress: repeated results, cosmetic argument changes, the call ceiling, stale stretches."""

from __future__ import annotations

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.detectors.progress import (
    CALL_CEILING,
    NEAR_DUPLICATE_ARGS,
    REPEATED_RESULT,
)
from otel_semloop.detectors.stale import STALE_STEPS, STALE_TIME
from otel_semloop.verdict import Label
from tests.support.scenarios import Scenario, found

# --- repeated_result -------------------------------------------------------------------------


def test_a_rotation_in_shuffled_order_repeats_results():
    run = Scenario()
    for name in "abcbacabccab":
        run.tool(f"search_{name}", {"q": name}, "nothing")
    finding = found(run.findings(), REPEATED_RESULT)
    assert finding is not None and finding.conclusive


def test_a_novel_step_between_two_identical_calls_restarts_the_count():
    run = Scenario()
    for i in range(6):
        run.tool("edit", {"patch": f"change {i}"}, "applied")
        run.tool("run_tests", {}, "1 failed")
    assert found(run.findings(), REPEATED_RESULT) is None


def test_results_that_differ_only_in_volatile_ids_are_the_same_result():
    run = Scenario()
    for rid in ["9f1c2e3d4b", "77aa88bb99", "0c0d0e0f1a", "5e6f7a8b9c"]:
        stamp = f"2026-01-01T10:0{len(rid) % 9}:00Z"
        run.tool("status", {"job": "build"}, f"request {rid}: still pending at {stamp}")
    verdict = run.verdict()
    assert verdict.label is Label.LOOP and found(verdict, REPEATED_RESULT) is not None


def test_a_rising_percentage_is_progress_even_when_the_masked_result_repeats():
    run = Scenario()
    for pct in (10, 30, 50, 70, 90):
        run.tool("status", {"job": "build"}, f"running: {pct}% done")
    assert run.verdict().label is Label.NO_LOOP


def test_a_falling_percentage_is_not_progress():
    run = Scenario()
    for pct in (90, 70, 50, 30):
        run.tool("status", {"job": "build"}, f"running: {pct}% done")
    assert run.verdict().label is Label.LOOP


def test_a_percentage_going_down_and_up_again_is_not_progress():
    run = Scenario()
    for pct in (40, 20, 40, 20, 40, 20, 40, 20):
        run.tool("status", {"job": "build"}, f"running: {pct}% done")
    assert run.verdict().label is Label.LOOP


def test_a_result_alternating_between_a_short_and_a_long_form_is_not_growth():
    run = Scenario()
    for _ in range(4):
        run.tool("fetch", {"id": 7}, "empty")
        run.tool("fetch", {"id": 7}, "error: the upstream service returned an empty body again")
    assert run.verdict().label is Label.LOOP


def test_volatile_argument_names_configured_for_a_tool_do_not_make_calls_new():
    run = Scenario()
    for ref in ("ref-alpha", "ref-bravo", "ref-charlie", "ref-delta"):
        run.tool("sample", {"prompt": "x", "client_ref": ref}, "same answer")
    # Unconfigured, the calls differ (only the same answer to changing arguments says loop).
    assert found(run.findings(), REPEATED_RESULT) is None
    config = DetectorConfig(volatile_args={"sample": frozenset({"client_ref"})})
    assert run.verdict(config).label is Label.LOOP


# --- near_duplicate_args ---------------------------------------------------------------------


def cosmetic_run(variants: list[dict], result: str = "no matches") -> Scenario:
    run = Scenario()
    for args in variants:
        run.think("Searching.").tool("grep", args, result)
    return run


COSMETIC = [
    {"pattern": "guard", "path": "."},
    {"pattern": "guard", "path": "./"},
    {"path": ".", "pattern": "guard", "case_sensitive": False},
    {"pattern": "guard", "path": ".", "max_results": 50},
    {"pattern": "guard", "path": ".", "max_results": 51},
    {"pattern": "guard", "path": ".", "sort": "asc"},
]


def test_four_calls_with_cosmetic_argument_changes_and_the_same_result_are_conclusive():
    finding = found(cosmetic_run(COSMETIC[:4]).findings(), NEAR_DUPLICATE_ARGS)
    assert finding is not None and finding.conclusive and finding.no_progress


def test_three_cosmetic_variants_only_warn():
    finding = found(cosmetic_run(COSMETIC[:3]).findings(), NEAR_DUPLICATE_ARGS)
    assert finding is not None and not finding.conclusive


def test_cosmetic_variants_with_different_results_are_not_near_duplicates():
    run = Scenario()
    for i, args in enumerate(COSMETIC):
        run.tool("grep", args, f"match in file_{'abcdef'[i]}.py")
    assert found(run.findings(), NEAR_DUPLICATE_ARGS) is None


def test_different_paths_with_the_same_result_are_not_near_duplicates():
    run = cosmetic_run([{"pattern": "guard", "path": p} for p in ("src", "lib", "tests", "docs", "tools")])
    assert found(run.findings(), NEAR_DUPLICATE_ARGS) is None


def test_identical_calls_are_left_to_the_other_signals():
    run = cosmetic_run([COSMETIC[0]] * 5)
    assert found(run.findings(), NEAR_DUPLICATE_ARGS) is None


# --- call_ceiling ----------------------------------------------------------------------------


def poll(times: int) -> Scenario:
    run = Scenario()
    for i in range(times):
        # Results that are new every time once case-folded and masked (letters, no digits).
        run.tool("get_status", {"job": "deploy"}, f"phase {'abcdefghij'[i // 10]}{'klmnopqrst'[i % 10]}")
    return run


def test_thirty_identical_calls_hit_the_ceiling_even_when_results_change():
    verdict = poll(30).verdict()
    finding = found(verdict, CALL_CEILING)
    # A ceiling is not proof: results that keep being new make it suspected, never a loop.
    assert finding is not None and finding.conclusive and verdict.label is Label.SUSPECTED


def test_twenty_nine_identical_calls_with_changing_results_stay_under_the_ceiling():
    assert poll(29).verdict().label is Label.NO_LOOP


def test_a_new_call_between_polls_restarts_the_ceiling():
    run = Scenario()
    for i in range(40):
        run.tool("get_status", {"job": "deploy"}, f"phase {i}: {'x' * (i + 1)}")
        if i == 20:
            run.tool("notify", {"channel": "ops"}, "sent")
    assert found(run.findings(), CALL_CEILING) is None or not found(run.findings(), CALL_CEILING).conclusive


# --- stale_steps / stale_time ----------------------------------------------------------------


def test_twelve_tool_steps_with_nothing_novel_are_stale():
    run = Scenario()
    run.tool("a", {}, "1").tool("b", {}, "2").tool("c", {}, "3").tool("d", {}, "4").tool("e", {}, "5").tool(
        "f", {}, "6"
    )
    for _ in range(2):
        for name, result in zip("abcdef", "123456", strict=True):
            run.tool(name, {}, result)
    finding = found(run.findings(), STALE_STEPS)
    assert finding is not None and finding.conclusive and finding.repeats == 12


def test_ten_minutes_without_a_novel_tool_step_are_stale():
    run = Scenario()
    run.tool("check", {"what": "queue"}, "empty").wait(400)
    run.tool("check", {"what": "queue"}, "empty").wait(200)
    run.tool("check", {"what": "queue"}, "empty")
    finding = found(run.findings(), STALE_TIME)
    assert finding is not None and finding.conclusive and finding.repeats == 2


def test_without_span_times_there_is_no_stale_time():
    run = Scenario(timed=False)
    for _ in range(3):
        run.tool("check", {"what": "queue"}, "empty")
    assert found(run.findings(), STALE_TIME) is None
