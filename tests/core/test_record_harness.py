"""The recording harness's OTLP/HTTP receiver (``bench/corpus/record/harness.py``) takes an
export however its body is framed: sized by ``Content-Length`` (Python's exporter) or sent
in chunks (Node.js's), so every recorder's spans reach the recording."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bench.corpus.record.harness import OtlpJsonLinesReceiver


def export_request(name: str) -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes(range(16))
    span.span_id = bytes(range(8))
    span.name = name
    return request.SerializeToString()


@pytest.fixture
def receiver() -> Iterator[OtlpJsonLinesReceiver]:
    with OtlpJsonLinesReceiver() as running:
        yield running


def post(receiver: OtlpJsonLinesReceiver, body: bytes, *, chunked: bool) -> int:
    url = urlsplit(receiver.endpoint)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
    try:
        headers = {"Content-Type": "application/x-protobuf"}
        if chunked:  # (three chunks, as a streaming client sends them)
            third = len(body) // 3
            pieces = iter([body[:third], body[third : 2 * third], body[2 * third :]])
            connection.request("POST", url.path, body=pieces, headers=headers, encode_chunked=True)
        else:
            connection.request("POST", url.path, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_export_reaches_the_recording_however_its_body_is_framed(
    receiver: OtlpJsonLinesReceiver, chunked: bool
) -> None:
    assert post(receiver, export_request("ai.toolCall"), chunked=chunked) == 200
    (line,) = receiver.lines
    (span,) = line["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert span["name"] == "ai.toolCall"
    assert receiver.trace_ids() == [bytes(range(16)).hex()]
