"""The general rules behind issue 27's five classes, each from both sides.

* The changing part of the arguments is the work: a different number (issue id, sleep
  duration) or a different body written is never a cosmetic change; spelling, key order
  and request ids are.
* A patient wait that ends in a new answer followed by work is not a loop; one that never
  ends, or goes on after its end, is.
* The same figures and names restated in new words, with nothing between, are a loop;
  reasoning that asserts something new each turn is not.
* A tool rate-limited on every attempt (sleeps between, volatile ids in the error) until
  the run ends is a loop; one that answers at last is not.
* Calls to a tool that does not exist, under changing names, rejected the same way, are a
  loop, in every form they are recorded in; a mistake corrected is not.

And the lessons of the first looks (batches 1-5), each a rule about agents in general:
a "nothing found" that quotes the question back is the same answer to every rewording,
while an answer naming what it is about (a status per job) stays about that; the same
conclusion restated between messages that assert nothing new is still one conclusion; the
same value set again and again is a loop a write reaches sooner than a read (which may be
a poll), while new values, added items and polls are not. Batch 6: a retriever's scored
documents are one answer whatever their order and scores (a rewrite bringing a new
document, pages and different questions are not a loop), and a result restated by one
agent across hand-offs to its checker is one conclusion (a pipeline of agents each
restating once, a critic whose feedback changes, are not). Batch 7: an answer that names
the same thing (a revision, a head commit) over several polls and then names another one
is new, though masking reads both the same (identifiers that change on every answer, or
that were never named twice, are not); a new trigger answered by the same work (the same
read, the same write) does not end the repetition, while new work after it does; and the
same result reached again and again by other working is one conclusion restated (running
subtotals, each a new result, are not).
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path

from bench.corpus.runs import Run, ToolUse, Turn, traces_data
from bench.corpus.shapes import render_any
from otel_semloop.batch.inputs import read_records
from otel_semloop.builder import build_trace
from otel_semloop.detectors.arguments import is_wait_call, sets_value, writes_tool
from otel_semloop.detectors.call_progress import finds_nothing, without_echo
from otel_semloop.detectors.claims import claims, conclusion, declares_done
from otel_semloop.detectors.failure_class import FailureKind, classify_failure
from otel_semloop.detectors.normalize import identifiers, normalize_result_and_content
from otel_semloop.detectors.retrieval import as_document_set
from otel_semloop.model import Step, StepKind
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label, Verdict
from tests.support.scenarios import Scenario, conclusive

# --- the changing part of the arguments is the work ------------------------------------------


def test_the_same_label_on_different_issue_numbers_is_not_a_loop() -> None:
    run = Scenario("label the open issues")
    for number in range(1201, 1218):
        run.tool("add_labels", {"issue_number": number, "labels": ["bug"]}, "ok")
    assert run.verdict().label is Label.NO_LOOP


def test_the_same_update_respelled_with_fresh_request_ids_is_a_loop() -> None:
    run = Scenario("update the customer")
    spellings = ["ann@x.com", "ANN@x.com", " ann@x.com ", "Ann@x.com", "ann@x.com"]
    for i, email in enumerate(spellings):
        run.tool("update_record", {"id": 42, "fields": {"email": email}, "request_id": f"r-{i}"}, "updated")
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "near_duplicate_args" in conclusive(verdict)


def test_a_draft_saved_again_with_new_content_is_not_a_loop() -> None:
    run = Scenario("write the notes")
    body = ""
    for section in ("Intro.", "Setup steps.", "Usage notes.", "Limits.", "Changelog."):
        body += section + "\n"
        run.tool("save_draft", {"draft_id": "d-1", "body": body}, "Draft saved.")
    assert run.verdict().label is Label.NO_LOOP


def test_the_same_draft_saved_with_the_same_content_is_a_loop() -> None:
    run = Scenario("write the notes")
    for _ in range(5):
        run.tool("save_draft", {"draft_id": "d-1", "body": "Intro.\nSetup steps."}, "Draft saved.")
    assert run.verdict().label is Label.LOOP


def test_a_write_tools_short_answer_acknowledges_and_a_questions_does_not() -> None:
    assert writes_tool("save_draft") and writes_tool("add_labels")
    assert not writes_tool("get_labels") and not writes_tool("search_docs")


def test_a_backoff_whose_sleep_grows_before_success_is_not_a_loop() -> None:
    run = Scenario("fetch the orders")
    for seconds in (15, 30, 60, 120):
        run.fail("fetch_orders", {"since": "2026-05-01"}, "429 Too Many Requests")
        run.tool("sleep", {"seconds": seconds}, f"slept {seconds}s")
    run.tool("fetch_orders", {"since": "2026-05-01"}, '[{"id": 1, "total": 12}]')
    run.tool("write_file", {"path": "report.md", "content": "1 order"}, "ok")
    assert run.verdict().label is Label.NO_LOOP


# --- a patient wait --------------------------------------------------------------------------


def _poll(run: Scenario, status: str, sleep: dict) -> None:
    run.tool("bash", sleep, "")
    run.tool("get_job_status", {"job_id": "job-7"}, json.dumps({"job_id": "job-7", "status": status}))


def test_a_wait_with_sleeps_that_ends_in_success_and_more_work_is_not_a_loop() -> None:
    run = Scenario("run the export")
    run.tool("start_job", {"name": "export"}, "started job-7")
    for status in ["queued"] * 3 + ["running"] * 4 + ["succeeded"]:
        _poll(run, status, {"command": "sleep 30"})
    run.tool("download_output", {"job_id": "job-7"}, '{"rows": 1200}')
    assert run.verdict().label is Label.NO_LOOP


def test_a_wait_that_never_ends_is_a_loop() -> None:
    run = Scenario("run the export")
    run.tool("start_job", {"name": "export"}, "started job-7")
    for _ in range(9):
        _poll(run, "running", {"command": "sleep 30"})
    assert run.verdict().label is Label.LOOP


def test_polling_a_finished_job_again_and_again_is_a_loop() -> None:
    run = Scenario("run the export")
    for status in ["running"] * 3 + ["succeeded"] * 6:
        _poll(run, status, {"command": "sleep 10"})
    assert run.verdict().label is Label.LOOP


def test_a_sleep_is_a_wait_and_a_wait_for_a_job_is_not() -> None:
    assert is_wait_call("sleep", {"seconds": 5}, shell=False)
    assert is_wait_call("time_sleep", {"duration": 5}, shell=False)
    assert is_wait_call("bash", {"command": "sleep 30"}, shell=True)
    assert not is_wait_call("bash", {"command": "sleep 30 && gh run view 7"}, shell=True)
    assert not is_wait_call("wait_for_job", {"job_id": "7"}, shell=False)


# --- the same conclusion restated in new words -----------------------------------------------

RESTATEMENTS = [
    "Let me double-check. The 5 regions add up to $412,345 and West is still the largest at 31%.",
    "Re-verifying: the sum across all 5 regions comes to 412345 dollars; West leads with 31%.",
    "Going through the table again, I get 412,345 in total, with West at 31 percent.",
    "To be sure, recomputing: 5 regions, grand total $412,345. West accounts for 31%.",
    "Checking my arithmetic once more: the values add up to 412,345. Largest share: West at 31%.",
    "I want to be certain: $412,345 total; West has a 31% share of the 5 regions.",
]


def test_paraphrases_share_their_figures_and_names() -> None:
    first, second = claims(RESTATEMENTS[0]), claims(RESTATEMENTS[1])
    assert first == second
    assert claims("The total is 12 and the top region is North.") != first


def test_the_same_figures_restated_in_new_words_are_a_loop() -> None:
    run = Scenario("sum the table")
    for text in RESTATEMENTS:
        run.think(text)
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "restated_conclusion" in conclusive(verdict)


def test_three_restatements_are_below_the_threshold_and_four_reach_it() -> None:
    below, at = Scenario("sum the table"), Scenario("sum the table")
    for text in RESTATEMENTS[:3]:
        below.think(text)
    for text in RESTATEMENTS[:4]:
        at.think(text)
    assert below.verdict().label is Label.NO_LOOP
    assert at.verdict().label is Label.LOOP


def test_reasoning_that_asserts_new_figures_each_turn_is_not_a_loop() -> None:
    run = Scenario("sum the table")
    total = 0
    for region, value in [("North", 1200), ("South", 3400), ("East", 560), ("West", 7800), ("Central", 90)]:
        total += value
        run.think(f"Adding {region}: {value:,} brings the subtotal to {total:,}.")
    run.think(f"Let me double-check: the total is {total:,} and West is the largest.")
    assert run.verdict().label is Label.NO_LOOP


def test_a_tool_result_between_restatements_ends_the_run() -> None:
    run = Scenario("sum the table")
    for i, text in enumerate(RESTATEMENTS):
        run.think(text)
        if i % 2 == 1:
            run.tool("read_file", {"path": f"table-{i}.csv"}, f"region,value\nWest,{i}")
    assert "restated_conclusion" not in conclusive(run.verdict())


# --- a tool rate-limited every time ----------------------------------------------------------


def _rate_limited(run: Scenario, i: int) -> None:
    run.fail(
        "search_flights",
        {"query": "LIS BER"},
        f"429 Too Many Requests: rate limit exceeded (request id req_{i:04x}), "
        f"{i}/60 left, resets in {9 + i}s",
        error_type="RateLimitError",
    )
    run.think("Rate limited; retrying after a pause.", calls=[("sleep", {"seconds": 10 + i})])
    run.tool("sleep", {"seconds": 10 + i}, "")


def test_a_tool_rate_limited_every_time_until_the_run_ends_is_a_loop() -> None:
    run = Scenario("find a flight")
    run.tool("list_airports", {"country": "PT"}, "LIS, OPO, FAO")
    for i in range(7):
        _rate_limited(run, i)
    run.think("The service keeps rate-limiting me; I could not finish.")
    assert run.verdict().label is Label.LOOP


def test_a_tool_rate_limited_six_times_then_answering_is_not_a_loop() -> None:
    run = Scenario("find a flight")
    for i in range(6):
        _rate_limited(run, i)
    run.tool("search_flights", {"query": "LIS BER"}, '[{"flight": "TP540", "price": 120}]')
    run.tool("write_file", {"path": "flight.md", "content": "TP540"}, "ok")
    assert run.verdict().label is Label.NO_LOOP


def test_five_rate_limited_attempts_are_not_conclusive() -> None:
    run = Scenario("find a flight")
    for i in range(5):
        _rate_limited(run, i)
    assert run.verdict().label is not Label.LOOP


def test_an_error_document_is_a_failure_and_a_count_is_not() -> None:
    def failure(result: object) -> object:
        step = Step(StepKind.TOOL, "t", tool_result=result)
        return classify_failure(step, result if isinstance(result, str) else json.dumps(result))

    rate_limited = failure('{"error": {"code": 429, "message": "Rate limit reached"}}')
    assert rate_limited is not None and rate_limited.kind is FailureKind.TRANSIENT
    assert failure({"retry_after": 5, "error": {"code": 429}}) is not None
    assert failure("HTTP/1.1 503 Service Unavailable") is not None
    assert failure("500 rows exported") is None
    assert failure('{"error": null, "rows": 3}') is None


# --- calls to a tool that does not exist -----------------------------------------------------

NAMES = [
    "search_docs",
    "searchDocs",
    "docs_search",
    "search-docs",
    "SearchDocs",
    "search_documents",
    "docsSearch",
]


def _rejection(name: str) -> str:
    return f"{name} is not a valid tool, try one of [read_file, grep, list_dir]."


def test_calls_to_a_missing_tool_under_changing_names_are_a_loop() -> None:
    run = Scenario("find the retry policy")
    for name in NAMES:
        run.fail(name, {"query": "retry policy"}, _rejection(name), error_type="ToolNotFoundError")
    assert run.verdict().label is Label.LOOP


def test_a_missing_tool_corrected_after_two_tries_is_not_a_loop() -> None:
    run = Scenario("find the retry policy")
    for name in NAMES[:2]:
        run.fail(name, {"query": "retry policy"}, _rejection(name), error_type="ToolNotFoundError")
    run.tool("grep", {"pattern": "retry", "path": "docs/"}, "docs/retry.md:12: up to 5 retries")
    run.tool("read_file", {"path": "docs/retry.md"}, "# Retry policy\nUp to 5 retries.")
    assert run.verdict().label is Label.NO_LOOP


def _rendered(run: Run, convention: str) -> Verdict:
    rng = random.Random(7)
    spans = render_any(run, convention, "ab" * 16, rng, 1_790_000_000_000_000_000)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.jsonl"
        path.write_text(json.dumps(traces_data(spans, "test", "scope")) + "\n")
        records = read_records(path)
    return Scorer().score(build_trace(records))


def test_langgraphs_missing_tool_with_no_tool_span_is_a_loop_in_every_convention() -> None:
    turns = [
        Turn(
            "Searching the docs.",
            [ToolUse(name, {"query": "retry"}, f"Error: {_rejection(name)}", span=False)],
        )
        for name in NAMES
    ]
    run = Run("find the retry policy", "agent", "gpt-4o", turns)
    for convention in ("genai", "openinference", "openllmetry"):
        assert _rendered(run, convention).label is Label.LOOP, convention


# --- lessons of the first looks (batches 1-3) ------------------------------------------------


def test_a_clock_asked_again_and_again_answers_new_times() -> None:
    """The whole answer is a clock reading: its time is the answer, not a volatile detail."""
    run = Scenario("print the time ten times")
    for second in range(10, 20):
        run.tool("get_current_time", {"tz": "UTC"}, f"2026-09-13 18:38:{second}")
    assert run.verdict().label is Label.NO_LOOP


def test_a_timestamp_inside_an_unchanged_page_is_still_volatile() -> None:
    run = Scenario("read the page")
    for second in range(10, 16):
        run.tool(
            "read_page",
            {"url": "https://x.io/a"},
            f"Welcome to the docs. Fetched at 2026-09-13T18:38:{second}Z",
        )
    assert run.verdict().label is Label.LOOP


def test_different_thoughts_logged_with_the_same_short_answer_are_not_a_loop() -> None:
    run = Scenario("reflect five times")
    for thought in ("Options: a, b, c.", "Risks of b.", "Costs of b.", "Mitigation for b.", "Decide: b."):
        run.tool("think", {"thought": thought}, "Your thought has been logged.")
    assert run.verdict().label is Label.NO_LOOP


def test_different_questions_answered_with_the_same_no_results_are_a_loop() -> None:
    run = Scenario("find the policy")
    for query in ("retry policy", "retry policy docs", "retries policy", "policy for retry", "retry rules"):
        run.tool("docs", {"query": query}, "No results found.")
    assert run.verdict().label is Label.LOOP


def test_a_poll_checked_between_other_new_calls_that_ends_is_not_a_loop() -> None:
    run = Scenario("fine-tune and try the model")
    running = '{"id": "ft-1", "status": "running"}'
    for step in (58, 100, 249):
        for _ in range(3):
            run.tool("retrieve_job", {"job_id": "ft-1"}, running)
        run.tool(
            "list_events", {"job_id": "ft-1", "limit": 1}, f'[{{"message": "Step {step}/800: loss=1.7"}}]'
        )
    run.tool("retrieve_job", {"job_id": "ft-1"}, '{"id": "ft-1", "status": "succeeded"}')
    run.tool("chat_completion", {"model": "ft-1", "prompt": "hi"}, "Hello!")
    assert run.verdict().label is Label.NO_LOOP


def test_the_same_poll_checked_between_other_calls_that_never_ends_is_a_loop() -> None:
    run = Scenario("fine-tune and try the model")
    running = '{"id": "ft-1", "status": "running"}'
    for _ in range(3):
        for _ in range(4):
            run.tool("retrieve_job", {"job_id": "ft-1"}, running)
        run.tool("list_events", {"job_id": "ft-1", "limit": 1}, '[{"message": "no new events"}]')
    assert run.verdict().label is Label.LOOP


def test_a_last_call_never_answered_is_no_evidence_either_way() -> None:
    """A model's last call, with no tool span and no later model input to answer it, does
    not end the repetition before it (nor extend it)."""
    declined = ToolUse(
        "shell", {"command": "docker compose down -v"}, "Error: The user declined.", span=False
    )
    run = Run("reset the stack", "agent", "gpt-4o", [Turn("Running it.", [declined]) for _ in range(4)])
    assert _rendered(run, "genai").label is Label.LOOP


def test_a_validation_error_asking_to_try_again_is_permanent_and_a_bare_try_again_transient() -> None:
    validation = Step(
        StepKind.TOOL,
        "final_result",
        is_error=True,
        error_message="1 validation error: field required. Fix the errors and try again.",
    )
    busy = Step(StepKind.TOOL, "fetch", is_error=True, error_message="Server busy, please try again.")
    assert classify_failure(validation).kind is FailureKind.PERMANENT  # type: ignore[union-attr]
    assert classify_failure(busy).kind is FailureKind.TRANSIENT  # type: ignore[union-attr]


def test_the_same_figure_from_a_tool_that_does_not_ask_is_an_answer() -> None:
    run = Scenario("how many employees")
    for question in (
        "employees of Globex?",
        "How many employees does Globex have?",
        "Globex employees",
        "Globex staff count",
    ):
        run.tool("company_data", {"input": question}, "Globex's employees: 7,930")
    assert run.verdict().label is Label.LOOP


def test_the_same_files_announced_again_and_again_in_new_words_are_a_loop() -> None:
    run = Scenario("write the backend")
    for opener in (
        "I'll write",
        "Let me write",
        "Next I will create",
        "Now I'll put the tables in",
        "Okay, writing",
    ):
        run.think(f"{opener} backend/schema.sql. Actually, backend/.env should come first.")
    assert "restated_conclusion" in conclusive(run.verdict())


def test_files_named_once_each_are_not_a_restatement() -> None:
    run = Scenario("write the backend")
    for name in ("schema.sql", "models.py", "routes.py", "main.py", "README.md"):
        run.think(f"I'll write backend/{name} next.")
    assert run.verdict().label is Label.NO_LOOP


# --- lessons of the first look of batch 5 ----------------------------------------------------

#: A model looking for a tool that is not there: consecutive queries may share no word.
CATALOG_QUERIES = (
    "image upscaler",
    "esrgan",
    "upscaler",
    "esrgan model",
    "super resolution",
    "upscaler node",
    "esrgan upscaler",
)


def test_a_nothing_found_quoting_the_question_is_read_without_the_quote() -> None:
    assert without_echo("No tools matched 'flux'.", {"query": "flux"}, "search_tools") == (
        "No tools matched '<arg>'."
    )
    assert without_echo('{"query":"lora","tools":[],"total":0}', {"query": "lora"}, "tools") == (
        '{"query":"<arg>","tools":[],"total":0}'
    )
    # An answer naming what it is about is about that: the quote stays.
    job = "Job build-api is not started yet."
    assert without_echo(job, {"job": "build-api"}, "get_job") == job
    written = "0 rows matched 'region = North'."
    assert without_echo(written, {"where": "region = North"}, "update_rows") == written


def test_nothing_found_in_words_in_a_zero_count_and_in_an_empty_list() -> None:
    assert finds_nothing("No tools matched 'x'.")
    assert finds_nothing("0 results for x")
    assert finds_nothing('{"query":"x","tools":[],"total":0}')
    assert not finds_nothing("3 results for x")
    assert not finds_nothing('{"query":"x","tools":["lora_loader"],"total":1}')
    assert not finds_nothing("Pod api-7f9c: 0 restarts, Running")


def test_a_catalogue_searched_under_ever_new_queries_with_no_match_is_a_loop() -> None:
    """Each query differs and consecutive ones may share no word ('image upscaler', then
    'esrgan'), but they keep coming back to the same words and get the same "nothing"."""
    answers = (
        lambda q: f"Found no tool matching {q!r}.",
        lambda q: f"0 matches: {q}",
        lambda q: json.dumps({"q": q, "matches": [], "count": 0}),
    )
    for answer in answers:
        run = Scenario("upscale my image")
        for query in CATALOG_QUERIES:
            run.tool("search_tools", {"query": query}, answer(query))
        verdict = run.verdict()
        assert verdict.label is Label.LOOP
        assert "same_answer" in conclusive(verdict)


def test_a_catalogue_search_that_matches_at_last_is_not_a_loop() -> None:
    run = Scenario("upscale my image")
    for query in CATALOG_QUERIES[:4]:
        run.tool("search_tools", {"query": query}, f"No tools matched '{query}'.")
    run.tool("search_tools", {"query": "image resize"}, "1 tool matched: resize_image(path, scale)")
    run.tool("resize_image", {"path": "in.png", "scale": 4}, "saved out.png (4096x4096)")
    assert run.verdict().label is Label.NO_LOOP


def test_different_names_each_not_found_are_a_batch_not_a_loop() -> None:
    run = Scenario("which of these handles are free?")
    for handle in ("alice", "bob", "carol", "dave", "erin", "frank", "grace"):
        run.tool("find_user", {"handle": handle}, f"No user named '{handle}'.")
    assert run.verdict().label is Label.NO_LOOP


def test_related_items_each_not_found_under_one_topic_are_a_batch_not_a_loop() -> None:
    """Every query shares the topic ("iphone 15") and adds its own item, which never comes
    back: different questions, each answered once."""
    run = Scenario("find accessories")
    for item in ("case", "charger", "screen protector", "car mount", "wallet", "stand"):
        query = f"iphone 15 {item}"
        run.tool("search_products", {"query": query}, f"No results for '{query}'.")
    assert run.verdict().label is Label.NO_LOOP


def test_the_same_status_of_several_jobs_naming_each_is_not_the_same_answer() -> None:
    run = Scenario("check the builds")
    for job in ("build-api", "build-web", "build-worker", "build-docs", "build-cli"):
        run.tool("get_job", {"job": job}, f"Job {job} is queued behind the release build.")
    assert run.verdict().label is Label.NO_LOOP


DONE = "The task is complete: Pages/QuickSale.cshtml updated and `dotnet build Shop.sln` succeeded."
CLAIMLESS = ("Happy to help with anything else.", "Let me know if something comes up.")


def test_the_same_conclusion_restated_between_messages_asserting_nothing_is_a_loop() -> None:
    run = Scenario("add the stock indicator")
    for i in range(4):
        run.think(DONE if i % 2 == 0 else DONE.replace("The task is complete", "Finished"))
        run.think(CLAIMLESS[i % 2])
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "restated_conclusion" in conclusive(verdict)


def test_messages_asserting_nothing_do_not_count_as_restatements() -> None:
    run = Scenario("add the stock indicator")
    for i in range(3):
        run.think(DONE)
        run.think(CLAIMLESS[i % 2])
    assert "restated_conclusion" not in conclusive(run.verdict())


def test_a_message_asserting_something_new_still_ends_the_restatement() -> None:
    run = Scenario("add the stock indicator")
    for i in range(4):
        run.think(DONE)
        run.think(CLAIMLESS[0] if i != 1 else "Next I will add the Service badge to Pages/Badge.cshtml.")
    assert "restated_conclusion" not in conclusive(run.verdict())


def test_tools_that_set_a_value_and_tools_that_add_or_ask() -> None:
    assert sets_value("set_email") and sets_value("update_record") and sets_value("save_draft")
    assert not sets_value("send_message") and not sets_value("add_item") and not sets_value("get_status")


def test_the_same_value_set_three_times_is_a_loop() -> None:
    run = Scenario("book the room")
    run.tool("check_availability", {"room": "double"}, '{"available": true}')
    for _ in range(3):
        run.think("So that's shayne.cole at outlook.com, right?")
        run.tool("set_email", {"email": "shayne.cole@outlook.com"}, "Email recorded: shayne.cole@outlook.com")
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "repeated_result" in conclusive(verdict)


def test_the_same_value_set_twice_is_not_a_loop() -> None:
    run = Scenario("book the room")
    for _ in range(2):
        run.tool("set_email", {"email": "shayne.cole@outlook.com"}, "Email recorded: shayne.cole@outlook.com")
    run.tool("book_room", {"room": "double"}, '{"booking": "B-17"}')
    assert run.verdict().label is Label.NO_LOOP


def test_a_value_corrected_until_right_is_not_a_loop() -> None:
    run = Scenario("book the appointment")
    for name in ("Still", "Tomo", "Tomasz"):
        run.tool("update_name", {"name": name}, f"Name recorded: {name}")
    run.tool("book_visit", {"day": "Tuesday"}, '{"booking": "V-3"}')
    assert run.verdict().label is Label.NO_LOOP


def test_the_same_item_added_or_the_same_status_read_three_times_is_not_a_loop() -> None:
    added, read = Scenario("three apples"), Scenario("wait for the job")
    for _ in range(3):
        added.tool("add_item", {"item": "apple"}, "Added.")
        read.tool("get_status", {"job": "j-1"}, "running")
    assert added.verdict().label is Label.NO_LOOP
    assert read.verdict().label is Label.NO_LOOP


def test_an_empty_answer_to_the_same_write_three_times_is_not_conclusive() -> None:
    """A terminal written an empty input (to read what a running build printed) that has
    printed nothing yet: a write answered with nothing may be a wait."""
    run = Scenario("build the project")
    for _ in range(3):
        run.tool("write_stdin", {"session_id": 1, "chars": ""}, "")
    assert run.verdict().label is Label.NO_LOOP


def _readbacks(tool: str, times: int) -> Run:
    turns = [
        Turn(
            "Checking the dates.", [ToolUse("check_availability", {"room": "double"}, '{"available": true}')]
        )
    ]
    for _ in range(times):
        turns.append(
            Turn(
                "So that's ann.lee at gmail.com, right?",
                [ToolUse(tool, {"email": "ann.lee@gmail.com"}, "ok")],
            )
        )
    return Run("book the room", "agent", "gpt-4o", turns)


def test_a_value_set_twice_and_requested_a_third_time_unanswered_is_a_loop() -> None:
    """The model's last request has no recorded answer (the run ended first): for a value
    set and acknowledged before, its answer is known."""
    for convention in ("openinference-langgraph", "genai-events"):
        assert _rendered(_readbacks("set_email", 3), convention).label is Label.LOOP, convention


def test_a_read_twice_and_requested_a_third_time_unanswered_is_not_a_loop() -> None:
    for convention in ("openinference-langgraph", "genai-events"):
        assert _rendered(_readbacks("get_email", 3), convention).label is Label.NO_LOOP, convention


def test_an_id_with_a_part_of_digits_alone_is_one_id_and_a_version_is_not() -> None:
    first = normalize_result_and_content("Stored memory trace-a53b2d-761908.")
    second = normalize_result_and_content("Stored memory trace-5bbac9-ed00e3.")
    assert first == second
    assert normalize_result_and_content("version 3.12-1 installed")[1] == "version 3.12-1 installed"


def test_the_same_memory_saved_three_times_with_fresh_ids_is_a_loop() -> None:
    run = Scenario("remember my seat")
    for memory_id in ("mem-a53b2d-761908", "mem-5bbac9-ed00e3", "mem-87a077e6_257f"):
        run.tool("save_memory", {"content": "User prefers window seats."}, f"Stored memory {memory_id}.")
    assert run.verdict().label is Label.LOOP


def test_the_same_count_written_three_times_is_a_figure_not_an_acknowledgement() -> None:
    """A figure of the content makes an answer, not an acknowledgement: the faster rule
    for a value set again does not apply (a status counter written the same is read)."""
    run = Scenario("record the stock")
    for _ in range(3):
        run.tool("set_stock", {"sku": "A-1", "count": 7930}, "Stock for A-1 is now 7930.")
    assert run.verdict().label is Label.NO_LOOP


IDLE = (
    "Inspection complete. Nothing was modified.",
    "Nothing is pending.",
    "I'll wait for your next instruction.",
    "The task is complete; there is no further action to take.",
)


def test_saying_the_work_is_done_again_and_again_in_new_words_is_a_loop() -> None:
    """No figure or name to compare: the conclusion restated is "done" itself."""
    run = Scenario("review the card component")
    run.tool("read_file", {"path": "ProductCard.tsx"}, "export function ProductCard() {}")
    for text in IDLE:
        run.think(text)
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "restated_conclusion" in conclusive(verdict)


def test_done_said_three_times_or_between_new_work_is_not_a_loop() -> None:
    three, between = Scenario("review"), Scenario("review")
    for text in IDLE[:3]:
        three.think(text)
    for i, text in enumerate(IDLE):
        between.think(text)
        between.tool("read_file", {"path": f"part{i}.tsx"}, f"export const Part{i} = 1")
    assert three.verdict().label is Label.NO_LOOP
    assert between.verdict().label is Label.NO_LOOP


def test_courtesies_and_progress_notes_are_not_statements_that_the_work_is_over() -> None:
    assert declares_done("I'll wait for your next instruction.")
    assert declares_done("Done. Nothing further to change.")
    assert not declares_done("Thank you! Feel free to reach out anytime.")
    assert not declares_done("Step 1 done: schema.sql written, 3 tables.")
    assert not declares_done("Let me check the tests.")


# --- lessons of the first look of batch 6 ----------------------------------------------------

PASSAGES = (
    "Memory can be defined as the processes used to acquire, store and retrieve information.",
    "Long-term memory lets the agent retain and recall information over extended periods.",
    "Maximum inner product search: common choices are LSH, ANNOY, HNSW, FAISS and ScaNN.",
    "Section 4.3 Grounding: connect the protective earthing conductor before any other conductor.",
)
REWORDED = (
    "How does LangGraph persist thread state between runs?",
    "Persisting agent state between runs: setup of the storage",
    "Where is agent state stored between runs?",
    "Storage backend for agent state between sessions",
    "How is agent state stored durably?",
)


def _retrieval(rng: random.Random, passages: tuple[str, ...]) -> str:
    documents = [
        {"source": "post.html", "content": p, "score": round(rng.uniform(0.5, 0.8), 2)} for p in passages
    ]
    rng.shuffle(documents)
    return json.dumps(documents)


def test_the_same_documents_in_another_order_with_other_scores_are_one_answer() -> None:
    rng = random.Random(3)
    first, again = _retrieval(rng, PASSAGES[:3]), _retrieval(rng, PASSAGES[:3])
    assert first != again
    assert as_document_set(first) == as_document_set(again)
    wrapped = [json.dumps({"documents": json.loads(r), "took_ms": 12}) for r in (first, again)]
    assert as_document_set(wrapped[0]) == as_document_set(wrapped[1])


def test_a_new_document_unscored_lists_and_short_fields_are_not_one_answer() -> None:
    rng = random.Random(4)
    assert as_document_set(_retrieval(rng, PASSAGES[:3])) != as_document_set(_retrieval(rng, PASSAGES[1:]))
    unscored = json.dumps([{"content": p} for p in PASSAGES[:3]])
    assert as_document_set(unscored) == unscored
    leaderboard = json.dumps([{"player": "ann", "score": 31}, {"player": "bob", "score": 30}])
    assert as_document_set(leaderboard) == leaderboard
    assert as_document_set("score: 0.7") == "score: 0.7"


def test_a_rewritten_question_bringing_back_the_same_documents_is_a_loop() -> None:
    rng = random.Random(5)
    run = Scenario("How does LangGraph persist thread state between runs?")
    for query in REWORDED:
        run.tool("retriever_tool", {"query": query}, _retrieval(rng, PASSAGES[:3]))
        run.think('{"binary_score": "no"}')
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "same_answer" in conclusive(verdict)


def test_a_rewritten_question_bringing_new_documents_each_time_is_not_a_loop() -> None:
    rng = random.Random(6)
    run = Scenario("How does LangGraph persist thread state between runs?")
    for i, query in enumerate(REWORDED):
        passages = tuple(f"{p} (part {i}: {'abcdefghij'[i]} passage)" for p in PASSAGES[:3])
        run.tool("retriever_tool", {"query": query}, _retrieval(rng, passages))
        run.think('{"binary_score": "no"}')
    assert run.verdict().label is Label.NO_LOOP


def test_different_questions_answered_by_the_same_documents_are_a_batch_not_a_loop() -> None:
    rng = random.Random(8)
    run = Scenario("answer the customer's five questions from the FAQ")
    questions = (
        "refund policy annual plans",
        "shipping times Europe",
        "warranty length laptops",
        "invoice address change",
        "student discount eligibility",
    )
    for query in questions:
        run.tool("search_knowledge_base", {"query": query}, _retrieval(rng, PASSAGES[:3]))
        run.think("Noted.")
    assert run.verdict().label is Label.NO_LOOP


def test_pages_of_a_scored_search_are_not_the_same_answer() -> None:
    rng = random.Random(7)
    run = Scenario("collect every passage about agent memory")
    for page in range(5):
        passages = tuple(
            f"Page {page} passage {n}: agent memory stores and recalls information." for n in range(3)
        )
        run.tool("search_knowledge_base", {"query": "agent memory", "page": page}, _retrieval(rng, passages))
    assert run.verdict().label is Label.NO_LOOP


PLAN = "Documents/: invoice.pdf, budget.xlsx\nImages/: holiday.jpg, IMG_2041.png\nNotes/: notes.txt"
PLAN_WORDINGS = (f"Proposed organisation:\n{PLAN}", f"Here is the organised structure:\n{PLAN}")
APPROVALS = (
    "The organisation is correct: every file is in the right folder. No changes needed.",
    "Verified. All files are grouped correctly by type; the result is complete.",
    "This output is correct and complete. Nothing to fix.",
    "Looks good - documents, notes and images are separated as requested. Approved.",
    "The structure satisfies the request. No further changes are required.",
)


def test_a_result_approved_in_new_words_every_iteration_of_an_agent_loop_is_a_loop() -> None:
    """The worker restates its result across the hand-offs; the checker's approvals assert nothing new."""
    run = Scenario("organise the files into folders by type")
    for i, approval in enumerate(APPROVALS):
        run.agent("organizer_agent").think(PLAN_WORDINGS[i % 2])
        run.agent("validator_agent").think(approval)
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "restated_conclusion" in conclusive(verdict)


def test_agents_of_a_pipeline_each_restating_the_figures_once_are_not_a_loop() -> None:
    run = Scenario("report the quarter's margin")
    for agent, text in (
        ("Revenue Analyst", "Revenue for Q3 is 2,400,000 EUR and cost 1,680,000 EUR."),
        ("Writer", "In Q3 revenue reached 2,400,000 EUR against 1,680,000 EUR of cost."),
        ("Reviewer", "Checked: 2,400,000 EUR revenue and 1,680,000 EUR cost match the ledger."),
        ("Editor", "Final: Q3 revenue 2,400,000 EUR, cost 1,680,000 EUR, margin 30%."),
    ):
        run.agent(agent).think(text)
    assert run.verdict().label is Label.NO_LOOP


def test_a_critic_whose_feedback_changes_and_a_refiner_that_follows_it_are_not_a_loop() -> None:
    run = Scenario("write a very short story about a lighthouse keeper")
    drafts = (
        "Once there was a keeper at Dunmore Head who found a strange light.",
        "Every night the keeper at Dunmore Head watched the harbour; a green light blinked from Kerry.",
        "Every night the keeper at Dunmore Head watched the harbour; a green light from Kerry spelt Aurora.",
        "At Dunmore Head a green light from Kerry spelt Aurora, the ship that brought the keeper in 1986.",
    )
    critiques = (
        "Add a concrete setting and a moment of tension.",
        "The ending is flat: give the light a meaning, a Name perhaps.",
        "Tie the Name to the Keeper's past so the ending lands.",
    )
    run.agent("InitialWriterAgent").think(drafts[0])
    for critique, draft in zip(critiques, drafts[1:], strict=True):
        run.agent("CriticAgent").think(critique)
        run.agent("RefinerAgent").think(draft)
    run.agent("CriticAgent").think("No major issues found.")
    run.tool("exit_loop", {}, "{}")
    assert run.verdict().label is Label.NO_LOOP


# --- batch 7: the thing an answer names changed ----------------------------------------------

REVISIONS = ("9f2c4e1a7b3d", "4b8e0c6d2f1a", "c3d5f7a9e1b2")


def _document(revision: str) -> str:
    return json.dumps({"revision": revision, "state": "published"})


def _watch_revisions(run: Scenario, polls_per_revision: int) -> None:
    """A sync agent that polls a document's revision and, at each new one, re-indexes it
    (``polls_per_revision`` answers name each revision before the next one)."""
    for number, revision in enumerate(REVISIONS):
        for poll in range(polls_per_revision if number < len(REVISIONS) - 1 else 1):
            run.tool("get_document", {"doc": "handbook"}, _document(revision))
            if poll == 0:
                run.tool("reindex", {"doc": "handbook", "revision": revision}, f"indexed {40 + number} parts")
            run.tool("sleep", {"seconds": 60}, "slept 60s")


def test_identifiers_are_what_masking_hides_except_the_time() -> None:
    assert identifiers('{"revision": "9f2c4e1a7b3d", "at": "2026-05-01T10:00:00Z"}') == "9f2c4e1a7b3d"
    assert identifiers("run 123e4567-e89b-12d3-a456-426614174000 by req_8f3k2 with python3") == (
        "123e4567-e89b-12d3-a456-426614174000 8f3k2"
    )
    assert identifiers("42 rows at 2026-05-01T10:00:00Z") == ""


def test_a_poll_whose_answer_names_a_new_revision_after_holding_one_is_not_a_loop() -> None:
    run = Scenario("keep the handbook index current")
    _watch_revisions(run, polls_per_revision=4)
    assert run.verdict().label is Label.NO_LOOP


def test_a_poll_whose_answer_names_the_same_revision_every_time_is_a_loop() -> None:
    run = Scenario("keep the handbook index current")
    for _ in range(8):
        run.tool("sleep", {"seconds": 60}, "slept 60s")
        run.tool("get_document", {"doc": "handbook"}, _document(REVISIONS[0]))
    assert run.verdict().label is Label.LOOP


def test_identifiers_new_on_every_answer_are_volatile_not_news() -> None:
    run = Scenario("wait for the export")
    for number in range(8):
        run.tool("sleep", {"seconds": 30}, "slept 30s")
        request = f"req_{number}f{number + 3}a9c{number}"
        run.tool("get_export", {"id": "exp-1"}, json.dumps({"status": "pending", "request": request}))
    assert run.verdict().label is Label.LOOP


def test_an_identifier_first_named_after_answers_naming_none_is_not_news() -> None:
    run = Scenario("remember the seat preference")
    for stored in ("run-1865", "run-1778", "run-512b", "run-1902", "run-77e1"):
        run.tool("upsert_memory", {"content": "User prefers window seats."}, f"Stored memory {stored}.")
    assert run.verdict().label is Label.LOOP


def _mentions(run: Scenario, senders: tuple[str, ...], pulls: tuple[int, ...]) -> None:
    """A review bot woken by mentions: each one read, the pull request viewed and approved."""
    for sender, pull in zip(senders, pulls, strict=True):
        run.tool("get_notifications", {"unread": True}, json.dumps([{"pr": pull, "by": sender}]))
        run.tool("view_pull", {"number": pull}, json.dumps({"number": pull, "head": f"{pull}f3c9a1e7d2b4"}))
        approval = {"number": pull, "event": "APPROVE", "body": "LGTM."}
        run.tool("submit_review", approval, '{"state": "APPROVED"}')


def test_a_new_mention_answered_by_the_same_review_of_the_same_commit_is_still_a_loop() -> None:
    run = Scenario("answer mentions")
    _mentions(run, ("ana", "bo", "ana", "bo", "ana", "bo", "cy"), (7,) * 7)
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "repeated_result" in conclusive(verdict)


def test_mentions_each_about_another_pull_request_are_work_not_a_loop() -> None:
    run = Scenario("answer mentions")
    _mentions(run, ("ana", "bo", "ana", "bo", "ana", "bo", "cy"), tuple(range(7, 14)))
    assert run.verdict().label is Label.NO_LOOP


def test_a_wait_whose_end_is_followed_by_new_work_stays_resolved() -> None:
    run = Scenario("ship the build")
    for status in ["running"] * 5 + ["succeeded"]:
        run.tool("get_build", {"id": "b-9"}, json.dumps({"status": status}))
        if status == "running":
            run.tool("read_config", {"path": "ci.yml"}, "stages: build, test")
    run.tool("download_artifact", {"build": "b-9"}, "app.tar.gz (12 MB)")
    run.tool("create_release", {"tag": "v1.4.0"}, "release v1.4.0 created")
    assert run.verdict().label is Label.NO_LOOP


def test_a_wait_whose_end_is_followed_by_one_more_read_and_then_new_work_stays_resolved() -> None:
    run = Scenario("ship the build")
    for status in ["running"] * 5 + ["succeeded"]:
        run.tool("get_build", {"id": "b-9"}, json.dumps({"status": status}))
        run.tool("read_config", {"path": "ci.yml"}, "stages: build, test")
    run.tool("download_artifact", {"build": "b-9"}, "app.tar.gz (12 MB)")
    assert run.verdict().label is Label.NO_LOOP


# --- batch 7: the same result reached by other working ---------------------------------------

RECOUNTS = (
    "Adding the three invoices: 120 + 340 + 90 = 550. The total is 550.",
    "In cents: 12000 + 34000 + 9000 = 55000, so 120 plus 340 plus 90 gives a total of 550.",
    "Averaging: 550 / 3 = 183.33 per invoice, times 3 = 550; 340 is the largest of them.",
    "Backwards: 550 - 90 = 460, 460 - 340 = 120, 120 - 120 = 0. Final answer: 550.",
    "Pairing: 340 + 90 = 430, 430 + 120 = 550. The sum is 550.",
)


def test_a_message_concludes_with_the_result_it_gives_last() -> None:
    assert conclusion(RECOUNTS[2]) == conclusion("= 550") == conclusion("The answer is 550.")
    assert conclusion("There are 550 of them.") is None
    assert conclusion("x = 3, then y = 4") == conclusion("= 4") != conclusion("= 3")


def test_the_same_result_recomputed_by_other_working_again_and_again_is_a_loop() -> None:
    run = Scenario("total the invoices")
    for text in RECOUNTS:
        run.think(text)
    verdict = run.verdict()
    assert verdict.label is Label.LOOP
    assert "restated_conclusion" in conclusive(verdict)


def test_running_subtotals_each_with_a_new_result_are_not_a_loop() -> None:
    run = Scenario("total the invoices")
    for text in (
        "First two: 120 + 340 = 460.",
        "Adding the third: 460 + 90 = 550.",
        "With the credit note: 550 - 75 = 475.",
        "With shipping: 475 + 25 = 500.",
        "Tax at 20%: 500 x 1.2 = 600. The total due is 600.",
    ):
        run.think(text)
    assert run.verdict().label is Label.NO_LOOP


def test_the_same_result_recomputed_three_times_is_below_the_threshold() -> None:
    run = Scenario("total the invoices")
    for text in RECOUNTS[:3]:
        run.think(text)
    assert run.verdict().label is Label.NO_LOOP
