"""Chunk bytes handed to forked workers through memory they share with the reading process,
instead of pickled through a pipe.

Why: a chunk is 16 MiB of lines. Through the pool's pipe it is pickled into one buffer,
written 64 KiB at a time (each write waits for the worker to read: a context switch
pair every 64 KiB), read back into another buffer and unpickled into bytes again; the
reading process's feeder thread and each worker spent about 0.3 s of CPU per 300 MB on
it. Through a :class:`Ring` the reading process copies each line once into an anonymous
shared mapping, only the lines' places cross the pipe, and the worker copies each line
out (one ``memcpy`` each way).

Why it is safe: the mapping is created before the workers are forked (a forked process
shares an anonymous ``MAP_SHARED`` mapping with its parent; a fork server's or spawned
worker does not, and then chunks go through the pipe as before), space is handed out in
chunk order and a chunk's space is given back only once its result is back (the worker
has copied its lines out before it returns), so no line is overwritten while a worker
may still read it. The worker reads exactly the bytes the reading process holds: the
output never depends on the way a chunk travelled.
"""

from __future__ import annotations

import mmap
from collections import deque
from typing import Any

__all__ = ["Ring", "shared", "taken"]

#: The mappings of this process's rings by key, made before the workers are forked (they
#: inherit them).
_MAPS: dict[int, mmap.mmap] = {}
_KEYS = iter(range(1, 1 << 62))


class Ring:
    """A first-in first-out allocator over one anonymous shared mapping of ``size`` bytes:
    :meth:`put` copies a chunk's lines in and says where, :meth:`release` gives back the
    oldest chunk's space."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.map = mmap.mmap(-1, size)  # MAP_SHARED | MAP_ANONYMOUS
        self.key = next(_KEYS)
        _MAPS[self.key] = self.map
        self._head = 0  # where the next chunk goes
        self._live: deque[tuple[int, int]] = deque()  # (start, end) of chunks in flight, oldest first

    def put(self, raws: list[bytes]) -> list[int] | None:
        """Copy ``raws`` into the ring, one after the other; their start offsets (one more:
        the end of the last), or None when they do not fit now (the caller pickles them)."""
        n = sum(map(len, raws))
        start = self._place(n)
        if start is None:
            return None
        offsets = [start]
        at = start
        m = self.map
        for raw in raws:
            end = at + len(raw)
            m[at:end] = raw
            at = end
            offsets.append(at)
        self._live.append((start, at))
        self._head = at
        return offsets

    def _place(self, n: int) -> int | None:
        if n == 0 or n > self.size:
            return None
        if not self._live:
            return 0
        oldest = self._live[0][0]
        head = self._head
        if head > oldest:  # in use: [oldest, head); free: [head, size) then [0, oldest)
            if head + n <= self.size:
                return head
            return 0 if n <= oldest else None
        return head if head + n <= oldest else None  # wrapped: free is [head, oldest)

    def release(self, start: int) -> None:
        """The result of the chunk put at ``start`` is back: its space may be reused.

        Space is given back oldest first; a result taken out of that order would free space
        a worker may still be reading, so it raises instead (a bug in the caller, never a
        silently different output)."""
        if not self._live or self._live[0][0] != start:
            raise RuntimeError(f"ring space given back out of order (chunk at {start})")
        self._live.popleft()

    def close(self) -> None:
        _MAPS.pop(self.key, None)
        self.map.close()


def taken(key: int, offsets: list[int]) -> list[bytes]:
    """In a worker: the pieces :meth:`Ring.put` put at ``offsets`` in ring ``key``, each
    copied out as bytes."""
    m = _MAPS[key]  # a KeyError: a ring task reached a process that does not share the ring
    pieces = [m[offsets[k] : offsets[k + 1]] for k in range(len(offsets) - 1)]
    # copied out: this process's view of those pages is dropped, so that they are not
    # counted again in its memory (the reading process holds them; a shared mapping keeps
    # its contents, and a page touched again is mapped again)
    start = offsets[0] & -mmap.PAGESIZE
    if offsets[-1] > start:
        m.madvise(mmap.MADV_DONTNEED, start, offsets[-1] - start)
    return pieces


def shared(key: int, offsets: list[int], metas: list[Any]) -> list[tuple[str, bytes, str] | None]:
    """In a worker: a chunk's units, ``(kind, raw, where)`` (None for a unit not read),
    from the places :meth:`Ring.put` gave in ring ``key`` (``metas`` are ``(kind, where)``
    or None, in the order the lines were put)."""
    raws = iter(taken(key, offsets))
    return [None if meta is None else (meta[0], next(raws), meta[1]) for meta in metas]
