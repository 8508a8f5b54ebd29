"""deepeval's call-graph-cycle sub-score (``AgentLoopDetectionMetric``, deepeval 4.3.1).

One of the three sub-signals of the lexical metric; :mod:`otel_semloop.detectors.lexical`
holds the metric's specification and combines the three. A depth-first walk labels each
span ``type:name:input_hash``; the first span whose label already appears on its own
root-to-span ancestry path is a cycle. :class:`_Path` is that ancestry path with an index
of its labels, shared by the walk of deepeval's nested span dict here
(:func:`score_call_graph_cycles`) and the walk of a trace's steps in
:func:`otel_semloop.detectors.lexical.deepeval_score_trace`.

Cost
    A span's input is serialised (``json.dumps``) only when an ancestor has the same type
    and name, the only case in which its label can matter (the proof is in
    :class:`_Path`). The walk is iterative, so arbitrarily deep traces do not hit
    Python's recursion limit. Linear in the trace's size.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["INPUT_HASH_CHARS", "score_call_graph_cycles"]

#: Characters of a span's input kept in its call-graph label.
INPUT_HASH_CHARS = 64

_END = object()


def _input_hash(span: Mapping[str, Any]) -> str:
    return _hash_input(span.get("input", ""))


def _hash_input(raw: Any) -> str:
    """The ``input_hash`` part of a call-graph label, from a span's input."""
    if isinstance(raw, dict):
        try:
            raw = json.dumps(raw, sort_keys=True)
        except (TypeError, ValueError):
            raw = str(raw)
    return str(raw)[:INPUT_HASH_CHARS]


def _label(span: Mapping[str, Any]) -> str:
    return f"{span.get('type', 'unknown')}:{span.get('name', 'unnamed')}:{_input_hash(span)}"


def _children(span: Mapping[str, Any]) -> Iterator[Any]:
    return iter(span.get("children", []))


class _Node:
    """A span on the current ancestry path, its label computed only when needed."""

    __slots__ = ("_label", "prefix", "span")

    def __init__(self, span: Mapping[str, Any]) -> None:
        self.span = span
        self.prefix = f"{span.get('type', 'unknown')}:{span.get('name', 'unnamed')}:"
        self._label: str | None = None

    @property
    def label(self) -> str:
        if self._label is None:
            self._label = self.prefix + _input_hash(self.span)
        return self._label


class _Path:
    """The current ancestry path of a call-graph walk and an index of the labels on it.

    Labels on the path are distinct (a repeat ends the search), so a dict lookup equals
    deepeval's ``list.index``. Labels are ``type:name:input_hash``. While every type and
    name seen holds no colon (the prefix ``type:name:`` has exactly two), a label splits
    back into exactly those three parts, so two labels are equal if and only if their
    prefixes are equal and then their input hashes are: ``by_prefix`` maps each prefix on
    the path to its depths, and an input is serialised only on a prefix match. From the
    first node whose type or name holds a colon on, full labels are compared
    (``position``), as deepeval does. Nodes are :class:`_Node` or :class:`_Ancestor`."""

    __slots__ = ("by_prefix", "nodes", "position")

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.by_prefix: dict[str, list[int]] | None = {}
        self.position: dict[str, int] = {}

    def find(self, node: Any, keep: bool) -> int | None:
        """The depth on the path of the node with ``node``'s label (where a cycle starts),
        else None; then, with ``keep``, ``node`` is indexed as the next one pushed."""
        depth = len(self.nodes)
        by_prefix = self.by_prefix
        if by_prefix is not None and node.prefix.count(":") != 2:
            # Colons in a type or name: from here on, full labels (computed for the path).
            by_prefix = self.by_prefix = None
            self.position = {n.label: i for i, n in enumerate(self.nodes)}
        if by_prefix is None:
            start = self.position.get(node.label)
            if start is None and keep:
                self.position[node.label] = depth
            return start
        depths = by_prefix.get(node.prefix)
        if depths:
            label = node.label
            found = next((d for d in depths if self.nodes[d].label == label), None)
            if found is None and keep:
                depths.append(depth)
            return found
        if keep:
            by_prefix[node.prefix] = [depth]
        return None

    def may_hold(self, prefix: str) -> bool:
        """False when no node with this prefix can have its label on the path (a leaf
        that is then not built at all)."""
        return self.by_prefix is None or prefix.count(":") != 2 or prefix in self.by_prefix

    def pop(self) -> None:
        """Take the last node off the path and out of the index."""
        node = self.nodes.pop()
        if self.by_prefix is None:
            del self.position[node.label]
        else:
            depths = self.by_prefix[node.prefix]
            depths.pop()
            if not depths:
                del self.by_prefix[node.prefix]

    def cycle(self, start: int, node: Any) -> list[str]:
        """The labels from depth ``start`` down to ``node``, which repeats the first."""
        return [*(n.label for n in self.nodes[start:]), node.label]


def score_call_graph_cycles(tree: Mapping[str, Any] | None) -> tuple[float, str]:
    """deepeval's call-graph-cycle sub-score and reason.

    An iterative version of deepeval's recursive DFS: the same visiting order, the same
    first cycle reported (the path and its index: :class:`_Path`).
    """
    if not tree:
        return 1.0, "No call graph cycles detected."
    path = _Path()
    root = _Node(tree)
    path.find(root, keep=True)
    path.nodes.append(root)
    pending = [_children(tree)]
    cycle: list[str] | None = None
    while pending:
        child = next(pending[-1], _END)
        if child is _END:
            pending.pop()
            path.pop()
            continue
        kids = child.get("children", _END)
        leaf = kids is _END or (kids.__class__ is list and not kids)
        if leaf and not path.may_hold(f"{child.get('type', 'unknown')}:{child.get('name', 'unnamed')}:"):
            # A leaf (the usual span) whose prefix no ancestor has: no node built.
            continue
        node = _Node(child)
        start = path.find(node, keep=not leaf)
        if start is not None:
            cycle = path.cycle(start, node)
            break
        if not leaf:
            path.nodes.append(node)
            pending.append(iter(kids))
    return _cycle_score(cycle)


def _cycle_score(cycle: list[str] | None) -> tuple[float, str]:
    """The call-graph sub-score and reason of the first cycle found (its labels), if any."""
    if cycle is None:
        return 1.0, "No execution cycles detected."
    shown = []
    for label in cycle:
        parts = label.split(":", 2)
        shown.append(f"{parts[0]}:{parts[1]}")
    return 0.0, f"Cycle detected in execution path: {' -> '.join(shown)}."
