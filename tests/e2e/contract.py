"""Assertions on what a backend received, in the words of the contract (DESIGN.md section 3).

The verdict lives on the root span of each scored trace: ``semloop.loop.detected`` (bool),
``semloop.score`` (double, deepeval polarity: loop below 0.5), ``semloop.label``
(``loop`` / ``no_loop`` / ...), ``semloop.deepeval.score`` (double), and one
``gen_ai.evaluation.result`` span event. Every span the application produced arrives
exactly once, with its own attributes unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan

from .fixtures import attributes_of, hex_span_id, hex_trace_id
from .otlp_receiver import ReceivedEvent, ReceivedSpan

THRESHOLD = 0.5
EVALUATION_EVENT = "gen_ai.evaluation.result"
VERDICT_KEYS = ("semloop.loop.detected", "semloop.score", "semloop.label", "semloop.deepeval.score")


def assert_delivered_exactly_once(produced: Sequence[ReadableSpan], received: Sequence[ReceivedSpan]) -> None:
    """Every produced span arrived once (no loss, no duplicate, nothing invented), with
    the same ids, parent, name and original attributes."""
    counts = Counter(s.span_id for s in received)
    duplicates = {span_id: n for span_id, n in counts.items() if n > 1}
    assert not duplicates, f"spans received more than once: {duplicates}"
    produced_ids = {hex_span_id(s) for s in produced}
    missing = produced_ids - counts.keys()
    assert not missing, (
        f"{len(missing)} of {len(produced_ids)} produced spans never arrived: {sorted(missing)}"
    )
    unexpected = counts.keys() - produced_ids
    assert not unexpected, f"received spans the app never produced: {sorted(unexpected)}"
    by_id = {s.span_id: s for s in received}
    for span in produced:
        got = by_id[hex_span_id(span)]
        parent = f"{span.parent.span_id:016x}" if span.parent is not None else ""
        assert (got.trace_id, got.parent_span_id, got.name) == (hex_trace_id(span), parent, span.name)
        original = attributes_of(span)
        assert {k: got.attributes.get(k) for k in original} == original, f"attributes of {span.name} changed"
        if not got.is_root:
            assert not any(k in got.attributes for k in VERDICT_KEYS), f"verdict on non-root span {got.name}"


def evaluation_event(root: ReceivedSpan) -> ReceivedEvent:
    events = root.events_named(EVALUATION_EVENT)
    assert len(events) == 1, f"expected one {EVALUATION_EVENT} event on the root, got {len(events)}"
    event = events[0]
    for key in ("gen_ai.evaluation.name", "gen_ai.evaluation.score.label", "gen_ai.evaluation.explanation"):
        assert isinstance(event.attributes.get(key), str) and event.attributes[key], key
    assert isinstance(event.attributes.get("gen_ai.evaluation.score.value"), float)
    return event


def assert_verdict_shape(root: ReceivedSpan) -> None:
    attrs = root.attributes
    assert root.is_root
    assert isinstance(attrs.get("semloop.loop.detected"), bool), attrs
    assert isinstance(attrs.get("semloop.score"), float) and 0.0 <= attrs["semloop.score"] <= 1.0, attrs
    assert isinstance(attrs.get("semloop.label"), str), attrs
    assert isinstance(attrs.get("semloop.deepeval.score"), float), attrs
    assert 0.0 <= attrs["semloop.deepeval.score"] <= 1.0
    assert not any(k.startswith("gen_ai.evaluation.") for k in attrs), "evaluation keys belong on the event"


def assert_loop_verdict(root: ReceivedSpan) -> None:
    """The root span says: loop."""
    assert_verdict_shape(root)
    attrs = root.attributes
    assert attrs["semloop.loop.detected"] is True, _why(root)
    assert attrs["semloop.label"] == "loop", _why(root)
    assert attrs["semloop.score"] < THRESHOLD, _why(root)
    event = evaluation_event(root)
    assert event.attributes["gen_ai.evaluation.score.label"] == "loop"
    assert event.attributes["gen_ai.evaluation.score.value"] == attrs["semloop.score"]


def assert_no_loop_verdict(root: ReceivedSpan) -> None:
    """The root span says: no loop."""
    assert_verdict_shape(root)
    attrs = root.attributes
    assert attrs["semloop.loop.detected"] is False, _why(root)
    assert attrs["semloop.label"] == "no_loop", _why(root)
    assert attrs["semloop.score"] >= THRESHOLD, _why(root)
    event = evaluation_event(root)
    assert event.attributes["gen_ai.evaluation.score.label"] == "no_loop"


def _why(root: ReceivedSpan) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(root.attributes.items()) if k.startswith("semloop."))
