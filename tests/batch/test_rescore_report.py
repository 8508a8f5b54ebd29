"""``--report out.html``: a self-contained page, checked as a person sees it - rendered by
headless Chromium, its screenshot read back pixel by pixel."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from otel_semloop.batch.report import COLORS
from otel_semloop.cli import main
from tests.batch.rescore_data import agent_lines, write_jsonl

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


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    source = write_jsonl(tmp / "in.jsonl", agent_lines(n_traces=10))
    page = tmp / "report.html"
    assert main(["rescore", str(source), "-o", str(tmp / "out.jsonl"), "-q", "--report", str(page)]) == 0
    return page


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
