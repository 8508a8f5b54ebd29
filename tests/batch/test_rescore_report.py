"""``--report out.html``: a self-contained page, checked as a person sees it - rendered by
headless Chromium, its screenshot read back pixel by pixel, and its layout measured in the
rendered page at 1400 px (nothing wider than the window, every chart's axes and legend inside
it, a one-minute sample's time labels distinct and apart)."""

from __future__ import annotations

import itertools
import json
import shutil
import struct
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.deepeval_tree import tree_to_spans
from otel_semloop.batch.report import COLORS
from otel_semloop.cli import main
from otel_semloop.otlp import records_to_traces_json
from tests.batch.rescore_data import agent_lines, healthy_tree, looping_tree, write_jsonl
from tests.e2e.browser import Chromium, chromium_path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root, on a closed network: no sandbox, and no background connections to refuse.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def report_of(source: Path, tmp: Path) -> Path:
    """The report ``rescore`` writes for ``source`` (in ``tmp``)."""
    page = tmp / "report.html"
    assert main(["rescore", str(source), "-o", str(tmp / "out.jsonl"), "-q", "--report", str(page)]) == 0
    return page


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    return report_of(write_jsonl(tmp / "in.jsonl", agent_lines(n_traces=10)), tmp)


def test_the_report_is_self_contained_and_lists_every_looping_trace_with_its_reason(report):
    text = report.read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text
    for svg in ("score-histogram", "loops-over-time", "looping-tools", "looping-agents"):
        assert f'id="{svg}"' in text
    listed = text.split('id="looping-traces"')[1]
    assert listed.count("<tr>") == 1 + 5  # header + the five looping traces
    assert "action_cycle" in listed and "grep" in listed


def _pixels(png: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, unfiltered rows) of an 8-bit RGB/RGBA PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray()
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return width, height, bpp, bytes(out)


def _count(pixels: bytes, bpp: int, hex_color: str) -> int:
    rgb = bytes.fromhex(hex_color.lstrip("#"))
    return sum(1 for i in range(0, len(pixels), bpp) if pixels[i : i + 3] == rgb)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (.ci/run installs it)")
def test_the_report_renders_in_headless_chromium_with_its_plots(report, tmp_path):
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=900,560",
            report.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.exists(), done.stderr.decode()[-2000:]
    width, height, bpp, pixels = _pixels(shot.read_bytes())
    assert (width, height) == (900, 560)
    # the plots are drawn: loop-red and healthy-green bars cover a visible area
    assert _count(pixels, bpp, COLORS["loop"]) > 2000
    assert _count(pixels, bpp, COLORS["no_loop"]) > 2000


# --- layout at a common laptop width, measured in the rendered page --------------------------

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "corpus" / "data" / "synthetic.genai.otlp.jsonl.gz"
#: Every element's right edge, the page's scroll width and the viewport's width.
LAYOUT = """JSON.stringify({
  viewport: document.documentElement.clientWidth,
  scroll: document.documentElement.scrollWidth,
  right: Math.max(...[...document.querySelectorAll('body *')].map(e => e.getBoundingClientRect().right)),
  heatmap: document.getElementById('signals-by-agent').getBoundingClientRect().right,
})"""
CHART_PARTS = """JSON.stringify(Object.fromEntries(IDS.map(id => {
  const svg = document.getElementById(id), box = svg.getBoundingClientRect();
  const inside = el => { const r = el.getBoundingClientRect();
    return r.left >= box.left - 1 && r.right <= box.right + 1
      && r.top >= box.top - 1 && r.bottom <= box.bottom + 1; };
  const part = sel => [...svg.querySelectorAll(sel)];
  return [id, {x: part('.x-axis').length, y: part('.y-axis').length,
    legend: part('.legend text').map(t => t.textContent),
    inside: part('.x-axis, .y-axis, .legend').every(inside)}];
})))"""
TIME_LABELS = """JSON.stringify([...document.querySelectorAll('#loops-over-time text.time')].map(t => {
  const r = t.getBoundingClientRect(); return {text: t.textContent, left: r.left, right: r.right}; }))"""


def _evaluate(browser: Any, script: str) -> Any:
    return json.loads(browser.call("Runtime.evaluate", expression=script)["result"]["value"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if chromium_path() is None:
        pytest.skip("headless Chromium is not installed (.ci/run installs it)")
    with Chromium(width=1400, height=900) as chromium:
        yield chromium


def _show(browser: Any, page: Path) -> None:
    browser.open(page.as_uri())
    deadline = time.monotonic() + 30
    while browser.call("Runtime.evaluate", expression="document.readyState")["result"]["value"] != "complete":
        assert time.monotonic() < deadline, "the report did not load"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def many_signals_report(tmp_path_factory) -> Path:
    """A report of the synthetic corpus: 14 signals and 15 agents in the signals-by-agent table."""
    return report_of(CORPUS, tmp_path_factory.mktemp("wide"))


def test_the_report_fits_a_1400_pixel_window(browser, many_signals_report) -> None:
    _show(browser, many_signals_report)
    layout = _evaluate(browser, LAYOUT)
    assert layout["viewport"] == 1400
    assert layout["heatmap"] <= layout["viewport"], layout
    assert layout["scroll"] <= layout["viewport"], layout
    assert layout["right"] <= layout["viewport"], layout


def test_every_chart_has_axes_and_a_legend_inside_it(browser, many_signals_report) -> None:
    _show(browser, many_signals_report)
    ids = ["score-histogram", "loops-over-time", "looping-agents", "looping-tools"]
    charts = _evaluate(browser, CHART_PARTS.replace("IDS", json.dumps(ids)))
    for chart in ("score-histogram", "loops-over-time"):
        assert charts[chart]["x"] == 1 and charts[chart]["y"] == 1, (chart, charts[chart])
    for chart in ("looping-agents", "looping-tools"):
        assert charts[chart]["x"] == 1, (chart, charts[chart])
    assert charts["score-histogram"]["legend"] == ["loop", "suspected", "no_loop"]
    assert charts["loops-over-time"]["legend"] == ["traces", "loops"]
    assert all(chart["legend"] and chart["inside"] for chart in charts.values()), charts


@pytest.fixture(scope="module")
def one_minute_report(tmp_path_factory) -> Path:
    """Ten traces started 6 s apart: the whole sample within one minute."""
    tmp = tmp_path_factory.mktemp("minute")
    spans = []
    for i in range(10):
        tree = looping_tree() if i % 2 == 0 else healthy_tree()
        spans.extend(tree_to_spans(tree, f"m{i}", start_ns=1_767_225_600_000_000_000 + i * 6 * 10**9))
    return report_of(write_jsonl(tmp / "in.jsonl", [records_to_traces_json(spans)]), tmp)


def test_the_time_labels_of_a_one_minute_sample_are_distinct_and_apart(browser, one_minute_report) -> None:
    _show(browser, one_minute_report)
    labels = _evaluate(browser, TIME_LABELS)
    texts = [label["text"] for label in labels]
    assert len(texts) == 3 and len(set(texts)) == 3, texts
    assert texts[0].endswith("00:00:00") and texts[-1].endswith("00:00:54"), texts
    for left, right in itertools.pairwise(labels):
        assert left["right"] <= right["left"], labels  # no label drawn over the next
