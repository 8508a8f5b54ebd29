"""One hostile trace costs only itself: it goes out unscored with a reason, every other
trace is scored, and every span read is written."""

from __future__ import annotations

import copy
import math

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_semloop.batch.engine import Engine, EngineOptions
from otel_semloop.batch.inputs import ReadState, Source, iter_units
from otel_semloop.batch.units import Spool
from otel_semloop.cli import main
from tests.batch.rescore_data import agent_lines, roots, spans_of, write_jsonl

LINES = agent_lines()


def _with_attribute(lines, trace_index: int, key: str, value: dict) -> list[dict]:
    """``lines`` with ``key`` set on every span of the ``trace_index``-th trace."""
    lines = copy.deepcopy(lines)
    trace_ids = []
    for line in lines:
        for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            if span["traceId"] not in trace_ids:
                trace_ids.append(span["traceId"])
    target = trace_ids[trace_index]
    for line in lines:
        for span in line["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            if span["traceId"] == target:
                span.setdefault("attributes", []).append({"key": key, "value": value})
    return lines, target


def test_a_nan_token_count_costs_only_its_own_trace(tmp_path):
    lines, target = _with_attribute(LINES, 0, "gen_ai.usage.input_tokens", {"doubleValue": "NaN"})
    source = write_jsonl(tmp_path / "nan.jsonl", lines)
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 0
    found = roots(out)
    assert len(spans_of(out)) == len(spans_of(source))
    others = [r for tid, r in found.items() if tid != target]
    assert sorted(r.attributes["semloop.label"] for r in others) == ["loop"] * 2 + ["no_loop"] * 3
    hostile = found[target].attributes
    assert hostile["semloop.label"] in ("unscored", "loop")
    if hostile["semloop.label"] == "unscored":
        assert hostile["semloop.unscored.reason"]


def test_message_parts_that_are_a_number_cost_only_their_trace(tmp_path):
    bad = orjson.dumps([{"role": "assistant", "parts": 7}]).decode()
    lines, target = _with_attribute(LINES, 1, "gen_ai.output.messages", {"stringValue": bad})
    source = write_jsonl(tmp_path / "parts.jsonl", lines)
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 0
    found = roots(out)
    assert len(spans_of(out)) == len(spans_of(source))
    assert all("semloop.label" in r.attributes for r in found.values())
    assert sum(r.attributes["semloop.label"] == "loop" for tid, r in found.items() if tid != target) == 3


def test_a_scorer_that_raises_leaves_the_trace_unscored_with_the_reason(tmp_path, monkeypatch):
    from otel_semloop.scoring import DetectorScorer

    real = DetectorScorer.score

    def flaky(self, trace):
        if any(s.name == "grep" for s in trace.steps):
            raise ValueError("detector bug")
        return real(self, trace)

    monkeypatch.setattr(DetectorScorer, "score", flaky)
    source = write_jsonl(tmp_path / "in.jsonl", LINES)
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q", "--workers", "1"]) == 0
    labels = [r.attributes for r in roots(out).values()]
    unscored = [a for a in labels if a["semloop.label"] == "unscored"]
    assert len(unscored) == 3, "the three traces with grep steps hit the failing scorer"
    assert sorted(a["semloop.label"] for a in labels if a not in unscored) == ["no_loop"] * 3
    assert all("detector bug" in a["semloop.unscored.reason"] for a in unscored)
    assert len(spans_of(out)) == len(spans_of(source))


# --- the whole path, fuzzed --------------------------------------------------------------

_hostile_scalar = st.one_of(
    st.builds(lambda x: {"doubleValue": x}, st.sampled_from(["NaN", "Infinity", "-Infinity", 1e308, -0.0])),
    st.builds(
        lambda x: {"intValue": x}, st.sampled_from(["-9223372036854775808", "9223372036854775807", "0", 12])
    ),
    st.builds(lambda s: {"stringValue": s}, st.text(max_size=40)),
    st.builds(
        lambda s: {"stringValue": s},
        st.sampled_from(
            [
                '[{"role": "assistant", "parts": 7}]',
                '[{"role": "assistant", "parts": [{"type": "tool_call", "name": 5, "arguments": null}]}]',
                '{"parts": "x"}',
                "[[[[[]]]]]",
                '[{"parts": [{"type": "text", "content": {"nested": [1, 2]}}]}]',
                "null",
            ]
        ),
    ),
    st.just({"boolValue": True}),
    st.just({}),
    st.builds(lambda b: {"bytesValue": b}, st.sampled_from(["", "AAEC", "////"])),
)
_hostile_value = st.recursive(
    _hostile_scalar,
    lambda inner: st.one_of(
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3)),
        st.builds(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
            st.lists(st.tuples(st.text(max_size=8), inner), max_size=3),
        ),
    ),
    max_leaves=6,
)
_KEYS = [
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.output.messages",
    "gen_ai.input.messages",
    "gen_ai.tool.name",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "error.type",
    "openinference.span.kind",
    "input.value",
    "output.value",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "gen_ai.completion.0.tool_calls.0.arguments",
    "traceloop.span.kind",
    "gen_ai.usage.cost",
]


def _span_ids(lines: list[bytes]) -> list[tuple[str, str]]:
    out = []
    for raw in lines:
        doc = orjson.loads(raw)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend((s["traceId"], s["spanId"]) for s in ss["spans"])
    return out


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(_KEYS), _hostile_value), min_size=1, max_size=12
    ),
    window=st.integers(1, 4),
)
def test_fuzz_hostile_attribute_values_never_lose_a_span(tmp_path, edits, window):
    lines = copy.deepcopy(LINES)
    spans = [s for line in lines for s in line["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    for index, key, value in edits:
        spans[index % len(spans)].setdefault("attributes", []).append({"key": key, "value": value})
    raw = [orjson.dumps(line) for line in lines]
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"".join(r + b"\n" for r in raw))
    written: list[bytes] = []
    state = ReadState([], Spool())
    engine = Engine(
        EngineOptions(window=window, workers=1),
        lambda unit, doc, dirty: written.append(unit.raw if doc is None else orjson.dumps(doc)),
    )
    for unit in iter_units([Source(str(path))], state):
        engine.feed(unit)
    stats = engine.finish()
    assert not stats.malformed and not state.problems
    assert _span_ids(written) == _span_ids(raw)
    assert len(stats.rows) == 6
    for row in stats.rows:
        assert row.label in ("loop", "suspected", "no_loop", "unscored")
        assert not math.isnan(row.score)
        if row.label == "unscored":
            assert row.unscored_reason
