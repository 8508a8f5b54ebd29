"""What a person sees after a rescore: counts by label and signal, the agents and tools that
loop most, and (on request) one row per trace as text or CSV, or the whole summary as JSON.

Why not a row per trace by default: a week of exports holds tens of thousands of traces;
the summary says where the loops are, ``--table`` and ``--only-loops`` list them. Text
shown on a terminal was cleaned of control characters when the rows were made.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from otel_semloop.batch.worker import TraceRow

__all__ = ["Summary", "summarize", "write_table"]

_LOOPING = ("loop", "suspected")


@dataclass(slots=True)
class Summary:
    scored: int = 0
    loops: int = 0
    by_label: dict[str, int] = field(default_factory=dict)
    by_signal: dict[str, int] = field(default_factory=dict)
    top_agents: list[dict[str, Any]] = field(default_factory=list)
    top_tools: list[dict[str, Any]] = field(default_factory=list)
    spans: int = 0
    units: int = 0
    traces: int = 0
    non_agent: int = 0
    late_spans: int = 0
    malformed: int = 0
    input_problems: list[str] = field(default_factory=list)
    spilled_traces: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    workers: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent_traces_scored": self.scored,
            "loops": self.loops,
            "by_label": self.by_label,
            "by_signal": self.by_signal,
            "top_looping_agents": self.top_agents,
            "top_looping_tools": self.top_tools,
            "spans": self.spans,
            "units": self.units,
            "traces": self.traces,
            "non_agent_traces": self.non_agent,
            "late_spans": self.late_spans,
            "malformed_units": self.malformed,
            "input_problems": self.input_problems,
            "spilled_traces": self.spilled_traces,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
        }

    def write(self, stream: TextIO) -> None:
        stream.write(
            f"{self.scored} agent traces scored, {self.loops} loops; {self.spans} spans in "
            f"{self.units} lines; {self.non_agent} non-agent traces passed through"
            + (f"; {self.malformed} malformed lines" if self.malformed else "")
            + (f"; {self.late_spans} late spans" if self.late_spans else "")
            + "\n"
        )
        if self.by_label:
            stream.write("  by label:  " + ", ".join(f"{k} {v}" for k, v in self.by_label.items()) + "\n")
        if self.by_signal:
            stream.write("  by signal: " + ", ".join(f"{k} {v}" for k, v in self.by_signal.items()) + "\n")
        if self.top_agents:
            stream.write(
                "  looping agents: "
                + ", ".join(f"{a['agent']} {a['loops']}/{a['traces']}" for a in self.top_agents)
                + "\n"
            )
        if self.top_tools:
            stream.write(
                "  looping tools:  " + ", ".join(f"{t['tool']} {t['loops']}" for t in self.top_tools) + "\n"
            )


def summarize(rows: Sequence[TraceRow], top: int = 5, **counts: Any) -> Summary:
    summary = Summary(**counts)
    summary.scored = len(rows)
    labels = Counter(r.label for r in rows)
    summary.by_label = dict(sorted(labels.items(), key=lambda kv: (-kv[1], kv[0])))
    summary.loops = labels.get("loop", 0)
    signals = Counter(s for r in rows for s in r.signals)
    summary.by_signal = dict(sorted(signals.items(), key=lambda kv: (-kv[1], kv[0])))
    agent_traces = Counter(r.agent or "(unnamed)" for r in rows)
    agent_loops = Counter(r.agent or "(unnamed)" for r in rows if r.label in _LOOPING)
    summary.top_agents = [
        {"agent": a, "loops": n, "traces": agent_traces[a]}
        for a, n in sorted(agent_loops.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    ]
    tools = Counter(t for r in rows if r.label in _LOOPING for t in r.tools)
    summary.top_tools = [
        {"tool": t, "loops": n} for t, n in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    ]
    summary.non_agent = max(0, summary.traces - summary.scored)
    return summary


_COLUMNS = (
    "trace",
    "root",
    "agent",
    "steps",
    "label",
    "score",
    "deepeval",
    "action",
    "signals",
    "tools",
    "reason",
)


def _cells(row: TraceRow, full: bool) -> tuple[str, ...]:
    return (
        row.trace_id if full else row.trace_id[:16],
        row.root_name if full else row.root_name[:28],
        row.agent if full else row.agent[:20],
        str(row.steps),
        row.label,
        f"{row.score:.2f}",
        "-" if row.deepeval is None else f"{row.deepeval:.2f}",
        row.action,
        ",".join(row.signals) or "-",
        ",".join(row.tools) or "-",
        row.reason if full else row.reason[:80],
    )


def write_table(
    rows: Sequence[TraceRow], stream: TextIO, fmt: str = "text", only_loops: bool = False
) -> None:
    """One row per scored trace (only loops and suspected ones with ``only_loops``)."""
    if only_loops:
        rows = [r for r in rows if r.label in _LOOPING]
    if fmt == "csv":
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(_COLUMNS)
        for row in rows:
            writer.writerow(_cells(row, True))
        return
    table = [_COLUMNS[:-1]] + [_cells(r, False)[:-1] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for line in table:
        stream.write("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n")
