"""Headless Chromium driven over the DevTools protocol, for screenshots of real pages.

:class:`Chromium` starts ``chromium --headless`` (the Debian package; ``SEMLOOP_CHROMIUM``
overrides the path) with a fresh profile and the flags that keep it off the network
(no background networking, component updates, sync or QUIC), connects to its DevTools
websocket, and offers the three things the tests need: open a URL, wait until the page's
text contains some strings (the single-page apps render after load), and save a PNG.
Nothing here is specific to one backend.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

__all__ = ["Chromium", "chromium_path"]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
)


def chromium_path() -> str | None:
    return os.environ.get("SEMLOOP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1600, height: int = 1000, startup_timeout: float = 60.0) -> None:
        path = chromium_path()
        if path is None:
            raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
        self._profile = tempfile.mkdtemp(prefix="semloop-chromium-")
        self._process = subprocess.Popen(
            [
                path,
                *FLAGS,
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._ids = itertools.count(1)
        port = self._wait_for_port(startup_timeout)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            pages = [t for t in json.load(response) if t.get("type") == "page"]
        self._ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024, open_timeout=30)
        self.call("Page.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _wait_for_port(self, timeout: float) -> int:
        marker = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._process.returncode}")
            if marker.is_file():
                text = marker.read_text().split()
                if text:
                    return int(text[0])
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def call(self, method: str, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and wait for its answer (events in between are skipped)."""
        message_id = next(self._ids)
        self._ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self._ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        result = self.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''")
        return str(result.get("result", {}).get("value", ""))

    def click_text(self, text: str, timeout: float = 0.0) -> bool:
        """Click the first element whose own text is ``text``, waiting up to ``timeout``
        seconds for one to appear; False when there is none."""
        script = (
            "(() => { const want = WANT; const all = [...document.querySelectorAll('*')];"
            " const el = all.find(e => e.childElementCount === 0 && e.textContent.trim() === want);"
            " if (!el) return false; el.click(); return true; })()"
        ).replace("WANT", json.dumps(text))
        deadline = time.monotonic() + timeout
        while True:
            if self.call("Runtime.evaluate", expression=script).get("result", {}).get("value"):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)

    def wait_for_text(self, *needles: str, timeout: float = 60.0) -> str:
        """Poll the page text until it contains every needle; returns it (raises on timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if all(n in text for n in needles):
                return text
            if time.monotonic() >= deadline:
                missing = [n for n in needles if n not in text]
                raise TimeoutError(f"page never showed {missing}; it shows:\n{text[:2000]}")
            time.sleep(0.5)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=5)
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
