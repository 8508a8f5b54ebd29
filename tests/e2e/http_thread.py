"""What the loopback HTTP servers of the end-to-end tests share: a ``ThreadingHTTPServer``
on an ephemeral port served from a daemon thread, and a complete keep-alive response."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["ServerThread", "reply"]


class ServerThread:
    """A ``ThreadingHTTPServer`` on ``host``, ephemeral port, served between :meth:`start`
    and :meth:`stop` by a daemon thread (request threads are daemons too)."""

    def __init__(self, host: str, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer((host, 0), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
    """Send a whole response with its ``Content-Length`` (clients keep the connection)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
