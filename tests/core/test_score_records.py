"""``score_records``: one trace's span records to a verdict and patches, across processes."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle

from otel_semloop.builder import build_trace
from otel_semloop.model import SpanRecord
from otel_semloop.scoring import Scorer, score_records
from otel_semloop.verdict import Label
from otel_semloop.writeback import patches_for
from tests.support.span_records import span_record

TRACE = "ab" * 16


def looping_run(trace_id: str = TRACE, calls: int = 6) -> list[SpanRecord]:
    """An agent calling one tool with the same arguments and getting the same result."""
    records = [span_record(trace_id, "1", "", 1, "invoke_agent", {"gen_ai.operation.name": "invoke_agent"})]
    for i in range(calls):
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search",
            "gen_ai.tool.call.arguments": '{"q": "weather in paris"}',
            "gen_ai.tool.call.result": "no results",
        }
        records.append(span_record(trace_id, f"{i + 2:x}", "1", 10 + i, "execute_tool search", attributes))
    return records


def test_score_records_equals_building_and_scoring_in_process() -> None:
    records = looping_run()
    trace = build_trace(records)
    expected = Scorer().score(trace)
    result = score_records(records)
    assert result is not None
    verdict, patches = result
    assert verdict == expected
    assert verdict.label is Label.LOOP
    assert patches == patches_for(trace, expected)
    assert patches["0000000000000001"].attributes["semloop.loop.detected"] is True


def test_a_trace_without_agent_steps_gives_nothing_to_write() -> None:
    plain = [span_record(TRACE, "1", "", 1, "GET /", {"http.request.method": "GET"})]
    assert score_records(plain) is None


def test_score_records_runs_in_a_process_pool() -> None:
    """The function, its arguments and its results cross a real process boundary."""
    traces = [looping_run(f"{i:032x}", calls=2 + i) for i in range(4)]
    pickle.dumps(score_records)
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        remote = list(pool.map(score_records, traces))
    local = [score_records(records) for records in traces]
    assert remote == local
    labels = [result[0].label for result in remote if result is not None]
    assert labels[0] is not Label.LOOP and labels[-1] is Label.LOOP
