"""Configuration of the collector service (``otel-semloop serve``).

One frozen dataclass, :class:`ServiceConfig`, checked once: a bad value raises
:class:`~otel_semloop.errors.ConfigError` naming the field, before any socket is opened.
:meth:`ServiceConfig.load` layers the defaults, the environment (the OpenTelemetry exporter
variables, ``OTEL_METRICS_EXPORTER``, then ``SEMLOOP_<OPTION>``), a TOML file (with
``${env:NAME}`` expanded, so a file can name a secret without holding it) and
command-line flags; ``docs/service.md`` ("Configuration") gives the rules. Secrets
(``export_headers`` values, ``auth_token``, a password in a URL) are never printed.

Size: one table of options with its reading rules; each option is a few lines.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from otel_semloop.errors import ConfigError
from otel_semloop.settings import BufferingSettings, load, setting, setting_default, validate

__all__ = [
    "ExportProtocol",
    "ExportTarget",
    "ServiceConfig",
    "Signal",
    "parse_address",
    "read_file",
    "redact_url",
]

ExportProtocol = Literal["grpc", "http/protobuf"]
#: The OTLP signals the service receives and forwards.
Signal = Literal["traces", "logs"]
_PROTOCOLS = ("grpc", "http/protobuf")
_METRICS_EXPORTERS = ("otlp", "prometheus", "console", "none")
_MIB = 1024 * 1024


def default_processes() -> int:
    """Scoring processes by default: every core this process may run on but one (which the
    receive and export path keeps), at least 2 (the receive path takes only part of a
    core) and up to 4; on one core processes would only add copying, so 0: threads."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(4, max(2, cores - 1)) if cores >= 2 else 0


@dataclass(frozen=True, slots=True)
class ExportTarget:
    """One signal's downstream as used (:meth:`ServiceConfig.export_target`)."""

    url: str
    protocol: ExportProtocol
    headers: Mapping[str, str] = dataclasses.field(repr=False)
    compression: bool


@dataclass(frozen=True, slots=True)
class ServiceConfig(BufferingSettings):
    """Everything ``otel-semloop serve`` needs. Times are seconds, sizes are spans unless
    named ``*_bytes``. At least one of ``grpc``/``http`` must be set. The grouping, scoring
    and shutdown settings are the span processor's
    (:class:`~otel_semloop.settings.BufferingSettings`), with collector defaults below."""

    #: OTLP/gRPC listen address; None: no gRPC receiver. Beyond loopback by choice only.
    grpc: str | None = setting("127.0.0.1:4317", kind="str", optional=True)
    #: OTLP/HTTP listen address; None: no HTTP receiver.
    http: str | None = setting("127.0.0.1:4318", kind="str", optional=True)
    #: Where scored spans go (required).
    export_endpoint: str = setting("", kind="str", secret=True)
    export_protocol: ExportProtocol = setting("grpc", kind="choice", choices=_PROTOCOLS)
    #: Extra request headers / gRPC metadata for the downstream. Secret: never printed.
    export_headers: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    #: gzip the export requests.
    export_compression: bool = setting(False, kind="bool")
    #: One export attempt may take this long.
    export_timeout: float = setting(10.0, kind="float", above=0)
    #: PEM file of the CA(s) that sign the downstream's certificate (default: system roots).
    export_certificate: str | None = setting(None, kind="str", optional=True)
    #: PEM client key and certificate for mutual TLS with the downstream.
    export_client_key: str | None = setting(None, kind="str", optional=True)
    export_client_certificate: str | None = setting(None, kind="str", optional=True)
    #: Where received log records go. Empty: ``export_endpoint`` with ``/v1/logs`` for its
    #: path for OTLP/HTTP (:meth:`export_target`). Secret: never printed.
    export_logs_endpoint: str = setting("", kind="str", secret=True)
    #: The logs downstream's protocol, headers and compression; None: the traces' ones.
    export_logs_protocol: ExportProtocol | None = setting(
        None, kind="choice", choices=_PROTOCOLS, optional=True
    )
    export_logs_headers: Mapping[str, str] | None = dataclasses.field(default=None, repr=False)
    export_logs_compression: bool | None = setting(None, kind="bool", optional=True)
    #: Spans per export request.
    export_batch_spans: int = setting(1024, kind="int", minimum=1)
    #: Spans waiting for the downstream; past it the receivers refuse retryably.
    export_queue_spans: int = setting(100_000, kind="int", minimum=1)
    #: First retry delay, doubled per attempt up to ``retry_max_backoff`` (a downstream's hint wins).
    retry_initial_backoff: float = setting(0.5, kind="float", above=0)
    retry_max_backoff: float = setting(30.0, kind="float", above=0)
    #: A batch failing retryably for this long is dropped (counted, logged); 0: retry forever.
    retry_max_elapsed: float = setting(300.0, kind="float", minimum=0)
    #: Shared with the span processor, with defaults for a collector.
    grace_seconds: float = setting_default(BufferingSettings, "grace_seconds", 2.0)
    max_spans: int = setting_default(BufferingSettings, "max_spans", 200_000)
    scoring_threads: int = setting_default(BufferingSettings, "scoring_threads", 2)
    #: Score in this many worker processes instead of threads (0: threads); default
    #: :func:`default_processes`. Only the default scorer runs in processes.
    scoring_processes: int = setting(default_processes(), kind="int", minimum=0)
    tick_seconds: float = setting_default(BufferingSettings, "tick_seconds", 0.05)
    #: Largest request body as received (compressed or not); 413 past it.
    max_request_bytes: int = setting(32 * _MIB, kind="int", minimum=1)
    #: Largest request body after decompression; inflation stops there; 413 past it.
    max_decompressed_bytes: int = setting(64 * _MIB, kind="int", minimum=1)
    #: Bytes of accepted requests not yet forwarded; past it the receivers refuse retryably.
    memory_limit_bytes: int = setting(512 * _MIB, kind="int", minimum=1)
    #: Open connections on each receiver (more are closed at once); requests per gRPC connection.
    max_connections: int = setting(512, kind="int", minimum=1)
    max_concurrent_streams: int = setting(64, kind="int", minimum=1)
    #: Time for a client's request headers or handshake, and for each chunk of a body.
    header_timeout: float = setting(10.0, kind="float", above=0)
    body_timeout: float = setting(30.0, kind="float", above=0)
    #: Idle keep-alive connections are closed after this.
    keepalive_timeout: float = setting(30.0, kind="float", above=0)
    #: Receiver TLS (PEM certificate and key); with ``tls_client_ca``, client certificates too.
    tls_certificate: str | None = setting(None, kind="str", optional=True)
    tls_key: str | None = setting(None, kind="str", optional=True)
    tls_client_ca: str | None = setting(None, kind="str", optional=True)
    #: Bearer token both receivers require; empty: none. Secret: never printed.
    auth_token: str = setting("", kind="str", secret=True)
    #: Health endpoint (``GET /health/live``, ``/health/ready``, ``/health``); None: off.
    health: str | None = setting(None, kind="str", optional=True)
    #: Prometheus scrape endpoint for the self-metrics (``GET /metrics``); None: off.
    prometheus: str | None = setting(None, kind="str", optional=True)
    #: Self-metrics exporters, comma-separated: ``otlp``, ``prometheus``, ``console``, ``none``.
    metrics_exporter: str = setting("none", kind="str")
    #: SQLite file of the durable queue (:mod:`.durable`); None: held in memory only.
    durable_queue: str | None = setting(None, kind="str", optional=True)
    #: Size bound of the durable queue; past it the receivers refuse retryably.
    durable_queue_bytes: int = setting(1024 * _MIB, kind="int", minimum=1)
    #: One INFO line per trace found looping.
    log_loops: bool = setting(True, kind="bool")

    def __post_init__(self) -> None:
        validate(self, "serve: ")
        if not self.grpc and not self.http:
            raise ConfigError("serve: at least one of grpc and http must be set")
        for name in ("grpc", "http", "health", "prometheus"):
            value = getattr(self, name)
            if value:
                parse_address(value, name)
        if not self.export_endpoint:
            raise ConfigError("serve: export_endpoint is required (the downstream OTLP URL)")
        for name in ("export_endpoint", "export_logs_endpoint"):
            url = getattr(self, name)
            split = urlsplit(url)
            if url and (split.scheme not in ("http", "https") or not split.hostname):
                raise ConfigError(f"serve: {name}={redact_url(url)!r}: expected http(s)://host:port[/path]")
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

    def export_target(self, signal: Signal) -> ExportTarget:
        """The downstream of ``signal`` as used: URL (for OTLP/HTTP with the signal's path
        when the endpoint has none), protocol, headers and compression."""
        if signal == "traces":
            url = self.export_endpoint
            if self.export_protocol == "http/protobuf" and urlsplit(url).path in ("", "/"):
                url = url.rstrip("/") + "/v1/traces"
            return ExportTarget(url, self.export_protocol, self.export_headers, self.export_compression)
        protocol = self.export_logs_protocol or self.export_protocol
        headers = self.export_headers if self.export_logs_headers is None else self.export_logs_headers
        compression = (
            self.export_compression if self.export_logs_compression is None else self.export_logs_compression
        )
        endpoint = self.export_logs_endpoint
        if protocol == "http/protobuf":
            split = urlsplit(endpoint or self.export_endpoint)
            path = split.path.rstrip("/")
            if not endpoint or not path:
                path = path.removesuffix("/v1/traces") + "/v1/logs"
            endpoint = urlunsplit(split._replace(path=path))
        return ExportTarget(endpoint or self.export_endpoint, protocol, headers, compression)

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
            if f.name in ("export_endpoint", "export_logs_endpoint"):
                value = redact_url(value)
            elif f.name in ("export_headers", "export_logs_headers"):
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
        **overrides: Any,
    ) -> ServiceConfig:
        """Defaults, then the environment (``environ``, default ``os.environ``; see the
        module docstring), then the TOML file at ``path`` (if any, ``${env:NAME}``
        expanded), then ``overrides`` whose value is not None (command-line flags).
        ``export_headers_file`` / ``auth_token_file`` (anywhere) name files to read those
        secrets from. Raises :class:`ConfigError` for an unknown key or a bad value."""
        env = os.environ if environ is None else environ
        outside = from_environment(env)  # OTEL_* and the secrets' SEMLOOP_* variables
        layers: list[tuple[str, dict[str, Any]]] = []
        if path is not None:
            layers.append((f"{path}: ", _read_toml(Path(path), env)))
        layers.append(("", {k: v for k, v in overrides.items() if v is not None}))
        headers_file = token_file = None
        for layer in (outside, *(values for _, values in layers)):
            headers_file = layer.pop("export_headers_file", None) or headers_file
            token_file = layer.pop("auth_token_file", None) or token_file
        config = load(
            cls, prefix="SEMLOOP_", environ=env, under_env=[("", outside)], layers=layers, label="serve: "
        )
        secrets: dict[str, Any] = {}
        if headers_file:
            secrets["export_headers"] = {**config.export_headers, **_read_headers_file(Path(headers_file))}
        if token_file:
            secrets["auth_token"] = _read_secret(Path(token_file), "auth_token_file")
        return dataclasses.replace(config, **secrets) if secrets else config


# -- the environment -------------------------------------------------------------------------


def _otlp_var(env: Mapping[str, str], name: str, signal: Signal = "traces") -> str | None:
    """``OTEL_EXPORTER_OTLP_<SIGNAL>_<name>``, else ``OTEL_EXPORTER_OTLP_<name>``."""
    for key in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_{name}", f"OTEL_EXPORTER_OTLP_{name}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return None


def _exporter_options(env: Mapping[str, str], signal: Signal) -> dict[str, Any]:
    """The downstream options of ``signal`` that the OTLP exporter variables set:
    ``OTEL_EXPORTER_OTLP_<SIGNAL>_<name>``, else ``OTEL_EXPORTER_OTLP_<name>``. For logs only
    where they differ from the traces' (``export_logs_*`` default to the traces' options);
    the generic endpoint is a base URL, so ``/v1/logs`` is appended to its path, as the OTLP
    exporters do, while a ``LOGS_`` endpoint is used as it is."""
    option = "export_" if signal == "traces" else "export_logs_"
    variable = "OTEL_EXPORTER_OTLP_" if signal == "traces" else "OTEL_EXPORTER_OTLP_LOGS_"
    values: dict[str, Any] = {}
    for name in ("ENDPOINT", "PROTOCOL", "HEADERS", "COMPRESSION"):
        value: Any = _otlp_var(env, name, signal)
        if value is None or (signal == "logs" and value == _otlp_var(env, name)):
            continue
        if name == "ENDPOINT" and signal == "logs" and not env.get(f"{variable}ENDPOINT", "").strip():
            split = urlsplit(value)
            value = urlunsplit(split._replace(path=split.path.rstrip("/") + "/v1/logs"))
        elif name == "PROTOCOL" and value not in _PROTOCOLS:
            raise ConfigError(f"serve: {variable}PROTOCOL={value!r}: expected one of {', '.join(_PROTOCOLS)}")
        elif name == "HEADERS":
            value = parse_otlp_headers(value, f"{variable}HEADERS")
        elif name == "COMPRESSION":
            if value not in ("gzip", "none"):
                raise ConfigError(f"serve: {variable}COMPRESSION={value!r}: expected gzip or none")
            value = value == "gzip"
        values[option + name.lower()] = value
    return values


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


def from_environment(env: Mapping[str, str]) -> dict[str, Any]:
    """The options the environment sets besides the ``SEMLOOP_*`` settings (see the module
    docstring): the OpenTelemetry exporter variables, and the secrets' variables."""
    values = {**_exporter_options(env, "traces"), **_exporter_options(env, "logs")}
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
    # The settings' own SEMLOOP_* variables are read by otel_semloop.settings; these three
    # are not settings (a mapping, and files to read secrets from).
    headers_text = env.get("SEMLOOP_EXPORT_HEADERS", "").strip()
    if headers_text:
        values["export_headers"] = parse_otlp_headers(headers_text, "SEMLOOP_EXPORT_HEADERS")
    for name in ("export_headers_file", "auth_token_file"):
        text = env.get(f"SEMLOOP_{name.upper()}", "").strip()
        if text:
            values[name] = text
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


def read_file(path: str | None) -> bytes | None:
    """The bytes of the file a certificate or key option names, or None when it is unset."""
    if not path:
        return None
    with open(path, "rb") as fp:
        return fp.read()


def parse_address(address: str, name: str = "address") -> tuple[str, int]:
    """``HOST:PORT`` (or ``[v6]:PORT``) as ``(host, port)``; raises :class:`ConfigError`."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(f"serve: {name}={address!r}: expected HOST:PORT")
    if int(port_text) > 65535:
        raise ConfigError(f"serve: {name}={address!r}: port {int(port_text)} is out of range (0-65535)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def listen_error(listener: str, address: str, error: BaseException | None = None) -> OSError:
    """The one-line error for an address a listener cannot bind (the service exits 2 with
    it): which listener, which address, and why when the system said."""
    reason = "address in use or not available"
    if isinstance(error, OSError) and error.strerror:
        reason = error.strerror
    return OSError(f"cannot listen: {listener} on {address}: {reason}")


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
