"""A downstream slower than the export timeout: the request that timed out is sent again
(at least once, same ids), but the timeout grows, so only the first batch is repeated and
everything after it arrives exactly once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from tests.service.support import grpc_export, running, wait_for
from tests.service.traffic import agent_spans, request_of, trace_id_of


class SlowDownstream:
    """OTLP/gRPC that takes ``delay`` seconds per request and records every request it
    finishes, including ones whose caller already gave up (as a real slow backend does)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.keys: list[tuple[str, str]] = []
        #: Every distinct serialization seen per span: one each, or the copies differ.
        self.bodies: dict[tuple[str, str], set[bytes]] = {}
        self._lock = threading.Lock()

        def export(body: bytes, context: Any) -> bytes:
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            time.sleep(self.delay)
            with self._lock:
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            key = (span.trace_id.hex(), span.span_id.hex())
                            self.keys.append(key)
                            self.bodies.setdefault(key, set()).add(span.SerializeToString(deterministic=True))
            return b""

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},
        )
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[handler])
        self.endpoint = f"http://127.0.0.1:{self._server.add_insecure_port('127.0.0.1:0')}"

    def __enter__(self) -> SlowDownstream:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(0)


def test_a_downstream_slower_than_the_export_timeout_gets_the_first_batch_again_then_waited_for() -> None:
    with SlowDownstream(delay=0.5) as downstream:
        with running(
            downstream.endpoint, export_timeout=0.2, export_batch_spans=5, grace_seconds=0.05
        ) as service:
            traces = [agent_spans(trace_id_of(51, i), 2, loop=False) for i in range(4)]
            for spans in traces:
                grpc_export(service.grpc_port, request_of(spans))
            expected = {(s.trace_id.hex(), s.span_id.hex()) for spans in traces for s in spans}
            wait_for(lambda: expected <= set(downstream.keys), 30, "every span downstream")
            time.sleep(1.2)  # copies still being processed by the slow downstream
        counts = Counter(downstream.keys)
        assert set(counts) == expected
        repeated = [key for key, n in counts.items() if n > 1]
        # 0.2 s -> 0.4 s -> 0.8 s: the first batch (5 spans) goes at most 3 times, the rest once.
        assert len(repeated) <= 5 and max(counts.values()) <= 3
        assert len([key for key, n in counts.items() if n == 1]) >= len(expected) - 5
        # The next hop can de-duplicate: a repeated span is the same span, ids and all.
        assert repeated and all(len(downstream.bodies[key]) == 1 for key in repeated)


def test_one_request_larger_than_the_export_queue_is_forwarded_whole_once() -> None:
    # Issue 14: an acknowledged request of many one-span traces must never be trimmed to the
    # export queue's size afterwards (backpressure is decided before acknowledging).
    from opentelemetry.proto.trace.v1 import trace_pb2

    from tests.e2e.otlp_receiver import GrpcOtlpReceiver

    count = 20_000
    request = trace_service_pb2.ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for i in range(1, count + 1):
        span = trace_pb2.Span(trace_id=i.to_bytes(16, "big"), span_id=i.to_bytes(8, "big"), name="plain")
        spans.append(span)
    with GrpcOtlpReceiver() as downstream:
        with running(downstream, export_queue_spans=500, export_batch_spans=512) as service:
            grpc_export(service.grpc_port, request, timeout=60)  # acknowledged (raises otherwise)
            downstream.wait_until(lambda got: len(got) >= count, timeout=60)
            time.sleep(0.5)  # anything extra would arrive now
        keys = Counter((s.trace_id, s.span_id) for s in downstream.spans)
    assert len(keys) == count, f"{count - len(keys)} acknowledged spans lost"
    assert max(keys.values()) == 1
