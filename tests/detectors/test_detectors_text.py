"""Text: monologues between actions and chanting inside one output."""

from __future__ import annotations

from otel_semloop.detectors.text import CHANTING, MONOLOGUE
from otel_semloop.verdict import Label
from tests.support.scenarios import Scenario, found

# --- monologue -------------------------------------------------------------------------------


def test_three_identical_messages_with_nothing_between_are_a_monologue():
    run = Scenario().think("I should check the config.").think("I should check the config.")
    run.think("I should check the config.")
    verdict = run.verdict()
    finding = found(verdict, MONOLOGUE)
    assert finding is not None and finding.conclusive and verdict.label is Label.LOOP


def test_two_identical_messages_only_warn():
    run = Scenario().think("I should check the config.").think("I should check the config.")
    finding = found(run.verdict(), MONOLOGUE)
    assert finding is not None and not finding.conclusive


def test_messages_differing_only_in_numbers_case_and_punctuation_are_near_identical():
    run = Scenario().think("Attempt 1: retrying the upload.").think("attempt 2 - Retrying the upload!")
    run.think("Attempt 3: retrying the upload...")
    assert found(run.verdict(), MONOLOGUE).conclusive


def test_a_tool_call_between_messages_breaks_the_monologue():
    run = Scenario().think("Checking.").think("Checking.").tool("ls", {}, "a b").think("Checking.")
    finding = found(run.verdict(), MONOLOGUE)
    assert finding is None or not finding.conclusive


def test_a_message_that_requests_a_tool_call_breaks_the_monologue():
    run = Scenario().think("Checking.").think("Checking.", calls=[("ls", {})]).think("Checking.")
    finding = found(run.verdict(), MONOLOGUE)
    assert finding is None or not finding.conclusive


def test_empty_outputs_neither_extend_nor_break_a_monologue():
    run = Scenario().think("Checking.").think("").think("Checking.").think("").think("Checking.")
    assert found(run.verdict(), MONOLOGUE).conclusive


def test_one_sentence_shape_naming_different_things_is_not_a_monologue():
    run = Scenario()
    for name in ("orders.py", "billing.py", "cart.py", "session.py"):
        run.think(f"Now reviewing {name} for the deprecated call before moving on.")
    assert found(run.verdict(), MONOLOGUE) is None


# --- chanting --------------------------------------------------------------------------------


def chant(times: int, line: str = "I will now check the configuration file.") -> str:
    return "Let me think.\n" + "\n".join([line] * times) + "\nDone."


def test_a_line_repeated_ten_times_in_one_output_is_chanting():
    verdict = Scenario().think(chant(10)).verdict()
    finding = found(verdict, CHANTING)
    assert finding is not None and finding.conclusive and verdict.label is Label.LOOP


def test_a_line_repeated_nine_times_is_not_conclusive():
    finding = found(Scenario().think(chant(9)).verdict(), CHANTING)
    assert finding is not None and not finding.conclusive


def test_repeated_sentences_on_one_line_count_too():
    text = " ".join(["I will now check the configuration file."] * 10)
    assert found(Scenario().think(text).verdict(), CHANTING).conclusive


def test_lines_inside_a_code_block_never_count():
    text = "Here is the file:\n```\n" + "\n".join(["    assert response.status == 200"] * 15) + "\n```"
    assert found(Scenario().think(text).verdict(), CHANTING) is None


def test_list_items_never_count():
    text = "Checklist:\n" + "\n".join(["- verify the migration ran"] * 12)
    assert found(Scenario().think(text).verdict(), CHANTING) is None


def test_table_rows_never_count():
    text = "| file | status |\n|---|---|\n" + "\n".join(["| pending | pending |"] * 12)
    assert found(Scenario().think(text).verdict(), CHANTING) is None


def test_short_lines_among_real_sentences_never_count():
    lines = []
    for i in range(12):
        lines += ["ok", f"Migrated table number {i} and checked its row counts against the source."]
    assert found(Scenario().think("\n".join(lines)).verdict(), CHANTING) is None
