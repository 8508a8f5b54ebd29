"""A trace's summary row repeats what its root's patch holds (the evaluation record's
attributes and time, the redacted reason): taken from the patch, it must be exactly what
making it again from the verdict gives."""

from __future__ import annotations

import dataclasses
import random

import pytest

from bench.rescore_throughput import make_trace
from otel_semloop.batch.spans import JsonSpans
from otel_semloop.batch.worker import ScorerSpec, _row, clean
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
    adapter = JsonSpans()
    trace = build_trace([adapter.record(span) for span in spans])
    verdict = dataclasses.replace(ScorerSpec().build().score(trace), **change)
    row = _row(trace, verdict, patches_for(trace, verdict))
    record = evaluation_record(trace, verdict)
    assert record is not None
    assert row.evaluation == dict(record.attributes)
    assert row.event_ns == record.time_ns
    assert row.reason == clean(verdict.reason or "", 500)
    if change.get("reason"):
        assert SECRET not in row.reason and len(row.reason) <= 500
