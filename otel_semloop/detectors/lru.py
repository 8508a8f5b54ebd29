"""A bounded map, least recently used evicted first: the one eviction rule of the run state
the detectors keep (the fingerprinter's novelty maps and each call's progress, the
progress detectors' chains, the failure detector's failing calls).

A ``dict`` keeps insertion order, so its first key is the least recently used one: a key
used again is popped and inserted at the end, and an insertion past ``capacity`` drops the
first key. O(1) per operation. Keys are digests (ints); an evicted key that comes back is
new again, which errs toward "no loop".
"""

from __future__ import annotations

__all__ = ["LRU"]

_ABSENT = object()


class LRU:
    """A bounded map (see the module doc). ``data`` is the ``dict`` itself, oldest first:
    read it directly (``in``, ``get``, its truth) where a method call would cost more than
    the read; change it through the methods, which keep the bound."""

    __slots__ = ("capacity", "data")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.data: dict[int, object] = {}

    def add(self, key: int) -> bool:
        """Record ``key`` (a map of keys alone: every value None) as the most recent;
        whether it was present already."""
        data = self.data
        if key in data:
            del data[key]
            data[key] = None
            return True
        data[key] = None
        if len(data) > self.capacity:
            del data[next(iter(data))]
        return False

    def get(self, key: int) -> object:
        """The value of ``key``, now the most recent; None when absent."""
        data = self.data
        value = data.pop(key, _ABSENT)
        if value is _ABSENT:
            return None
        data[key] = value
        return value

    def put(self, key: int, value: object) -> None:
        """Set ``key`` to ``value`` as the most recent (``key`` absent, or just popped)."""
        data = self.data
        data[key] = value
        if len(data) > self.capacity:
            del data[next(iter(data))]

    def pop(self, key: int) -> object:
        """Remove ``key``; its value, None when absent."""
        return self.data.pop(key, None)

    def clear(self) -> None:
        self.data.clear()

    def __len__(self) -> int:
        return len(self.data)
