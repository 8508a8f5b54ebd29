"""``rescore --emit evaluations``: only the evaluation records, for traces a backend already
stores.

Re-sending scored spans to a backend that holds the originals shows every span twice.
Instead each scored trace becomes one ``gen_ai.evaluation.result`` log record parented to
its root (and/or a carrier span, child of and linked to the root; see
:mod:`otel_semloop.evaluation`), written to the output as OTLP JSON lines or
length-prefixed protobuf, or sent to ``--export-endpoint`` by OTLP/HTTP protobuf.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from otel_semloop.batch.worker import TraceRow
from otel_semloop.evaluation import carrier_span, log_record, logs_data, traces_data
from otel_semloop.otlp.anyvalue import encode_attributes_json
from otel_semloop.otlp.codec import traces_to_json

__all__ = ["export_evaluations", "logs_json", "records_for"]

#: Records per line / per request: about what a Collector batch holds.
BATCH = 512
_RETRYABLE = {429, 502, 503, 504}


def _rows(rows: Sequence[TraceRow]) -> list[TraceRow]:
    return [r for r in rows if r.root_span_id and r.evaluation]


def logs_json(rows: Sequence[TraceRow]) -> dict[str, Any]:
    """One OTLP JSON ``LogsData`` holding a log record per row."""
    records = []
    for r in rows:
        t = str(r.event_ns)
        records.append(
            {
                "timeUnixNano": t,
                "observedTimeUnixNano": t,
                "severityNumber": 9,
                "severityText": "INFO",
                "eventName": "gen_ai.evaluation.result",
                "attributes": encode_attributes_json(r.evaluation),
                "traceId": r.trace_id,
                "spanId": r.root_span_id,
            }
        )
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": encode_attributes_json({"service.name": "otel-semloop"})},
                "scopeLogs": [{"scope": {"name": "otel-semloop"}, "logRecords": records}],
            }
        ]
    }


def records_for(rows: Sequence[TraceRow], carrier: str, fmt: str) -> Iterable[bytes]:
    """The framed lines / messages to write: ``carrier`` is ``logs`` or ``spans``."""
    chosen = _rows(rows)
    for i in range(0, len(chosen), BATCH):
        chunk = chosen[i : i + BATCH]
        if carrier == "spans":
            msg = traces_data(
                carrier_span(r.evaluation, r.trace_id, r.root_span_id, r.event_ns) for r in chunk
            )
            if fmt == "json":
                yield orjson.dumps(traces_to_json(msg)) + b"\n"
            else:
                data = msg.SerializeToString()
                yield len(data).to_bytes(4, "big") + data
        elif fmt == "json":
            yield orjson.dumps(logs_json(chunk)) + b"\n"
        else:
            data = logs_data(
                log_record(r.evaluation, r.trace_id, r.root_span_id, r.event_ns) for r in chunk
            ).SerializeToString()
            yield len(data).to_bytes(4, "big") + data


def export_evaluations(
    rows: Sequence[TraceRow],
    endpoint: str,
    carrier: str,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    retries: int = 5,
) -> int:
    """POST the records to ``endpoint`` (an OTLP/HTTP base URL; ``/v1/logs`` and
    ``/v1/traces`` are appended) as protobuf. Retries 429/502/503/504 with backoff
    (honouring ``Retry-After``). Returns the number of records sent; raises
    ``RuntimeError`` when the endpoint refuses them."""
    try:
        import httpx
    except ImportError:
        raise RuntimeError("--export-endpoint needs httpx (pip install 'otel-semloop[batch]')") from None

    base = endpoint.rstrip("/")
    chosen = _rows(rows)
    sent = 0
    kinds = ("logs", "spans") if carrier == "both" else (carrier,)
    with httpx.Client(timeout=timeout) as client:
        for kind in kinds:
            url = f"{base}/v1/logs" if kind == "logs" else f"{base}/v1/traces"
            for i in range(0, len(chosen), BATCH):
                chunk = chosen[i : i + BATCH]
                if kind == "logs":
                    body = logs_data(
                        log_record(r.evaluation, r.trace_id, r.root_span_id, r.event_ns) for r in chunk
                    ).SerializeToString()
                else:
                    body = traces_data(
                        carrier_span(r.evaluation, r.trace_id, r.root_span_id, r.event_ns) for r in chunk
                    ).SerializeToString()
                _post(client, url, body, headers or {}, retries)
                sent += len(chunk)
    return sent


def _post(client: Any, url: str, body: bytes, headers: dict[str, str], retries: int) -> None:
    import httpx

    delay = 0.5
    for attempt in range(retries + 1):
        try:
            response = client.post(
                url, content=body, headers={"Content-Type": "application/x-protobuf", **headers}
            )
        except httpx.TransportError as exc:
            if attempt == retries:
                raise RuntimeError(f"cannot reach {url}: {exc}") from None
        else:
            if response.status_code < 300:
                return
            if response.status_code not in _RETRYABLE or attempt == retries:
                raise RuntimeError(f"{url} answered {response.status_code}")
            after = response.headers.get("Retry-After", "")
            if after.isdigit():
                delay = min(float(after), 30.0)
        time.sleep(delay)
        delay = min(delay * 2, 30.0)
