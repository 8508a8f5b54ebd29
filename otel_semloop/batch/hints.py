"""Which traces of a chunk probably began in an earlier one: the hint that keeps a worker
from scoring a trace whose verdict the engine would not use.

A worker scores the traces that start and complete inside its chunk; a trace that had
spans in one of the two chunks before would be scored from part of its spans, for
nothing (the engine checks every verdict it uses and scores such a trace as a job). So
each chunk is sent with the trace ids it shares with the two chunks before it (two: a
trace with spans in chunks N-2 and N but none in N-1 was otherwise scored twice). It is
a hint only: a wrong one costs CPU, never a different output.

The reading process finds the ids with a regular expression over every JSON line's
bytes, about 0.09 s of CPU per 100 MB. Finding them in the workers instead (each posting
its chunk's ids on a shared board, the next chunks' workers waiting for them) was tried:
it moved that CPU into the workers without lowering the total, so it was taken out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ReaderHints"]

_TRACE_ID = re.compile(rb'"traceId"\s*:\s*"([0-9a-fA-F]{32})"')


class ReaderHints:
    """The hint of each chunk in turn (the ids of the two chunks before it kept)."""

    def __init__(self) -> None:
        self._last: set[bytes] = set()
        self._older: set[bytes] = set()

    def next(self, units: Iterable[tuple[str, bytes, str] | None]) -> frozenset[str]:
        """The trace ids of ``units`` (a chunk's, in input order) seen in the two chunks
        before it."""
        ids: set[bytes] = set()
        findall = _TRACE_ID.findall
        for unit in units:
            if unit is not None and unit[0] == "json":
                ids.update(findall(unit[1]))
        hint = frozenset(i.decode().lower() for i in ids & (self._last | self._older))
        self._older, self._last = self._last, ids
        return hint
