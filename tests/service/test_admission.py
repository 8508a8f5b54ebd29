"""Backpressure instead of unscored traces (issue 13): the service refuses (UNAVAILABLE with
retry information) once a trace accepted now would wait past a share of its scoring
budget, so every acknowledged agent trace is scored.

The arithmetic (:class:`ScoringLoad`) is tested with times passed in; the promise itself
against a real service whose scorer is slower than the senders."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import grpc
import pytest

from otel_semloop.scoring import Scorer
from otel_semloop.service import ServiceThread
from otel_semloop.service.admission import INITIAL_RATE_PER_SCORER, ScoringLoad
from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import config_for, grpc_export, wait_for
from tests.service.traffic import agent_spans, request_of, trace_id_of


def test_the_wait_counts_queued_spans_and_the_last_grace_of_intake_over_the_rate() -> None:
    load = ScoringLoad(grace=1.0, scorers=2)
    assert load.rate == 2 * INITIAL_RATE_PER_SCORER
    load.accepted(10.0, 1000)
    load.released(10.0, 600, to_scorers=True)
    assert load.wait(10.5) == (600 + 1000) / load.rate
    # Intake older than the grace period is already released (or an open trace): not counted.
    assert load.wait(11.01) == 600 / load.rate
    load.delivered(11.01, 600, scored=True)
    assert load.queued == 0 and load.wait(11.02) == 0.0


def test_intake_is_discounted_by_the_share_of_spans_that_needed_a_scorer() -> None:
    load = ScoringLoad(grace=1.0, scorers=1)
    load.sample(0.0)
    for n in range(1, 12):
        t = n * 0.6
        load.released(t - 0.3, 900, to_scorers=False)  # plain HTTP/DB traces: out at once
        load.released(t - 0.3, 100, to_scorers=True)
        load.delivered(t - 0.1, 100, scored=True)
        load.sample(t)
        if n == 1:
            assert 0.7 < load.agent_share < 0.8  # an EWMA moving from 1.0 toward 0.1
    assert load.agent_share < 0.15
    load.accepted(7.0, 10_000)
    assert load.wait(7.0) < 0.15 * 10_000 / load.rate


def test_the_rate_is_spans_scored_per_second_of_busy_time() -> None:
    load = ScoringLoad(grace=1.0, scorers=1)
    load.sample(0.0)
    load.released(0.0, 300, to_scorers=True)
    load.delivered(0.05, 300, scored=True)  # 0.05 s busy: too little to measure
    load.sample(0.06)
    assert load.rate == INITIAL_RATE_PER_SCORER and not load.measured
    load.released(0.2, 600, to_scorers=True)
    load.delivered(0.35, 600, scored=True)  # 900 spans in 0.2 s of busy time
    load.sample(0.36)  # the first measurement comes as soon as it can
    assert load.measured and load.rate == pytest.approx(4500)
    # Idle time does not dilute it: 1000 spans in 0.25 s busy within a 1 s window.
    load.released(1.0, 1000, to_scorers=True)
    load.delivered(1.25, 1000, scored=True)
    load.sample(1.4)
    assert load.rate == pytest.approx(0.7 * 4500 + 0.3 * 4000)
    # Spans that left past their budget are not scoring throughput.
    rate = load.rate
    load.released(2.0, 500, to_scorers=True)
    load.delivered(2.5, 500, scored=False)
    load.sample(2.6)
    assert load.rate == rate and load.queued == 0


def test_the_first_measurement_adds_up_busy_time_from_short_bursts() -> None:
    # At start the low guess admits only small requests, and a fast scorer finishes each in
    # a fraction of FIRST_SAMPLE_SECONDS: the measurement must still come, from their sum,
    # rather than every window starting again from nothing (the guess then held for seconds).
    load = ScoringLoad(grace=1.0, scorers=1)
    load.sample(0.0)
    burst, seconds = 200, 0.03
    for n in range(1, 9):
        t = n * 0.6
        load.released(t, burst, to_scorers=True)
        load.delivered(t + seconds, burst, scored=True)
        load.sample(t + 0.1)
        if n < 4:  # 0.03, 0.06, 0.09 s of busy time so far
            assert not load.measured
    assert load.measured and load.rate == pytest.approx(burst / seconds, rel=0.01)


class _Slow:
    """A scorer that takes 5 ms a trace (the GIL is free meanwhile)."""

    def __init__(self) -> None:
        self.inner = Scorer()

    def score(self, trace: Any) -> Any:
        time.sleep(0.005)
        return self.inner.score(trace)


def test_when_scoring_falls_behind_the_service_refuses_rather_than_leave_traces_unscored() -> None:
    requests = [
        request_of(s for i in range(10) for s in agent_spans(trace_id_of(91, 10 * n + i), 4, loop=i % 2 == 0))
        for n in range(60)
    ]  # 600 agent traces: about 3 s of scoring, sent in well under a second if all were taken
    refused = 0
    with GrpcOtlpReceiver() as downstream:
        config = config_for(downstream, http=None, scoring_budget_seconds=1.5, grace_seconds=0.05)
        service = ServiceThread(config, scorer=_Slow()).start()
        try:
            lock = threading.Lock()

            def send(part: list[Any]) -> None:
                nonlocal refused
                for request in part:
                    while True:
                        try:
                            grpc_export(service.grpc_port, request)
                            break
                        except grpc.RpcError as error:
                            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
                            with lock:
                                refused += 1
                            time.sleep(0.02)

            senders = [threading.Thread(target=send, args=(requests[k::3],)) for k in range(3)]
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join(120)
            wait_for(lambda: len(downstream.spans) >= 600 * 9, 60, "every acknowledged span")
        finally:
            service.stop()
        roots = [s for s in downstream.spans if s.is_root]
        labels = [s.attributes.get("semloop.label") for s in roots]
    assert len(labels) == 600
    reasons = Counter(s.attributes.get("semloop.unscored.reason") for s in roots)
    assert labels.count("unscored") == 0, reasons
    assert labels.count("loop") == labels.count("no_loop") == 300
    assert refused > 0  # it did fall behind, and said so before acknowledging
