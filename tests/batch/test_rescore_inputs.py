"""rescore reads every file exporter output, whatever its name says, and says precisely
what an input is when it is none of them."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import threading
import zipfile

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_semloop.cli import main
from otel_semloop.otlp.codec import json_to_traces
from tests.batch.rescore_data import agent_lines, compress, labels, proto_bytes, spans_of, write_jsonl

LINES = agent_lines()
EXPECTED_SPANS = sum(
    len(ss["spans"]) for line in LINES for rs in line["resourceSpans"] for ss in rs["scopeSpans"]
)


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reference")
    out = tmp / "reference.jsonl"
    assert main(["rescore", str(write_jsonl(tmp / "ref.jsonl", LINES)), "-o", str(out), "-q"]) == 0
    found = labels(out)
    assert sorted(found.values()) == ["loop"] * 3 + ["no_loop"] * 3
    return found


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
@pytest.mark.parametrize("fmt", ["jsonl", "proto", "request-json", "request-proto"])
def test_every_format_and_compression_is_detected_from_content(tmp_path, expected, fmt, compression):
    if fmt == "jsonl":
        data = b"".join(orjson.dumps(line) + b"\n" for line in LINES)
    elif fmt == "proto":
        data = proto_bytes(LINES)
    else:
        merged = {"resourceSpans": [rs for line in LINES for rs in line["resourceSpans"]]}
        if fmt == "request-json":
            data = orjson.dumps(merged, option=orjson.OPT_INDENT_2)  # pretty-printed, many lines
        else:
            data = json_to_traces(merged).SerializeToString()
    source = tmp_path / "export.data"  # the name says nothing
    source.write_bytes(compress(data, compression))
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 0
    assert labels(out) == expected
    assert len(spans_of(out)) == EXPECTED_SPANS


@pytest.mark.parametrize("name", ["out.pb", "out.pb.gz", "out.jsonl.gz", "out.jsonl.zst"])
def test_output_format_and_compression_follow_the_output_name(tmp_path, name):
    source = write_jsonl(tmp_path / "in.jsonl", LINES)
    out = tmp_path / name
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 0
    data = out.read_bytes()
    if name.endswith(".gz"):
        assert data[:2] == b"\x1f\x8b"
        data = gzip.decompress(data)
    elif name.endswith(".zst"):
        import zstandard

        assert data[:4] == b"\x28\xb5\x2f\xfd"
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    assert (data[:1] == b"{") == (".jsonl" in name)
    plain = tmp_path / ("plain.pb" if ".pb" in name else "plain.jsonl")
    plain.write_bytes(data)
    assert len(spans_of(plain)) == EXPECTED_SPANS
    assert sorted(labels(plain).values()) == ["loop"] * 3 + ["no_loop"] * 3


def test_format_flag_converts_json_to_protobuf_and_back(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", LINES)
    as_proto = tmp_path / "a.bin"
    assert main(["rescore", str(source), "-o", str(as_proto), "--format", "proto", "-q"]) == 0
    back = tmp_path / "b.jsonl"
    assert main(["rescore", str(as_proto), "-o", str(back), "--format", "json", "-q"]) == 0
    assert len(spans_of(back)) == EXPECTED_SPANS
    assert sorted(labels(back).values()) == ["loop"] * 3 + ["no_loop"] * 3


def test_stdin_is_read_when_the_input_is_a_dash(tmp_path):
    data = gzip.compress(b"".join(orjson.dumps(line) + b"\n" for line in LINES))
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "otel_semloop", "rescore", "-", "-o", str(out), "-q"],
        input=data,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(spans_of(out)) == EXPECTED_SPANS


def test_a_directory_is_read_file_by_file_and_a_trace_across_files_is_regrouped(tmp_path):
    folder = tmp_path / "exports"
    (folder / "day2").mkdir(parents=True)
    write_jsonl(folder / "a.jsonl", LINES[:3])
    (folder / "day2" / "b.jsonl.gz").write_bytes(
        gzip.compress(b"".join(orjson.dumps(x) + b"\n" for x in LINES[3:]))
    )
    (folder / ".hidden").write_bytes(b"not otlp")
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(folder), "-o", str(out), "-q"]) == 0
    assert len(spans_of(out)) == EXPECTED_SPANS
    assert sorted(labels(out).values()) == ["loop"] * 3 + ["no_loop"] * 3


def test_a_fifo_is_read_as_a_stream(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = b"".join(orjson.dumps(line) + b"\n" for line in LINES)

    def feed():
        with open(fifo, "wb") as fp:
            fp.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    out = tmp_path / "out.jsonl"
    try:
        assert main(["rescore", str(fifo), "-o", str(out), "-q"]) == 0
    finally:
        writer.join(10)
    assert len(spans_of(out)) == EXPECTED_SPANS


def _zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("x.jsonl", b"{}")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (_zip_bytes(), "a zip archive"),
        (b'[{"resourceSpans": []}]', "a JSON array"),
        (b"timestamp,level,message\n", "text starting 'timestamp,level,message"),
        (gzip.compress(b"hello world\n"), "gzip-compressed"),
    ],
)
def test_an_input_in_no_known_format_gets_one_precise_message(tmp_path, capsys, content, says):
    source = tmp_path / "mystery.jsonl"
    source.write_bytes(content)
    assert main(["rescore", str(source), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "not OTLP" in err
    assert err.count("\n") == 1  # one message, not one per line


def test_a_truncated_gzip_keeps_every_readable_line_and_reports_the_truncation(tmp_path, capsys):
    lines = agent_lines(n_traces=40, per_line=3)
    data = gzip.compress(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    source = tmp_path / "cut.jsonl.gz"
    source.write_bytes(data[: len(data) * 2 // 3])
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 2
    assert "truncated or corrupt" in capsys.readouterr().err
    written = out.read_bytes().splitlines()
    assert len(written) > len(lines) // 3
    for got, line in zip(written, lines, strict=False):
        assert {
            s["spanId"]
            for rs in orjson.loads(got)["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        } == {s["spanId"] for rs in line["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}


def test_a_gzip_bomb_is_streamed_not_inflated_into_memory(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fp:
        fp.write(orjson.dumps(LINES[0]) + b"\n")
        fp.write(b'{"resourceSpans":[],"x":"')
        chunk = b"A" * (1 << 20)
        for _ in range(160):  # a 160 MB line
            fp.write(chunk)
        fp.write(b'"}\n')
        fp.write(orjson.dumps(LINES[1]) + b"\n")
    out = tmp_path / "out.jsonl"
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent (pytest).
    code = (
        "import re, sys\n"
        "from otel_semloop.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(int(hwm) // 1024, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "rescore",
            str(bomb),
            "-o",
            str(out),
            "-q",
            "--max-line-bytes",
            str(8 << 20),
            "--workers",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    peak_mib = int(done.stderr.strip().splitlines()[-1])
    assert peak_mib < 120, f"peak RSS {peak_mib} MiB for a 160 MB line"
    assert "unit limit" in done.stderr
    assert out.stat().st_size > 160 << 20  # copied through, not lost
    with open(out, "rb") as fp:
        first, _big, last = fp
        assert first.startswith(b"{") and last.startswith(b"{")
        assert len(_big) > 160 << 20


def test_an_all_zero_trace_id_is_refused_like_the_service_does(tmp_path, capsys):
    bad = orjson.loads(orjson.dumps(LINES[0]))
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "0" * 32
    source = write_jsonl(tmp_path / "zero.jsonl", [bad, LINES[1]])
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "zero.jsonl:1" in err
    assert "traceId must not be all zeros" in err
    assert out.read_bytes().splitlines()[0] == orjson.dumps(bad)  # copied through


def _nested(depth: int) -> dict:
    value: dict = {"stringValue": "leaf"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def test_anyvalue_nested_deeper_than_24_levels_is_accepted_and_kept(tmp_path, capsys):
    line = orjson.loads(orjson.dumps(LINES[0]))
    span = line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "deep", "value": _nested(40)})
    source = write_jsonl(tmp_path / "deep.jsonl", [line, *LINES[1:]])
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    first = orjson.loads(out.read_bytes().splitlines()[0])
    kept = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    assert {"key": "deep", "value": _nested(40)} in kept
    assert sorted(labels(out).values()) == ["loop"] * 3 + ["no_loop"] * 3


def _framed(messages: list[bytes]) -> bytes:
    return b"".join(len(m).to_bytes(4, "big") + m for m in messages)


def _span_ids(lines) -> set[str]:
    return {
        s["spanId"]
        for line in lines
        for rs in line["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }


def test_a_protobuf_message_with_a_bad_span_keeps_all_its_spans_in_json_output(tmp_path, capsys):
    messages = [json_to_traces(line) for line in LINES]
    messages[2].resource_spans[0].scope_spans[0].spans[0].trace_id = bytes(16)
    source = tmp_path / "in.pb"
    source.write_bytes(_framed([m.SerializeToString() for m in messages]))
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "in.pb message 3" in err and "copied through unscored" in err
    assert "left out" not in err
    assert {r.span_id for r in spans_of(out)} == _span_ids(LINES)


def test_a_protobuf_message_that_does_not_parse_is_reported_as_left_out_of_json_output(tmp_path, capsys):
    good = [json_to_traces(line).SerializeToString() for line in LINES]
    source = tmp_path / "in.pb"
    source.write_bytes(_framed([*good[:2], b"\x0a\x05\xff\xff\xff", *good[2:]]))
    out = tmp_path / "out.jsonl"
    assert main(["rescore", str(source), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "in.pb message 3" in err[0] and "left out: it cannot be written as json" in err[0]
    assert "copied through" not in err[0]
    assert {r.span_id for r in spans_of(out)} == _span_ids(LINES)


def _with_big_resource_attribute(line: dict, size: int):
    message = json_to_traces(line)
    attribute = message.resource_spans[0].resource.attributes.add()
    attribute.key = "padding"
    attribute.value.string_value = "x" * size
    return message.SerializeToString()


def test_a_first_protobuf_message_of_16_mib_or_more_is_detected_and_scored(tmp_path, expected, capsys):
    first = _with_big_resource_attribute(LINES[0], 16 << 20)
    assert len(first) >= 16 << 20
    source = tmp_path / "big-first.pb"
    rest = [json_to_traces(line).SerializeToString() for line in LINES[1:]]
    source.write_bytes(_framed([first, *rest]))
    out = tmp_path / "out.pb"
    argv = ["rescore", str(source), "-o", str(out), "-q", "--workers", "1"]
    assert main(argv) == 0, capsys.readouterr().err
    assert labels(out) == expected


def test_a_first_protobuf_message_past_the_size_bound_is_reported_with_size_and_place(tmp_path, capsys):
    first = _with_big_resource_attribute(LINES[0], 2 << 20)
    rest = [json_to_traces(line).SerializeToString() for line in LINES[1:]]
    source = tmp_path / "big-first.pb"
    source.write_bytes(_framed([first, *rest]))
    out = tmp_path / "out.pb"
    argv = ["rescore", str(source), "-o", str(out), "-q", "--max-line-bytes", str(1 << 20)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not OTLP" not in err
    assert f"big-first.pb message 1: longer than the 1 MiB unit limit ({len(first)} bytes, at byte 0)" in err
    assert {r.span_id for r in spans_of(out)} == _span_ids(LINES)  # the big one copied through


def test_text_whose_fifth_byte_is_a_field_one_tag_is_still_not_otlp(tmp_path, capsys):
    source = tmp_path / "notes.txt"
    source.write_bytes(b"todo\nfix the loop detector\n")
    assert main(["rescore", str(source), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 2
    assert "not OTLP: text starting 'todo" in capsys.readouterr().err


@settings(max_examples=200, deadline=None)
@given(
    head=st.binary(min_size=0, max_size=12),
    size=st.integers(min_value=0, max_value=1 << 12),
    body=st.binary(max_size=64),
)
def test_any_length_prefixed_bytes_give_units_or_problems_and_never_raise(head, size, body):
    """Format detection reads a first message whatever its prefix says: any bytes after any
    prefix (past the limit, truncated, not protobuf) end as units or reported problems."""
    import tempfile

    from otel_semloop.batch.inputs import ReadState, Source, iter_units
    from otel_semloop.batch.units import Spool

    with tempfile.NamedTemporaryFile(suffix=".bin") as fp:
        fp.write(size.to_bytes(4, "big") + head + body)
        fp.flush()
        state = ReadState([], Spool())
        try:
            units = list(iter_units([Source(fp.name)], state, max_unit_bytes=1024))
        finally:
            state.spool.close()
    assert units or state.problems or size == 0
