"""What a person sees after a rescore: counts by label and signal, the agents and tools that
loop most, what the loops burned (tokens, cost, model calls from each loop's onset to the end
of its trace, totalled and by agent and signal, with the share a stop at the onset would have
saved), and (on request) one row per trace as text or CSV, or the whole summary as JSON.

Why not a row per trace by default: a week of exports holds tens of thousands of traces;
the summary says where the loops are, ``--table`` and ``--only-loops`` list them. Text
shown on a terminal was cleaned of control characters when the rows were made.
"""

from __future__ import annotations

import csv
import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from otel_semloop.batch.worker import TraceRow

__all__ = ["LoopSpend", "Summary", "figure", "money", "summarize", "write_table"]

_LOOPING = ("loop", "suspected")


@dataclass(slots=True)
class LoopSpend:
    """What loops burned over a set of traces (``loop_cost`` of each looping row), from each
    loop's onset to the end of its trace, and what those traces spent in all. Tokens and cost
    add up only what the traces record; ``traces_with_tokens`` / ``traces_with_cost`` say how
    many did."""

    traces: int = 0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    traces_with_tokens: int = 0
    traces_with_cost: int = 0
    trace_tokens: int = 0
    trace_cost: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def tokens_saved_share(self) -> float | None:
        """The share of the looping traces' tokens spent from the onsets on (what stopping
        each at its onset would have saved); None when no trace records tokens."""
        return self.tokens / self.trace_tokens if self.trace_tokens else None

    @property
    def cost_saved_share(self) -> float | None:
        return self.cost / self.trace_cost if self.trace_cost else None

    def add(self, row: TraceRow) -> None:
        cost = row.loop_cost
        if cost is None:
            return
        loop, trace = cost.loop, cost.trace
        self.traces += 1
        self.model_calls += loop.model_calls
        self.seconds += loop.duration_s
        if loop.input_tokens is not None or loop.output_tokens is not None:
            self.traces_with_tokens += 1
            self.input_tokens += loop.input_tokens or 0
            self.output_tokens += loop.output_tokens or 0
            self.trace_tokens += trace.tokens
        if loop.cost is not None and trace.cost is not None:
            self.traces_with_cost += 1
            self.cost += loop.cost
            self.trace_cost += trace.cost

    def as_dict(self) -> dict[str, Any]:
        """The fields, then the shares saved; money to 6 digits, seconds to 3, shares to 4."""
        out = dataclasses.asdict(self)
        out["cost"] = round(self.cost, 6)
        out["seconds"] = round(self.seconds, 3)
        out["trace_cost"] = round(self.trace_cost, 6)
        share, cost_share = self.tokens_saved_share, self.cost_saved_share
        out["tokens_saved_share"] = None if share is None else round(share, 4)
        out["cost_saved_share"] = None if cost_share is None else round(cost_share, 4)
        return out

    def sentence(self) -> str:
        """``loops burned 1.2 M tokens ($3.40) in 412 model calls across 120 traces; stopping
        at onset would have saved 84% of their tokens``."""
        across = f"across {self.traces} trace{'s' if self.traces != 1 else ''}"
        calls = f"{self.model_calls:,} model call{'s' if self.model_calls != 1 else ''}"
        if not self.traces_with_tokens:
            burned = f"{calls} (no token usage recorded)"
        elif self.traces_with_cost:
            burned = f"{figure(self.tokens)} tokens ({money(self.cost)}) in {calls}"
        else:
            burned = f"{figure(self.tokens)} tokens in {calls}"
        text = f"loops burned {burned} {across}"
        share = self.tokens_saved_share
        if share is not None:
            text += f"; stopping at onset would have saved {share:.0%} of their tokens"
        return text


def figure(n: float) -> str:
    """A count for a person: 950, 12.3 k, 1.2 M."""
    if n < 1000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1000:.1f} k"
    return f"{n / 1_000_000:.1f} M"


def money(dollars: float) -> str:
    """US dollars for a person: cents from a dollar up, three significant digits below."""
    return f"${dollars:,.2f}" if dollars >= 1 or dollars == 0 else f"${dollars:.3g}"


@dataclass(slots=True)
class Summary:
    scored: int = 0
    loops: int = 0
    by_label: dict[str, int] = field(default_factory=dict)
    by_signal: dict[str, int] = field(default_factory=dict)
    top_agents: list[dict[str, Any]] = field(default_factory=list)
    top_tools: list[dict[str, Any]] = field(default_factory=list)
    loop_spend: LoopSpend = field(default_factory=LoopSpend)
    spend_by_agent: dict[str, LoopSpend] = field(default_factory=dict)
    spend_by_signal: dict[str, LoopSpend] = field(default_factory=dict)
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
            "loop_spend": self.loop_spend.as_dict(),
            "loop_spend_by_agent": {k: v.as_dict() for k, v in self.spend_by_agent.items()},
            "loop_spend_by_signal": {k: v.as_dict() for k, v in self.spend_by_signal.items()},
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
        if self.loop_spend.traces:
            stream.write(f"  {self.loop_spend.sentence()}\n")


def summarize(rows: Sequence[TraceRow], top: int = 5, **counts: Any) -> Summary:
    summary = Summary(**counts)
    summary.scored = len(rows)
    summary.by_label = _most_first(Counter(r.label for r in rows))
    summary.loops = summary.by_label.get("loop", 0)
    summary.by_signal = _most_first(Counter(s for r in rows for s in r.signals))
    agent_traces = Counter(r.agent or "(unnamed)" for r in rows)
    agent_loops = _most_first(Counter(r.agent or "(unnamed)" for r in rows if r.label in _LOOPING))
    summary.top_agents = [
        {"agent": a, "loops": n, "traces": agent_traces[a]} for a, n in list(agent_loops.items())[:top]
    ]
    tools = _most_first(Counter(t for r in rows if r.label in _LOOPING for t in r.tools))
    summary.top_tools = [{"tool": t, "loops": n} for t, n in list(tools.items())[:top]]
    by_agent: dict[str, LoopSpend] = {}
    by_signal: dict[str, LoopSpend] = {}
    for row in rows:
        if row.loop_cost is None:
            continue
        summary.loop_spend.add(row)
        by_agent.setdefault(row.agent or "(unnamed)", LoopSpend()).add(row)
        for signal in row.signals:
            by_signal.setdefault(signal, LoopSpend()).add(row)
    summary.spend_by_agent = _by_spend(by_agent)
    summary.spend_by_signal = _by_spend(by_signal)
    summary.non_agent = max(0, summary.traces - summary.scored)
    return summary


def _most_first(counts: Counter[str]) -> dict[str, int]:
    """Largest count first (then by name)."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _by_spend(spends: dict[str, LoopSpend]) -> dict[str, LoopSpend]:
    """Most tokens burned first (then cost, traces, name)."""
    return dict(sorted(spends.items(), key=lambda kv: (-kv[1].tokens, -kv[1].cost, -kv[1].traces, kv[0])))


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
