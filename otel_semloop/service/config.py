"""Configuration of the collector service (``otel-semloop serve``).

One frozen dataclass, :class:`ServiceConfig`, built from (lowest precedence first) its
defaults, a TOML file (``--config FILE``: top-level keys are the field names below, or a
``[serve]`` table holding them) and command-line flags. Every value is checked once, here:
a bad value raises :class:`~otel_semloop.errors.ConfigError` naming the field, before any
socket is opened.

Addresses are ``HOST:PORT`` (``[::1]:4317`` for IPv6); port 0 picks a free port (tests).
``export_endpoint`` is a URL: for ``grpc``, ``http://host:port`` is plaintext and
``https://host:port`` TLS; for ``http/protobuf``, a URL without a path gets ``/v1/traces``
appended (the ``OTEL_EXPORTER_OTLP_ENDPOINT`` rule), a URL with a path is used as is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from otel_semloop.errors import ConfigError

__all__ = ["ExportProtocol", "ServiceConfig", "parse_address"]

ExportProtocol = Literal["grpc", "http/protobuf"]
_PROTOCOLS = ("grpc", "http/protobuf")


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Everything ``otel-semloop serve`` needs. Times are seconds, sizes are spans unless
    named ``*_bytes``. At least one of ``grpc``/``http`` must be set."""

    #: OTLP/gRPC listen address; None: no gRPC receiver. Loopback by default: exposing
    #: the receiver beyond the host is a deliberate choice (``0.0.0.0:4317``).
    grpc: str | None = "127.0.0.1:4317"
    #: OTLP/HTTP listen address (``POST /v1/traces``); None: no HTTP receiver.
    http: str | None = "127.0.0.1:4318"
    #: Where scored spans go (required).
    export_endpoint: str = ""
    export_protocol: ExportProtocol = "grpc"
    #: Extra request headers / gRPC metadata for the downstream (API keys of a backend).
    export_headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: gzip the export requests.
    export_compression: bool = False
    #: One export attempt may take this long.
    export_timeout: float = 10.0
    #: Spans per export request.
    export_batch_spans: int = 1024
    #: Spans waiting for the downstream (its outage). Past it the receivers answer
    #: 503 / UNAVAILABLE (retryable: the sender keeps the data), and if the queue still
    #: overflows (traces released from the buffer) the oldest spans are dropped, counted
    #: and logged.
    export_queue_spans: int = 100_000
    #: First retry delay, doubled per attempt up to ``retry_max_backoff`` (a
    #: ``Retry-After`` or gRPC ``RetryInfo`` from the downstream wins).
    retry_initial_backoff: float = 0.5
    retry_max_backoff: float = 30.0
    #: A batch failing with retryable errors for this long is dropped (counted, logged):
    #: the OTel Collector's ``retry_on_failure.max_elapsed_time``. 0: retry forever.
    retry_max_elapsed: float = 300.0
    #: A trace whose root arrived is released this long after its last span (stragglers
    #: from other services or export batches join it meanwhile).
    grace: float = 2.0
    #: A trace without a root is released (scored as partial) after this long without spans.
    idle: float = 120.0
    #: Any trace is released this long after its first span.
    max_age: float = 1800.0
    max_traces: int = 10_000
    max_spans_per_trace: int = 10_000
    max_spans: int = 200_000
    #: Released trace ids remembered to recognise late spans.
    recent_traces: int = 16_384
    #: From release to verdict, queueing included; past it the trace leaves unscored.
    scoring_budget: float = 5.0
    scoring_threads: int = 2
    #: Largest accepted request body, compressed or not.
    max_request_bytes: int = 32 * 1024 * 1024
    #: SIGINT/SIGTERM: time to score and forward everything held.
    drain_timeout: float = 30.0
    #: How often the buffer's deadlines are checked.
    tick: float = 0.05

    def __post_init__(self) -> None:
        if not self.grpc and not self.http:
            raise ConfigError("serve: at least one of grpc and http must be set")
        for name in ("grpc", "http"):
            value = getattr(self, name)
            if value:
                parse_address(value, name)
        if not self.export_endpoint:
            raise ConfigError("serve: export_endpoint is required (the downstream OTLP URL)")
        if self.export_protocol not in _PROTOCOLS:
            raise ConfigError(
                f"serve: export_protocol={self.export_protocol!r}: expected one of {', '.join(_PROTOCOLS)}"
            )
        split = urlsplit(self.export_endpoint)
        if split.scheme not in ("http", "https") or not split.hostname:
            raise ConfigError(
                f"serve: export_endpoint={self.export_endpoint!r}: expected http(s)://host:port[/path]"
            )
        for name in (
            "export_timeout",
            "retry_initial_backoff",
            "retry_max_backoff",
            "grace",
            "idle",
            "max_age",
            "scoring_budget",
            "drain_timeout",
            "tick",
            "retry_max_elapsed",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"serve: {name}={value!r}: expected a finite number of seconds")
            if value < 0 or (value == 0 and name not in ("grace", "retry_max_elapsed")):
                raise ConfigError(f"serve: {name}={value!r}: must be positive")
        for name in (
            "export_batch_spans",
            "export_queue_spans",
            "max_traces",
            "max_spans_per_trace",
            "max_spans",
            "scoring_threads",
            "max_request_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"serve: {name}={value!r}: expected an integer >= 1")
        if isinstance(self.recent_traces, bool) or not isinstance(self.recent_traces, int):
            raise ConfigError(f"serve: recent_traces={self.recent_traces!r}: expected an integer >= 0")
        if self.recent_traces < 0:
            raise ConfigError(f"serve: recent_traces={self.recent_traces!r}: expected an integer >= 0")

    @property
    def export_url(self) -> str:
        """The downstream URL as used: ``/v1/traces`` appended for OTLP/HTTP when the
        endpoint has no path."""
        if self.export_protocol == "http/protobuf":
            split = urlsplit(self.export_endpoint)
            if split.path in ("", "/"):
                return self.export_endpoint.rstrip("/") + "/v1/traces"
        return self.export_endpoint

    @classmethod
    def load(cls, path: str | Path | None = None, **overrides: Any) -> ServiceConfig:
        """Defaults, then the TOML file at ``path`` (if any), then ``overrides`` whose
        value is not None (command-line flags). Raises :class:`ConfigError` for an unknown
        key or a bad value."""
        values: dict[str, Any] = {}
        if path is not None:
            values.update(_read_toml(Path(path)))
        values.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"serve: unknown option(s): {', '.join(unknown)}")
        try:
            return cls(**values)
        except TypeError as error:  # pragma: no cover - guarded by the key check above
            raise ConfigError(f"serve: {error}") from None


def parse_address(address: str, name: str = "address") -> tuple[str, int]:
    """``HOST:PORT`` (or ``[v6]:PORT``) as ``(host, port)``; raises :class:`ConfigError`."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"serve: {name}={address!r}: expected HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ModuleNotFoundError:
            raise ConfigError("serve: reading a config file on Python 3.10 needs the tomli package") from None
    try:
        with path.open("rb") as fp:
            data = tomllib.load(fp)
    except OSError as error:
        raise ConfigError(f"serve: cannot read config file {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"serve: config file {path}: {error}") from None
    table = data.get("serve", data)
    if not isinstance(table, dict):
        raise ConfigError(f"serve: config file {path}: [serve] must be a table")
    return {key.replace("-", "_"): value for key, value in table.items()}
