"""Chunked parsing: workers parse and score runs of lines, the reading process only orders
and writes. The bytes must be exactly what the plain algorithm gives (parse every line,
group spans by trace, score each trace, write the verdict onto the parsed lines, dump the
lines that changed, copy the others), wherever the chunks are cut."""

from __future__ import annotations

import gc
import json
import random
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import rescore_throughput as bench
from otel_semloop.batch.chunks import parse_chunk, parse_unit, render_json
from otel_semloop.batch.spans import apply_json, payload_json, scan_json
from otel_semloop.batch.worker import ScorerSpec, TraceJob, score_job
from otel_semloop.cli import main


def _reference(path: Path) -> bytes:
    """The plain algorithm, for input whose traces are complete within the window."""
    raw = path.read_bytes().splitlines()
    docs = [orjson.loads(line) for line in raw]
    by_trace: dict[str, list[dict]] = defaultdict(list)
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    by_trace[span["traceId"]].append(span)
    scorer = ScorerSpec().build()
    touched: set[int] = set()
    for tid, spans in by_trace.items():
        roots = tuple(s["spanId"] for s in spans if not s.get("parentSpanId"))
        _, patches, _ = score_job(TraceJob(tid, "json", payload_json(spans), roots, False), scorer)
        for span in spans:
            if patches and span["spanId"] in patches:
                apply_json(span, patches[span["spanId"]])
                touched.add(id(span))
    out = []
    for line, doc in zip(raw, docs, strict=True):
        spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        out.append(orjson.dumps(doc) if any(id(s) in touched for s in spans) else line)
    return b"".join(line + b"\n" for line in out)


def _roots_first(path: Path) -> None:
    """Swap each trace's root with its first span: a trace whose root was seen is then not
    complete at a chunk's end, so a worker's verdict for it must not be used."""
    docs = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    first: dict[str, tuple[list, int]] = {}
    for doc in docs:
        spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        for i, span in enumerate(spans):
            where = first.setdefault(span["traceId"], (spans, i))
            if not span.get("parentSpanId"):
                spans[i], where[0][where[1]] = where[0][where[1]], spans[i]
    path.write_bytes(b"".join(orjson.dumps(doc) + b"\n" for doc in docs))


def _spaced(path: Path) -> None:
    """Every other line written with spaces after separators (not compact): its spans are
    found as bytes and gaps instead of offsets, so a trace has spans of both kinds."""
    lines = path.read_bytes().splitlines()
    path.write_bytes(
        b"".join(
            (json.dumps(orjson.loads(line), ensure_ascii=False).encode() if i % 2 else line) + b"\n"
            for i, line in enumerate(lines)
        )
    )


@pytest.mark.parametrize("order", ["end order", "roots first", "spaced lines"])
def test_chunked_rescore_gives_the_bytes_of_the_plain_algorithm(tmp_path, monkeypatch, order):
    # bench-shaped traffic (agent traces with GenAI attributes, one in four looping), with
    # short lines so that many lines and chunk edges fall inside the sample: in 0.2 MB
    # chunks about half the traces are scored where they were parsed, half are cut by an edge
    monkeypatch.setattr(bench, "SPANS_PER_LINE", 12)
    monkeypatch.setattr(bench, "OPEN_TRACES", 2)
    source = tmp_path / "agents.jsonl"
    bench.write_file(source, 600_000, seed=11)
    if order == "roots first":
        _roots_first(source)
    elif order == "spaced lines":
        _spaced(source)
    expected = _reference(source)
    for args in (["--workers", "1"], ["--workers", "2", "--chunk-mb", "0.2"]):
        out = tmp_path / "out.jsonl"
        summary = tmp_path / "summary.json"
        command = ["rescore", str(source), "-o", str(out), "-q", "--window", "2", "--summary", str(summary)]
        assert main([*command, *args]) == 0
        assert out.read_bytes() == expected, args
        assert json.loads(summary.read_text())["loops"] > 0


@pytest.mark.parametrize(
    "doc",
    [
        {"resourceSpans": []},
        {"resourceSpans": None, "extra": [1.5, -0.0, 1e300, "é\u2028\x00"]},
        {
            "resourceSpans": [
                {"scopeSpans": [{"spans": []}, {"scope": {"name": "x"}, "spans": None}]},
                {
                    "resource": {"attributes": [{"key": "k", "value": {"doubleValue": 0.1}}]},
                    "scopeSpans": [
                        {
                            "spans": [
                                {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": '☃ \\ "q"'},
                                {"traceId": "ab" * 16, "spanId": "ef" * 8, "parentSpanId": "cd" * 8},
                            ],
                            "schemaUrl": "s",
                        }
                    ],
                },
            ]
        },
    ],
)
def test_a_line_is_its_gaps_and_spans(doc):
    raw = json.dumps(doc, indent=1).encode()  # spacing orjson would not write
    parsed, scanned = parse_unit("json", raw, "x:1")
    _, _, (sids, rootmask), spans, gaps, _, bounds = parsed
    assert bounds is None
    assert len(sids) == 16 * len(spans) and len(rootmask) == len(spans) == len(scanned)
    assert render_json(gaps, spans) == orjson.dumps(orjson.loads(raw))
    # a compact line (what orjson writes for it) sends only where its spans are
    compact = orjson.dumps(orjson.loads(raw))
    parsed, scanned = parse_unit("json", compact, "x:1")
    _, _, (sids, rootmask), spans, gaps, _, bounds = parsed
    objects = scanned
    plain = scan_json(orjson.loads(compact))
    assert objects == [s.span for s in plain]
    assert sids == "".join(s.span_id for s in plain) and list(rootmask) == [s.root for s in plain]
    assert spans is None and gaps is None and len(bounds) == 2 * len(rootmask) == 2 * len(objects)
    pieces = [compact[bounds[2 * i] : bounds[2 * i + 1]] for i in range(len(objects))]
    assert pieces == [orjson.dumps(o) for o in objects]


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=4,
)
_hex = st.integers(1, 2**64 - 1)


@st.composite
def _compact_lines(draw) -> dict:
    def span() -> dict:
        out = {"traceId": f"{draw(_hex):032x}", "spanId": f"{draw(_hex):016x}"}
        keys = st.sampled_from(["name", "attributes", "x", "spans"])
        out.update(draw(st.dictionaries(keys, _json_values, max_size=2)))
        return out

    def scope() -> dict:
        keys = st.sampled_from(["scope", "schemaUrl", "spanz"])
        out = draw(st.dictionaries(keys, _json_values, max_size=2))
        out["spans"] = [span() for _ in range(draw(st.integers(0, 3)))]
        return out

    def resource() -> dict:
        out = draw(st.dictionaries(st.sampled_from(["resource", "schemaUrl"]), _json_values, max_size=2))
        out["scopeSpans"] = [scope() for _ in range(draw(st.integers(0, 2)))]
        return out

    return {"resourceSpans": [resource() for _ in range(draw(st.integers(0, 2)))]}


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_compact_lines())
def test_the_spans_of_a_compact_line_are_found_where_orjson_wrote_them(doc):
    # offsets come from the length of each span's own dump: they must cut the line exactly
    # where its spans are, whatever the values around and inside them
    raw = orjson.dumps(doc)
    parsed, objects = parse_unit("json", raw, "x:1")
    assert parsed[0] is None
    bounds = parsed[6]
    assert bounds is not None and len(bounds) == 2 * len(objects)
    pieces = [raw[bounds[2 * i] : bounds[2 * i + 1]] for i in range(len(objects))]
    assert pieces == [orjson.dumps(o) for o in objects]
    sids = parsed[2][0]
    assert [orjson.loads(p)["spanId"] for p in pieces] == [
        sids[16 * i : 16 * i + 16] for i in range(len(pieces))
    ]


def test_a_line_orjson_cannot_write_has_no_gaps():
    deep: object = "leaf"
    for _ in range(70):  # 280 levels: orjson reads up to 1024, writes up to 255
        deep = {"kvlistValue": {"values": [{"key": "k", "value": deep}]}}
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "attributes": [{"key": "d", "value": deep}]}
    raw = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    parsed, _ = parse_unit("json", raw, "x:1")
    assert parsed[0] is None and parsed[4] is None and parsed[6] is None
    huge = raw.replace(b'"leaf"', b"123456789012345678901234567890")
    assert parse_unit("json", huge, "x:1")[0][4] is None


class _Watching:
    """The default scorer, noting whether the cyclic collector ran during each trace."""

    seen: list[bool] = []

    def __init__(self) -> None:
        from otel_semloop.scoring import DetectorScorer

        self._scorer = DetectorScorer()

    def score(self, trace):
        _Watching.seen.append(gc.isenabled())
        return self._scorer.score(trace)


def _watching(spec: ScorerSpec) -> _Watching:
    return _Watching()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_chunk_is_scored_with_the_collector_paused_then_resumed_as_it_was(tmp_path, monkeypatch, enabled):
    # the collector walks every parsed dict again and again for nothing (they form no
    # cycles): paused for the chunk, and left as the caller had it afterwards
    monkeypatch.setattr(bench, "SPANS_PER_LINE", 12)
    monkeypatch.setattr(bench, "OPEN_TRACES", 2)
    source = tmp_path / "agents.jsonl"
    bench.write_file(source, 60_000, seed=3)
    work = [("json", line, f"x:{i}") for i, line in enumerate(source.read_bytes().splitlines())]
    _Watching.seen = []
    was = gc.isenabled()
    if not enabled:
        gc.disable()
    try:
        _, verdicts = parse_chunk(work, 16, ScorerSpec(factory=_watching))
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()
    assert verdicts and len(_Watching.seen) == len(verdicts)
    assert not any(_Watching.seen)


_ids = st.one_of(
    st.integers(0, 2**64 - 1).map(lambda n: f"{n:016x}"),
    st.integers(0, 2**128 - 1).map(lambda n: f"{n:032x}"),
    st.just("0" * 32),
    st.text("0123456789abcdefABCDEFxz ", min_size=0, max_size=34),
    st.text("0123456789abcdefAx", min_size=16, max_size=16),
    st.text("0123456789abcdefAx", min_size=32, max_size=32),
    st.sampled_from([None, 0, 1, False, True, [], {}, 1.5, ["ab" * 8]]),
)


@st.composite
def _scannable(draw) -> object:
    def span() -> object:
        if draw(st.integers(0, 30)) == 0:
            return draw(st.sampled_from([None, 1, "span", []]))
        out: dict = {}
        for key in ("traceId", "spanId", "parentSpanId", "flags"):
            if draw(st.booleans()) or key in ("traceId", "spanId"):
                value = (
                    draw(st.integers(0, 1024) | st.sampled_from([True, "768"]))
                    if key == "flags"
                    else draw(_ids)
                )
                out[key] = value
        return out

    def level(inner, key: str) -> object:
        if draw(st.integers(0, 30)) == 0:
            return draw(st.sampled_from([None, 1, "x", {}]))
        items = draw(st.integers(0, 3))
        return {"other": 1, key: [inner() for _ in range(items)]} if draw(st.integers(0, 20)) else {key: 7}

    return level(lambda: level(lambda: level(span, "spans"), "scopeSpans"), "resourceSpans")


def _items(d: object, key: str) -> list:
    value = d.get(key) if type(d) is dict else None
    return value if type(value) is list else []


def _valid_span(draw_tid: int, draw_sid: int) -> dict:
    return {"traceId": f"{draw_tid:032x}", "spanId": f"{draw_sid:016x}"}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_scannable(), st.booleans())
def test_the_column_scan_finds_what_the_plain_scan_finds_or_raises_the_same(doc, lower_ids):
    # the column scan is a shortcut over scan_json: same spans, ids and roots, same errors
    from otel_semloop.batch.spans import scan_json_columns
    from otel_semloop.otlp._common import Bad

    if lower_ids:  # mostly good ids, so that the shortcut runs too
        for rs in _items(doc, "resourceSpans"):
            for ss in _items(rs, "scopeSpans"):
                for i, sp in enumerate(_items(ss, "spans")):
                    if type(sp) is dict:
                        sp.update(_valid_span(i + 1, i + 7))
    try:
        plain = scan_json(doc)
    except Bad as exc:
        with pytest.raises(Bad) as got:
            scan_json_columns(doc)
        assert got.value.to_error("x").args == exc.to_error("x").args
        return
    spans, tids, sids, roots = scan_json_columns(doc)
    assert [id(s) for s in spans] == [id(s.span) for s in plain]
    assert tids == [s.trace_id for s in plain]
    assert sids == "".join(s.span_id for s in plain)
    assert roots == bytes([s.root for s in plain])


def test_the_column_scan_takes_its_shortcut_on_lowercase_ids(monkeypatch):
    # the test above would pass if the shortcut never ran: check that it does
    from otel_semloop.batch import scan as spans_module

    def refuse(doc):
        raise AssertionError("the plain scan ran")

    monkeypatch.setattr(spans_module, "scan_json", refuse)
    doc = {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [_valid_span(1, 2), {**_valid_span(1, 3), "parentSpanId": "2" * 16}]}]}
        ]
    }
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(
        {**_valid_span(5, 9), "parentSpanId": "a" * 16, "flags": 0x300}
    )
    spans, _, sids, roots = spans_module.scan_json_columns(doc)
    assert sids == f"{2:016x}{3:016x}{9:016x}" and roots == b"\x01\x00\x01" and len(spans) == 3


def test_span_ids_that_only_add_up_to_the_right_length_are_refused():
    spans = [{"traceId": "a" * 32, "spanId": "b" * 15}, {"traceId": "a" * 32, "spanId": "c" * 17}]
    from otel_semloop.batch.spans import scan_json_columns
    from otel_semloop.otlp._common import Bad

    with pytest.raises(Bad, match="span id must be 16 hex characters"):
        scan_json_columns({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.booleans()), max_size=30))
def test_a_units_spans_are_grouped_by_trace_in_the_order_of_each_traces_last_span(spans):
    from otel_semloop.batch.chunks import _groups

    tids = [t * 32 for t, _ in spans]
    sids = "".join(f"{i:016x}" for i in range(len(spans)))
    roots = bytes([r for _, r in spans])
    expected: dict[str, tuple[str, list[int], list[str]]] = {}
    for i, tid in enumerate(tids):  # span by span: a trace seen again moves to the end
        group = expected.pop(tid, (tid, [], []))
        group[1].append(i)
        if roots[i]:
            group[2].append(sids[16 * i : 16 * i + 16])
        expected[tid] = group
    assert _groups(tids, sids, roots) == list(expected.values())


def test_a_job_with_span_ids_sends_back_what_the_reading_process_would_write():
    # the shortcut: a worker writes each patched span of a job as compact JSON, where the
    # reading process would parse the span's bytes, apply its patch and dump it; same bytes,
    # by position, also for two spans that share an id and for a span scored before
    import random

    spans = bench.make_trace(random.Random(3), True, 1_767_225_600_000_000_000)
    spans.insert(32, {**spans[31], "name": "same id, other span"})
    blobs = [orjson.dumps(s) for s in spans]
    tid = spans[0]["traceId"]
    roots = (spans[-1]["spanId"],)
    payload = b"[" + b",".join(blobs) + b"]"
    scorer = ScorerSpec().build()
    _, by_id, _ = score_job(TraceJob(tid, "json", payload, roots, False), scorer)
    ids = "".join(s["spanId"] for s in spans)
    _, written, _ = score_job(TraceJob(tid, "json", payload, roots, False, ids), scorer)
    assert type(written) is list and len(written) == len(spans)
    expected = []
    for blob, span in zip(blobs, spans, strict=True):
        patch = by_id.get(span["spanId"])
        if patch is None:
            expected.append(None)
            continue
        decoded = orjson.loads(blob)
        apply_json(decoded, patch)
        expected.append(orjson.dumps(decoded))
    assert written == expected
    assert written[31] is not None and written[32] is not None and written[31] != written[32]
    # rescoring the written spans replaces what the first run wrote: the same bytes again
    again = [w if w is not None else b for w, b in zip(written, blobs, strict=True)]
    payload2 = b"[" + b",".join(again) + b"]"
    _, rewritten, _ = score_job(TraceJob(tid, "json", payload2, roots, False, ids), scorer)
    assert rewritten == written


def test_only_spans_straight_from_the_parser_are_decoded_with_json_types(monkeypatch):
    # records_from_json(json_types=True) trusts that every value is a JSON parser's own
    # type: the worker says so only for spans it parsed (from a payload, or a chunk's span
    # JSON), never for spans a caller built or lenient_span_json rebuilt
    from otel_semloop.batch import worker

    calls: list[bool] = []
    decoded: list[tuple[bool, list]] = []
    real = worker.records_from_json

    def watching(obj, where="", *, json_types=False):
        calls.append(json_types)
        decoded.append((json_types, obj["resourceSpans"][0]["scopeSpans"][0]["spans"]))
        return real(obj, where, json_types=json_types)

    monkeypatch.setattr(worker, "records_from_json", watching)
    scorer = ScorerSpec().build()
    spans = [
        orjson.loads(orjson.dumps(s))
        for s in bench.make_trace(random.Random(3), True, 1_767_225_600_000_000_000)
    ]
    roots = tuple(s["spanId"] for s in spans if not s.get("parentSpanId"))
    job = TraceJob(spans[0]["traceId"], "json", payload_json(spans), roots, False)
    plain = score_job(job, scorer, [dict(s) for s in spans])  # a caller's own dicts
    assert calls == [False]
    assert score_job(job, scorer)[1:] == plain[1:] and calls == [False, True]  # parsed from the payload
    work = [("json", orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}), "x:1")]
    _, verdicts = parse_chunk(work, 16, ScorerSpec())
    assert calls == [False, True, True] and len(verdicts) == 1  # a chunk's span JSON, parsed again
    bad = [dict(s) for s in spans]
    bad[1]["attributes"] = [{"key": "k", "value": {"doubleValue": "NaN?"}}]
    score_job(TraceJob(job.trace_id, "json", payload_json(bad), roots, False), scorer)
    assert calls[3] is True  # the whole trace first, as parsed; it fails, then span by span:
    bad_id = bad[1]["spanId"]
    rebuilt = [
        flag for flag, given in decoded[4:] if given[0]["spanId"] == bad_id and not given[0]["attributes"]
    ]
    assert rebuilt == [False]  # lenient_span_json's rebuilt span: the plain path
