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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from otel_semloop.errors import ConfigError
from otel_semloop.settings import BufferingSettings, load, setting, setting_default, validate

__all__ = ["ExportProtocol", "ServiceConfig", "parse_address"]

ExportProtocol = Literal["grpc", "http/protobuf"]
_PROTOCOLS = ("grpc", "http/protobuf")


@dataclass(frozen=True, slots=True)
class ServiceConfig(BufferingSettings):
    """Everything ``otel-semloop serve`` needs. Times are seconds, sizes are spans unless
    named ``*_bytes``. At least one of ``grpc``/``http`` must be set. Settings shared
    with the span processor have its names and ``SEMLOOP_*`` variables
    (:mod:`otel_semloop.settings`)."""

    #: OTLP/gRPC listen address; None: no gRPC receiver. Loopback by default: exposing
    #: the receiver beyond the host is a deliberate choice (``0.0.0.0:4317``).
    grpc: str | None = setting("127.0.0.1:4317", kind="str", optional=True)
    #: OTLP/HTTP listen address (``POST /v1/traces``); None: no HTTP receiver.
    http: str | None = setting("127.0.0.1:4318", kind="str", optional=True)
    #: Where scored spans go (required).
    export_endpoint: str = setting("", kind="str")
    export_protocol: ExportProtocol = setting("grpc", kind="choice", choices=_PROTOCOLS)
    #: Extra request headers / gRPC metadata for the downstream (API keys of a backend).
    export_headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: gzip the export requests.
    export_compression: bool = setting(False, kind="bool")
    #: One export attempt may take this long.
    export_timeout: float = setting(10.0, kind="float", above=0)
    #: Spans per export request.
    export_batch_spans: int = setting(1024, kind="int", minimum=1)
    #: Spans waiting for the downstream (its outage). Past it the receivers answer
    #: 503 / UNAVAILABLE (retryable: the sender keeps the data), and if the queue still
    #: overflows (traces released from the buffer) the oldest spans are dropped, counted
    #: and logged.
    export_queue_spans: int = setting(100_000, kind="int", minimum=1)
    #: First retry delay, doubled per attempt up to ``retry_max_backoff`` (a
    #: ``Retry-After`` or gRPC ``RetryInfo`` from the downstream wins).
    retry_initial_backoff: float = setting(0.5, kind="float", above=0)
    retry_max_backoff: float = setting(30.0, kind="float", above=0)
    #: A batch failing with retryable errors for this long is dropped (counted, logged):
    #: the OTel Collector's ``retry_on_failure.max_elapsed_time``. 0: retry forever.
    retry_max_elapsed: float = setting(300.0, kind="float", minimum=0)
    #: Shared with the span processor (:class:`~otel_semloop.settings.BufferingSettings`),
    #: with defaults for a collector: export batches of one trace arrive seconds apart.
    grace_seconds: float = setting_default(BufferingSettings, "grace_seconds", 2.0)
    max_spans: int = setting_default(BufferingSettings, "max_spans", 200_000)
    scoring_threads: int = setting_default(BufferingSettings, "scoring_threads", 2)
    tick_seconds: float = setting_default(BufferingSettings, "tick_seconds", 0.05)
    #: Largest accepted request body, compressed or not.
    max_request_bytes: int = setting(32 * 1024 * 1024, kind="int", minimum=1)

    def __post_init__(self) -> None:
        validate(self, "serve: ")
        if not self.grpc and not self.http:
            raise ConfigError("serve: at least one of grpc and http must be set")
        for name in ("grpc", "http"):
            value = getattr(self, name)
            if value:
                parse_address(value, name)
        if not self.export_endpoint:
            raise ConfigError("serve: export_endpoint is required (the downstream OTLP URL)")
        split = urlsplit(self.export_endpoint)
        if split.scheme not in ("http", "https") or not split.hostname:
            raise ConfigError(
                f"serve: export_endpoint={self.export_endpoint!r}: expected http(s)://host:port[/path]"
            )

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
    def load(
        cls, path: str | Path | None = None, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> ServiceConfig:
        """Defaults, then ``SEMLOOP_*`` variables in ``environ`` (default ``os.environ``;
        e.g. ``SEMLOOP_EXPORT_ENDPOINT``, ``SEMLOOP_GRACE_SECONDS``), then the TOML file at
        ``path`` (if any), then ``overrides`` whose value is not None (command-line flags).
        A former option name (``grace``, ``idle``, ``max_age``, ``scoring_budget``,
        ``tick``, ``drain_timeout``) is accepted with a ``DeprecationWarning``. Raises
        :class:`ConfigError` for an unknown key or a bad value."""
        layers: list[tuple[str, Mapping[str, Any]]] = []
        if path is not None:
            layers.append((f"{path}: ", _read_toml(Path(path))))
        layers.append(("", {k: v for k, v in overrides.items() if v is not None}))
        return load(cls, prefix="SEMLOOP_", environ=environ, layers=layers, label="serve: ")


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
