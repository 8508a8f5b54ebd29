"""Which traces of a chunk probably began in an earlier one: the hint that keeps a worker
from scoring a trace whose verdict the engine would not use.

A worker scores the traces that start and complete inside its chunk; a trace that had
spans in one of the two chunks before would be scored from part of its spans, for
nothing (the engine checks every verdict it uses and scores such a trace as a job). So
each chunk is sent with the trace ids it shares with the two chunks before it (two: a
trace with spans in chunks N-2 and N but none in N-1 was otherwise scored twice). It is
a hint only: a wrong one costs CPU, never a different output.

Where the ids are found: a regular expression over every JSON line's bytes, about 0.09 s
of CPU per 100 MB, which was the largest single cost of the reading process. When the
workers were forked, each worker finds its own chunk's ids instead, right after taking the
chunk's lines (while they are in its cache), and posts them on a :class:`Board`, a small
anonymous shared mapping made before the fork; the worker of chunk N then reads those of
N-1 and N-2 there. Those chunks were handed to a worker before N (the pool's queue is
first in, first out) and their ids are posted first thing, so the wait is short; past
``_WAIT`` seconds (a worker gone) the hint is empty. Else (workers not forked, or no
workers) the reading process finds the ids as before (:class:`ReaderHints`).
"""

from __future__ import annotations

import mmap
import re
import struct
import time
import zlib
from collections.abc import Iterable
from typing import Any

__all__ = ["Board", "ReaderHints", "carried", "parse_hinted", "trace_ids"]

_TRACE_ID = re.compile(rb'"traceId"\s*:\s*"([0-9a-fA-F]{32})"')
#: One slot: chunk number, byte count, CRC-32 of the ids, then the ids, 32 bytes each.
_HEAD = struct.Struct("<qqq")
_SLOT = 1 << 20
_EMPTY = -1  # no ids posted (or more than a slot holds: no hint from that chunk)
#: Seconds a worker waits for the ids of the chunks before its own.
_WAIT = 10.0
#: The boards of this process by key, made before the workers are forked (they inherit them).
_BOARDS: dict[int, Board] = {}
_KEYS = iter(range(1, 1 << 62))


def trace_ids(units: Iterable[tuple[str, bytes, str] | None]) -> set[bytes]:
    """The trace ids (as written, 32 hex digits) in the JSON units among ``units``."""
    ids: set[bytes] = set()
    findall = _TRACE_ID.findall
    for unit in units:
        if unit is not None and unit[0] == "json":
            ids.update(findall(unit[1]))
    return ids


def carried(ids: set[bytes], earlier: set[bytes]) -> frozenset[str]:
    """The hint: the ids of a chunk also in the chunks before it, as trace ids."""
    return frozenset(i.decode().lower() for i in ids & earlier)


class ReaderHints:
    """The hint found by the reading process, chunk after chunk (two chunks' ids kept)."""

    def __init__(self) -> None:
        self._last: set[bytes] = set()
        self._older: set[bytes] = set()

    def next(self, units: Iterable[tuple[str, bytes, str] | None]) -> frozenset[str]:
        ids = trace_ids(units)
        hint = carried(ids, self._last | self._older)
        self._older, self._last = self._last, ids
        return hint


class Board:
    """Slots in an anonymous shared mapping where the worker of each chunk posts its trace
    ids and the workers of the two next chunks read them. Slot ``n % slots`` holds chunk
    ``n``'s: a slot is used again ``slots`` chunks later, when (at most ``workers + 2``
    chunks in flight) the chunks that read it are long done; a reader checks the chunk
    number and the CRC, so a slot being written is never taken for another."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.map = mmap.mmap(-1, slots * _SLOT)  # MAP_SHARED | MAP_ANONYMOUS
        self.key = next(_KEYS)
        _BOARDS[self.key] = self

    def post(self, number: int, ids: set[bytes]) -> None:
        data = b"".join(sorted(ids))
        at = (number % self.slots) * _SLOT
        if len(data) > _SLOT - _HEAD.size:
            data, size = b"", _EMPTY
        else:
            size = len(data)
        self.map[at + _HEAD.size : at + _HEAD.size + len(data)] = data
        _HEAD.pack_into(self.map, at, number, size, zlib.crc32(data))

    def read(self, number: int) -> set[bytes] | None:
        """Chunk ``number``'s ids, or None while they are not posted."""
        at = (number % self.slots) * _SLOT
        posted, size, crc = _HEAD.unpack_from(self.map, at)
        if posted != number:
            return None
        if size == _EMPTY:
            return set()
        data = self.map[at + _HEAD.size : at + _HEAD.size + size]
        if zlib.crc32(data) != crc:
            return None
        return {data[k : k + 32] for k in range(0, size, 32)}

    def wait(self, number: int, timeout: float = _WAIT) -> set[bytes]:
        """Chunk ``number``'s ids once posted; none past ``timeout`` seconds."""
        ids = self.read(number)
        deadline = time.monotonic() + timeout
        pause = 0.0002
        while ids is None:
            if time.monotonic() > deadline:
                return set()
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
            ids = self.read(number)
        return ids

    def close(self) -> None:
        _BOARDS.pop(self.key, None)
        self.map.close()


def parse_hinted(
    key: int, number: int, parse: Any, units: list[tuple[str, bytes, str] | None], *args: Any
) -> Any:
    """In a worker: post chunk ``number``'s trace ids on board ``key``, read those of the
    two chunks before, and call ``parse(units, *args, hint)``."""
    board = _BOARDS[key]  # a KeyError: a board task reached a process that does not share it
    ids = trace_ids(units)
    board.post(number, ids)
    earlier: set[bytes] = set()
    for before in (number - 1, number - 2):
        if before >= 1:
            earlier |= board.wait(before)
    return parse(units, *args, carried(ids, earlier))
