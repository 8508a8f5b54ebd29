"""``rescore`` totals what loops burned: tokens and model calls from each loop's onset to the end
of its trace, by agent and by signal, and the share a stop at the onset would have saved, checked
against sums made by hand on a small file of runs recorded with a real SDK tracer.

The runs (``tests/support/agent_spans.search_agent``): round ``k`` is a chat span recording
``100 * k`` input tokens and 20 output tokens, then the search tool. A loop begins at the first
search (step 3: the agent is step 1, the first chat step 2), so the loop's model calls are the
chats of rounds 2 to n.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_semloop.cli import main
from otel_semloop.otlp import records_to_traces_json
from otel_semloop.processor.sdk import span_to_record
from tests.batch.rescore_data import write_jsonl
from tests.support.agent_spans import search_agent

SAME = "3 matches: 'upstream request timeout after 30s'"
#: The hand sums (see the module doc).
RESEARCHER = {
    "rounds": 6,
    "loop_in": 100 * (2 + 3 + 4 + 5 + 6),
    "loop_out": 20 * 5,
    "trace_in": 100 * (1 + 2 + 3 + 4 + 5 + 6),
    "trace_out": 20 * 6,
}
WRITER = {
    "rounds": 8,
    "loop_in": 100 * (2 + 3 + 4 + 5 + 6 + 7 + 8),
    "loop_out": 20 * 7,
    "trace_in": 100 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8),
    "trace_out": 20 * 8,
}


@pytest.fixture(scope="module")
def rescored(tmp_path_factory) -> tuple[dict, str, Path]:
    tmp = tmp_path_factory.mktemp("spend")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    search_agent(tracer, [SAME] * RESEARCHER["rounds"], name="researcher")
    search_agent(tracer, [SAME] * WRITER["rounds"], name="writer")
    search_agent(tracer, [f"{i} new matches" for i in range(4)], name="healthy")
    records = [span_to_record(span) for span in exporter.get_finished_spans()]
    source = write_jsonl(tmp / "in.jsonl", [records_to_traces_json(records)])
    summary, page = tmp / "summary.json", tmp / "report.html"
    out = str(tmp / "out.jsonl")
    assert main(["rescore", str(source), "-o", out, "--summary", str(summary), "--report", str(page)]) == 0
    return json.loads(summary.read_text()), page.read_text(), tmp


def test_loop_tokens_are_the_hand_sum_over_the_looping_traces(rescored) -> None:
    summary, _, _ = rescored
    spend = summary["loop_spend"]
    assert spend["traces"] == 2
    assert spend["input_tokens"] == RESEARCHER["loop_in"] + WRITER["loop_in"] == 5500
    assert spend["output_tokens"] == RESEARCHER["loop_out"] + WRITER["loop_out"] == 240
    assert spend["model_calls"] == (RESEARCHER["rounds"] - 1) + (WRITER["rounds"] - 1)
    assert spend["traces_with_cost"] == 0 and spend["cost"] == 0


def test_the_share_saved_is_loop_tokens_over_the_looping_traces_tokens(rescored) -> None:
    summary, _, _ = rescored
    whole = RESEARCHER["trace_in"] + RESEARCHER["trace_out"] + WRITER["trace_in"] + WRITER["trace_out"]
    assert summary["loop_spend"]["trace_tokens"] == whole == 5980
    assert summary["loop_spend"]["tokens_saved_share"] == round(5740 / 5980, 4)


def test_spend_is_totalled_by_agent_most_tokens_first(rescored) -> None:
    summary, _, _ = rescored
    by_agent = summary["loop_spend_by_agent"]
    assert list(by_agent) == ["writer", "researcher"]
    assert by_agent["writer"]["input_tokens"] + by_agent["writer"]["output_tokens"] == 3500 + 140
    assert by_agent["researcher"]["input_tokens"] + by_agent["researcher"]["output_tokens"] == 2000 + 100
    assert "healthy" not in by_agent


def test_spend_is_totalled_by_signal_each_trace_under_every_signal_it_fired(rescored) -> None:
    summary, _, _ = rescored
    by_signal = summary["loop_spend_by_signal"]
    assert by_signal, "no signal totals"
    for totals in by_signal.values():
        assert 1 <= totals["traces"] <= 2
        assert totals["input_tokens"] in (2000, 3500, 5500)
    assert by_signal["action_cycle"]["input_tokens"] == 5500


def test_the_report_says_what_loops_burned(rescored) -> None:
    _, page, _ = rescored
    assert "loops burned 5.7 k tokens in 12 model calls across 2 traces" in page
    assert "stopping at onset would have saved 96% of their tokens" in page
    section = page.split('id="loop-spend"')[1]
    assert "writer" in section and "researcher" in section


def test_the_terminal_summary_says_what_loops_burned(rescored, capsys) -> None:
    _, _, tmp = rescored
    source = tmp / "in.jsonl"
    assert main(["rescore", str(source), "-o", str(tmp / "again.jsonl")]) == 0
    out = capsys.readouterr().out
    burned = "loops burned 5.7 k tokens in 12 model calls across 2 traces"
    assert f"{burned}; stopping at onset would have saved 96% of their tokens" in out
