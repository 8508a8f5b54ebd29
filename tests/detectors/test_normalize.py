"""Normalisation: what the detectors treat as the same, and what they never do."""

from __future__ import annotations

from otel_semloop.detectors.call_identity import arg_signature, canonical_args, near_duplicate
from otel_semloop.detectors.failure_class import FailureKind, classify_failure
from otel_semloop.detectors.figures import counts_fell, progress_value, remaining_counts
from otel_semloop.detectors.normalize import digest, mask, normalize_result, normalize_text
from otel_semloop.model import Step, StepKind

# --- masking --------------------------------------------------------------------------------


def test_uuids_are_masked():
    assert mask("job 3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b done") == "job <uuid> done"


def test_iso_timestamps_of_any_precision_mask_alike():
    assert mask("at 2026-01-01T10:00:00Z") == mask("at 2026-01-02T11:30:59.123+02:00") == "at <ts>"


def test_hex_runs_with_digits_and_letters_are_masked():
    assert mask("commit a1b2c3d4e5 built") == "commit <hex> built"


def test_plain_words_made_of_hex_letters_are_not_masked():
    assert mask("deface the facade 1") == "deface the facade #"


def test_a_generated_id_masks_alike_whether_it_came_out_hex_or_digits():
    footers = [
        "[cache miss run-d1a8]",
        "[cache miss run-3eab]",
        "[cache miss run-5340]",
    ]
    assert len({mask(f) for f in footers}) == 1
    assert len({normalize_result(f) for f in footers}) == 1
    assert mask("deface 3 cafe") == "deface # cafe"  # hex words hold no digit: kept


def test_digit_runs_are_masked_so_counters_are_not_progress():
    assert normalize_result("request 48213 ok, pid 77") == normalize_result("request 9 ok, pid 12001")


def test_text_without_digits_is_returned_unchanged():
    text = "no matches"
    assert mask(text) is text


def test_text_normalisation_ignores_case_punctuation_and_blanks():
    assert normalize_text("Retrying the search.") == normalize_text("  retrying   the SEARCH!")


def test_digest_is_stable_and_distinguishes_texts():
    assert digest("a") == digest("a") != digest("b")


# --- arguments ------------------------------------------------------------------------------


def test_canonical_arguments_ignore_key_order():
    assert canonical_args({"b": 1, "a": {"y": 2, "x": 3}}) == canonical_args({"a": {"x": 3, "y": 2}, "b": 1})


def test_canonical_arguments_keep_values_exact():
    assert canonical_args({"page": 1}) != canonical_args({"page": 2})


def test_volatile_argument_names_are_dropped_at_any_depth():
    a = {"q": "x", "request_id": "r-1", "meta": {"Nonce": "n1"}}
    b = {"q": "x", "request_id": "r-2", "meta": {"Nonce": "n2"}}
    assert canonical_args(a) == canonical_args(b)


def test_per_tool_volatile_names_are_dropped_when_given():
    assert canonical_args({"q": "x", "seed": 1}, {"seed"}) == canonical_args({"q": "x", "seed": 2}, {"seed"})


def _near(a, b) -> bool:
    return near_duplicate(arg_signature(a), arg_signature(b))


def test_a_trailing_slash_is_cosmetic():
    assert _near({"path": "."}, {"path": "./"})


def test_an_added_flag_is_cosmetic():
    assert _near({"pattern": "x"}, {"pattern": "x", "case_sensitive": False})


def test_an_added_limit_is_cosmetic():
    assert _near({"pattern": "x"}, {"pattern": "x", "max_results": 50})


def test_a_changed_number_is_not_cosmetic():
    """A different issue number, amount or sleep duration is different work."""
    assert not _near({"issue_number": 17, "labels": ["bug"]}, {"issue_number": 18, "labels": ["bug"]})
    assert not _near({"seconds": 15}, {"seconds": 30})


def test_a_toggled_flag_is_not_cosmetic():
    assert not _near({"path": "a", "dry_run": True}, {"path": "a", "dry_run": False})


def test_a_respelled_nested_value_is_cosmetic():
    """Case and blanks inside a nested object, and its key order, are spelling."""
    assert _near(
        {"id": 7, "fields": {"email": "Ann@x.com", "city": "Berlin "}},
        {"fields": {"city": "berlin", "email": "ann@x.com"}, "id": 7},
    )


def test_a_changed_nested_value_is_not_cosmetic():
    assert not _near({"id": 7, "fields": {"city": "Berlin"}}, {"id": 7, "fields": {"city": "Lisbon"}})


def test_an_added_short_option_is_cosmetic():
    assert _near({"pattern": "x"}, {"pattern": "x", "sort": "asc"})


def test_reordered_keys_are_cosmetic():
    assert _near({"a": "one two", "b": "three"}, {"b": "three", "a": "one two"})


def test_a_changed_path_is_not_cosmetic():
    assert not _near({"path": "src/app.py"}, {"path": "src/db.py"})


def test_a_changed_page_is_not_cosmetic():
    assert not _near({"query": "orders", "page": 1}, {"query": "orders", "page": 2})


def test_an_added_substantive_argument_is_not_cosmetic():
    assert not _near({"pattern": "x"}, {"pattern": "x", "path": "src/orders/handlers"})


# --- progress -------------------------------------------------------------------------------


def test_a_percentage_is_progress():
    assert progress_value("downloading... 45%") == 0.45


def test_n_of_m_is_progress():
    assert progress_value("processed 3/10 files") == 0.3
    assert progress_value("page 3 of 10") == 0.3


def test_the_last_figure_counts():
    assert progress_value("10% earlier, now 7/10") == 0.7


def test_dates_and_ratios_are_not_progress():
    assert progress_value("released 2024/05/01") is None
    assert progress_value("ratio 5/1") is None


def test_no_figure_means_no_progress_value():
    assert progress_value("still running") is None


# --- failures -------------------------------------------------------------------------------


def _failed(message: str = "", error_type: str = "", kind: StepKind = StepKind.TOOL) -> Step:
    return Step(kind, "call", is_error=True, error_message=message, error_type=error_type)


def test_rate_limits_are_transient():
    failure = classify_failure(_failed("Error code: 429 - rate limited", "openai.RateLimitError"))
    assert failure is not None and failure.kind is FailureKind.TRANSIENT


def test_timeouts_and_5xx_are_transient():
    assert classify_failure(_failed("Request timed out")).kind is FailureKind.TRANSIENT
    assert classify_failure(_failed("HTTP 503 Service Unavailable")).kind is FailureKind.TRANSIENT


def test_auth_and_invalid_arguments_are_permanent():
    assert classify_failure(_failed("status code 401")).kind is FailureKind.PERMANENT
    assert classify_failure(_failed("", "PermissionDeniedError")).kind is FailureKind.PERMANENT
    assert classify_failure(_failed("invalid argument: limit must be positive")).kind is FailureKind.PERMANENT


def test_other_errors_are_other():
    assert classify_failure(_failed("compilation failed in main.c")).kind is FailureKind.OTHER


def test_a_tool_result_starting_with_error_is_a_failure():
    step = Step(StepKind.TOOL, "run_tests")
    assert classify_failure(step, "error: DATABASE_URL unset") is not None
    assert classify_failure(step, "3 failed, 20 passed") is None


def test_the_same_message_with_other_ids_has_the_same_class():
    a = classify_failure(_failed("lock held by pid 4411"))
    b = classify_failure(_failed("lock held by pid 918"))
    assert a == b


def test_a_successful_step_has_no_failure():
    assert classify_failure(Step(StepKind.LLM, "chat")) is None


def test_remaining_counts_are_numbers_labelled_as_work_still_to_do():
    assert remaining_counts("queue emails: 12 pending") == (12,)
    assert remaining_counts("3 files left, remaining: 40, queued=7") == (3, 40, 7)
    for not_a_count in (
        "pid 4411",
        "attempt 3",
        "req-1001 pending",
        "1234567 pending",
        "12 done",
        "no digits",
    ):
        assert remaining_counts(not_a_count) is None, not_a_count
    assert remaining_counts(", ".join(["7 pending"] * 9)) is None  # a listing, not a status line


def test_counts_fell_needs_the_same_shape_no_rise_and_one_fall():
    assert counts_fell((12, 3), (9, 3))
    assert not counts_fell((12, 3), (12, 3))
    assert not counts_fell((12, 3), (9, 4))
    assert not counts_fell((12,), (9, 3))
    assert not counts_fell(None, (9,))
