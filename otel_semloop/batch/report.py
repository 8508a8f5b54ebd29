"""``rescore --report out.html``: one self-contained page a person can open or attach to a
ticket - no script, no network, plots as inline SVG.

It shows the counts, what the loops burned from their onsets (by agent and by signal),
the score distribution, loops over time, signals by agent, the tools that loop most, and
every looping or suspected trace with its reason; it fits the window's width. Every text
from the input is HTML-escaped (the rows hold it cleaned of control characters).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone

from otel_semloop.batch.summary import LoopSpend, Summary, money
from otel_semloop.batch.worker import TraceRow
from otel_semloop.batch.writer import write_atomically

__all__ = ["render_report", "write_report"]

COLORS = {"loop": "#d62728", "suspected": "#ff7f0e", "no_loop": "#2ca02c", "unscored": "#7f7f7f"}
_LABELS = ("loop", "suspected", "no_loop", "unscored")
_MAX_LISTED = 1000
_TRACES_COLOR = "#c7d7ea"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.muted{color:#666;font-size:13px} .cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:22px} .grid{display:flex;gap:24px;flex-wrap:wrap}
table{border-collapse:collapse;font-size:13px;width:100%} th,td{border-bottom:1px solid #eee;padding:4px 6px;
text-align:left;vertical-align:top} th{background:#f6f6f6} td.mono{font-family:ui-monospace,monospace}
.label{display:inline-block;padding:1px 6px;border-radius:3px;color:#fff;font-size:12px}
svg text{font-size:11px;fill:#333} svg .title{font-size:12px}
.scroll{overflow-x:auto;max-width:100%} #signals-by-agent th{font-size:11px}
td.num,th.num{text-align:right}
"""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _y_axis(x: float, top: int, h: int) -> str:
    """A vertical count axis at ``x`` from 0 (at ``h``) to ``top`` (at 10), ticks at 0, half
    and the top, titled "traces"."""
    parts = [f'<g class="axis y-axis"><line x1="{x}" y1="10" x2="{x}" y2="{h}" stroke="#999"/>']
    for value in sorted({0, top // 2, top}):
        y = h - (h - 10) * value / top
        parts.append(f'<line x1="{x - 4}" y1="{y:.1f}" x2="{x}" y2="{y:.1f}" stroke="#999"/>')
        parts.append(f'<text x="{x - 6}" y="{y + 4:.1f}" text-anchor="end">{value}</text>')
    parts.append(
        f'<text class="title" transform="translate(12,{(h + 10) / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">traces</text></g>'
    )
    return "".join(parts)


def _legend(x: float, y: float, entries: Sequence[tuple[str, str]]) -> str:
    """One row of colour swatches with their names, from ``(x, y)``."""
    parts = ['<g class="legend">']
    for name, color in entries:
        parts.append(f'<rect x="{x:.0f}" y="{y - 9:.0f}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14:.0f}" y="{y:.0f}">{_esc(name)}</text>')
        x += 22 + 7 * len(name)
    parts.append("</g>")
    return "".join(parts)


def _histogram(rows: Sequence[TraceRow]) -> str:
    """Score distribution: 10 bins over 0..1, stacked by label."""
    bins = [Counter() for _ in range(10)]
    for r in rows:
        bins[min(9, max(0, int(r.score * 10)))][r.label] += 1
    top = max((sum(b.values()) for b in bins), default=0) or 1
    w, h, pad = 460, 200, 50
    bar = (w - pad - 20) / 10
    parts = [
        f'<svg id="score-histogram" width="{w}" height="{h + 64}" role="img" aria-label="score distribution">'
    ]
    for i, b in enumerate(bins):
        y = h
        for label in _LABELS:
            n = b.get(label, 0)
            if not n:
                continue
            height = (h - 10) * n / top
            y -= height
            parts.append(
                f'<rect class="bar-{label}" x="{pad + i * bar + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" '
                f'height="{height:.1f}" fill="{COLORS[label]}"><title>{label}: {n}</title></rect>'
            )
    parts.append(f'<g class="axis x-axis"><line x1="{pad}" y1="{h}" x2="{w - 20}" y2="{h}" stroke="#999"/>')
    for i in range(11):
        x = pad + i * bar
        parts.append(f'<line x1="{x:.1f}" y1="{h}" x2="{x:.1f}" y2="{h + 4}" stroke="#999"/>')
        parts.append(f'<text x="{x:.1f}" y="{h + 16}" text-anchor="middle">{i / 10:.1f}</text>')
    parts.append(
        f'<text class="title" x="{(pad + w - 20) / 2:.0f}" y="{h + 32}" text-anchor="middle">'
        "semloop.score (below 0.5: loop)</text></g>"
    )
    parts.append(_y_axis(pad, top, h))
    present = [label for label in _LABELS if any(b.get(label) for b in bins)]
    parts.append(_legend(pad, h + 56, [(label, COLORS[label]) for label in present]))
    parts.append("</svg>")
    return "".join(parts)


#: Time label formats, coarsest first: the first that tells the chart's ticks apart is used.
_TIME_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%H:%M:%S.%f")


def time_labels(times_ns: Sequence[int]) -> list[str]:
    """Labels for tick times (Unix ns, UTC): the coarsest format that gives distinct times
    distinct labels (a one-minute sample gets seconds, a one-second one milliseconds)."""
    moments = [datetime.fromtimestamp(t / 1e9, tz=timezone.utc) for t in times_ns]
    distinct = len(set(times_ns))
    for fmt in _TIME_FORMATS:
        labels = [m.strftime(fmt) for m in moments]
        if len(set(labels)) == distinct:
            break
    if fmt.endswith("%f"):
        labels = [label[:-3] for label in labels]  # milliseconds
    return labels


def _over_time(rows: Sequence[TraceRow]) -> str:
    """Traces and loops per time bucket (by trace start)."""
    timed = [r for r in rows if r.start_ns]
    w, h, pad = 600, 200, 50
    if not timed:
        return '<p class="muted">No span times in the input.</p>'
    lo = min(r.start_ns for r in timed)
    hi = max(r.start_ns for r in timed)
    n_bins = 24
    span = max(hi - lo, 1)
    totals = [0] * n_bins
    loops = [0] * n_bins
    for r in timed:
        i = min(n_bins - 1, (r.start_ns - lo) * n_bins // span)
        totals[i] += 1
        loops[i] += r.label == "loop"
    top = max(totals) or 1
    right = w - 40
    bar = (right - pad) / n_bins
    parts = [
        f'<svg id="loops-over-time" width="{w}" height="{h + 64}" role="img" aria-label="loops over time">'
    ]
    for i in range(n_bins):
        th = (h - 10) * totals[i] / top
        lh = (h - 10) * loops[i] / top
        x = pad + i * bar + 1
        parts.append(
            f'<rect x="{x:.1f}" y="{h - th:.1f}" width="{bar - 2:.1f}" height="{th:.1f}" '
            f'fill="{_TRACES_COLOR}"><title>{totals[i]} traces</title></rect>'
        )
        parts.append(
            f'<rect class="bar-loop" x="{x:.1f}" y="{h - lh:.1f}" width="{bar - 2:.1f}" height="{lh:.1f}" '
            f'fill="{COLORS["loop"]}"><title>{loops[i]} loops</title></rect>'
        )
    ticks = [lo, lo + span // 2, hi] if hi > lo else [lo]
    labels = time_labels(ticks)
    parts.append(f'<g class="axis x-axis"><line x1="{pad}" y1="{h}" x2="{right}" y2="{h}" stroke="#999"/>')
    for tick, label in zip(ticks, labels, strict=True):
        x = pad + (right - pad) * (tick - lo) / span
        anchor = "start" if tick == lo else "end" if tick == hi else "middle"
        parts.append(f'<line x1="{x:.1f}" y1="{h}" x2="{x:.1f}" y2="{h + 4}" stroke="#999"/>')
        parts.append(f'<text class="time" x="{x:.1f}" y="{h + 16}" text-anchor="{anchor}">{label}</text>')
    parts.append(
        f'<text class="title" x="{(pad + right) / 2:.0f}" y="{h + 32}" text-anchor="middle">'
        "trace start (UTC)</text></g>"
    )
    parts.append(_y_axis(pad, top, h))
    parts.append(_legend(pad, h + 56, [("traces", _TRACES_COLOR), ("loops", COLORS["loop"])]))
    parts.append("</svg>")
    return "".join(parts)


def _bars(title: str, counts: Sequence[tuple[str, int]], svg_id: str, color: str) -> str:
    """Horizontal bars, one per name, over a count axis; the legend names what is counted."""
    if not counts:
        return f'<p class="muted">No {_esc(title)}.</p>'
    w, row, left = 460, 20, 180
    top = max(n for _, n in counts) or 1
    axis_y = row * len(counts) + 8
    parts = [f'<svg id="{svg_id}" width="{w}" height="{axis_y + 44}" role="img" aria-label="{_esc(title)}">']
    for i, (name, n) in enumerate(counts):
        y = i * row + 4
        length = (w - 240) * n / top
        parts.append(f'<text x="0" y="{y + 13}">{_esc(name[:28])}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{row - 6}" fill="{color}"/>')
        parts.append(f'<text x="{left + 4 + length:.1f}" y="{y + 13}">{n}</text>')
    end = left + (w - 240)
    parts.append(
        f'<g class="axis x-axis"><line x1="{left}" y1="{axis_y}" x2="{end}" y2="{axis_y}" stroke="#999"/>'
        f'<text x="{left}" y="{axis_y + 14}" text-anchor="middle">0</text>'
        f'<text x="{end}" y="{axis_y + 14}" text-anchor="middle">{top}</text></g>'
    )
    parts.append(_legend(left, axis_y + 36, [("traces labelled loop or suspected", color)]))
    parts.append("</svg>")
    return "".join(parts)


def _spend_table(title: str, spends: dict[str, LoopSpend], with_cost: bool) -> str:
    """One row per agent or signal: what its loops burned and the share a stop would save."""
    names = ("traces", "model calls", "input tokens", "output tokens", *(("cost",) if with_cost else ()))
    head = "".join(f'<th class="num">{name}</th>' for name in names)
    rows = []
    for name, spend in list(spends.items())[:15]:
        share = spend.tokens_saved_share
        counts = (spend.traces, spend.model_calls, spend.input_tokens, spend.output_tokens)
        cells = [f"{n:,}" for n in counts]
        if with_cost:
            cells.append(money(spend.cost) if spend.traces_with_cost else "-")
        cells.append("-" if share is None else f"{share:.0%}")
        rows.append(
            f"<tr><td>{_esc(name)}</td>" + "".join(f'<td class="num">{c}</td>' for c in cells) + "</tr>"
        )
    return (
        f"<table><tr><th>{_esc(title)}</th>{head}<th class='num'>saved by a stop at onset</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _loop_spend(summary: Summary) -> str:
    spend = summary.loop_spend
    if not spend.traces:
        return ""
    with_cost = spend.traces_with_cost > 0
    return (
        f'<h2>What loops burned</h2><div id="loop-spend"><p>{_esc(spend.sentence())}.</p>'
        '<p class="muted">From the step where each loop began to the end of its trace; a trace counts '
        "under every signal it fired.</p>"
        f'<div class="grid"><div>{_spend_table("agent", summary.spend_by_agent, with_cost)}</div>'
        f"<div>{_spend_table('signal', summary.spend_by_signal, with_cost)}</div></div></div>"
    )


def _signals_by_agent(rows: Sequence[TraceRow]) -> str:
    agents = Counter(r.agent or "(unnamed)" for r in rows)
    signals = sorted({s for r in rows for s in r.signals})
    if not signals:
        return '<p class="muted">No signal fired.</p>'
    table = Counter((r.agent or "(unnamed)", s) for r in rows for s in r.signals)
    top = max(table.values())
    head = "".join(f"<th>{_esc(s).replace('_', '_<wbr>')}</th>" for s in signals)
    body = []
    for agent, n in agents.most_common(15):
        cells = []
        for s in signals:
            v = table.get((agent, s), 0)
            alpha = 0.15 + 0.85 * v / top if v else 0
            cells.append(f'<td style="background:rgba(214,39,40,{alpha:.2f})">{v or ""}</td>')
        body.append(f"<tr><td>{_esc(agent).replace('_', '_<wbr>')} ({n})</td>{''.join(cells)}</tr>")
    return (
        f'<div class="scroll"><table id="signals-by-agent"><tr><th>agent (traces)</th>{head}</tr>'
        f"{''.join(body)}</table></div>"
    )


def render_report(
    summary: Summary, rows: Sequence[TraceRow], title: str = "otel-semloop rescore report"
) -> str:
    looping = [r for r in rows if r.label in ("loop", "suspected")]
    looping.sort(key=lambda r: (r.label != "loop", r.score, r.trace_id))
    cards = [
        ("agent traces", summary.scored),
        ("loops", summary.loops),
        ("suspected", summary.by_label.get("suspected", 0)),
        ("unscored", summary.by_label.get("unscored", 0)),
        ("spans", summary.spans),
        ("non-agent traces", summary.non_agent),
    ]
    if summary.malformed:
        cards.append(("malformed lines", summary.malformed))
    spend = summary.loop_spend
    if spend.traces_with_tokens:
        cards.append(("tokens burned in loops", spend.tokens))
    tools = [(t["tool"], t["loops"]) for t in summary.top_tools]
    agents = [(a["agent"], a["loops"]) for a in summary.top_agents]
    listed = []
    for r in looping[:_MAX_LISTED]:
        listed.append(
            "<tr>"
            f'<td class="mono">{_esc(r.trace_id)}</td><td>{_esc(r.root_name)}</td><td>{_esc(r.agent)}</td>'
            f'<td><span class="label" style="background:{COLORS.get(r.label, "#777")}">'
            f"{_esc(r.label)}</span></td>"
            f"<td>{r.score:.2f}</td><td>{_esc(r.action)}</td><td>{_esc(', '.join(r.signals))}</td>"
            f"<td>{_esc(', '.join(r.tools))}</td><td>{_esc(r.reason)}</td>"
            "</tr>"
        )
    more = ""
    if len(looping) > _MAX_LISTED:
        more = (
            f'<p class="muted">... and {len(looping) - _MAX_LISTED} more (use --table csv --only-loops).</p>'
        )
    problems = "".join(f"<li>{_esc(p)}</li>" for p in summary.input_problems)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>
<body>
<h1>{_esc(title)}</h1>
<div class="muted">{summary.bytes_read:,} bytes read in {summary.seconds:.1f} s; {summary.units:,} lines</div>
<div class="cards">{"".join(f'<div class="card"><b>{n:,}</b>{_esc(k)}</div>' for k, n in cards)}</div>
{f'<h2>Input problems</h2><ul id="input-problems">{problems}</ul>' if problems else ""}
<div class="grid">
<div><h2>Score distribution</h2>{_histogram(rows)}</div>
<div><h2>Loops over time</h2>{_over_time(rows)}</div>
</div>
<div class="grid">
<div><h2>Agents that loop most</h2>{_bars("looping agents", agents, "looping-agents", COLORS["loop"])}</div>
<div><h2>Tools that loop most</h2>{_bars("looping tools", tools, "looping-tools", COLORS["suspected"])}</div>
</div>
{_loop_spend(summary)}
<h2>Signals by agent</h2>{_signals_by_agent(rows)}
<h2>Looping traces ({len(looping):,})</h2>
<table id="looping-traces"><tr><th>trace</th><th>root</th><th>agent</th><th>label</th><th>score</th>
<th>action</th><th>signals</th><th>tools</th><th>reason</th></tr>{"".join(listed)}</table>{more}
</body></html>
"""


def write_report(path: str, summary: Summary, rows: Sequence[TraceRow]) -> None:
    """Write the page atomically (a temporary file renamed over ``path``)."""
    write_atomically(path, render_report(summary, rows).encode())
