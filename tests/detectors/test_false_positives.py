"""Legitimate repetition is never a loop: every scenario here must be ``no_loop``.

These are the complaints users raise most about loop detectors (``docs/peers.md``):
polling, pagination, batch work over many files, tailing logs, transient infra errors,
iterative fixing, templated narration. Each test also checks that no finding became
conclusive, so the live guard would not have interrupted the run either.
"""

from __future__ import annotations

import pytest

from otel_semloop.processor.live import LiveMonitor
from otel_semloop.verdict import Label
from tests.support.scenarios import Scenario

FILES = [
    f"{stem}.py"
    for stem in [
        "orders",
        "billing",
        "cart",
        "session",
        "invoices",
        "users",
        "auth",
        "payments",
        "shipping",
        "tax",
    ]
]
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
]


def assert_healthy(run: Scenario) -> None:
    verdict = run.verdict()
    assert verdict.label is Label.NO_LOOP, verdict.reason
    assert not [f for f in verdict.findings if f.conclusive], verdict.reason
    monitor = LiveMonitor()
    assert [d for d in (monitor.observe(step) for step in run.steps) if d is not None] == []


def polling_whose_status_changes() -> Scenario:
    run = Scenario("wait for the deploy and report")
    statuses = [
        "status: queued",
        "status: queued",
        "status: running, 10% complete",
        "status: running, 35% complete",
        "status: running, 60% complete",
        "status: running, 85% complete",
        "status: verifying",
        "status: succeeded",
    ]
    for status in statuses:
        run.tool("get_deploy_status", {"deploy_id": "dep-42"}, status)
        run.tool("sleep", {"seconds": 30}, "slept 30s").wait(30)
    run.think("The deploy succeeded.")
    return run


def pagination() -> Scenario:
    run = Scenario("export every order")
    for page in range(1, 13):
        names = ", ".join(WORDS[(page + k) % len(WORDS)] for k in range(3))
        run.tool("list_orders", {"status": "open", "page": page, "per_page": 50}, f"50 orders for {names}")
    run.tool("list_orders", {"status": "open", "page": 13, "per_page": 50}, "[]")
    return run


def the_same_operation_over_twenty_files() -> Scenario:
    run = Scenario("add type hints to every module")
    for i in range(20):
        path = f"src/{WORDS[i % len(WORDS)]}/{FILES[i % len(FILES)]}"
        run.think("Adding type hints to the next module.")
        run.tool("apply_type_hints", {"path": path}, "ok")
    return run


def tailing_a_growing_log() -> Scenario:
    run = Scenario("watch the build")
    log: list[str] = []
    for i in range(15):
        log.append(f"[{i:02d}:00] compiling module {WORDS[i]}")
        run.tool("tail_log", {"path": "build.log"}, "\n".join(log)).wait(10)
    return run


def reading_fifty_output_chunks() -> Scenario:
    run = Scenario("read the training output")
    for i in range(50):
        chunk = "\n".join(f"epoch {i} step {i * 100 + k} loss 0.{4000 - i * 7 - k}" for k in range(5))
        run.tool("read_output", {"run_id": "train-7", "offset": i * 4096, "limit": 4096}, chunk)
    return run


def transient_failures_then_success() -> Scenario:
    run = Scenario("fetch the exchange rates")
    call = {"url": "https://rates.example.com/v1/latest"}
    run.fail("http_get", call, "429 Too Many Requests").wait(2)
    run.fail("http_get", call, "503 Service Unavailable").wait(4)
    run.fail("http_get", call, "Request timed out after 30s").wait(8)
    run.tool("http_get", call, '{"EUR": 1.0, "USD": 1.08}')
    run.think("Rates fetched.")
    return run


def edit_and_test_rounds_with_falling_failures() -> Scenario:
    run = Scenario("make the test suite pass")
    fixes = ("imports", "fixtures", "timezone", "rounding", "typo")
    for failures, fix in zip((7, 4, 2, 1, 0), fixes, strict=True):
        run.think(f"Fixing the {fix} problem next.")
        run.tool("edit_file", {"path": "billing.py", "patch": f"fix {fix}"}, "applied")
        run.tool("run_tests", {"suite": "billing"}, f"{failures} failed, {25 - failures} passed")
    return run


def narrating_different_files_in_one_sentence_shape() -> Scenario:
    run = Scenario("migrate the deprecated call")
    for path in FILES:
        run.think(
            f"Now checking {path} for the deprecated call, reading through its imports and every "
            "function it exports one by one before I move on to the next file in the list."
        )
    return run


def a_fixed_preamble_in_front_of_real_updates() -> Scenario:
    run = Scenario("fix the guest checkout")
    preamble = (
        "Based on the information provided so far, and having carefully reviewed everything "
        "available, the next concrete step I am going to take is as follows: "
    )
    for update in (
        "check checkout_serializer.py directly.",
        "the middleware runs too late.",
        "add a guard right here.",
        "tests pass, twenty two cases.",
    ):
        run.think(preamble + update)
    return run


def polling_a_draining_queue() -> Scenario:
    """Only a number changes, and it falls: work remaining going down is progress, though
    digits are masked in result fingerprints."""
    run = Scenario("wait until the email queue is drained")
    for pending in (120, 96, 71, 40, 18, 7, 0):
        run.tool("queue_depth", {"queue": "emails"}, f"queue emails: {pending} pending").wait(20)
    run.think("The queue is empty.")
    return run


SCENARIOS = [
    polling_whose_status_changes,
    pagination,
    the_same_operation_over_twenty_files,
    tailing_a_growing_log,
    reading_fifty_output_chunks,
    transient_failures_then_success,
    edit_and_test_rounds_with_falling_failures,
    narrating_different_files_in_one_sentence_shape,
    a_fixed_preamble_in_front_of_real_updates,
    polling_a_draining_queue,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_legitimate_repetition_is_not_a_loop(scenario):
    assert_healthy(scenario())


def test_polling_whose_status_changes_is_not_a_loop():
    assert_healthy(polling_whose_status_changes())


def test_polling_whose_status_never_changes_is_a_loop():
    """The other side of the boundary: four identical answers in a row are no progress."""
    run = Scenario()
    for _ in range(4):
        run.tool("get_deploy_status", {"deploy_id": "dep-42"}, "status: queued").wait(30)
    assert run.verdict().label is Label.LOOP


def test_reading_chunks_whose_masked_text_repeats_is_not_a_loop():
    """Chunks that differ only in numbers mask to the same text; the offsets make them new reads."""
    assert_healthy(reading_fifty_output_chunks())


def test_edit_and_test_rounds_are_not_a_loop_although_failure_counts_mask_alike():
    assert_healthy(edit_and_test_rounds_with_falling_failures())


def test_a_rising_attempt_counter_with_the_same_error_is_still_a_loop():
    """The other side of the falling-count rule: attempt numbers rise in loops too, so a
    rising count alone is not progress."""
    run = Scenario()
    for attempt in range(1, 6):
        run.tool("connect", {"host": "db"}, f"attempt {attempt}: connection refused").wait(5)
    assert run.verdict().label is Label.LOOP


def test_a_queue_stuck_at_the_same_count_is_a_loop():
    run = Scenario()
    for _ in range(5):
        run.tool("queue_depth", {"queue": "emails"}, "queue emails: 40 pending").wait(20)
    assert run.verdict().label is Label.LOOP
