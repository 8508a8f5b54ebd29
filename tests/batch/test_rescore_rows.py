"""A trace's summary row repeats what its root's patch holds (the evaluation record's
attributes and time, the redacted reason): taken from the patch, it must be exactly what
making it again from the verdict gives."""

from __future__ import annotations

import dataclasses
import random

import pytest

from bench.rescore_throughput import make_trace
from otel_semloop.batch.worker import ScorerSpec, TraceJob, _records, _row, clean
from otel_semloop.builder import build_trace
from otel_semloop.evaluation import evaluation_record
from otel_semloop.writeback import patches_for

SECRET = "sk-" + "a1B2" * 12


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"reason": "looping on read_file with api_key=" + SECRET + "\n\x1b[31m" + "again " * 120},
        {"reason": ""},
        {"reason": "short", "attributes": {"semloop.reason": "a scorer's own reason"}},
    ],
)
@pytest.mark.parametrize("looping", [True, False])
def test_a_row_made_from_the_root_patch_is_the_row_made_from_the_verdict(change, looping):
    spans = make_trace(random.Random(5), looping, 1_767_225_600_000_000_000)
    root = spans[-1]["spanId"]
    job = TraceJob(spans[0]["traceId"], "json", b"", (root,), False)
    trace = build_trace(_records(job, spans)[0])
    verdict = dataclasses.replace(ScorerSpec().build().score(trace), **change)
    row = _row(job, trace, verdict, patches_for(trace, verdict))
    record = evaluation_record(trace, verdict)
    assert record is not None
    assert row.evaluation == dict(record.attributes)
    assert row.event_ns == record.time_ns
    assert row.reason == clean(verdict.reason or "", 500)
    if change.get("reason"):
        assert SECRET not in row.reason and len(row.reason) <= 500


@pytest.mark.parametrize("agent_step", [True, False])
@pytest.mark.parametrize("looping", [True, False])
def test_a_rows_agent_tools_and_times_are_read_as_the_plain_loops_read_them(looping, agent_step):
    from otel_semloop.model import StepKind

    spans = make_trace(random.Random(9), looping, 1_767_225_600_000_000_000)
    if not agent_step:  # no invoke_agent step: the agent comes from the first step that names one
        spans[-1]["name"] = "request"
        spans[-1]["attributes"] = [a for a in spans[-1]["attributes"] if a["key"] != "gen_ai.operation.name"]
    spans[3]["startTimeUnixNano"] = "0"  # a span without a start time is left out of the minimum
    job = TraceJob(spans[0]["traceId"], "json", b"", (spans[-1]["spanId"],), False)
    trace = build_trace(_records(job, spans)[0])
    verdict = ScorerSpec().build().score(trace)
    row = _row(job, trace, verdict, patches_for(trace, verdict))
    steps = trace.steps
    agents = [s.agent or s.name for s in steps if s.kind is StepKind.AGENT]
    agent = agents[0] if agents else next((s.agent for s in steps if s.agent), "") or ""
    in_loop = verdict.in_loop_span_ids
    tools = dict.fromkeys(s.name for s in steps if s.kind is StepKind.TOOL and s.span_id in in_loop)
    starts = [r.start_ns for r in trace.spans.values() if r.start_ns]
    ends = [r.end_ns for r in trace.spans.values() if r.end_ns]
    assert row.agent == clean(agent, 80)
    assert row.tools == tuple(clean(t, 80) for t in tools)
    assert (row.start_ns, row.end_ns) == (min(starts, default=0), max(ends, default=0))
    assert bool(row.tools) == looping
