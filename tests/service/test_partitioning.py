"""Scaling out behind the Collector's ``load_balancing`` exporter (``routing_key: traceID``):
three service instances, each given the spans of one trace-id partition as the exporter
would route them (every span of a trace to the same replica, in several requests), produce
the same verdicts and the same spans as one instance given all of it (the one instance
scores on threads, the three in worker processes: that changes nothing either)."""

from __future__ import annotations

import hashlib
from typing import Any

from tests.e2e.otlp_receiver import GrpcOtlpReceiver, ReceivedSpan
from tests.service.support import grpc_export, running, wait_for
from tests.service.traffic import mixed_traces, request_of


def _partition(trace_id: bytes, replicas: int) -> int:
    return int.from_bytes(hashlib.sha256(trace_id).digest()[:4], "big") % replicas


def _requests(traces: list[Any], chunk: int = 5) -> list[list[Any]]:
    """All spans interleaved across traces and cut into requests: a trace's spans arrive
    in several requests, mixed with other traces' spans, as export batches do."""
    spans = []
    longest = max(len(s) for _, _, s in traces)
    for i in range(longest):
        spans.extend(s[-1 - i] for _, _, s in traces if i < len(s))  # children first, root last
    return [spans[i : i + chunk] for i in range(0, len(spans), chunk)]


def _view(received: list[ReceivedSpan]) -> dict[tuple[str, str], Any]:
    return {
        (s.trace_id, s.span_id): (
            s.name,
            tuple(sorted((k, repr(v)) for k, v in s.attributes.items())),
            tuple((e.name, tuple(sorted((k, repr(v)) for k, v in e.attributes.items()))) for e in s.events),
        )
        for s in received
    }


def test_three_partitioned_instances_match_one_instance_on_all_traces() -> None:
    traces = list(mixed_traces(seed=41, count=36, rounds=5))
    total = sum(len(s) for _, _, s in traces)

    with GrpcOtlpReceiver() as alone:
        with running(alone, scoring_processes=0) as service:  # scoring on threads
            for request in _requests(traces):
                grpc_export(service.grpc_port, request_of(request))
            wait_for(lambda: len(alone.spans) >= total, 20, "all spans from one instance")
        single = alone.spans

    with GrpcOtlpReceiver() as shared:
        # Scoring in worker processes here: the same verdicts and spans either way.
        with (
            running(shared, scoring_processes=1) as a,
            running(shared, scoring_processes=1) as b,
            running(shared, scoring_processes=1) as c,
        ):
            replicas = [a, b, c]
            routed = [[t for t in traces if _partition(t[0], 3) == n] for n in range(3)]
            assert all(routed), "each replica gets some traces"
            for replica, part in zip(replicas, routed, strict=True):
                for request in _requests(part):
                    grpc_export(replica.grpc_port, request_of(request))
            wait_for(lambda: len(shared.spans) >= total, 20, "all spans from three instances")
            stats = [r.stats() for r in replicas]
        partitioned = shared.spans

    assert len(single) == len(partitioned) == total  # each span exactly once in both setups
    assert _view(partitioned) == _view(single)
    labels = [s.attributes.get("semloop.label") for s in single if s.is_root]
    assert labels.count("loop") == 12 and labels.count("no_loop") == 12
    assert sum(s.get("traces.loop", 0) for s in stats) == 12
