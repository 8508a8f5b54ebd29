"""A real Arize Phoenix server on loopback, run from the installed ``arize-phoenix`` package.

:class:`PhoenixServer` starts ``phoenix serve`` (with this interpreter, so the same
virtualenv) as a subprocess on free ports: the HTTP port serves the UI, the REST API and
OTLP/HTTP (``/v1/traces``, :attr:`PhoenixServer.otlp_http_endpoint`); the gRPC port takes
OTLP/gRPC. Its SQLite database and log live in a working directory the caller gives (a
pytest tmp dir). Startup is bounded (``startup_timeout``, default 90 s), the server is
terminated on exit (killed if it does not stop), and its log tail is attached to any
startup failure.

Phoenix must not reach the internet: inherited ``PHOENIX_*``/``OTEL_*`` variables are
dropped, and telemetry, external resources, the agent assistant, the MCP mount, sandbox
providers and auth are switched off (``PHOENIX_TELEMETRY_ENABLED=false``,
``PHOENIX_ALLOW_EXTERNAL_RESOURCES=false``, ...). Phoenix's gRPC server binds ``[::]``
whatever ``PHOENIX_HOST`` says; the HTTP server binds ``127.0.0.1``.

Reading back: :meth:`PhoenixServer.spans` pages through
``GET /v1/projects/{project}/spans`` (Phoenix's span model: ``context.span_id``,
``parent_id``, ``span_kind``, flattened ``attributes``, ``events``), and
:meth:`PhoenixServer.wait_for_spans` polls it until given span ids are stored, since
Phoenix ingests asynchronously.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

__all__ = ["PhoenixServer", "free_port"]

#: Variables that keep a local Phoenix off the network and lean.
OFFLINE_ENV: Mapping[str, str] = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    "PHOENIX_AGENTS_DISABLE_WEB_ACCESS": "true",
    "PHOENIX_AGENTS_DISABLE_GITHUB": "true",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
    "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
    "PHOENIX_ENABLE_AUTH": "false",
    "PHOENIX_ENABLE_PROMETHEUS": "false",
}
_POLL_SECONDS = 0.25
_LOG_TAIL_CHARS = 4000


def free_port() -> int:
    """A TCP port free on all interfaces right now (Phoenix's gRPC server binds ``[::]``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


class PhoenixServer:
    """``phoenix serve`` as a subprocess on loopback; use as a context manager."""

    host = "127.0.0.1"

    def __init__(self, working_dir: Path, *, startup_timeout: float = 90.0) -> None:
        self.working_dir = working_dir
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.grpc_port = free_port()
        while self.grpc_port == self.port:
            self.grpc_port = free_port()
        self.log_path = working_dir / "phoenix-server.log"
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._client: httpx.Client | None = None

    # -- addresses -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def otlp_http_endpoint(self) -> str:
        """The full OTLP/HTTP traces URL, for ``OTLPSpanExporter(endpoint=...)``."""
        return f"{self.base_url}/v1/traces"

    @property
    def otlp_grpc_endpoint(self) -> str:
        return f"{self.host}:{self.grpc_port}"

    # -- lifecycle -----------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update(OFFLINE_ENV)
        env.update(
            {
                "PHOENIX_HOST": self.host,
                "PHOENIX_PORT": str(self.port),
                "PHOENIX_GRPC_PORT": str(self.grpc_port),
                "PHOENIX_WORKING_DIR": str(self.working_dir),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    def start(self) -> None:
        self.working_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "phoenix.server.main", "serve"],
                cwd=self.working_dir,
                env=self.environment(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._client = httpx.Client(base_url=self.base_url, timeout=10.0, trust_env=False)
        try:
            self._wait_healthy(started + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    def _wait_healthy(self, deadline: float) -> None:
        assert self._process is not None and self._client is not None
        while True:
            code = self._process.poll()
            if code is not None:
                raise RuntimeError(f"phoenix serve exited with {code} during startup:\n{self.log_tail()}")
            try:
                if self._client.get("/healthz", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"phoenix serve did not answer /healthz within {self.startup_timeout:.0f} s:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(_POLL_SECONDS)

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def __enter__(self) -> PhoenixServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-_LOG_TAIL_CHARS:]

    # -- reading back --------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        """An HTTP client on :attr:`base_url` (Phoenix's REST and GraphQL APIs)."""
        assert self._client is not None, "server not started"
        return self._client

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span Phoenix stored for ``project`` (all pages), oldest insert first; []
        while the project does not exist yet."""
        assert self._client is not None, "server not started"
        spans: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000, "sort": "id", "order": "asc"}
            if cursor:
                params["cursor"] = cursor
            response = self._client.get(f"/v1/projects/{project}/spans", params=params)
            if response.status_code == 404:
                return []
            response.raise_for_status()
            body = response.json()
            spans.extend(body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return spans

    def wait_for_spans(
        self,
        project: str,
        span_ids: Collection[str],
        *,
        timeout: float = 30.0,
        settle: float = 1.0,
    ) -> list[dict[str, Any]]:
        """Poll until every id in ``span_ids`` (hex) is stored for ``project``, then wait
        ``settle`` seconds so anything still in flight (a duplicate, say) lands too, and
        return everything stored. On timeout, returns what is there: the caller's
        assertions say what is missing."""
        wanted = set(span_ids)
        deadline = time.monotonic() + timeout
        while True:
            stored = self.spans(project)
            if wanted <= {s["context"]["span_id"] for s in stored}:
                break
            if time.monotonic() >= deadline:
                return stored
            time.sleep(_POLL_SECONDS)
        time.sleep(settle)
        return self.spans(project)
