"""Reading and writing the OpenTelemetry Collector file exporter's formats.

* JSON lines (``format: json``, the default): one OTLP JSON ``TracesData`` per line, one
  export batch per line (not one trace: a trace spans lines and files).
* Protobuf (``format: proto``): each ``TracesData`` serialized and preceded by its length
  as a 4-byte big-endian unsigned integer.

Input may be gzip-compressed (detected from the magic bytes, whatever the file name).
A line that is not valid OTLP does not stop the reader: it comes back as a :class:`Batch`
with ``error`` set and the line's bytes in ``raw``, and :func:`write_json_line` copies it
through unchanged, so rescoring a file loses nothing.

A caller that holds every batch until its traces complete (``rescore``) should call
``gc.freeze()`` after taking each batch: otherwise CPython's cyclic collector rescans all
the documents held so far again and again, which made parsing 100k spans about 3.5x
slower in ``bench/otlp_codec.py``. The documents are acyclic, so reference counting
still frees them.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.errors import OTLPDecodeError
from otel_semloop.model import SpanRecord
from otel_semloop.otlp.records import records_from_json, records_from_proto

__all__ = [
    "Batch",
    "ProtoBatch",
    "iter_json_lines",
    "iter_proto_messages",
    "open_input",
    "open_output",
    "write_json_line",
    "write_proto_message",
]

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
_GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)

Source = str | os.PathLike[str] | IO[bytes]


@dataclass(slots=True, eq=False)
class Batch:
    """One line of an OTLP JSON lines file.

    ``line_no`` is 1-based. ``obj`` is the parsed ``TracesData`` dict and ``records`` its
    spans (each record's ``source`` is a span dict inside ``obj``, so patches applied to
    them show up when the line is written). For a broken line ``obj`` is None, ``records``
    empty, ``error`` says what is wrong and ``raw`` holds the line (without its newline).
    """

    line_no: int
    obj: dict[str, Any] | None
    records: list[SpanRecord] = field(default_factory=list)
    error: OTLPDecodeError | None = None
    raw: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True, eq=False)
class ProtoBatch:
    """One length-prefixed ``TracesData`` of a protobuf file.

    ``index`` is 1-based and ``offset`` the byte offset of its length prefix. A message
    that does not parse (or has invalid ids) has ``message`` None, ``error`` set and its
    payload in ``raw``; the framing is intact, so reading goes on.
    """

    index: int
    offset: int
    message: TracesData | None
    records: list[SpanRecord] = field(default_factory=list)
    error: OTLPDecodeError | None = None
    raw: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _name(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


def _maybe_gunzip(fp: IO[bytes]) -> IO[bytes]:
    head = b""
    peek = getattr(fp, "peek", None)
    if peek is not None:
        head = peek(2)[:2]
    elif fp.seekable():
        pos = fp.tell()
        head = fp.read(2)
        fp.seek(pos)
    if head == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=fp, mode="rb")  # type: ignore[return-value]
    return fp


def open_input(source: Source) -> IO[bytes]:
    """A binary reader for a path or binary file object, gunzipping when gzip.

    The caller closes what it gets (closing a wrapper leaves a passed-in file open).
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as probe:
            head = probe.read(2)
        if head == _GZIP_MAGIC:
            return gzip.open(source, "rb")  # type: ignore[return-value]
        return open(source, "rb")
    return _maybe_gunzip(source)


def open_output(path: str | os.PathLike[str]) -> IO[bytes]:
    """A binary writer for ``path``; gzip-compressed when the name ends in ``.gz``."""
    if os.fspath(path).endswith(".gz"):
        return gzip.open(path, "wb")  # type: ignore[return-value]
    return open(path, "wb")


# --- JSON lines -----------------------------------------------------------------------


def _decode_line(line: bytes, line_no: int, name: str, keep_raw: bool) -> Batch:
    where = f"{name}:{line_no}"
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return Batch(line_no, None, [], OTLPDecodeError(f"invalid JSON: {exc}", where), line)
    try:
        records = records_from_json(obj, where)
    except OTLPDecodeError as exc:
        return Batch(line_no, None, [], exc, line)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        # A safety net: a decoder bug must not stop a rescore; the line passes through.
        error = OTLPDecodeError(f"cannot decode: {type(exc).__name__}: {exc}", where)
        return Batch(line_no, None, [], error, line)
    return Batch(line_no, obj, records, None, line if keep_raw else None)


def iter_json_lines(source: Source, *, name: str | None = None, keep_raw: bool = False) -> Iterator[Batch]:
    """Each non-blank line of an OTLP JSON lines file as a :class:`Batch`.

    ``source`` is a path or a binary file object (gzip is detected). ``name`` is used in
    error locations (default: the path or the file object's name). ``keep_raw`` keeps
    every line's bytes in ``Batch.raw``, not only broken lines'. Broken lines do not stop
    the iteration; a broken gzip stream does (it raises
    :class:`~otel_semloop.errors.OTLPDecodeError`).
    """
    label = name if name is not None else _name(source)
    fp = open_input(source)
    owned = isinstance(source, (str, os.PathLike))
    line_no = 0
    try:
        while True:
            try:
                line = fp.readline()
            except _GZIP_ERRORS as exc:
                raise OTLPDecodeError(f"corrupt gzip stream: {exc}", f"{label}:{line_no + 1}") from None
            if not line:
                break
            if not isinstance(line, bytes):
                raise TypeError("iter_json_lines reads binary files; open the file with 'rb'")
            line_no += 1
            if line[-1:] == b"\n":
                line = line[:-1]
            if not line.strip():
                continue
            yield _decode_line(line, line_no, label, keep_raw)
    finally:
        if owned:
            fp.close()


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError: nesting past orjson's 255 levels
        # Only unknown fields can nest that deep (AnyValues are bounded on input); the
        # stdlib encoder goes deeper. Non-ASCII stays UTF-8 as orjson writes it.
        # orjson.loads accepts 1024 levels; make room for them (C stack is ample for that).
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4000))
        try:
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        finally:
            sys.setrecursionlimit(limit)


def write_json_line(fp: IO[bytes], batch: Batch | dict[str, Any]) -> None:
    """Write one batch (or a ``TracesData`` dict) as a line: ``orjson.dumps`` + newline;
    a broken line's raw bytes as they were read."""
    if isinstance(batch, dict):
        fp.write(_dumps(batch) + b"\n")
    elif batch.obj is None:
        fp.write((batch.raw or b"") + b"\n")
    else:
        fp.write(_dumps(batch.obj) + b"\n")


# --- length-prefixed protobuf ---------------------------------------------------------


def _read_exactly(fp: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes, in chunks, so a bogus length does not allocate gigabytes."""
    if n <= _CHUNK:
        return fp.read(n)
    parts = []
    remaining = n
    while remaining:
        chunk = fp.read(min(remaining, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def iter_proto_messages(source: Source, *, name: str | None = None) -> Iterator[ProtoBatch]:
    """Each length-prefixed ``TracesData`` of a protobuf file as a :class:`ProtoBatch`.

    Raises :class:`~otel_semloop.errors.OTLPDecodeError` for truncated input (a partial
    length prefix or fewer payload bytes than announced), where nothing after can be
    trusted; a payload that does not parse comes back as an error batch.
    """
    label = name if name is not None else _name(source)
    fp = open_input(source)
    owned = isinstance(source, (str, os.PathLike))
    offset = 0
    index = 0
    try:
        while True:
            index += 1
            where = f"{label} message {index} at byte {offset}"
            try:
                prefix = fp.read(4)
                if not prefix:
                    break
                if len(prefix) < 4:
                    raise OTLPDecodeError(f"truncated input: {len(prefix)} of 4 length-prefix bytes", where)
                size = int.from_bytes(prefix, "big")
                data = _read_exactly(fp, size)
            except _GZIP_ERRORS as exc:
                raise OTLPDecodeError(f"corrupt gzip stream: {exc}", where) from None
            if len(data) < size:
                hint = ""
                if prefix[:1] in (b"{", b"["):
                    hint = " (this looks like JSON; read it as JSON lines)"
                raise OTLPDecodeError(
                    f"truncated input: length prefix says {size} bytes, {len(data)} left{hint}", where
                )
            offset += 4 + size
            msg = TracesData()
            try:
                msg.ParseFromString(data)
            except (DecodeError, RuntimeError, ValueError) as exc:
                yield ProtoBatch(
                    index,
                    offset - 4 - size,
                    None,
                    [],
                    OTLPDecodeError(f"invalid protobuf: {exc}", where),
                    data,
                )
                continue
            try:
                records = records_from_proto(msg, where)
            except OTLPDecodeError as exc:
                yield ProtoBatch(index, offset - 4 - size, None, [], exc, data)
                continue
            yield ProtoBatch(index, offset - 4 - size, msg, records)
    finally:
        if owned:
            fp.close()


def write_proto_message(fp: IO[bytes], batch: ProtoBatch | TracesData | Any) -> None:
    """Write a ``TracesData`` (or a :class:`ProtoBatch`; a broken one's raw payload)
    with its 4-byte big-endian length prefix."""
    if isinstance(batch, ProtoBatch):
        data = (batch.raw or b"") if batch.message is None else batch.message.SerializeToString()
    else:
        data = batch.SerializeToString()
    if len(data) > 0xFFFFFFFF:
        raise ValueError(f"message too large for a 4-byte length prefix: {len(data)} bytes")
    fp.write(len(data).to_bytes(4, "big"))
    fp.write(data)
