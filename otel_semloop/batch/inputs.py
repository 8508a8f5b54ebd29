"""Where batch input comes from and what it is (docs/rescore.md, "Inputs"): files,
directories, FIFOs and stdin; plain, gzip or zstd; OTLP JSON lines, length-prefixed
protobuf, or one ``ExportTraceServiceRequest`` (JSON or protobuf) per file. Cutting the
decompressed stream into units, bounded in size, is :mod:`otel_semloop.batch.units`.

Compression and format come from the content, not the file name; an input that is none of
the formats gets one precise message, not an error per line. A truncated compressed stream
ends the input after its last complete line (an :class:`InputProblem`).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.units import (
    READ_CHUNK,
    InputProblem,
    Reader,
    Spool,
    Unit,
    json_units,
    proto_units,
    single_proto,
)
from otel_semloop.errors import OTLPDecodeError
from otel_semloop.model import SpanRecord
from otel_semloop.otlp.records import records_from_json, records_from_proto

__all__ = [
    "DEFAULT_MAX_UNIT_BYTES",
    "InputError",
    "ReadState",
    "Source",
    "expand_inputs",
    "iter_units",
    "read_records",
]

#: Longest line or message held in memory (decompressed). The Collector's file exporter
#: writes one export batch per line, typically well under 10 MB; past this a line is
#: spooled to disk and copied through unscored (the bound errs toward not scoring).
DEFAULT_MAX_UNIT_BYTES = 64 << 20

_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"
_OTHER_MAGIC = {
    b"PK\x03\x04": "a zip archive",
    b"BZh": "bzip2-compressed data",
    b"\xfd7zXZ\x00": "xz-compressed data",
    b"\x04\x22\x4d\x18": "lz4-compressed data",
    b"\xff\x06\x00\x00sNaPpY": "snappy-framed data",
    b"%PDF": "a PDF document",
}


class InputError(Exception):
    """An input cannot be read at all (missing, a directory with no files, an unknown format).
    Exit status 2."""


@dataclass(frozen=True, slots=True)
class Source:
    """One input: a path, or ``-`` for stdin."""

    path: str

    @property
    def label(self) -> str:
        return "<stdin>" if self.path == "-" else self.path

    def size(self) -> int:
        if self.path == "-":
            return 0
        try:
            st = os.stat(self.path)
        except OSError:
            return 0
        return st.st_size if stat.S_ISREG(st.st_mode) else 0


def expand_inputs(paths: list[str]) -> list[Source]:
    """Each argument as sources: ``-`` is stdin, a directory its regular files (recursively,
    sorted, hidden files skipped), a FIFO or character device is read as a stream.
    Raises :class:`InputError` for a missing path or a directory without files."""
    out: list[Source] = []
    stdin_seen = False
    for p in paths:
        if p == "-":
            if stdin_seen:
                raise InputError("stdin ('-') given more than once")
            stdin_seen = True
            out.append(Source("-"))
            continue
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise InputError(f"no such file or directory: {p}") from None
        except OSError as exc:
            raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            found = sorted(
                str(f)
                for f in Path(p).rglob("*")
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
            if not found:
                raise InputError(f"directory has no files: {p}")
            out.extend(Source(f) for f in found)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            if not os.access(p, os.R_OK):
                raise InputError(f"cannot read {p}: permission denied")
            out.append(Source(p))
        else:
            raise InputError(f"not a file, directory or FIFO: {p}")
    return out


# --- decompression ----------------------------------------------------------------------


class _Counting(io.RawIOBase):
    """Counts the compressed bytes read, for the progress bar."""

    def __init__(self, fp: IO[bytes]) -> None:
        self._fp = fp
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._fp.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.count += n
        return n or 0

    def close(self) -> None:
        self._fp.close()
        super().close()


class _Read1(io.RawIOBase):
    """A raw reader over a buffered stream's ``read1``."""

    def __init__(self, fp: Any) -> None:
        self._fp = fp

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._fp.read1(len(b))
        b[: len(data)] = data
        return len(data)


def _open_raw(source: Source) -> IO[bytes]:
    if source.path == "-":
        return sys.stdin.buffer
    return open(source.path, "rb", buffering=0)


def _decompressed(raw: io.BufferedReader, label: str) -> tuple[IO[bytes], str]:
    head = raw.peek(8)[:8]
    if head.startswith(_GZIP):
        # read1: one decompression step a read, so lines decoded before a truncation are kept
        return io.BufferedReader(_Read1(gzip.GzipFile(fileobj=raw, mode="rb")), READ_CHUNK), "gzip"
    if head.startswith(_ZSTD):
        try:
            import zstandard
        except ImportError:
            raise InputError(
                f"{label}: zstd-compressed; install the zstd extra (pip install 'otel-semloop[zstd]')"
            ) from None
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return io.BufferedReader(reader, READ_CHUNK), "zstd"  # type: ignore[arg-type]
    return raw, "none"


_DECOMPRESS_ERRORS: tuple[type[BaseException], ...] = (EOFError, gzip.BadGzipFile, zlib.error)
try:  # zstandard is an extra
    import zstandard as _zstd

    _DECOMPRESS_ERRORS = (*_DECOMPRESS_ERRORS, _zstd.ZstdError)
except ImportError:  # pragma: no cover - exercised only without the extra
    pass


def _describe_head(head: bytes) -> str:
    for magic, what in _OTHER_MAGIC.items():
        if head.startswith(magic):
            return what
    if head.startswith(b"["):
        return "a JSON array (OTLP JSON is one TracesData object per line, or one object per file)"
    text = head[:24]
    if text and all(32 <= b < 127 or b in (9, 10, 13) for b in text):
        return f"text starting {text.decode('ascii')!r}"
    return "binary data starting " + " ".join(f"{b:02x}" for b in head[:8])


@dataclass(slots=True)
class ReadState:
    """Per-run reading state shared with the engine: problems found, bytes read."""

    problems: list[InputProblem]
    spool: Spool
    compressed_read: int = 0


def iter_units(
    sources: list[Source], state: ReadState, *, max_unit_bytes: int = DEFAULT_MAX_UNIT_BYTES
) -> Iterator[Unit]:
    """Every unit of every source, in order. Problems that end a source early (a truncated
    compressed stream, truncated protobuf framing, an unknown format) are appended to
    ``state.problems`` and reading goes on with the next source."""
    for source in sources:
        try:
            raw_fp = _open_raw(source)
        except OSError as exc:
            state.problems.append(InputProblem(source.label, f"cannot read: {exc.strerror or exc}"))
            continue
        counting = _Counting(raw_fp)
        buffered = io.BufferedReader(counting, READ_CHUNK)
        base = state.compressed_read
        try:
            yield from _iter_source(source, buffered, counting, state, base, max_unit_bytes)
        finally:
            state.compressed_read = base + counting.count
            if source.path != "-":
                buffered.close()


def _iter_source(
    source: Source,
    buffered: io.BufferedReader,
    counting: _Counting,
    state: ReadState,
    base: int,
    limit: int,
) -> Iterator[Unit]:
    label = source.label
    try:
        fp, compression = _decompressed(buffered, label)
    except InputError as exc:
        state.problems.append(InputProblem(label, str(exc).removeprefix(f"{label}: ")))
        return
    reader = Reader(fp, label, limit, state.spool)
    seq = 0
    try:
        head = _peek(fp, 64)
        first = head.lstrip()[:1]
        if not head:
            return
        if first == b"{" and _foreign_json(fp):
            state.problems.append(
                InputProblem(
                    label,
                    "not OTLP: JSON lines whose first line has no resourceSpans (an application "
                    "log?); skipped, nothing of it copied to the output",
                )
            )
            return
        if first == b"{":
            gen = json_units(reader, label)
        elif head[:1] == b"\x0a":
            gen = single_proto(reader, label)
        elif _length_prefixed(reader, head):
            gen = proto_units(reader, label, state.problems)
        else:
            what = _describe_head(head)
            where = f"{label} ({compression}-compressed)" if compression != "none" else label
            state.problems.append(
                InputProblem(
                    where,
                    f"not OTLP: {what}; expected OTLP JSON lines, length-prefixed protobuf "
                    "(the Collector file exporter's formats) or one ExportTraceServiceRequest "
                    "(JSON or protobuf), optionally gzip or zstd compressed",
                )
            )
            return
        for unit in gen:
            seq = unit.seq
            state.compressed_read = base + counting.count
            yield unit
    except _DECOMPRESS_ERRORS as exc:
        after = f"after unit {seq}" if seq else "before the first complete unit"
        state.problems.append(
            InputProblem(
                label, f"{compression} stream is truncated or corrupt {after} ({exc}); the rest is lost"
            )
        )


def _length_prefixed(reader: Reader, head: bytes) -> bool:
    """Whether the stream is length-prefixed protobuf: a 4-byte big-endian length, then a
    ``TracesData`` (empty, or starting with its field 1, ``resource_spans``). A first
    message within the reader's limit is read whatever its size and must parse, or be
    followed by the end of the input or another plausible prefix (it is then reported as
    malformed, not the whole file as not OTLP); the bytes read are put back. Past the limit
    only the prefix can be judged: it must not be text (a line of text starts with four
    printable bytes, a length beyond any message), and the message is then spooled and
    reported with its size and position by :func:`~otel_semloop.batch.units.proto_units`."""
    if len(head) < 4:
        return False
    size = int.from_bytes(head[:4], "big")
    if size == 0:
        return True
    if head[4:5] != b"\x0a":
        return False
    if size > reader.limit:
        return not all(32 <= b < 127 or b in (9, 10, 13) for b in head[:4])
    framed = reader.read_exactly(4 + size)
    following = _peek(reader.fp, 5)
    reader.put_back(framed)
    if len(framed) < 4 + size:
        return True  # truncated: proto_units reports it
    try:
        TracesData.FromString(framed[4:])
    except (DecodeError, RuntimeError, RecursionError):
        return not following or (len(following) == 5 and following[4:5] == b"\x0a")
    return True


#: OTLP JSON's top-level keys: a traces file (the Collector's file exporter, an
#: ExportTraceServiceRequest) and the other signals' files, which another reader may take.
_OTLP_KEYS = ("resourceSpans", "resourceLogs", "resourceMetrics")
#: How much of a JSON file's first line is looked at to tell OTLP from another JSON file.
_SNIFF_BYTES = 1 << 16


def _foreign_json(fp: IO[bytes]) -> bool:
    """Whether a JSON file is not OTLP: its first line (up to 64 KiB of it) is a JSON
    object with none of OTLP's top-level keys. A line cut by the 64 KiB look is judged by
    whether a key appears in what was seen (the key comes first in what exporters write)."""
    head = _peek(fp, _SNIFF_BYTES)
    line, newline, _ = head.partition(b"\n")
    if not newline and len(head) < _SNIFF_BYTES:
        line = head  # the whole file is one line
    elif not newline:
        return not any(f'"{key}"'.encode() in line for key in _OTLP_KEYS)
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False  # a malformed line: reported as such, line by line
    return isinstance(doc, dict) and bool(doc) and not any(key in doc for key in _OTLP_KEYS)


def _peek(fp: IO[bytes], n: int) -> bytes:
    return fp.peek(n)[:n]  # type: ignore[attr-defined]


def read_records(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """Every span of the exported file or directory ``path`` as records, read as ``rescore``
    reads it (for tools and tests that want the spans, not a rescore). Raises
    :class:`InputError` for what cannot be read, :class:`~otel_semloop.errors.OTLPDecodeError`
    for a unit that does not decode."""
    state = ReadState([], Spool())
    records: list[SpanRecord] = []
    try:
        for unit in iter_units(expand_inputs([os.fspath(path)]), state):
            if unit.error is not None or unit.spooled is not None:
                raise OTLPDecodeError(unit.error or "unit too long", unit.where)
            try:
                if unit.kind == "json":
                    records.extend(records_from_json(orjson.loads(unit.raw), unit.where))
                else:
                    records.extend(records_from_proto(TracesData.FromString(unit.raw), unit.where))
            except (orjson.JSONDecodeError, DecodeError) as exc:
                raise OTLPDecodeError(str(exc), unit.where) from None
    finally:
        state.spool.close()
    if state.problems:
        raise InputError(str(state.problems[0]))
    return records
