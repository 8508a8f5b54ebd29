"""A shared builder of in-memory span records for the tests that read conventions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_semloop.model import SpanRecord


def span_record(
    trace_id: str, span_id: str, parent: str, start: int, name: str, attributes: Mapping[str, Any]
) -> SpanRecord:
    """A 1 ns span of ``trace_id``; short ids (``"1"``, ``"a"``) are left-padded with zeros
    to 16 hex characters, an empty ``parent`` makes a root."""
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id.rjust(16, "0"),
        parent_span_id=parent.rjust(16, "0") if parent else "",
        name=name,
        start_ns=start,
        end_ns=start + 1,
        attributes=attributes,
    )
