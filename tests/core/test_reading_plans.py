"""A span read through its key tuple's reading plan reads exactly as looking every key up.

:func:`~otel_semloop.conventions.reading_plan` remembers, per attribute key tuple, which
of the keys :func:`step_kind` and :func:`read_step` look up the span has; the readers then
skip the others. These tests read each span both ways (the plan of its keys, and
:data:`~otel_semloop.conventions._EVERY_KEY`, the plain reading that looks every key up)
and compare every field of the step: over generated attribute dicts (the keys every
convention reads, indexed message keys, foreign keys; missing, empty, wrong-typed and
malformed values; spans that share a key tuple with different values), the shapes real
instrumentations emit (``tests/core/test_conventions_instrumentations.py``, the
convention renderings of ``tests/support/convention_runs.py``) and the recorded traces
of ``bench/corpus``.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import defaultdict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_semloop import builder
from otel_semloop import conventions as cv
from otel_semloop.builder import build_trace
from otel_semloop.conventions import read_step, reading_plan, step_kind
from otel_semloop.model import EventRecord, SpanRecord, Step, StepKind
from otel_semloop.otlp.records import records_from_json
from tests.core import test_conventions_instrumentations as instrumentations
from tests.core.test_builder_fuzz import attribute_values, message_like
from tests.support.convention_runs import CONVENTIONS, spans_in
from tests.support.repo_data import ROOT
from tests.support.scenarios import Scenario

TRACE = "0" * 31 + "1"
EVERY_KEY = cv._EVERY_KEY

#: Every key a reader looks up (from the readers' own lists), and keys they do not.
READ_KEYS = sorted(
    {
        *cv._INPUT_KEYS,
        *cv._OUTPUT_KEYS,
        *cv._INPUT_TOKEN_KEYS,
        *cv._OUTPUT_TOKEN_KEYS,
        *cv._COST_KEYS,
        *cv._SPAN_NAME_KEYS,
        *(key for keys in cv._NAME_KEYS.values() for key in keys),
        "confident.span.type",
        "openinference.span.kind",
        "traceloop.span.kind",
        "gen_ai.operation.name",
        "llm.request.type",
        "error.type",
        "gen_ai.transfer.target.name",
        "gen_ai.transfer.target",
        "ai.operationId",
        cv._AI_SDK_TOOL_CALLS,
        cv._LISTED_EVENTS,
    }
)
OTHER_KEYS = [
    "gen_ai.system",
    "tool.parameters",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.prompt.0.content",
    "gen_ai.prompt.x.content",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.content",
    "llm.output_messages.1.message.tool_calls.0.tool_call.function.arguments",
    "llm.input_messages",
    "input.mime_type",
]
KIND_VALUES = {
    "confident.span.type": ["agent", "llm", "tool", "retriever", "x"],
    "openinference.span.kind": ["AGENT", "llm", "TOOL", "RETRIEVER", "CHAIN", "chain", "x"],
    "traceloop.span.kind": ["agent", "workflow", "tool", "task"],
    "gen_ai.operation.name": ["chat", "execute_tool", "invoke_agent", "create_agent", "embeddings"],
    "ai.operationId": ["ai.generateText", "ai.streamText.doStream", "ai.toolCall", "ai.embed"],
}
VALUES = st.one_of(
    attribute_values,
    st.sampled_from(["", "{}", "[]", "{not json", '"quoted"', "[1, 2"]),
    st.none(),
    st.floats(allow_nan=True),
    st.lists(st.integers(), max_size=2),
    message_like.map(json.dumps),
    st.builds(lambda a: json.dumps({"args": a, "kwargs": {}}), st.lists(st.text(max_size=3), max_size=2)),
)


#: Tool names and arguments of hand-offs (named by the tool, or by an argument).
HANDOFF_NAMES = ["transfer_to_billing", "transfer_to_agent", "handoff", "Delegate work to coworker", "search"]
HANDOFF_ARGUMENTS = ['{"agent_name": "billing"}', '{"coworker": ""}', '{"to": 3}', '{"q": 1}']
SPAN_NAMES = st.text(max_size=3) | st.sampled_from(HANDOFF_NAMES)


@st.composite
def value_for(draw: st.DrawFn, key: str) -> Any:
    if key in KIND_VALUES and draw(st.booleans()):
        return draw(st.sampled_from(KIND_VALUES[key]))
    if key in ("gen_ai.tool.name", "tool.name", "traceloop.entity.name") and draw(st.booleans()):
        return draw(st.sampled_from(HANDOFF_NAMES))
    if key in (*cv._ARGUMENT_KEYS, "input.value", "traceloop.entity.input") and draw(st.booleans()):
        return draw(st.sampled_from(HANDOFF_ARGUMENTS))
    return draw(VALUES)


#: Key tuples: some keys in some order (the order is part of the plan's key).
KEY_TUPLES = st.lists(st.sampled_from(READ_KEYS + OTHER_KEYS), unique=True, max_size=10)
EVENTS = st.lists(
    st.builds(
        EventRecord,
        st.sampled_from(["exception", "gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message"]),
        st.integers(0, 9),
        st.dictionaries(
            st.sampled_from(["content", "body", "message", "exception.type", "exception.message"]),
            attribute_values,
            max_size=2,
        ),
    ),
    max_size=2,
)


def _record(attributes: Mapping[str, Any], events: list[EventRecord], status: int, name: str) -> SpanRecord:
    return SpanRecord(TRACE, "00000000000000a1", "", name, 1, 2, attributes, events, status_code=status)


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN included, and of the same types all the way down."""
    try:
        return orjson.dumps(a, option=orjson.OPT_NON_STR_KEYS) == orjson.dumps(
            b, option=orjson.OPT_NON_STR_KEYS
        ) and repr(a) == repr(b)
    except TypeError:
        return repr(a) == repr(b)


def assert_same_step(step: Step, plain: Step) -> None:
    """Every field of ``step`` is what ``plain`` holds, left undecoded where it is."""
    for name in ("input", "input_text", "output"):
        assert step.is_decoded(name) == plain.is_decoded(name), name
    for field in dataclasses.fields(Step):
        mine, theirs = getattr(step, field.name), getattr(plain, field.name)
        if field.name == "children":
            assert len(mine) == len(theirs)
            for a, b in zip(mine, theirs, strict=True):
                assert_same_step(a, b)
        elif field.name == "tool_calls":
            assert [(c.name, c.call_id) for c in mine] == [(c.name, c.call_id) for c in theirs]
            assert all(_same(a.arguments, b.arguments) for a, b in zip(mine, theirs, strict=True))
        else:
            assert field.name and _same(mine, theirs), (field.name, mine, theirs)


def assert_reads_as_every_key(record: SpanRecord) -> None:
    """Classified and read through the plan of its keys, ``record`` gives what looking
    every key up gives (whatever the kind, so the readers of every kind are compared)."""
    attributes = record.attributes
    plan = reading_plan(attributes)
    for top_level in (False, True):
        assert step_kind(attributes, top_level=top_level, plan=plan) is step_kind(
            attributes, top_level=top_level, plan=EVERY_KEY
        )
    for kind in StepKind:
        try:
            plain = read_step(record, kind, EVERY_KEY)
        except Exception as error:  # (then the plan fails the same way)
            with pytest.raises(type(error)):
                read_step(record, kind, plan)
            continue
        assert_same_step(read_step(record, kind, plan), plain)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(KEY_TUPLES, st.data(), EVENTS, st.sampled_from([0, 1, 2]), SPAN_NAMES)
def test_a_span_reads_through_its_plan_as_through_every_key(
    keys: list[str], data: st.DataObject, events: list[EventRecord], status: int, name: str
) -> None:
    attributes = {key: data.draw(value_for(key)) for key in keys}
    assert_reads_as_every_key(_record(attributes, events, status, name))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(KEY_TUPLES, st.data())
def test_spans_sharing_a_key_tuple_share_a_plan_and_each_reads_as_every_key(
    keys: list[str], data: st.DataObject
) -> None:
    """One plan per key tuple, whatever the values: the first span's (present, set,
    well-typed or not) make no difference to how the next is read."""
    spans = [{key: data.draw(value_for(key)) for key in keys} for _ in range(3)]
    plans = [reading_plan(attributes) for attributes in spans]
    assert plans[0] is plans[1] is plans[2]
    for attributes in spans:
        assert_reads_as_every_key(_record(attributes, [], 0, "span"))


def test_a_plan_is_per_key_tuple_and_anything_but_a_plain_dict_of_strings_reads_every_key() -> None:
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
    assert reading_plan(tool) is reading_plan(dict(tool))
    assert reading_plan(tool) is not reading_plan(dict(reversed(tool.items())))
    assert reading_plan(tool) is not EVERY_KEY
    assert reading_plan({**tool, 3: "x"}) is EVERY_KEY
    assert reading_plan(MappingProxyType(tool)) is EVERY_KEY

    class Attributes(dict):  # a get that finds what the keys do not list
        def get(self, key: str, default: Any = None) -> Any:
            return "tool" if key == "traceloop.span.kind" else super().get(key, default)

    odd = Attributes(tool)
    assert reading_plan(odd) is EVERY_KEY
    assert step_kind(odd) is StepKind.TOOL
    assert read_step(_record(odd, [], 0, "x"), StepKind.TOOL).name == "search"


def test_the_remembered_plans_are_bounded() -> None:
    for i in range(cv._PLAN_ENTRIES + 10):
        reading_plan({f"key.{i}": 1})
    assert 0 < len(cv._PLANS) <= cv._PLAN_ENTRIES


def test_the_plain_plan_looks_every_key_up() -> None:
    """EVERY_KEY is the reading before plans: each key list whole, each flag set."""
    for slot in cv.ReadingPlan.__slots__:
        value = getattr(EVERY_KEY, slot)
        if slot in ("input_is_arguments", "output_is_result"):
            assert value is False
        elif isinstance(value, bool):
            assert value is True, slot
    assert EVERY_KEY.input_keys == cv._INPUT_KEYS and EVERY_KEY.output_keys == cv._OUTPUT_KEYS
    assert EVERY_KEY.input_token_keys == cv._INPUT_TOKEN_KEYS
    assert EVERY_KEY.output_token_keys == cv._OUTPUT_TOKEN_KEYS
    assert EVERY_KEY.cost_keys == cv._COST_KEYS and EVERY_KEY.span_names == cv._SPAN_NAME_KEYS
    for kind in StepKind:
        assert EVERY_KEY.names[kind] == cv._NAME_KEYS.get(kind, cv._SPAN_NAME_KEYS)


# -- what instrumentations emit, and recorded traces ------------------------------------


def _instrumentation_records() -> list[SpanRecord]:
    found = [
        value
        for value in vars(instrumentations).values()
        if isinstance(value, dict) and value and all(isinstance(key, str) for key in value)
    ]
    found += [instrumentations.oitracer_tool("q", "r"), instrumentations.agents_function_span("q", "r")]
    records = [_record(attributes, [], 0, "span") for attributes in found]
    run = Scenario("find the flaky test")
    run.think("Searching.", calls=[("search", {"q": "flaky"})]).tool("search", {"q": "flaky"}, "[]")
    run.think("Again.", calls=[("search", {"q": "flaky"})], tokens=12).tool("search", {"q": "x"}, cost=0.5)
    run.fail("search", {"q": "flaky"}, "boom", error_type="Timeout").llm_fail("down", error_type="Http")
    run.agent("helper", "done")
    for convention in CONVENTIONS:
        records += spans_in(run, convention)
    return records


def _recorded_traces() -> list[list[SpanRecord]]:
    """The traces of every recording in bench/corpus (the first 40 lines of the large
    synthetic corpora), by trace id."""
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for path in sorted((ROOT / "bench" / "corpus").rglob("*.otlp.jsonl.gz")):
        with gzip.open(path, "rb") as lines:
            for number, line in enumerate(lines):
                if number >= 40:
                    break
                for record in records_from_json(orjson.loads(line)):
                    traces[record.trace_id].append(record)
    return list(traces.values())


def test_what_instrumentations_emit_reads_through_plans_as_through_every_key() -> None:
    records = _instrumentation_records()
    assert len(records) > 10
    for record in records:
        assert_reads_as_every_key(record)


def test_recorded_traces_build_through_plans_as_through_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    traces = _recorded_traces()
    assert len(traces) > 50
    built = [build_trace(records) for records in traces]
    monkeypatch.setattr(builder, "remembered_plan", lambda keys: None)
    monkeypatch.setattr(builder, "reading_plan", lambda attributes: EVERY_KEY)
    for records, trace in zip(traces, built, strict=True):
        plain = build_trace(records)
        assert [step.span_id for step in trace.steps] == [step.span_id for step in plain.steps]
        for step, plain_step in zip(trace.steps, plain.steps, strict=True):
            assert_same_step(step, plain_step)
