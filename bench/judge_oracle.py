"""The scripted "oracle" judge of the semloop benchmark: answers from the dataset, not a model.

It measures the mechanism (questions, one request per trace, answer parsing, combination),
never a model, which is why its column is labelled ``oracle`` and never compared on cost.
Two readings of "a judge that read the trace correctly":

* ``oracle`` (semloop's published column, 54/60): one script per family, as semloop's
  oracle answers. Its one quirk, kept so the column reproduces: in ``cosmetic_args_loop``
  the reasoning steps are read as progress and only the tool question says "same action",
  so one judged signal alone cannot cross deepeval's 0.5 threshold (0/6 there).
* ``oracle-labels``: answers from each row's own ``stagnation`` label (stagnant rows: no
  progress, revisits, repeated tool calls are one action; healthy rows: the opposite).

Numbers are P(yes) per question kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_semloop.judges.base import JudgeRequest

#: family -> P(yes) for progress, revisit and tool_repeat questions.
FAMILY_SCRIPT: Mapping[str, Mapping[str, float]] = {
    # restated or repeated intent: no step gets anywhere, the tool calls are one action
    "paraphrased_loop": {"progress": 0.05, "revisit": 0.5, "tool_repeat": 0.9},
    "terse_loop": {"progress": 0.05, "revisit": 0.5, "tool_repeat": 0.9},
    "verbatim_loop": {"progress": 0.05, "revisit": 0.5, "tool_repeat": 0.9},
    "identical_tool_loop": {"progress": 0.05, "revisit": 0.5, "tool_repeat": 0.95},
    # A-B-A-B: each consecutive step differs, every other step is a revisit
    "alternating_loop": {"progress": 0.85, "revisit": 0.9, "tool_repeat": 0.5},
    # semloop's reading: the reworded steps count as progress, the calls as one action
    "cosmetic_args_loop": {"progress": 0.9, "revisit": 0.05, "tool_repeat": 0.9},
    # real work
    "progress": {"progress": 0.95, "revisit": 0.05, "tool_repeat": 0.05},
    "template_progress": {"progress": 0.95, "revisit": 0.05, "tool_repeat": 0.05},
    "boilerplate_progress": {"progress": 0.95, "revisit": 0.05, "tool_repeat": 0.05},
    "retry_then_recover": {"progress": 0.8, "revisit": 0.15, "tool_repeat": 0.05},
}

STAGNANT = {"progress": 0.05, "revisit": 0.9, "tool_repeat": 0.9}
HEALTHY = {"progress": 0.95, "revisit": 0.05, "tool_repeat": 0.05}


def _answers(table: Mapping[str, float], request: JudgeRequest) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for qid in request.questions:
        for kind, p in table.items():
            if qid.startswith(kind + "_"):
                out[qid] = p
    return out


def oracle_script(rows_by_trace: Mapping[str, Mapping[str, Any]], reading: str = "oracle"):
    """A script for :class:`~otel_semloop.judges.backends.scripted.ScriptedBackend`;
    ``rows_by_trace`` maps an OTLP trace id to its dataset row."""

    def script(request: JudgeRequest) -> dict[str, Any]:
        row = rows_by_trace[request.trace_id]
        if reading == "oracle-labels":
            table = STAGNANT if row["stagnation"] else HEALTHY
        else:
            table = FAMILY_SCRIPT[row["family"]]
        return _answers(table, request)

    return script
