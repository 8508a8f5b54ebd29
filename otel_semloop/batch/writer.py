"""Where rescored units go: a file written atomically, or stdout; JSON lines or
length-prefixed protobuf; compressed by the output's suffix (``.gz``, ``.zst``).

A file is written to a temporary file beside it and renamed over it once everything is
written, so a run that fails half way (a full disk, a crash, Ctrl-C) leaves the previous
output, not half of one; special files (``/dev/null``, a FIFO) and stdout are written
directly, and an output that is one of the inputs is refused before anything is read.
Every failure to write is an :class:`OutputError` (exit status 3). A unit that gained
nothing is written as read when the formats match, and compression is deterministic
(gzip without a timestamp or file name): the same input gives the same bytes.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.inputs import Source
from otel_semloop.batch.spans import dump_json, load_json
from otel_semloop.batch.units import Unit
from otel_semloop.otlp._common import Bad
from otel_semloop.otlp.codec import json_to_traces as to_proto
from otel_semloop.otlp.codec import traces_to_json as to_json

__all__ = ["Output", "OutputError", "UsageError", "format_for", "write_atomically"]

_COPY_CHUNK = 1 << 20


class OutputError(Exception):
    """The output could not be written (exit status 3); nothing partial is left behind."""


class UsageError(Exception):
    """A bad combination of arguments (exit status 2)."""


def format_for(path: str, requested: str | None) -> str:
    if requested:
        return requested
    name = path.lower()
    for suffix in (".gz", ".zst", ".zstd"):
        name = name.removesuffix(suffix)
    return "proto" if name.endswith((".pb", ".proto", ".binpb")) else "json"


def _is_special(path: str) -> bool:
    """Whether ``path`` is something other than a regular file (a device such as
    ``/dev/null``, ``/dev/stdout`` naming a pipe, a FIFO): written directly, never renamed
    over. Raises ``OSError`` other than a missing file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return False


def write_atomically(path: str, data: bytes) -> None:
    """Write a small file whole or not at all: a temporary file beside ``path``, synced and
    renamed over it, so a failure (a full disk) leaves the previous file, or none, and never
    a partial one; a special file (:func:`_is_special`) is written directly. Raises
    ``OSError``."""
    if _is_special(path):
        with open(path, "wb") as fp:
            fp.write(data)
        return
    parent = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=parent)
    try:
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "wb") as fp:
            fp.write(data)
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def new_file_mode() -> int:
    """The mode ``open()`` gives a new file: 0666 less the process's umask. A temporary file
    (``mkstemp``, 0600) renamed over the output gets this mode first, so an output and a
    report are readable by whoever the umask lets read new files, as with any other tool."""
    mask = None
    with contextlib.suppress(OSError, ValueError):  # Linux: read without changing it
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                mask = int(line.split()[1], 8)
    if mask is None:  # elsewhere: set and restore (a moment's race with other threads' files)
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def _compression(path: str) -> str:
    name = path.lower()
    if name.endswith(".gz"):
        return "gzip"
    if name.endswith((".zst", ".zstd")):
        return "zstd"
    return "none"


class Output:
    """Open with :meth:`open`, :meth:`write_unit` each unit, then :meth:`commit` (or
    :meth:`abort` on failure)."""

    def __init__(self, path: str, fmt: str, inputs: list[Source] | None = None) -> None:
        self.path = path
        self.fmt = fmt
        #: where each unit that could not be written in the output format was (left out)
        self.left_out: set[str] = set()
        self._tmp: str | None = None
        self._raw: IO[bytes] | None = None
        self._fp: IO[bytes] | None = None
        self._compressor: Any = None
        self._check(inputs or [])

    def _check(self, inputs: list[Source]) -> None:
        if self.path == "-":
            return
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise OutputError(f"cannot write {self.path}: it is a directory")
        if st is not None:
            for source in inputs:
                if source.path == "-":
                    continue
                with contextlib.suppress(OSError):
                    if os.path.samefile(source.path, self.path):
                        raise UsageError(
                            f"output {self.path} is also an input; write to another file "
                            "(the input would be overwritten while it is read)"
                        )

    @contextlib.contextmanager
    def _failures(self, abort: bool = False) -> Iterator[None]:
        """Every failure to write as an :class:`OutputError`; with ``abort``, what was written
        is dropped first."""
        try:
            yield
        except OSError as exc:
            if abort:
                self.abort()
            if isinstance(exc, BrokenPipeError):
                raise OutputError("output closed early (broken pipe); output is incomplete") from None
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def open(self) -> None:
        with self._failures(abort=True):
            if self.path == "-":
                self._raw = sys.stdout.buffer
            else:
                if _is_special(self.path):
                    self._raw = open(self.path, "wb")  # noqa: SIM115
                else:
                    parent = os.path.dirname(os.path.abspath(self.path))
                    os.makedirs(parent, exist_ok=True)
                    fd, self._tmp = tempfile.mkstemp(
                        prefix=f".{os.path.basename(self.path)}.", suffix=".tmp", dir=parent
                    )
                    os.fchmod(fd, new_file_mode())
                    self._raw = os.fdopen(fd, "wb")
            self._fp = self._wrap(self._raw)

    def _wrap(self, raw: IO[bytes]) -> IO[bytes]:
        compression = _compression(self.path) if self.path != "-" else "none"
        if compression == "gzip":
            return gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0)  # type: ignore[return-value]
        if compression == "zstd":
            try:
                import zstandard
            except ImportError:
                raise OutputError(
                    "zstd output needs the zstd extra (pip install 'otel-semloop[zstd]')"
                ) from None
            self._compressor = zstandard.ZstdCompressor().stream_writer(raw, closefd=False)
            return self._compressor  # type: ignore[no-any-return]
        return raw  # already buffered; never wrap stdout in a writer that would close it

    # -- writing -------------------------------------------------------------------------

    def write_unit(self, unit: Unit, doc: Any, dirty: bool) -> None:
        """Write one unit: ``doc`` is None (write ``unit.raw`` as read, or leave out a
        malformed unit that cannot be converted), the unit's compact JSON as ``bytes``, or
        its parsed document (see :class:`~otel_semloop.batch.engine.Engine`)."""
        assert self._fp is not None
        with self._failures():
            if unit.spooled is not None:
                self._copy_spooled(unit)
                return
            same = unit.kind == self.fmt
            if type(doc) is bytes:  # the unit's compact JSON, patches applied
                self._frame(doc if self.fmt == "json" else to_proto(load_json(doc)).SerializeToString())
                return
            if unit.error is not None or doc is None:
                if same:
                    self._frame(unit.raw)
                    return
                converted = self._converted(unit)
                if converted is None:
                    self.left_out.add(unit.where)
                else:
                    self._frame(converted)
                return
            if same and not dirty and not (unit.kind == "json" and b"\n" in unit.raw):
                self._frame(unit.raw)
            elif self.fmt == "json":
                self._frame(dump_json(doc if unit.kind == "json" else to_json(doc)))
            else:
                self._frame((doc if unit.kind == "proto" else to_proto(doc)).SerializeToString())

    def _converted(self, unit: Unit) -> bytes | None:
        """A malformed unit in the output format, unscored: it parses, but its spans could
        not be scored (a span with a wrong id). None when it does not parse at all."""
        try:
            if unit.kind == "json":
                return to_proto(load_json(unit.raw)).SerializeToString()  # type: ignore[no-any-return]
            return dump_json(to_json(TracesData.FromString(unit.raw)))
        except (Bad, DecodeError, RuntimeError, ValueError, TypeError, KeyError, RecursionError):
            return None

    def _frame(self, data: bytes) -> None:
        fp = self._fp
        assert fp is not None
        if self.fmt == "json":
            fp.write(data)
            fp.write(b"\n")
        else:
            fp.write(len(data).to_bytes(4, "big"))
            fp.write(data)

    def _copy_spooled(self, unit: Unit) -> None:
        assert unit.spooled is not None and self._fp is not None
        spool, offset, length = unit.spooled
        if unit.kind != self.fmt:
            self.left_out.add(unit.where)
            return
        spool.seek(offset)
        if self.fmt == "proto":
            self._fp.write(length.to_bytes(4, "big"))
        remaining = length
        last = b""
        while remaining:
            chunk = spool.read(min(remaining, _COPY_CHUNK))
            if not chunk:
                break
            remaining -= len(chunk)
            self._fp.write(chunk)
            last = chunk[-1:]
        if self.fmt == "json" and last != b"\n":
            self._fp.write(b"\n")

    def write_bytes(self, data: bytes) -> None:
        """Write pre-framed bytes (evaluation records)."""
        assert self._fp is not None
        with self._failures():
            self._fp.write(data)

    # -- ending ---------------------------------------------------------------------------

    def commit(self) -> None:
        with self._failures(abort=True):
            assert self._fp is not None
            if self._compressor is not None:
                self._compressor.close()
            elif self._fp is not self._raw:
                if isinstance(self._fp, gzip.GzipFile):
                    self._fp.close()
                else:
                    self._fp.flush()
            if self._raw is not None:
                self._raw.flush()
                if self._tmp is not None:
                    os.fsync(self._raw.fileno())
                if self._raw is not sys.stdout.buffer:
                    self._raw.close()
            if self._tmp is not None:
                os.replace(self._tmp, self.path)
                self._tmp = None

    def abort(self) -> None:
        """Drop what was written (a temporary file is removed; stdout is left as it is)."""
        if self._raw is not None and self._raw is not sys.stdout.buffer:
            with contextlib.suppress(Exception):
                self._raw.close()
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            self._tmp = None
