"""Assertions on what a backend received, in the words of the contract.

The contract is README.md's "What lands on your spans".

The verdict lives on the root span of each scored trace: ``semloop.loop.detected`` (bool),
``semloop.score`` (double, deepeval polarity: loop below 0.5), ``semloop.label``
(``loop`` / ``no_loop`` / ...), ``semloop.deepeval.score`` (double), and one
``gen_ai.evaluation.result`` span event. Every span the application produced arrives
exactly once, with its own attributes unchanged.

The ``assert_*_run*`` checks at the end are the scripted runs of :mod:`.fake_openai` as
any instrumented agent must deliver them, whichever instrumentation made its spans.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan

from .fake_openai import LOOP_ARGUMENTS, LOOP_TOOL, FakeOpenAIServer
from .fixtures import Pipeline, Run, attributes_of, hex_span_id, hex_trace_id
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


def tool_spans(received: Sequence[ReceivedSpan]) -> list[ReceivedSpan]:
    """The OpenInference TOOL spans among ``received``."""
    return [s for s in received if s.attributes.get("openinference.span.kind") == "TOOL"]


def assert_looping_run_flagged(
    pipeline: Pipeline,
    fake_openai: FakeOpenAIServer,
    run: Run,
    *,
    rounds: int,
    root_name: str,
    deepeval_flags_it: bool,
) -> list[ReceivedSpan]:
    """``run`` of ``looping_script(rounds=rounds)`` arrived once, flagged on its root span
    (named ``root_name``), its repeated tool calls marked as the loop. Returns what arrived."""
    received = pipeline.wait_delivered()

    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    assert len(fake_openai.requests) == rounds + 1
    tools = tool_spans(received)
    assert [(s.attributes["tool.name"], json.loads(s.attributes["input.value"])) for s in tools] == [
        (LOOP_TOOL, LOOP_ARGUMENTS)
    ] * rounds
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == root_name
    assert_loop_verdict(root)
    assert root.attributes["semloop.deepeval.loop"] is deepeval_flags_it
    marked = {s.span_id for s in received if s.attributes.get("semloop.in_loop") is True}
    assert {s.span_id for s in tools} <= marked, "the repeated calls are marked as the loop"
    return received


def assert_healthy_run_not_flagged(pipeline: Pipeline, run: Run, *, root_name: str) -> None:
    """``run`` of ``healthy_script()`` arrived once with a no-loop verdict on its root span
    (named ``root_name``) and no span marked as a loop."""
    received = pipeline.wait_delivered()

    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    assert run.answer.startswith("Root cause:")
    root = pipeline.receiver.root_of(run.trace_id)
    assert root.name == root_name
    assert_no_loop_verdict(root)
    assert not any(s.attributes.get("semloop.in_loop") for s in received)


def assert_runs_get_their_own_verdicts(pipeline: Pipeline, looping: Run, healthy: Run) -> None:
    """A looping and a healthy run on one provider each arrive once with their own verdict,
    and a shutdown after delivery sends nothing again."""
    pipeline.wait_delivered()
    pipeline.shutdown()  # a shutdown after delivery must not send anything again

    received = pipeline.receiver.spans
    assert_delivered_exactly_once(pipeline.produced_spans(), received)
    assert {s.trace_id for s in received} == {looping.trace_id, healthy.trace_id}
    assert_loop_verdict(pipeline.receiver.root_of(looping.trace_id))
    assert_no_loop_verdict(pipeline.receiver.root_of(healthy.trace_id))
    assert {s.trace_id for s in received if s.attributes.get("semloop.in_loop")} == {looping.trace_id}


def _why(root: ReceivedSpan) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(root.attributes.items()) if k.startswith("semloop."))
