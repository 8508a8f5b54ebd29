"""Cutting one decompressed stream into units, none longer than a bound: JSON lines (or a
whole pretty-printed JSON document), length-prefixed protobuf messages, or one protobuf
document. :mod:`otel_semloop.batch.inputs` finds the stream and its format and calls these.

Memory: no line or message is held past the reader's ``limit``: a longer one (a gzip bomb
inflating to one huge line, a bogus length prefix) is copied to a :class:`Spool` file
chunk by chunk and later copied through unscored (the unit carries ``spooled`` and an
``error``), so nothing is lost and nothing unbounded is held. Framing that ends early (a
truncated length prefix or message) is reported as an :class:`InputProblem` and ends the
stream after the last complete unit.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

__all__ = [
    "READ_CHUNK",
    "InputProblem",
    "Reader",
    "Spool",
    "Unit",
    "json_units",
    "proto_units",
    "single_proto",
]

#: Bytes read (and spooled) at a time.
READ_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class InputProblem:
    """Something wrong inside an input that did not stop the run (reported, exit 2)."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(slots=True, eq=False)
class Unit:
    """One line (JSON lines), one message (length-prefixed protobuf) or one whole document.

    ``raw`` is the exact bytes read (a line without its newline, a message without its
    length prefix); ``spooled`` is set instead for a unit longer than the limit
    (``(file, offset, length)`` in a spool file). ``kind`` is ``json`` or ``proto``;
    ``document`` marks a whole-file ``ExportTraceServiceRequest``.
    """

    source: str
    seq: int
    kind: str
    raw: bytes
    document: bool = False
    spooled: tuple[IO[bytes], int, int] | None = None
    error: str | None = None

    @property
    def where(self) -> str:
        if self.document:
            return self.source
        return f"{self.source}:{self.seq}" if self.kind == "json" else f"{self.source} message {self.seq}"


class Reader:
    """Line and message reads over a decompressed stream, bounded by ``limit``."""

    def __init__(self, fp: IO[bytes], label: str, limit: int, spool: Spool) -> None:
        self.fp = fp
        self.label = label
        self.limit = limit
        self.spool = spool

    def read_line(self) -> tuple[bytes, tuple[IO[bytes], int, int] | None]:
        """The next line without its newline (b"" at the end). A line past the limit is
        spooled: returns (b"", (file, offset, length))."""
        line = self.fp.readline(self.limit + 1)
        if len(line) <= self.limit or line.endswith(b"\n"):
            return line, None
        spool_fp, offset = self.spool.begin()
        spool_fp.write(line)
        length = len(line)
        while not line.endswith(b"\n"):
            line = self.fp.readline(READ_CHUNK)
            if not line:
                break
            spool_fp.write(line)
            length += len(line)
        # the spooled copy keeps its newline (if any); the writer strips it
        return b"", (spool_fp, offset, length)

    def put_back(self, data: bytes) -> None:
        """Make ``data`` (bytes just read while probing) the next bytes read."""
        self.fp = io.BufferedReader(_Prefixed(data, self.fp), READ_CHUNK)  # type: ignore[assignment]

    def _pieces(self, n: int) -> Iterator[bytes]:
        """The next ``n`` bytes in reads of at most ``READ_CHUNK``; fewer at the end of input."""
        remaining = n
        while remaining:
            chunk = self.fp.read(min(remaining, READ_CHUNK))
            if not chunk:
                return
            yield chunk
            remaining -= len(chunk)

    def read_exactly(self, n: int) -> bytes:
        return b"".join(self._pieces(n))

    def spool_exactly(self, n: int) -> tuple[tuple[IO[bytes], int, int], int]:
        spool_fp, offset = self.spool.begin()
        copied = 0
        for chunk in self._pieces(n):
            spool_fp.write(chunk)
            copied += len(chunk)
        return (spool_fp, offset, copied), copied


class Spool:
    """One temporary file for oversized units, created on first use."""

    def __init__(self) -> None:
        self.fp: IO[bytes] | None = None

    def begin(self) -> tuple[IO[bytes], int]:
        if self.fp is None:
            self.fp = tempfile.TemporaryFile(prefix="otel-semloop-spool-")  # noqa: SIM115 - closed in close()
        self.fp.seek(0, os.SEEK_END)
        return self.fp, self.fp.tell()

    def close(self) -> None:
        if self.fp is not None:
            self.fp.close()
            self.fp = None


class _Prefixed(io.RawIOBase):
    """``prefix`` then the rest of ``fp``: puts back bytes read while probing."""

    def __init__(self, prefix: bytes, fp: IO[bytes]) -> None:
        self._prefix = memoryview(prefix)
        self._fp = fp

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._prefix:
            n = min(len(b), len(self._prefix))
            b[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = self._fp.read(len(b))
        b[: len(data)] = data
        return len(data)


def json_units(reader: Reader, label: str) -> Iterator[Unit]:
    seq = 0
    first = True
    while True:
        line, spooled = reader.read_line()
        if not line and spooled is None:
            return
        seq += 1
        if spooled is not None:
            yield Unit(label, seq, "json", b"", spooled=spooled, error=_too_long(spooled[2], reader.limit))
            first = False
            continue
        if line[-1:] == b"\n":
            line = line[:-1]
            if line[-1:] == b"\r":
                line = line[:-1]
        if first and _is_partial_json(line):
            # Perhaps not a line of its own but a pretty-printed whole document.
            rest = reader.read_exactly(reader.limit + 1)
            doc = line + b"\n" + rest
            if len(doc) <= reader.limit:
                try:
                    orjson.loads(doc)
                except orjson.JSONDecodeError:
                    pass
                else:
                    yield Unit(label, 1, "json", doc, document=True)
                    return
            # A malformed first line of a JSON lines file: read on from after it.
            reader.put_back(rest)
        first = False
        if not line.strip():
            continue
        yield Unit(label, seq, "json", line)


def _is_partial_json(line: bytes) -> bool:
    stripped = line.strip()
    if not stripped.startswith(b"{") or stripped.endswith(b"}"):
        return False
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return True
    return False


def _too_long(n: int, limit: int, offset: int | None = None) -> str:
    at = "" if offset is None else f", at byte {offset}"
    return f"longer than the {limit >> 20} MiB unit limit ({n} bytes{at}); copied through unscored"


def single_proto(reader: Reader, label: str) -> Iterator[Unit]:
    data = reader.read_exactly(reader.limit + 1)
    if len(data) > reader.limit:
        yield Unit(label, 1, "proto", b"", document=True, error=_too_long(len(data), reader.limit))
        return
    yield Unit(label, 1, "proto", data, document=True)


def proto_units(reader: Reader, label: str, problems: list[InputProblem]) -> Iterator[Unit]:
    seq = 0
    offset = 0
    while True:
        prefix = reader.fp.read(4)
        if not prefix:
            return
        seq += 1
        where = f"{label} message {seq} at byte {offset}"
        if len(prefix) < 4:
            problems.append(InputProblem(where, "truncated length prefix; the rest is lost"))
            return
        size = int.from_bytes(prefix, "big")
        if size > reader.limit:
            spooled, got = reader.spool_exactly(size)
            error = _too_long(size, reader.limit, offset)
            unit = Unit(label, seq, "proto", b"", spooled=spooled, error=error)
        else:
            data = reader.read_exactly(size)
            got = len(data)
            unit = Unit(label, seq, "proto", data)
        if got < size:
            message = f"truncated: length prefix says {size} bytes, {got} left; the rest is lost"
            problems.append(InputProblem(where, message))
            return
        offset += 4 + size
        yield unit
