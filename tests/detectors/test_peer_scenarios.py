"""The boundaries peers draw (``docs/peers.md``), each tested on both sides.

Where a peer and this project disagree, the test's docstring states our verdict and why.
The peers: OpenHands' stuck detector, Gemini CLI's loop detection service, LoopGuard's
evidence-then-policy detectors, and the consecutive-identical-call limits of Cline, Roo,
opencode and CrewAI.
"""

from __future__ import annotations

from otel_semloop.detectors.config import DetectorConfig
from otel_semloop.processor.live import LiveMonitor
from otel_semloop.verdict import Action, Label
from tests.support.scenarios import Scenario, conclusive, found

SEARCH = {"pattern": "session guard", "path": "."}


def identical_pairs(times: int, result: str = "no matches") -> Scenario:
    run = Scenario()
    for _ in range(times):
        run.think("Let me search for it.").tool("grep", SEARCH, result)
    return run


# --- OpenHands -------------------------------------------------------------------------------


def test_openhands_four_identical_action_observation_pairs_are_a_loop():
    verdict = identical_pairs(4).verdict()
    assert verdict.label is Label.LOOP and verdict.action is Action.STOP


def test_openhands_three_identical_pairs_are_not_yet_a_loop():
    verdict = identical_pairs(3).verdict()
    assert verdict.label is Label.NO_LOOP and verdict.action is Action.WARN


def test_openhands_three_identical_actions_ending_in_errors_are_a_loop():
    run = Scenario()
    for _ in range(3):
        run.tool("run", {"cmd": "make"}, "error: No rule to make target 'all'")
    assert "repeated_error" in conclusive(run.verdict())


def test_openhands_two_identical_actions_ending_in_errors_are_not():
    run = Scenario()
    run.tool("run", {"cmd": "make"}, "error: no rule").tool("run", {"cmd": "make"}, "error: no rule")
    assert run.verdict().label is Label.NO_LOOP


def test_openhands_three_identical_agent_messages_with_nothing_between_are_a_loop():
    run = Scenario().think("I need more information.").think("I need more information.")
    run.think("I need more information.")
    assert "monologue" in conclusive(run.verdict())


def test_openhands_a_b_alternation_three_times_is_a_loop():
    run = Scenario()
    for _ in range(3):
        run.tool("read_file", {"path": "app.py"}, "120 lines").tool("run_tests", {}, "1 failed")
    assert run.verdict().label is Label.LOOP


def test_openhands_a_b_alternation_twice_is_not():
    run = Scenario()
    for _ in range(2):
        run.tool("read_file", {"path": "app.py"}, "120 lines").tool("run_tests", {}, "1 failed")
    assert run.verdict().label is Label.NO_LOOP


def test_openhands_polling_a_growing_log_is_not_a_loop_here():
    """OpenHands ignores shell output, so repeating ``tail build.log`` looks stuck to it (a
    reported false positive). We compare normalised results: a log that grows is a new
    result every time, so this is progress, not a loop."""
    run = Scenario()
    lines: list[str] = []
    for name in ("parser", "lexer", "codegen", "linker", "tests", "package"):
        lines.append(f"built {name}")
        run.tool("shell", {"cmd": "tail -n 50 build.log"}, "\n".join(lines))
    assert run.verdict().label is Label.NO_LOOP


# --- Gemini CLI ------------------------------------------------------------------------------


def period_cycle(period: int, repeats: int) -> Scenario:
    run = Scenario()
    for _ in range(repeats):
        for k in range(period):
            run.tool(f"tool_{k}", {"arg": k}, f"result {'abcde'[k]}")
    return run


def test_gemini_a_period_five_tool_pattern_seen_five_times_is_a_loop():
    assert period_cycle(5, 5).verdict().label is Label.LOOP


def test_gemini_a_period_five_pattern_is_a_loop_here_after_two_repeats():
    """Gemini CLI waits for 5 repeats of a period 1-5 pattern. We stop a pattern of period
    3 or more at its second round when its results repeat too: five identical (action,
    result) pairs are already wasted, more than the conclusive period-1 (3) and period-2
    (4) cycles waste, and repeating the results shows nothing was learned. One round and
    a part of the next is not enough."""
    assert period_cycle(5, 2).verdict().label is Label.LOOP
    partial = period_cycle(5, 1)
    for k in range(3):
        partial.tool(f"tool_{k}", {"arg": k}, f"result {'abcde'[k]}")
    assert partial.verdict().label is Label.NO_LOOP


def test_an_alternation_is_a_loop_at_three_rounds_not_two():
    assert period_cycle(2, 3).verdict().label is Label.LOOP
    assert period_cycle(2, 2).verdict().label is Label.NO_LOOP


def test_gemini_the_same_tool_call_five_times_with_changing_results_is_not_a_loop_here():
    """Gemini CLI hashes name and arguments only, so five identical calls are a loop to it
    whatever they return. Results are part of our fingerprint: a call whose answer keeps
    changing is progress (a poll, a growing log), up to the absolute ceiling of 30."""
    run = Scenario()
    for status in ("queued", "building", "testing", "packaging", "uploading"):
        run.tool("job_status", {"id": "job-1"}, status)
    assert run.verdict().label is Label.NO_LOOP


def chanting_output(times: int) -> str:
    return "Thinking about the fix.\n" + "\n".join(["I am going to re-read the error message now."] * times)


def test_gemini_the_same_chunk_ten_times_in_one_output_is_a_content_loop():
    assert "chanting" in conclusive(Scenario().think(chanting_output(10)).verdict())


def test_gemini_nine_repeats_of_a_chunk_are_not():
    assert Scenario().think(chanting_output(9)).verdict().label is Label.NO_LOOP


def test_gemini_repeats_inside_code_blocks_lists_and_tables_are_not_content_loops():
    line = "assert total == expected_total_for_the_order"
    for text in (
        "```python\n" + "\n".join([line] * 12) + "\n```",
        "\n".join([f"- {line}"] * 12),
        "\n".join([f"| {line} | ok |"] * 12),
    ):
        assert Scenario().think(text).verdict().label is Label.NO_LOOP, text[:20]


def test_gemini_the_first_detection_nudges_and_a_later_one_is_firmer():
    """Gemini CLI nudges on its first detection and halts on the second. Our live monitor
    does the same for repetition alone (results not recorded): warn at the threshold,
    replan at twice it. With the results recorded and repeated, it stops at once."""
    run = Scenario()
    for _ in range(8):
        run.tool("search", {"q": "guard"}, None)
    monitor = LiveMonitor()
    actions = [d.action for d in (monitor.observe(s) for s in run.steps) if d is not None]
    assert actions == [Action.WARN, Action.REPLAN]


# --- LoopGuard -------------------------------------------------------------------------------


def test_loopguard_a_repeat_of_three_warns():
    verdict = identical_pairs(3).verdict()
    assert verdict.action is Action.WARN


def test_loopguard_identical_results_stop_here_at_four_not_three():
    """LoopGuard stops at 3 repeats with identical results. We stop at 4 (OpenHands): a
    call, one retry and one verification are common in healthy runs, and stopping them
    costs the user a working agent; at 3 we warn, which is LoopGuard's other rung."""
    assert identical_pairs(3).verdict().label is Label.NO_LOOP
    assert identical_pairs(4).verdict().label is Label.LOOP


def test_loopguard_a_repeated_permanent_error_stops_at_the_second():
    run = Scenario()
    run.fail("api", {"q": 1}, "HTTP 401 Unauthorized").fail("api", {"q": 1}, "HTTP 401 Unauthorized")
    verdict = run.verdict()
    assert verdict.action is Action.STOP and verdict.label is Label.LOOP


def test_loopguard_a_single_permanent_error_does_not_stop():
    assert Scenario().fail("api", {"q": 1}, "HTTP 403 Forbidden").verdict().action is Action.CONTINUE


def test_loopguard_retryable_errors_warn_and_are_not_a_loop():
    run = Scenario()
    for _ in range(5):
        run.fail("api", {"q": 1}, "429 Too Many Requests").wait(5)
    verdict = run.verdict()
    assert verdict.action is Action.WARN and verdict.label is Label.SUSPECTED


def test_loopguard_hand_off_cycles_between_agents_are_a_loop():
    run = Scenario()
    for _ in range(4):
        run.agent("triage", "Routing to billing.").agent("billing", "Routing to triage.")
    assert "handoff_cycle" in conclusive(run.verdict())


def test_loopguard_step_and_tool_call_budgets_are_available_but_off_by_default():
    """LoopGuard ships step and tool-call budgets. Ours exist for steps, tool calls, tokens,
    cost and wall time but are off by default: spending is a product decision, and a long
    healthy run is not a loop."""
    run = Scenario()
    for i in range(60):
        run.tool("process", {"item": i}, f"item {i} processed as {'abcdefghij'[i % 10]}{i // 10}")
    assert run.verdict().label is Label.NO_LOOP
    assert run.verdict(DetectorConfig(max_tool_calls=50)).action is Action.PAUSE


# --- Cline, Roo, opencode, CrewAI ------------------------------------------------------------


def test_cline_three_consecutive_identical_calls_are_a_soft_warning():
    assert identical_pairs(3).verdict().action is Action.WARN


def test_cline_five_identical_calls_with_identical_results_are_stopped_here_at_four():
    """Cline's hard limit is 5 consecutive identical calls; with identical results we stop
    at the 4th (OpenHands), since the result already shows nothing changed."""
    assert identical_pairs(4).verdict().action is Action.STOP


def test_cline_five_identical_calls_with_changing_results_are_not_stopped_here():
    """Cline blocks the 5th identical call whatever it returned (opencode and CrewAI are
    stricter still). We let a call whose results change continue up to the ceiling of 30:
    polling and tailing are the false positives users complain about most."""
    run = Scenario()
    for n in range(5):
        run.tool("read_queue", {"queue": "jobs"}, f"{'abcde'[n]} job waiting")
    assert run.verdict().action in (Action.CONTINUE, Action.WARN)
    assert run.verdict().label is Label.NO_LOOP


def test_opencode_a_second_identical_call_warns_but_is_not_refused():
    """opencode refuses the 2nd identical call. A second call is a warning here (half the
    threshold), never a stop: one retry is ordinary."""
    verdict = identical_pairs(2).verdict()
    assert verdict.action is Action.WARN and verdict.label is Label.NO_LOOP


# --- What users report -----------------------------------------------------------------------


def test_a_rotating_loop_that_exact_consecutive_matching_misses_is_caught():
    """Three actions in shuffled order: never a fixed period long enough to be a cycle."""
    order = [
        "search",
        "read",
        "list",
        "read",
        "search",
        "list",
        "list",
        "search",
        "read",
        "search",
        "read",
        "list",
        "search",
        "list",
        "read",
    ]
    run = Scenario()
    for name in order:
        run.tool(name, {"target": "guard"}, f"{name}: nothing")
    assert not found(run.findings(), "action_cycle").conclusive
    assert run.verdict().label is Label.LOOP


def test_a_paraphrased_loop_is_caught_by_its_actions():
    run = Scenario()
    for thought in (
        "The obvious starting point is a repository-wide search.",
        "I will start by combing the entire codebase.",
        "Step one is orientation: scan the project tree.",
        "The sensible opening move is to hunt through the sources.",
    ):
        run.think(thought).tool("grep", SEARCH, "no matches")
    assert run.verdict().label is Label.LOOP


def test_volatile_ids_in_results_are_not_progress():
    run = Scenario()
    ids = (("a1b2c3d4e5f6", 4411), ("f6e5d4c3b2a1", 918), ("0a1b2c3d4e5f", 77), ("9f8e7d6c5b4a", 10234))
    for rid, pid in ids:
        run.tool("create_ticket", {"title": "guard"}, f"duplicate ticket (request {rid}, pid {pid})")
    assert run.verdict().label is Label.LOOP


def test_found_returns_the_strongest_finding():
    assert found(identical_pairs(6).verdict(), "action_cycle").repeats == 6
