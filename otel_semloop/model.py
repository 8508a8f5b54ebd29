"""The trace model every detector reads: spans in, ordered agent steps out.

Three layers, each with one job:

* :class:`SpanRecord` is a neutral view of one span, whatever it came from (an SDK
  ``ReadableSpan``, an OTLP protobuf ``Span``, a line of OTLP JSON). It keeps a reference
  to the original object in ``source`` so a front door can write the verdict back onto
  the same representation it received. Ids are lowercase hex, times are Unix nanoseconds.
* :class:`Step` is one agent action (an agent invocation, an LLM call, a tool call) read
  out of a span's attributes by :mod:`otel_semloop.conventions`.
* :class:`Trace` is the ordered list of steps plus the span tree they came from.

Steps are ordered by start time with ties broken by tree (pre-)order, never by span id:
span ids are random, so ordering by them pairs arbitrary steps.

Size: the three layers plus the Step's fields decoded on first read, which are how a Step
behaves, so they stay with it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_semloop.envelopes import decode_input, decode_json, decode_json_string
from otel_semloop.messages import EventMessages, IndexedMessages, flatten_text
from otel_semloop.tool_calls import ToolCall

#: Attribute values as OpenTelemetry allows them, plus the nested kvlists/arrays of
#: OTLP ``AnyValue`` (decoded to dicts and lists) and bytes.
AttributeValue = Any

STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


@dataclass(slots=True)
class EventRecord:
    """A span event: name, Unix-nanosecond time, attributes."""

    name: str
    time_ns: int = 0
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class SpanRecord:
    """One span, decoded enough for grouping and for reading agent conventions.

    ``parent_span_id`` is ``""`` for a root. ``parent_is_remote`` is True when the
    parent lives in another process (so this span is a local root), None when unknown.
    ``source`` is the object the record was read from; the core never touches it.
    """

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    events: Sequence[EventRecord] = ()
    status_code: int = STATUS_UNSET
    status_message: str = ""
    kind: int = 0
    parent_is_remote: bool | None = None
    source: Any = None


class StepKind(str, enum.Enum):
    AGENT = "agent"
    LLM = "llm"
    TOOL = "tool"
    OTHER = "other"


class _Deferrable:
    """Step's base: the slot ``_deferred`` (not a dataclass field, so not in ``fields``,
    ``asdict`` or ``replace``) holds what the fields left unset (``input``, ``input_text``,
    ``output``) are decoded from on first read (see :class:`_DeferredField`); unset when
    nothing is left."""

    __slots__ = ("_deferred",)


@dataclass(slots=True, eq=False)
class Step(_Deferrable):
    """One agent action, in the order the agent took it.

    ``input``/``output`` are the structured values (a dict, list or string) and
    ``input_text``/``output_text`` their flattened text (message lists become their text
    contents joined by newlines). For a tool step ``tool_arguments``/``tool_result`` are
    the call's arguments and result; when the span lacks them they are filled from the
    matching tool call requested by the preceding LLM output (``ToolCall``).
    ``agent`` is the name of the nearest enclosing agent step, if any.

    A step read from a span (:func:`otel_semloop.conventions.read_step`) may leave
    ``input``, ``input_text`` and ``output`` undecoded until first read: an LLM call's
    input is the whole history the agent resent, and decoding it for every step would cost
    O(n^2) per trace. Values, ``repr``, ``dataclasses.replace``, copies and pickles are as
    if everything had been decoded at once.
    """

    kind: StepKind
    name: str
    span_id: str = ""
    trace_id: str = ""
    parent_span_id: str = ""
    input: Any = None
    output: Any = None
    input_text: str = ""
    output_text: str = ""
    tool_arguments: Any = None
    tool_result: Any = None
    tool_calls: tuple[ToolCall, ...] = ()
    is_error: bool = False
    error_type: str = ""
    error_message: str = ""
    start_ns: int | None = None
    end_ns: int | None = None
    agent: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    depth: int = 0
    #: True for a tool call an LLM requested that no tool span recorded (see
    #: :mod:`otel_semloop.builder`): a step for the detectors, not a node of the tree view.
    synthetic: bool = False
    #: The agent a tool step hands the work to (a transfer / hand-off tool call), read by
    #: :func:`otel_semloop.conventions.read_step`; None for every other step.
    handoff_to: str | None = None
    children: list[Step] = field(default_factory=list, repr=False)

    def is_decoded(self, name: str) -> bool:
        """Whether field ``name`` holds its value already (False: its first read decodes it)."""
        try:
            _SLOTS[name].__get__(self)
        except AttributeError:
            return False
        return True

    def tree_view(self) -> dict[str, Any]:
        """The deepeval/semloop nested span dict (``type``, ``name``, ``input``,
        ``output``, ``children``) rooted at this step.

        Tool steps show their arguments as ``input`` and their result as ``output``;
        other steps show their flattened input/output text (``None`` when absent),
        so deepeval's scoring and semloop's question protocol run on it unchanged.
        Built iteratively: deep agent nesting cannot exhaust the recursion limit.
        """
        top = self._node()
        stack = [(self, top["children"])]
        while stack:
            step, siblings = stack.pop()
            for child in step.children:
                child_node = child._node()
                siblings.append(child_node)
                stack.append((child, child_node["children"]))
        return top

    def _node(self) -> dict[str, Any]:
        if self.kind is StepKind.TOOL:
            node_output = self.tool_result if self.tool_result is not None else self.output_text
        else:
            node_output = self.output_text
        return {
            "type": _NODE_TYPES[self.kind],
            "name": self.name,
            "input": self.node_input(),
            "output": node_output,
            "children": [],
        }

    def node_input(self) -> Any:
        """The tree-view ``input`` of this step (see :meth:`tree_view`)."""
        if self.kind is StepKind.TOOL:
            return self.tool_arguments if self.tool_arguments is not None else self.input
        return self.input_text if self.input is not None else None


def _resolve_deferred(step: Step, deferred: tuple[Any, bool, Any], name: str) -> Any:
    """Decode field ``name`` (``input``, ``input_text`` or ``output``) of a step that
    :func:`~otel_semloop.conventions.read_step` left undecoded, store it on the step and
    return it. ``deferred`` is the step's ``(raw input, envelope, raw output)``: the
    attribute values themselves, or for indexed or event input messages what they are made
    from (:class:`~otel_semloop.messages.IndexedMessages`,
    :class:`~otel_semloop.messages.EventMessages`).
    """
    if name == "output":
        _, envelope, raw_output = deferred
        value = decode_json(raw_output)
        if envelope:
            value = decode_json_string(value)
        step.output = value
        return value
    value = _deferred_input(deferred)
    if name == "input":
        step.input = value
        return value
    if not step.is_decoded("input"):
        step.input = value  # decoded anyway: kept (an assigned input is left alone)
    text = step.input_text = flatten_text(value)
    return text


def _deferred_input(deferred: tuple[Any, bool, Any]) -> Any:
    """The input decoded from a step's ``_deferred`` (see :func:`_resolve_deferred`)."""
    raw_input, envelope, _ = deferred
    if isinstance(raw_input, _MADE_ON_READ):  # an LLM span's indexed or event input messages
        raw_input = raw_input.messages()
    return decode_input(raw_input, envelope)


def peek_input(step: Step) -> Any:
    """``step.input``, without storing it on the step when it is not decoded yet: for a
    reader that needs it once (the builder looks a tool call's result up in the next LLM
    call's input, the whole resent history), so the step keeps no decoded history."""
    try:
        return _INPUT_SLOT.__get__(step)
    except AttributeError:
        pass
    deferred = getattr(step, "_deferred", None)
    if deferred is None:
        return step.input  # (raises as the read does)
    return _deferred_input(deferred)


#: The input messages an LLM step's ``_deferred`` may hold unmade (see _deferred_input).
_MADE_ON_READ = (IndexedMessages, EventMessages)


class _DeferredField:
    """The class attribute of a deferred field of :class:`Step` (``input``, ``input_text``,
    ``output``), over its slot: a read of the slot when it is set, else the value decoded
    from ``_deferred`` (:func:`_resolve_deferred`), stored and returned; writes and deletes
    go to the slot."""

    __slots__ = ("_name", "_slot")

    def __init__(self, name: str, slot: Any) -> None:
        self._name = name
        self._slot = slot

    def __get__(self, step: Step | None, owner: type | None = None) -> Any:
        if step is None:
            return self
        try:
            return self._slot.__get__(step)
        except AttributeError:
            pass
        deferred = getattr(step, "_deferred", None)
        if deferred is None:
            raise AttributeError(f"{type(step).__name__!r} object has no attribute {self._name!r}")
        return _resolve_deferred(step, deferred, self._name)

    def __set__(self, step: Step, value: Any) -> None:
        self._slot.__set__(step, value)

    def __delete__(self, step: Step) -> None:
        self._slot.__delete__(step)


_DEFERRED_FIELDS = frozenset({"input", "input_text", "output"})
#: The deferred fields' slots (member descriptors), read and written where nothing may decode.
_SLOTS = {name: Step.__dict__[name] for name in _DEFERRED_FIELDS}
for _field_name, _member in _SLOTS.items():
    setattr(Step, _field_name, _DeferredField(_field_name, _member))


_INPUT_SLOT = _SLOTS["input"]
#: A step kind's tree-view ``type``.
_NODE_TYPES = {StepKind.AGENT: "agent", StepKind.LLM: "llm", StepKind.TOOL: "tool", StepKind.OTHER: "base"}


@dataclass(slots=True, eq=False)
class Trace:
    """A trace as an agent run: ordered steps and the span tree behind them.

    ``steps`` holds agent, LLM and tool steps in execution order (start time, then tree
    order). ``roots`` are the top of the step tree (steps whose nearest step ancestor is
    absent). ``other_spans`` are spans that are not steps (HTTP, DB, framework plumbing):
    kept so write-back and forwarding see every span, ignored by detectors.
    ``spans`` maps span id to record for every span the trace was built from.
    """

    trace_id: str
    steps: list[Step]
    roots: list[Step] = field(default_factory=list)
    other_spans: list[SpanRecord] = field(default_factory=list)
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    root_span_id: str = ""
    partial: bool = False

    @property
    def root(self) -> Step | None:
        """The root agent step: the first top-level agent, else the first top-level step."""
        for step in self.roots:
            if step.kind is StepKind.AGENT:
                return step
        return self.roots[0] if self.roots else None

    @property
    def goal(self) -> str:
        """What the run was asked to do: the root agent's input text, else the first user
        message of the first LLM call (agent SDKs often leave the root's input empty)."""
        root = self.root
        if root is not None and root.input_text:
            return root.input_text
        for step in self.steps:
            if step.kind is StepKind.LLM and isinstance(step.input, list):
                for message in step.input:
                    if isinstance(message, dict) and message.get("role") == "user":
                        return flatten_text([message])
        return ""

    @property
    def tool_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind is StepKind.TOOL]

    def tree_view(self) -> dict[str, Any]:
        """deepeval's nested span dict for the whole trace.

        One top-level step is the root itself; several are wrapped in a ``base`` node
        named after the trace's root span so nothing is lost.
        """
        if len(self.roots) == 1:
            return self.roots[0].tree_view()
        root_record = self.spans.get(self.root_span_id)
        return {
            "type": "base",
            "name": root_record.name if root_record else "trace",
            "input": None,
            "output": "",
            "children": [r.tree_view() for r in self.roots],
        }
