"""How a step is identified for repetition, each rule on both sides (fires on the loop, stays
quiet on its healthy look-alike) in every convention (``convention_runs``):

* a failure by what failed and how (its message), not by how it was asked;
* a call that keeps returning results it already returned is repeating, whatever the
  acknowledgement wording of the moment ("ok", "saved", "ok");
* a wait ends with an answer the call never gave before, not with one it already gave.
"""

from __future__ import annotations

import pytest

from otel_semloop.detectors.cycles import ACTION_CYCLE
from otel_semloop.detectors.progress import REPEATED_RESULT
from otel_semloop.verdict import Label
from tests.support.convention_runs import CONVENTIONS, score_in
from tests.support.scenarios import Scenario, found

pytestmark = pytest.mark.parametrize("convention", CONVENTIONS)

FILE = "1  import os\n2  def load(path):\n3      return open(path).read()\n4  print(load('a'))"


def step(run: Scenario, tool: str, args, result) -> Scenario:
    """One agent round: the model asks for the call, the tool answers."""
    return run.think("", calls=[(tool, args)]).tool(tool, args, result)


def failed_step(run: Scenario, tool: str, args, error: str) -> Scenario:
    return run.think("", calls=[(tool, args)]).fail(tool, args, error, error_type="ToolError")


# --- a failure is identified by how it failed ----------------------------------------------------

OLD_STRINGS = ["return open(path).read()", "return open(path).read() ", "return  open(path).read()",
               "return open( path).read()", "return open(path).read();"]  # fmt: skip
NO_MATCH = "Failed to edit, 0 occurrences found for old_string in app/load.py. No edits made."


def test_an_edit_retried_with_wobbling_text_that_fails_the_same_way_is_a_loop(convention):
    run = Scenario("make load() close the file")
    for old in OLD_STRINGS[:4]:
        failed_step(
            run, "replace", {"file_path": "app/load.py", "old_string": old, "new_string": "x"}, NO_MATCH
        )
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP and found(verdict, ACTION_CYCLE).no_progress


def test_failures_that_each_say_something_different_are_not_a_loop(convention):
    run = Scenario("read the settings")
    for path in ("settings.toml", "config/settings.toml", "etc/settings.toml", "conf/settings.toml"):
        failed_step(run, "read_file", {"path": path}, f"No such file or directory: '{path}'")
    step(run, "list_dir", {"path": "."}, "app/\nsettings/\nREADME.md")
    assert score_in(run, convention).label is Label.NO_LOOP


def reread_and_edit(rounds: int, *, applies: bool) -> Scenario:
    run = Scenario("fix the off-by-one in app/load.py")
    for r in range(rounds):
        step(run, "read_file", {"path": "app/load.py"}, FILE)
        args = {
            "path": "app/load.py",
            "diff": "<<<<<<< SEARCH\n    return x\n=======\n    return y\n>>>>>>> REPLACE",
        }
        if r % 2:
            args["start_line"] = 3  # a hint the model adds and drops again
        failed_step(
            run, "apply_diff", args, "SearchReplaceNoExactMatch: the SEARCH block did not match app/load.py"
        )
    if applies:
        step(run, "read_file", {"path": "app/load.py", "start_line": 2, "end_line": 3}, FILE.splitlines()[2])
        step(
            run,
            "apply_diff",
            {"path": "app/load.py", "diff": "-    return open(path).read()"},
            "Applied edit",
        )
        step(run, "run_tests", {"command": "pytest -q"}, "12 passed in 0.41s")
    return run


def test_rereading_and_failing_the_same_edit_round_after_round_is_a_loop(convention):
    verdict = score_in(reread_and_edit(4, applies=False), convention)
    assert verdict.label is Label.LOOP and found(verdict, ACTION_CYCLE) is not None


def test_an_edit_that_fails_then_applies_after_a_closer_read_is_healthy(convention):
    assert score_in(reread_and_edit(2, applies=True), convention).label is Label.NO_LOOP


# --- the same call answered with acknowledgements it already gave --------------------------------

ACKS = ["Memory saved.", "ok", "Stored memory m1", "ok", "Memory saved.", "Stored memory m1", "ok"]


def test_saving_the_same_memory_again_and_again_is_a_loop_whatever_the_ack(convention):
    run = Scenario("what does the doc say about pooling?")
    step(run, "retrieve", {"query": "connection pooling"}, "3 chunks about pool sizes and timeouts")
    for ack in ACKS:
        step(run, "save_memory", {"content": "User prefers answers in French."}, ack)
    verdict = score_in(run, convention)
    assert verdict.label is Label.LOOP and found(verdict, REPEATED_RESULT).no_progress


def test_saving_different_memories_with_varied_acks_is_healthy(convention):
    run = Scenario("remember the user's preferences")
    facts = ["prefers French", "uses PostgreSQL 16", "lives in Singapore", "works nights", "likes tables",
             "owns a cat", "reads on Kindle"]  # fmt: skip
    for fact, ack in zip(facts, ACKS, strict=True):
        step(run, "save_memory", {"content": f"User {fact}."}, ack)
    assert score_in(run, convention).label is Label.NO_LOOP


# --- a wait ends with a new answer, not with an old one ------------------------------------------


def flapping(final: str | None) -> Scenario:
    run = Scenario("deploy and report")
    step(run, "deploy", {"service": "api"}, "deployment dep-31 started")
    for state in ["queued", "running", "running", "queued", "running", "running", "queued", "running"]:
        step(run, "deploy_status", {"deployment": "dep-31"}, f"state: {state}")
    if final is not None:
        step(run, "deploy_status", {"deployment": "dep-31"}, final)
    return run


def test_a_status_flapping_between_answers_it_already_gave_is_a_loop(convention):
    assert score_in(flapping(None), convention).label is Label.LOOP


def test_a_status_that_finally_gives_a_new_answer_ends_the_wait(convention):
    assert score_in(flapping("state: succeeded"), convention).label is Label.NO_LOOP


# --- failures that stop and are followed by new work ---------------------------------------------


def missing_file(reads: int, *, recovers: bool) -> Scenario:
    run = Scenario("summarise settings.toml")
    for _ in range(reads):
        failed_step(run, "read_file", {"path": "settings.toml"}, "FileNotFoundError: settings.toml (404)")
    if recovers:
        step(run, "find", {"name": "settings.toml"}, "./config/settings.toml")
        step(run, "read_file", {"path": "config/settings.toml"}, 'retries = 3\nregion = "eu-west-1"')
    return run


def test_a_missing_file_read_twice_then_found_elsewhere_is_healthy(convention):
    assert score_in(missing_file(2, recovers=True), convention).label is Label.NO_LOOP


def test_a_missing_file_read_again_and_again_is_a_loop(convention):
    assert score_in(missing_file(3, recovers=False), convention).label is Label.LOOP


def test_a_missing_file_read_many_times_is_a_loop_even_if_the_agent_moves_on(convention):
    assert score_in(missing_file(5, recovers=True), convention).label is Label.LOOP


# --- a footer id that comes out as hex or as digits ---------------------------------------------

FOOTERS = ["run-3eab", "run-5340", "run-d1a8", "run-4fce", "run-1bcd", "run-2ace"]


def test_rereading_a_file_whose_footer_id_changes_shape_is_a_loop(convention):
    run = Scenario("find the bug in utils.py")
    for footer in FOOTERS:
        step(run, "view", {"path": "utils.py"}, f"{FILE}\n[cache miss {footer} in 14.2ms]")
    assert score_in(run, convention).label is Label.LOOP


def test_rereading_a_file_that_changes_between_edits_is_healthy(convention):
    run = Scenario("fix utils.py")
    for i, footer in enumerate(FOOTERS):
        step(
            run,
            "view",
            {"path": "utils.py"},
            f"{FILE}\n5  # fix {'abcdef'[i]} applied\n[cache miss {footer}]",
        )
        step(run, "edit", {"path": "utils.py", "line": 5, "text": f"# fix {'abcdefg'[i + 1]} applied"}, "ok")
    assert score_in(run, convention).label is Label.NO_LOOP


# --- an "end" that goes back to an earlier answer was no end -------------------------------------


def test_a_write_whose_ack_changes_then_goes_back_is_still_a_loop(convention):
    run = Scenario("what does the doc say about pooling?")
    for ack in ["Stored memory m1"] * 4 + ["Memory saved.", "Memory saved.", "Stored memory m1"]:
        step(run, "save_memory", {"content": "User prefers answers in French."}, ack)
    assert score_in(run, convention).label is Label.LOOP


def test_a_poll_that_ends_and_is_checked_again_is_healthy(convention):
    run = Scenario("deploy and report")
    for state in ["running"] * 4 + ["succeeded", "succeeded"]:
        step(run, "deploy_status", {"deployment": "dep-31"}, f"state: {state}")
    step(run, "notify", {"channel": "#ops", "text": "dep-31 is live"}, "sent as message 1712")
    step(run, "deploy", {"service": "web"}, "deployment dep-32 started")
    step(run, "deploy_status", {"deployment": "dep-31"}, "state: running")  # another rollout of it
    assert score_in(run, convention).label is Label.NO_LOOP


# --- an empty output is an answer when the call asked a question ------------------------------

GREPS = ["grep -rn MAX_CONNECTIONS src", "grep -rn 'MAX_CONNECTIONS' src/", "rg -n MAX_CONNECTIONS src",
         "cd src && grep -rn MAX_CONNECTIONS .", "grep -nr \"MAX_CONNECTIONS\" ./src"]  # fmt: skip


def test_a_search_respelled_that_keeps_printing_nothing_is_a_loop(convention):
    run = Scenario("find where MAX_CONNECTIONS is set")
    for command in GREPS:
        step(run, "bash", {"command": command}, "")
    assert score_in(run, convention).label is Label.LOOP


def test_a_search_tool_that_keeps_returning_nothing_to_rewordings_is_a_loop(convention):
    run = Scenario("find the retry budget")
    for query in ("retry budget", "retry_budget config", "budget for retries", "retry budget setting"):
        step(run, "search_code", {"query": query}, "")
    assert score_in(run, convention).label is Label.LOOP


def test_commands_that_print_nothing_because_they_did_their_job_are_healthy(convention):
    run = Scenario("move the models into a package")
    for name in ("user", "order", "invoice", "payment", "refund"):
        step(run, "bash", {"command": f"git mv src/models_{name}.py src/models/{name}.py"}, "")
        step(run, "bash", {"command": f"mkdir -p src/models/{name}_tests"}, "")
    assert score_in(run, convention).label is Label.NO_LOOP


# --- a client-generated id in the arguments does not make a re-send new -------------------------


def test_resending_one_message_with_a_fresh_client_id_each_time_is_a_loop(convention):
    run = Scenario("post the daily report")
    for i, client_id in enumerate(("run-ed16", "run-d716", "run-148f", "run-efcb", "run-2102")):
        args = {"to": "#ops", "text": "Daily report attached.", "client_msg_id": client_id}
        step(
            run,
            "slack_post",
            args,
            f"{{'ok': True, 'ts': '17249678{i}1.100111', 'id': 'msg-{i}e{i}f'}}",
        )
    assert score_in(run, convention).label is Label.LOOP


def test_posting_different_messages_each_with_a_client_id_is_healthy(convention):
    run = Scenario("notify the reviewers")
    for i, who in enumerate(("gus", "eli", "bo", "fatima", "ana")):
        args = {"to": f"@{who}", "text": f"Hi {who}, your review is due.", "client_msg_id": f"run-{i}f{i}a"}
        step(run, "slack_post", args, f"{{'ok': True, 'ts': '17249678{i}1.100111', 'id': 'msg-{i}c{i}d'}}")
    assert score_in(run, convention).label is Label.NO_LOOP
