"""Evidence the detectors use, each mechanism on both sides (fires on the loop, stays quiet
on its healthy look-alike), in every convention that can express it: the run is written
once and recorded as GenAI, OpenInference and OpenLLMetry spans (``convention_runs``), so
the convention layer's reading is part of what is tested.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.detectors.agents import HANDOFF_CYCLE
from otel_semloop.detectors.failures import RETRY_STORM
from otel_semloop.detectors.progress import CALL_CEILING, SAME_ANSWER
from otel_semloop.detectors.stale import STALE_WINDOW
from otel_semloop.detectors.text import CHANTING
from otel_semloop.verdict import Label
from tests.support.convention_runs import CONVENTIONS, handoff, score_in
from tests.support.scenarios import Scenario, found

pytestmark = pytest.mark.parametrize("convention", CONVENTIONS)


def step(run: Scenario, tool: str, args, result) -> Scenario:
    """One agent round: the model asks for the call, the tool answers."""
    return run.think("", calls=[(tool, args)]).tool(tool, args, result)


# --- a failure storm that never recovers ------------------------------------------------------


def storm(failures: int) -> Scenario:
    run = Scenario("sync the catalogue from the supplier API")
    for i in range(failures):
        args = {"url": f"https://supplier.example/api/catalogue?page={i % 2 + 1}"}
        run.think("", calls=[("fetch", args)]).fail("fetch", args, "upstream connection refused")
    return run


def test_a_storm_the_run_ends_inside_is_a_loop(convention):
    verdict = score_in(storm(7), convention)
    assert verdict.label is Label.LOOP and found(verdict, RETRY_STORM).no_progress


def test_a_storm_followed_by_successful_work_is_healthy(convention):
    run = storm(7)
    step(run, "fetch", {"url": "https://supplier.example/api/catalogue?page=1"}, '{"items": 240, "page": 1}')
    run.think("Synced 240 items.")
    assert score_in(run, convention).label is Label.NO_LOOP


# --- the same answer under changing arguments ---------------------------------------------------

REWORDED = [
    {"query": "checkout flaky test timeout"},
    {"query": "flaky checkout test", "include_archived": True},
    {"query": "checkout test timeout ci"},
    {"query": "timeout in checkout tests"},
    {"query": "checkout timeout flaky", "include_archived": False},
]


def test_rewording_a_search_that_keeps_finding_nothing_is_a_loop(convention):
    run = Scenario("find why the checkout test is flaky")
    for args in REWORDED:
        step(run, "search_issues", args, "[]")
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP and found(verdict, SAME_ANSWER) is not None


def test_editing_url_parameters_that_return_the_same_page_is_a_loop(convention):
    run = Scenario("get the March invoices")
    for month in ("2024-03", "03-2024", "march", "2024/03", "mar"):
        step(
            run, "fetch", {"url": f"https://billing.example/invoices?month={month}"}, "<h1>Invoices</h1> none"
        )
    assert score_in(run, convention).label is Label.LOOP


def test_a_reworded_search_that_finally_finds_something_is_healthy(convention):
    run = Scenario("find why the checkout test is flaky")
    for args in REWORDED[:4]:
        step(run, "search_issues", args, "[]")
    step(
        run,
        "search_issues",
        {"query": "checkout"},
        '[{"id": 4121, "title": "checkout test times out on CI"}]',
    )
    run.think("Issue 4121 explains it.")
    assert score_in(run, convention).label is Label.NO_LOOP


def test_batch_writes_that_each_get_ok_are_healthy(convention):
    run = Scenario("add a licence header to every module")
    for name in ("billing", "orders", "users", "search", "auth", "reports"):
        step(run, "write_file", {"path": f"src/{name}.py", "content": f"# licence\n# {name}"}, "ok")
    assert score_in(run, convention).label is Label.NO_LOOP


def test_lookups_of_unrelated_things_that_find_nothing_are_healthy(convention):
    run = Scenario("which of these customers have open tickets?")
    for name in ("alice", "bob", "carol", "dave", "erin"):
        step(run, "find_tickets", {"customer": name}, "no open tickets")
    assert score_in(run, convention).label is Label.NO_LOOP


# --- argument equivalence ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spellings",
    [
        [
            "https://www.example.com/docs/?b=2&a=1&utm_source=agent#top",
            "https://example.com/docs?a=1&b=2",
            "HTTPS://example.com:443/docs/?a=1&b=2&gclid=x",
            "https://example.com/docs?b=2&a=1#intro",
        ],
    ],
)
def test_one_url_spelled_four_ways_is_one_call(convention, spellings):
    run = Scenario("read the docs")
    for url in spellings:
        step(run, "fetch", {"url": url}, "Docs index: nothing about webhooks")
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP
    assert {"repeated_result", "action_cycle"} & set(verdict.fired_signals)


def test_one_date_spelled_four_ways_is_one_call(convention):
    run = Scenario("orders placed on May 1")
    for day in ("2024-05-01", "May 1, 2024", "05/01/2024", "1st of May 2024"):
        step(run, "list_orders", {"day": day}, "no orders")
    assert {"repeated_result", "action_cycle"} & set(score_in(run, convention).fired_signals)


def test_one_shell_command_with_its_flags_spelled_four_ways_is_one_call(convention):
    run = Scenario("find the config file")
    for command in ("ls -la /etc/app", "ls -al /etc/app/", "ls -l -a /etc/app", "ls  -a -l /etc/app"):
        step(run, "run_shell", {"command": command}, "total 0")
    assert {"repeated_result", "action_cycle"} & set(score_in(run, convention).fired_signals)


def test_different_pages_of_one_url_are_different_reads(convention):
    run = Scenario("list every product")
    for page in range(1, 7):
        step(
            run,
            "fetch",
            {"url": f"https://shop.example/products?page={page}&utm_source=a"},
            f"products {page}",
        )
    assert score_in(run, convention).label is Label.NO_LOOP


# --- identifiers that change every call ---------------------------------------------------------


def test_a_fresh_request_id_in_every_result_is_not_progress(convention):
    run = Scenario("deploy")
    for ident in ("req_8f3k2", "req_a9Zq7Lm2", "req_7Hq2xZ4", "req_e0b0_c3d4"):
        step(
            run, "deploy", {"service": "api"}, f"queued as {ident} (run-{ident[-4:]}), message m-{ident[4:]}"
        )
    assert score_in(run, convention).label is Label.LOOP


@settings(max_examples=25, deadline=None)
@given(ids=st.lists(st.uuids(), min_size=6, max_size=6, unique=True))
def test_a_fresh_uuid_in_every_result_is_not_progress_whatever_its_digits(convention, ids):
    # A UUID's all-digit groups (``f652-4008-b7b4``) are not counts that changed.
    run = Scenario("send the reminder")
    for ident in ids:
        step(run, "send_message", {"to": "team"}, f"sent id={ident}")
    assert score_in(run, convention).label is Label.LOOP


@settings(max_examples=10, deadline=None)
@given(ids=st.lists(st.uuids(), min_size=8, max_size=8, unique=True))
def test_rows_that_grow_beside_a_fresh_uuid_are_progress(convention, ids):
    run = Scenario("wait for the import")
    for n, ident in enumerate(ids):
        step(run, "import_status", {"job": "users"}, f"job {ident}: {1000 * (n + 1)} rows imported")
    run.think("Imported.")
    assert score_in(run, convention).label is Label.NO_LOOP


def test_a_changing_status_with_ids_is_progress(convention):
    run = Scenario("deploy")
    for ident, status in (("req_8f3k2", "queued"), ("req_a9Zq7Lm2", "building"), ("req_7Hq2xZ4", "live")):
        step(run, "deploy_status", {"service": "api"}, f"{ident}: {status}")
    run.think("Deployed.")
    assert score_in(run, convention).label is Label.NO_LOOP


# --- progress carried only by numbers -----------------------------------------------------------


def poll(results: list[str], tool: str = "job_status", args=None) -> Scenario:
    run = Scenario("wait for the export")
    for result in results:
        step(run, tool, args or {"job": "export"}, result)
    return run


def test_polling_a_job_whose_progress_field_rises_is_healthy(convention):
    results = [f'{{"status": "running", "progress": {i / 20:.2f}}}' for i in range(1, 15)]
    assert score_in(poll(results), convention).label is Label.NO_LOOP


def test_polling_a_job_whose_progress_field_is_stuck_is_a_loop(convention):
    assert score_in(poll(['{"status": "running", "progress": 0.35}'] * 14), convention).label is Label.LOOP


def test_watching_a_file_grow_is_healthy(convention):
    results = [f"{120 + 37 * i} /var/log/build.log" for i in range(14)]
    run = poll(results, "run_shell", {"command": "wc -l /var/log/build.log"})
    assert score_in(run, convention).label is Label.NO_LOOP


def test_a_clock_and_a_pid_that_change_are_not_progress(convention):
    results = [f"pid {4000 + i} alive at 10:{i:02d}:07, took {i + 3} ms" for i in range(14)]
    assert score_in(poll(results, "check", {"name": "worker"}), convention).label is Label.LOOP


# --- a ceiling is not proof ---------------------------------------------------------------------


def test_thirty_reads_whose_output_keeps_being_new_are_suspected_at_most(convention):
    words = [
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
    ]
    results = [f"[chunk] {words[i % 14]} {words[i // 14]} migrated" for i in range(32)]
    verdict = score_in(poll(results, "read_output", {"process": "migrate"}), convention)
    assert verdict.label is not Label.LOOP and found(verdict, CALL_CEILING) is not None


def test_thirty_reads_of_the_same_output_are_a_loop(convention):
    verdict = score_in(poll(["[chunk] nothing new"] * 30, "read_output", {"process": "migrate"}), convention)
    assert verdict.label is Label.LOOP


# --- degenerate text of short units -------------------------------------------------------------


def test_a_short_word_chanted_fifty_times_is_a_loop(convention):
    verdict = score_in(Scenario().think("Checking. " * 50), convention)
    assert verdict.label is Label.LOOP and found(verdict, CHANTING) is not None


def test_two_short_sentences_alternating_thirty_times_are_a_loop(convention):
    verdict = score_in(Scenario().think("Let me look.\nI will check.\n" * 30), convention)
    assert verdict.label is Label.LOOP


def test_short_acknowledgements_among_real_sentences_are_healthy(convention):
    text = "\n".join(f"ok\nMigrated table {i} and compared its row count with the source." for i in range(15))
    assert score_in(Scenario().think(text), convention).label is Label.NO_LOOP


# --- staleness over a sliding window ------------------------------------------------------------

TRIVIAL = [
    ("run_shell", {"command": c}, r)
    for c, r in (("pwd", "/app"), ("ls", "src tests"), ("git status", "clean"))
]


def test_rotating_through_trivial_commands_with_a_little_novelty_is_a_loop(convention):
    run = Scenario("fix the failing build")
    for i in range(30):
        if i % 6 == 5:
            step(run, "run_shell", {"command": f"ls /tmp/scratch{i}"}, "")
        else:
            step(run, *TRIVIAL[i % 3])
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP and found(verdict, STALE_WINDOW) is not None


def test_an_edit_and_test_cycle_is_healthy(convention):
    run = Scenario("fix the failing build")
    for i in range(12):
        step(run, "edit_file", {"path": "src/app.py", "patch": f"fix attempt {i}: handle case {i}"}, "ok")
        step(run, "run_shell", {"command": "pytest -q"}, f"{12 - i} failed, {30 + i} passed")
        step(run, *TRIVIAL[i % 3])
    assert score_in(run, convention).label is Label.NO_LOOP


# --- hand-offs in every form --------------------------------------------------------------------


def ping_pong(rounds: int, *, new_work: bool, agents: bool, tools: bool) -> Scenario:
    run = Scenario("refund order 1182")
    for i in range(rounds):
        for agent, other in (("billing", "triage"), ("triage", "billing")):
            if tools:
                handoff(run, agent)
            if agents:
                run.agent(agent)
            if new_work:
                step(
                    run,
                    "lookup_order",
                    {"order": 1182, "view": f"{agent} {i}"},
                    f"order 1182 {agent} view {i}",
                )
            run.think(f"This is a question for {other}.")
    return run


@pytest.mark.parametrize("form", ["handoff tools", "agent spans", "both"])
def test_agents_handing_work_back_and_forth_with_nothing_new_are_a_loop(convention, form):
    run = ping_pong(5, new_work=False, agents=form != "handoff tools", tools=form != "agent spans")
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP and found(verdict, HANDOFF_CYCLE) is not None


@pytest.mark.parametrize("form", ["handoff tools", "agent spans", "both"])
def test_agents_handing_work_back_and_forth_while_working_are_healthy(convention, form):
    run = ping_pong(5, new_work=True, agents=form != "handoff tools", tools=form != "agent spans")
    assert score_in(run, convention).label is Label.NO_LOOP


def test_nested_agent_invocations_cycling_with_nothing_new_are_a_loop(convention):
    run = ping_pong(5, new_work=False, agents=True, tools=False)
    verdict = score_in(run, convention, nest=True)
    assert verdict.label is Label.LOOP and found(verdict, HANDOFF_CYCLE) is not None


def test_nested_agent_invocations_doing_new_work_are_healthy(convention):
    run = ping_pong(5, new_work=True, agents=True, tools=False)
    assert score_in(run, convention, nest=True).label is Label.NO_LOOP


# --- a poll that ends is not a loop -------------------------------------------------------------


def waits(polls: int, last: str | None) -> Scenario:
    run = Scenario("train the model and report when done")
    step(run, "start_job", {"name": "train"}, "started job-7f3a")
    for _ in range(polls):
        step(run, "sleep", {"seconds": 300}, "")
        step(run, "job_status", {"job_id": "job-7f3a"}, "status: running")
    if last is not None:
        run.think("", calls=[("job_status", {"job_id": "job-7f3a"})])
        if last.startswith("error"):
            run.fail("job_status", {"job_id": "job-7f3a"}, last)
        else:
            run.tool("job_status", {"job_id": "job-7f3a"}, last)
    return run


def test_polling_the_same_status_until_the_job_finishes_is_healthy(convention):
    assert score_in(waits(6, "status: succeeded"), convention).label is Label.NO_LOOP


def test_polling_the_same_status_until_the_run_gives_up_is_a_loop(convention):
    assert score_in(waits(6, None), convention).label is Label.LOOP


def test_polling_the_same_status_until_the_tool_refuses_is_a_loop(convention):
    assert (
        score_in(waits(6, "error: called job_status with the same arguments 6 times"), convention).label
        is Label.LOOP
    )
