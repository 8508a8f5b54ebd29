"""A tree-view node whose ``"input"`` is read from its step on first lookup.

Why: the lexical metric walks a trace's tree view (deepeval's nested span dicts) and looks
a node's input up only on a type:name collision, while an LLM step's input is the whole
message history the agent resent, decoded on first read (see
:class:`~otel_semloop.model.Step`). A node made by :func:`lazy_node` has every key from the
start and decodes the input only if someone looks it up; every method that would show the
value fills it in first, so it reads as the eager node would.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LazyInputNode", "lazy_node"]


def lazy_node(step: Any, node_type: str, output: Any) -> LazyInputNode:
    """The tree-view node of ``step`` (a :class:`~otel_semloop.model.Step`) with its
    ``"input"`` read by ``step.node_input()`` on first lookup."""
    node = LazyInputNode(type=node_type, name=step.name, input=_UNFILLED, output=output, children=[])
    node._step = step
    return node


class LazyInputNode(dict):  # type: ignore[type-arg]
    """A tree-view node (see :meth:`~otel_semloop.model.Step.tree_view`) whose ``"input"``
    is read from its step on first lookup (``get``, ``[]``). Its keys are there from the start (``len``,
    ``in``, truth and key order are the dict's own, at C speed); every method that would
    show the value (items, values, equality, repr, copies, ``dict(node)``) fills it in
    first. A serialiser that reads dict storage directly (``orjson``) meets a stand-in it
    cannot serialise (a TypeError, never a wrong value)."""

    __slots__ = ("_step",)
    _step: Any  # the Step, set by lazy_node; None once filled

    def _fill(self) -> None:
        step = self._step
        if step is not None:
            self._step = None
            dict.__setitem__(self, "input", step.node_input())

    def get(self, key: Any, default: Any = None) -> Any:
        if key == "input" and self._step is not None:
            self._fill()
        return dict.get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        if key == "input" and self._step is not None:
            self._fill()
        return dict.__getitem__(self, key)

    def __reduce__(self) -> tuple[Any, ...]:
        self._fill()
        return (dict, (dict(self),))


class _Unfilled:
    """The stand-in for a lazy node's input until it is read (see :class:`LazyInputNode`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<input not read yet>"


_UNFILLED = _Unfilled()


def _filled_first(name: str) -> Any:
    method = getattr(dict, name)

    def call(self: LazyInputNode, *args: Any, **kwargs: Any) -> Any:
        self._fill()
        for arg in args:  # dict's C code reads another node's storage directly
            if isinstance(arg, LazyInputNode):
                arg._fill()
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


for _name in (
    # __iter__: dict(node) and {**node} copy a dict's storage directly unless it is overridden.
    "__iter__", "__eq__", "__ne__", "__repr__", "__setitem__", "__delitem__",
    "__or__", "__ior__", "__reversed__", "keys", "items", "values", "copy", "pop", "popitem",
    "setdefault", "update", "clear",
):  # fmt: skip
    setattr(LazyInputNode, _name, _filled_first(_name))
