"""What the recorded actions say about progress: the deterministic half of the local judge.

The local judge (:mod:`otel_semloop.judges.backends.local`) reads a pair of judged steps by
their actions first (tool calls with arguments and results, as in the judge's ``state``)
and by meaning only when there are none. This module is the action half: when two calls
are the same action, what each call's *outcome* was, and which repetitions a later call
resolved. Every rule errs toward "not stuck" when evidence is missing: a judge may add a
detection only with evidence for it.

Same action
    Same tool, and every argument the two share equal after normalisation (case,
    whitespace, ``./`` and trailing ``/`` on paths, near-identical strings): an added flag
    or a reordered key is cosmetic, a different file or query is not.

Outcome
    A call's status (ok, or failed with an error class) and result text. Two outcomes are
    *the same*, *changed* (new information), or *unknown*: a success whose result was not
    recorded (``"result": null``) proves nothing, so a repeat of it is undecided. Two
    failures of the same class are the same outcome whatever the message.

Resolved repetition (an *ended wait*)
    When the same action returned the same outcome at least twice in a row and a later
    call of it *succeeds with an outcome it never had before* (a retry past a 429, a poll
    going from ``PENDING`` to ``SUCCEEDED``), the repetition was waiting on something
    outside the agent. Every step from the first repeat to the resolving call is the wait,
    including interleaved steps whose actions all recur inside it (the ``sleep`` between
    polls), so no pair inside it counts as stuck. A failed model call (an LLM step with an
    error and no actions) counts as an action of its name and input. A run that never gets
    a different successful outcome is not resolved.

Cost: O(c^2) ``same_action`` comparisons for c calls in a request (at most ``max_steps``
x ``max_actions_per_step`` = 128), once per request.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CHANGED",
    "SAME",
    "UNKNOWN",
    "compare_outcomes",
    "ended_waits",
    "in_wait",
    "outcome",
    "repeats",
    "same_action",
    "step_actions",
]

#: difflib ratio at or above which two argument values are the same value.
SAME_VALUE = 0.9
#: Outcome comparisons.
SAME, CHANGED, UNKNOWN = "same", "changed", "unknown"
#: Identical outcomes in a row before a different one counts as an ended wait: one repeat
#: is already "a result changed" between the two calls; the wait rule is for runs.
WAIT_RUN = 2

_WS = re.compile(r"\s+")
_MODEL_CALL = "\0model call "


def norm(text: Any) -> str:
    """Whitespace-collapsed, lower-case text (how texts are compared)."""
    return _WS.sub(" ", str(text)).strip().lower()


def _norm_value(value: Any) -> str:
    text = norm(value if not isinstance(value, (dict, list)) else json.dumps(value, sort_keys=True))
    if "/" in text or text in (".", ""):
        text = text.removeprefix("./").rstrip("/") or "."
    return text


def _parse_args(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _same_value(a: Any, b: Any) -> bool:
    x, y = _norm_value(a), _norm_value(b)
    if x == y:
        return True
    return difflib.SequenceMatcher(None, x, y).ratio() >= SAME_VALUE


def same_action(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Same tool, and every shared argument has the same value (extra keys are cosmetic)."""
    if norm(a.get("tool", "")) != norm(b.get("tool", "")):
        return False
    x, y = _parse_args(a.get("arguments", "")), _parse_args(b.get("arguments", ""))
    if isinstance(x, dict) and isinstance(y, dict):
        shared = set(x) & set(y)
        if not shared:
            return not x and not y
        return all(_same_value(x[k], y[k]) for k in shared)
    return _same_value(x, y)


def step_actions(step: Mapping[str, Any], tool_mode: bool) -> list[dict[str, Any]]:
    """The actions of one judged step of the state: its tool calls, or itself in tool mode."""
    if tool_mode:
        action = {
            "tool": step.get("name", ""),
            "arguments": step.get("input", ""),
            "result": step.get("output"),
        }
        if step.get("error"):
            action["error"] = step["error"]
        return [action]
    return [a for a in step.get("actions") or () if isinstance(a, Mapping)]


def outcome(action: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(status, result)``: status ``ok`` or ``error:<class>``; result None when unrecorded."""
    error = action.get("error")
    result = action.get("result")
    return (f"error:{norm(error)}" if error else "ok"), (None if result is None else norm(result))


def compare_outcomes(a: tuple[str, str | None], b: tuple[str, str | None]) -> str:
    """SAME, CHANGED or UNKNOWN (see the module doc)."""
    (status_a, result_a), (status_b, result_b) = a, b
    if status_a != status_b:
        return CHANGED
    if status_a != "ok":
        return SAME  # the same failure class: the same outcome, whatever the message says
    if result_a is None or result_b is None:
        return UNKNOWN
    return SAME if result_a == result_b else CHANGED


def repeats(later: Sequence[Mapping[str, Any]], earlier: Sequence[Mapping[str, Any]]) -> tuple[bool, str]:
    """(every action of ``later`` repeats one of ``earlier``, how their outcomes compare).

    The comparison is CHANGED when some repeated action got a new outcome (new
    information), else UNKNOWN when some outcome cannot be compared, else SAME."""
    all_repeat = True
    found: set[str] = set()
    for action in later:
        matches = [e for e in earlier if same_action(action, e)]
        if not matches:
            all_repeat = False
            continue
        mine = outcome(action)
        kinds = {compare_outcomes(outcome(m), mine) for m in matches}
        found.add(SAME if SAME in kinds else (UNKNOWN if UNKNOWN in kinds else CHANGED))
    how = CHANGED if CHANGED in found else (UNKNOWN if UNKNOWN in found else SAME)
    return all_repeat, how


def _model_call(step: Mapping[str, Any]) -> dict[str, Any] | None:
    """A model call as an action (name and input), for the wait rule only."""
    if step.get("type") != "llm" or step.get("actions"):
        return None
    call: dict[str, Any] = {
        "tool": _MODEL_CALL + str(step.get("name", "")),
        "arguments": step.get("input", ""),
    }
    if step.get("error"):
        call["error"] = step["error"]
    else:
        call["result"] = None  # answered; what it said is compared by meaning, not here
    return call


def ended_waits(steps: Mapping[int, Mapping[str, Any]], tool_mode: bool) -> list[tuple[int, int]]:
    """``(first, last)`` step indices of every ended wait (see the module doc), in order."""
    order = sorted(steps)
    calls: list[tuple[int, dict[str, Any]]] = []
    for index in order:
        acts = step_actions(steps[index], tool_mode)
        model = None if tool_mode else _model_call(steps[index])
        calls.extend((index, a) for a in (acts or ([model] if model else [])))
    waits: list[tuple[int, int]] = []
    for pos, (end, call) in enumerate(calls):
        now = outcome(call)
        if now[0] != "ok":
            continue
        previous = [(k, c) for k, c in calls[:pos] if same_action(c, call)]
        if not previous or any(compare_outcomes(outcome(c), now) != CHANGED for _, c in previous):
            continue  # not a new outcome: an answer seen before is no news (a flapping result)
        repeated = outcome(previous[-1][1])
        # Only the unbroken run of identical outcomes just before the resolving call counts.
        unbroken: list[int] = []
        for k, c in reversed(previous):
            if compare_outcomes(outcome(c), repeated) != SAME:
                break
            unbroken.append(k)
        if len(unbroken) < WAIT_RUN:
            continue
        first = min(unbroken)
        inside = [c for k, c in calls if first <= k <= end]
        for index in reversed([i for i in order if i < first]):
            acts = step_actions(steps[index], tool_mode)
            if not acts or not all(any(same_action(a, c) for c in inside) for a in acts):
                break
            first = index
        waits.append((first, end))
    return waits


def in_wait(waits: Iterable[tuple[int, int]], *indices: int) -> bool:
    """Whether every index lies inside one ended wait."""
    return any(all(first <= i <= last for i in indices) for first, last in waits)
