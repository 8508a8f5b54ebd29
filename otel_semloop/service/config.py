"""Configuration of the collector service (``otel-semloop serve``).

One frozen dataclass, :class:`ServiceConfig`, checked once, here: a bad value raises
:class:`~otel_semloop.errors.ConfigError` naming the field, before any socket is opened.
:meth:`ServiceConfig.load` builds it the way an OpenTelemetry operator expects, from (lowest
precedence first):

1. the defaults below;
2. the environment: the standard ``OTEL_EXPORTER_OTLP_*`` variables for the next hop
   (``OTEL_EXPORTER_OTLP_TRACES_*`` over the generic ones: endpoint, headers, protocol,
   compression, timeout in milliseconds, certificate, client key and certificate),
   ``OTEL_METRICS_EXPORTER`` / ``OTEL_EXPORTER_PROMETHEUS_HOST|PORT`` for self-metrics, then
   ``SEMLOOP_<OPTION>`` for every option below (``SEMLOOP_GRPC``, ``SEMLOOP_AUTH_TOKEN``...);
3. a TOML file (``--config FILE``: the option names at the top level or under ``[serve]``),
   where ``${env:NAME}`` (or ``${NAME}``) is replaced by that variable, so a file can name a
   secret without holding it;
4. command-line flags.

Secrets (``export_headers`` values, ``auth_token``, a password in ``export_endpoint``) are
never printed: they are left out of ``repr`` and :meth:`ServiceConfig.describe`, and
:func:`redact_url` hides URL credentials in every log line. Take them from the environment or
a file (``export_headers_file``, ``auth_token_file``), not from flags, which any user of the
host can read in the process list.

Addresses are ``HOST:PORT`` (``[::1]:4317`` for IPv6); port 0 picks a free port (tests).
``export_endpoint`` is a URL: for ``grpc``, ``http://host:port`` is plaintext and
``https://host:port`` TLS; for ``http/protobuf``, a URL without a path gets ``/v1/traces``
appended (the ``OTEL_EXPORTER_OTLP_ENDPOINT`` rule), a URL with a path is used as is.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from otel_semloop.errors import ConfigError

__all__ = ["ExportProtocol", "ServiceConfig", "parse_address", "redact_url"]

ExportProtocol = Literal["grpc", "http/protobuf"]
_PROTOCOLS = ("grpc", "http/protobuf")
_METRICS_EXPORTERS = ("otlp", "prometheus", "console", "none")
_MIB = 1024 * 1024


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
    export_endpoint: str = dataclasses.field(default="", repr=False)
    export_protocol: ExportProtocol = "grpc"
    #: Extra request headers / gRPC metadata for the downstream (API keys of a backend).
    #: Secret: never printed.
    export_headers: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    #: gzip the export requests.
    export_compression: bool = False
    #: One export attempt may take this long.
    export_timeout: float = 10.0
    #: PEM file of the CA(s) that sign the downstream's certificate (default: system roots).
    export_certificate: str | None = None
    #: PEM client key and certificate for mutual TLS with the downstream.
    export_client_key: str | None = None
    export_client_certificate: str | None = None
    #: Spans per export request.
    export_batch_spans: int = 1024
    #: Spans waiting for the downstream (its outage). Past it the receivers answer
    #: 503 / UNAVAILABLE (retryable: the sender keeps the data).
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
    #: Largest accepted request body as received (compressed or not): 413 /
    #: RESOURCE_EXHAUSTED past it.
    max_request_bytes: int = 32 * _MIB
    #: Largest request body after decompression; inflation stops there (a gzip bomb costs
    #: at most this much memory): 413 / RESOURCE_EXHAUSTED.
    max_decompressed_bytes: int = 64 * _MIB
    #: Bytes of accepted requests held or queued (counted at acceptance, released when
    #: forwarded). Past it the receivers answer 503 / UNAVAILABLE with retry information.
    memory_limit_bytes: int = 512 * _MIB
    #: Open HTTP connections; more are closed at once (the gRPC server is limited by
    #: ``max_concurrent_streams`` per connection).
    max_connections: int = 512
    max_concurrent_streams: int = 64
    #: A client must send its request headers (HTTP) / finish the TLS and HTTP/2 handshake
    #: (gRPC) within this, and each chunk of a body within ``body_timeout``.
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    #: Idle keep-alive connections are closed after this.
    keepalive_timeout: float = 30.0
    #: Receiver TLS: PEM server certificate and key (both or neither). With
    #: ``tls_client_ca``, clients must present a certificate signed by it.
    tls_certificate: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    #: Bearer token both receivers require (``Authorization: Bearer <token>``; gRPC
    #: metadata ``authorization``). Empty: no authentication. Secret: never printed.
    auth_token: str = dataclasses.field(default="", repr=False)
    #: Health endpoint (``GET /health/live``, ``/health/ready``, ``/health``); None: off.
    health: str | None = None
    #: Prometheus scrape endpoint for the self-metrics (``GET /metrics``); None: off.
    prometheus: str | None = None
    #: Self-metrics exporters, comma-separated: ``otlp`` (``OTEL_EXPORTER_OTLP_METRICS_*``),
    #: ``prometheus`` (served on ``prometheus``), ``console``, ``none``.
    metrics_exporter: str = "none"
    #: SQLite file of the durable queue; None: spans are held in memory only (SIGTERM
    #: drains them; a crash loses them). With it, a request is on disk before it is
    #: acknowledged and is delivered after a restart.
    durable_queue: str | None = None
    #: Size bound of the durable queue's unfinished requests; past it 503 / UNAVAILABLE.
    durable_queue_bytes: int = 1024 * _MIB
    #: One INFO line per trace found looping.
    log_loops: bool = True
    #: SIGINT/SIGTERM: time to score and forward everything held.
    drain_timeout: float = 30.0
    #: How often the buffer's deadlines are checked.
    tick: float = 0.05

    def __post_init__(self) -> None:
        if not self.grpc and not self.http:
            raise ConfigError("serve: at least one of grpc and http must be set")
        for name in ("grpc", "http", "health", "prometheus"):
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
                f"serve: export_endpoint={redact_url(self.export_endpoint)!r}: "
                "expected http(s)://host:port[/path]"
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
            "header_timeout",
            "body_timeout",
            "keepalive_timeout",
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
            "max_decompressed_bytes",
            "memory_limit_bytes",
            "max_connections",
            "max_concurrent_streams",
            "durable_queue_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"serve: {name}={value!r}: expected an integer >= 1")
        if isinstance(self.recent_traces, bool) or not isinstance(self.recent_traces, int):
            raise ConfigError(f"serve: recent_traces={self.recent_traces!r}: expected an integer >= 0")
        if self.recent_traces < 0:
            raise ConfigError(f"serve: recent_traces={self.recent_traces!r}: expected an integer >= 0")
        if bool(self.tls_certificate) != bool(self.tls_key):
            raise ConfigError("serve: tls_certificate and tls_key go together")
        if self.tls_client_ca and not self.tls_certificate:
            raise ConfigError("serve: tls_client_ca needs tls_certificate and tls_key")
        if bool(self.export_client_key) != bool(self.export_client_certificate):
            raise ConfigError("serve: export_client_key and export_client_certificate go together")
        for name in (
            "tls_certificate",
            "tls_key",
            "tls_client_ca",
            "export_certificate",
            "export_client_key",
            "export_client_certificate",
        ):
            value = getattr(self, name)
            if value and not Path(value).is_file():
                raise ConfigError(f"serve: {name}={value!r}: no such file")
        exporters = [e.strip() for e in self.metrics_exporter.split(",") if e.strip()]
        bad = [e for e in exporters if e not in _METRICS_EXPORTERS]
        if bad:
            raise ConfigError(
                f"serve: metrics_exporter={self.metrics_exporter!r}: expected a comma-separated "
                f"list of {', '.join(_METRICS_EXPORTERS)}"
            )
        if "prometheus" in exporters and not self.prometheus:
            raise ConfigError("serve: metrics_exporter=prometheus needs the prometheus address")
        if not isinstance(self.auth_token, str) or any(c.isspace() for c in self.auth_token):
            raise ConfigError("serve: auth_token must be a string without whitespace")

    @property
    def export_url(self) -> str:
        """The downstream URL as used: ``/v1/traces`` appended for OTLP/HTTP when the
        endpoint has no path."""
        if self.export_protocol == "http/protobuf":
            split = urlsplit(self.export_endpoint)
            if split.path in ("", "/"):
                return self.export_endpoint.rstrip("/") + "/v1/traces"
        return self.export_endpoint

    @property
    def metrics_exporters(self) -> tuple[str, ...]:
        """``metrics_exporter`` as a tuple, ``none`` left out; ``prometheus`` is implied by
        a ``prometheus`` address."""
        names = [e.strip() for e in self.metrics_exporter.split(",") if e.strip() not in ("", "none")]
        if self.prometheus and "prometheus" not in names:
            names.append("prometheus")
        return tuple(dict.fromkeys(names))

    def describe(self) -> str:
        """The options that differ from the defaults, secrets hidden: for the startup log."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            if value == default:
                continue
            if f.name == "export_endpoint":
                value = redact_url(value)
            elif f.name == "export_headers":
                value = {k: "***" for k in value}
            elif f.name == "auth_token":
                value = "***"
            parts.append(f"{f.name}={value!r}")
        return ", ".join(parts)

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        default_health: str | None = None,
        **overrides: Any,
    ) -> ServiceConfig:
        """Defaults, then the environment (``environ``, default ``os.environ``; see the
        module docstring), then the TOML file at ``path`` (if any, ``${env:NAME}``
        expanded), then ``overrides`` whose value is not None (command-line flags).
        ``export_headers_file`` / ``auth_token_file`` (anywhere) name files to read those
        secrets from. Raises :class:`ConfigError` for an unknown key or a bad value."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = from_environment(env)
        if path is not None:
            hints = typing.get_type_hints(cls)
            for key, value in _read_toml(Path(path), env).items():
                kind = hints.get(key)
                if isinstance(value, str) and kind is not None and kind is not str:
                    value = _env_value(key, value, kind)  # "${env:N}" in a number field
                values[key] = value
        values.update({k: v for k, v in overrides.items() if v is not None})
        headers_file = values.pop("export_headers_file", None)
        if headers_file:
            values["export_headers"] = {
                **dict(values.get("export_headers") or {}),
                **_read_headers_file(Path(headers_file)),
            }
        if default_health and "health" not in values:
            values["health"] = default_health
        for name in ("health", "prometheus", "grpc", "http", "durable_queue"):
            if values.get(name) == "":
                values[name] = None
        token_file = values.pop("auth_token_file", None)
        if token_file:
            values["auth_token"] = _read_secret(Path(token_file), "auth_token_file")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"serve: unknown option(s): {', '.join(unknown)}")
        try:
            return cls(**values)
        except TypeError as error:  # pragma: no cover - guarded by the key check above
            raise ConfigError(f"serve: {error}") from None


# -- the environment -------------------------------------------------------------------------


def _otlp_var(env: Mapping[str, str], name: str) -> str | None:
    """``OTEL_EXPORTER_OTLP_TRACES_<name>``, else ``OTEL_EXPORTER_OTLP_<name>``."""
    for key in (f"OTEL_EXPORTER_OTLP_TRACES_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return None


def parse_otlp_headers(text: str, where: str = "OTEL_EXPORTER_OTLP_HEADERS") -> dict[str, str]:
    """``key1=value1,key2=value2`` (W3C Baggage style, values percent-decoded), as the
    OpenTelemetry specification defines ``OTEL_EXPORTER_OTLP_HEADERS``."""
    headers: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # Never echo the item: it may hold a secret.
            raise ConfigError(f"serve: {where}: expected key=value pairs separated by commas")
        headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def _env_value(name: str, text: str, kind: Any) -> Any:
    where = f"SEMLOOP_{name.upper()}"
    origin = typing.get_origin(kind)
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) and args:
        if text.lower() in ("", "none", "off"):
            return None
        kind = args[0]
        origin = typing.get_origin(kind)
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"serve: {where}={text!r}: expected true or false")
    if kind is int:
        try:
            return int(text.replace("_", ""))
        except ValueError:
            raise ConfigError(f"serve: {where}={text!r}: expected an integer") from None
    if kind is float:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"serve: {where}={text!r}: expected a number") from None
    if origin is Mapping or kind is Mapping:
        return parse_otlp_headers(text, where)
    return text


def from_environment(env: Mapping[str, str]) -> dict[str, Any]:
    """The options the environment sets (see the module docstring)."""
    values: dict[str, Any] = {}
    endpoint = _otlp_var(env, "ENDPOINT")
    if endpoint:
        values["export_endpoint"] = endpoint
    protocol = _otlp_var(env, "PROTOCOL")
    if protocol:
        if protocol not in _PROTOCOLS:
            raise ConfigError(
                f"serve: OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: expected one of {', '.join(_PROTOCOLS)}"
            )
        values["export_protocol"] = protocol
    headers = _otlp_var(env, "HEADERS")
    if headers:
        values["export_headers"] = parse_otlp_headers(headers)
    compression = _otlp_var(env, "COMPRESSION")
    if compression:
        if compression not in ("gzip", "none"):
            raise ConfigError(f"serve: OTEL_EXPORTER_OTLP_COMPRESSION={compression!r}: expected gzip or none")
        values["export_compression"] = compression == "gzip"
    timeout = _otlp_var(env, "TIMEOUT")
    if timeout:
        try:
            values["export_timeout"] = float(timeout) / 1000.0  # milliseconds, per the spec
        except ValueError:
            raise ConfigError(
                f"serve: OTEL_EXPORTER_OTLP_TIMEOUT={timeout!r}: expected milliseconds"
            ) from None
    for var, name in (
        ("CERTIFICATE", "export_certificate"),
        ("CLIENT_KEY", "export_client_key"),
        ("CLIENT_CERTIFICATE", "export_client_certificate"),
    ):
        value = _otlp_var(env, var)
        if value:
            values[name] = value
    metrics_exporter = env.get("OTEL_METRICS_EXPORTER", "").strip()
    if metrics_exporter:
        values["metrics_exporter"] = metrics_exporter
        if "prometheus" in metrics_exporter:
            host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST", "").strip() or "localhost"
            port = env.get("OTEL_EXPORTER_PROMETHEUS_PORT", "").strip() or "9464"
            values["prometheus"] = f"{host}:{port}"
    hints = typing.get_type_hints(ServiceConfig)
    extra = {"export_headers_file": str, "auth_token_file": str}
    for name, kind in [*hints.items(), *extra.items()]:
        text = env.get(f"SEMLOOP_{name.upper()}")
        if text is not None:
            values[name] = _env_value(name, text.strip(), kind)
    return values


# -- files -----------------------------------------------------------------------------------

_ENV_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\$")


def expand_env(text: str, env: Mapping[str, str], where: str) -> str:
    """``${env:NAME}`` / ``${NAME}`` (``${env:NAME:-default}``) replaced by the variable;
    ``$$`` is a literal ``$``. An unset variable without a default is an error."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is None:
            if default is None:
                raise ConfigError(f"serve: {where}: environment variable {name} is not set")
            return default
        return value

    return _ENV_REF.sub(replace, text)


def _expand(value: Any, env: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):
        return expand_env(value, env, where)
    if isinstance(value, dict):
        return {k: _expand(v, env, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, env, where) for v in value]
    return value


def parse_address(address: str, name: str = "address") -> tuple[str, int]:
    """``HOST:PORT`` (or ``[v6]:PORT``) as ``(host, port)``; raises :class:`ConfigError`."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"serve: {name}={address!r}: expected HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def redact_url(url: str) -> str:
    """``url`` with any password (and query string, which often carries keys) hidden."""
    try:
        split = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    netloc = split.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hostport}" if ":" in userinfo else f"***@{hostport}"
    query = "***" if split.query else ""
    return urlunsplit((split.scheme, netloc, split.path, query, ""))


def _read_secret(path: Path, what: str) -> str:
    try:
        return path.read_text().strip()
    except OSError as error:
        raise ConfigError(f"serve: {what}: cannot read {path}: {error.strerror}") from None


def _read_headers_file(path: Path) -> dict[str, str]:
    """One ``key=value`` (or ``key: value``) per line; ``#`` comments and blank lines skipped."""
    headers: dict[str, str] = {}
    for number, line in enumerate(_read_secret(path, "export_headers_file").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", line)
        if not match:
            raise ConfigError(f"serve: export_headers_file {path}:{number}: expected key=value")
        headers[match.group(1).lower()] = match.group(2).strip()
    return headers


def _read_toml(path: Path, env: Mapping[str, str]) -> dict[str, Any]:
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
    return {key.replace("-", "_"): _expand(value, env, f"config file {path}") for key, value in table.items()}
