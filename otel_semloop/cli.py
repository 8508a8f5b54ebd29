"""``otel-semloop``: the command line.

``otel-semloop rescore INPUT... -o OUTPUT`` rescores exported OTLP files
(:mod:`otel_semloop.batch`; exit status in :mod:`otel_semloop.batch.run`);
``otel-semloop serve`` runs the collector plugin (:mod:`otel_semloop.service`);
``otel-semloop health`` probes its health endpoint.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from otel_semloop.errors import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "rescore":
        return _rescore(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "health":
        return _health(args)
    parser.print_help()
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-semloop", description="Detect AI agents stuck in loops from their OpenTelemetry traces."
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show program's version number and exit")
    sub = parser.add_subparsers(dest="command")
    _add_rescore(sub)
    _add_serve(sub)
    health = sub.add_parser(
        "health",
        help="probe a serve health endpoint (container and systemd health checks)",
        description="GET the URL; exit 0 if it answers 2xx, 1 otherwise (no curl needed in images).",
    )
    health.add_argument("url", nargs="?", default="http://127.0.0.1:13133/health/ready")
    health.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS", help="retry until healthy or this long"
    )
    return parser


#: ``serve`` flags: (option, metavar, help), the flag being the option's name with dashes
#: (``--export-endpoint``) and its type the setting's. Every option can also come from
#: ``SEMLOOP_<OPTION>`` or the config file; see ``otel_semloop/service/config.py``.
_SERVE_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("grpc", "HOST:PORT", "OTLP/gRPC listen address ('off' to disable); default 127.0.0.1:4317"),
    ("http", "HOST:PORT", "OTLP/HTTP listen address ('off' to disable); default 127.0.0.1:4318"),
    (
        "export_endpoint",
        "URL",
        "downstream OTLP endpoint (required; or OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT)",
    ),
    (
        "export_logs_endpoint",
        "URL",
        "downstream for received log records (default: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, else the export "
        "endpoint, with /v1/logs for http/protobuf)",
    ),
    (
        "export_headers_file",
        "FILE",
        "file of KEY=VALUE lines sent as headers / gRPC metadata (API keys stay out of the process list)",
    ),
    ("export_timeout", "SECONDS", "one export attempt (default 10)"),
    ("export_certificate", "PEM", "CA file for the downstream's certificate"),
    ("export_client_key", "PEM", "client key for mTLS with the downstream"),
    ("export_client_certificate", "PEM", "client certificate (mTLS)"),
    (
        "health",
        "HOST:PORT",
        "health endpoint: GET /health/live, /health/ready (default off: replicas can share a host; "
        "the container listens on 0.0.0.0:13133)",
    ),
    ("prometheus", "HOST:PORT", "Prometheus scrape endpoint for self-metrics (GET /metrics)"),
    (
        "metrics_exporter",
        "LIST",
        "self-metrics exporters: otlp,prometheus,console,none (default: OTEL_METRICS_EXPORTER, else none)",
    ),
    ("tls_certificate", "PEM", "receivers' TLS certificate (with --tls-key)"),
    ("tls_key", "PEM", "receivers' TLS key"),
    ("tls_client_ca", "PEM", "require client certificates signed by this CA"),
    (
        "auth_token_file",
        "FILE",
        "require 'Authorization: Bearer <token>' on both receivers (or SEMLOOP_AUTH_TOKEN)",
    ),
    (
        "durable_queue",
        "FILE",
        "SQLite file: acknowledged spans survive a crash and are delivered after restart",
    ),
    ("max_request_bytes", "BYTES", "largest request body (default 32 MiB)"),
    ("max_decompressed_bytes", "BYTES", "after decompression (default 64 MiB)"),
    (
        "memory_limit_bytes",
        "BYTES",
        "accepted bytes not yet forwarded before 503 / UNAVAILABLE (default 512 MiB)",
    ),
    ("max_connections", "N", "open HTTP connections (default 512)"),
    ("idle_seconds", "SECONDS", "release a trace without a root after this long without spans (default 120)"),
    ("grace_seconds", "SECONDS", "wait after a trace's last span once its root arrived (default 2)"),
    ("scoring_budget_seconds", "SECONDS", "default 5"),
    (
        "shutdown_timeout_seconds",
        "SECONDS",
        "SIGTERM: score and forward what is held within this (default 30)",
    ),
)


def _add_rescore(sub: argparse._SubParsersAction) -> None:
    from otel_semloop.batch.run import add_arguments
    from otel_semloop.judges.settings import add_judge_arguments

    rescore = sub.add_parser(
        "rescore",
        help="score the agent traces in exported OTLP files",
        description="Score every agent trace in exported OTLP files (JSON lines or protobuf, plain, gzip "
        "or zstd) and write the spans back out with the verdict on each trace's root span. Exit status: "
        "0 ok, 1 a loop was found (--fail-on-loop), 2 usage or input problems, 3 output not written.",
    )
    add_arguments(rescore)
    add_judge_arguments(rescore)


def _add_serve(sub: argparse._SubParsersAction) -> None:
    from otel_semloop.judges.settings import add_judge_arguments
    from otel_semloop.service.config import ServiceConfig
    from otel_semloop.settings import specs

    serve = sub.add_parser(
        "serve",
        help="run the collector plugin: OTLP in, loop verdicts written onto the spans, OTLP out",
        description="Receive OTLP traces and logs (gRPC and HTTP), score every finished agent trace for "
        "loops (with its GenAI log records: message content emitted as logs), write the verdict onto its "
        "spans and forward every span and log record once to the export endpoint. "
        "Runs until SIGINT/SIGTERM, then drains. Precedence: defaults < environment "
        "(OTEL_EXPORTER_OTLP_*, OTEL_METRICS_EXPORTER, SEMLOOP_*) < --config file < flags.",
    )
    serve.add_argument(
        "--config", metavar="FILE", help="TOML file with the options (a [serve] table; ${env:NAME} expanded)"
    )
    kinds = {name: spec.kind for name, spec in specs(ServiceConfig).items()}
    for dest, metavar, text in _SERVE_FLAGS:
        kind = {"int": int, "float": float}.get(kinds.get(dest, "str"), str)
        serve.add_argument("--" + dest.replace("_", "-"), dest=dest, type=kind, metavar=metavar, help=text)
    # Former spellings (the span processor's names now): still accepted, with a warning.
    for old in ("idle", "grace", "scoring-budget", "drain-timeout"):
        dest = "old_" + old.replace("-", "_")
        serve.add_argument(f"--{old}", type=float, dest=dest, help=argparse.SUPPRESS)
    serve.add_argument("--export-protocol", choices=("grpc", "http/protobuf"), help="default grpc")
    serve.add_argument(
        "--export-header",
        action="append",
        metavar="KEY=VALUE",
        help="header / gRPC metadata for the downstream (repeatable). Visible in the process list: "
        "put secrets in OTEL_EXPORTER_OTLP_HEADERS or --export-headers-file instead",
    )
    serve.add_argument(
        "--export-compression",
        choices=("gzip", "none"),
        help="default none (SEMLOOP_EXPORT_COMPRESSION=false; true is gzip)",
    )
    serve.add_argument(
        "--export-logs-protocol", choices=("grpc", "http/protobuf"), help="default: --export-protocol's"
    )
    serve.add_argument(
        "--export-logs-compression", choices=("gzip", "none"), help="default: --export-compression's"
    )
    serve.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    add_judge_arguments(serve)


def _rescore(args: argparse.Namespace) -> int:
    from otel_semloop.batch.run import run

    return run(args)


def _serve(args: argparse.Namespace) -> int:
    import logging
    import os

    # gRPC core writes its own lines to stderr, bypassing logging and its limiter: at INFO,
    # one per failed TLS handshake (a scanner makes thousands). Errors only, unless the
    # operator asks for more; set before gRPC is first imported, when it reads this.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    try:
        from otel_semloop.judges.settings import scorer_with_judge, settings_from_args
        from otel_semloop.service import ServiceConfig, serve
    except ImportError as error:
        print(
            f"otel-semloop: serve needs the collector extra (pip install 'otel-semloop[collector]'): {error}",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Library request logs (one line per export, per probe) are noise at INFO.
    for name in ("httpx", "httpcore", "uvicorn", "uvicorn.error", "grpc"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    headers = None
    if args.export_header:
        logging.getLogger("otel_semloop.service").warning(
            "otel-semloop: --export-header values are visible in the process list; prefer "
            "OTEL_EXPORTER_OTLP_HEADERS or --export-headers-file for secrets"
        )
        headers = {}
        for item in args.export_header:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                print("otel-semloop: --export-header: expected KEY=VALUE", file=sys.stderr)
                return 2
            headers[key.strip().lower()] = value.strip()
    compression = None if args.export_compression is None else args.export_compression == "gzip"
    logs_compression = (
        None if args.export_logs_compression is None else args.export_logs_compression == "gzip"
    )
    overrides: dict[str, Any] = {dest: getattr(args, dest) for dest, _, _ in _SERVE_FLAGS}
    overrides.update({k.removeprefix("old_"): v for k, v in vars(args).items() if k.startswith("old_")})
    for name in ("grpc", "http", "health", "prometheus"):
        if overrides[name] == "off":
            overrides[name] = ""
    try:
        config = ServiceConfig.load(
            args.config,
            export_protocol=args.export_protocol,
            export_headers=headers,
            export_compression=compression,
            export_logs_protocol=args.export_logs_protocol,
            export_logs_compression=logs_compression,
            **overrides,
        )
        # The judge stops waiting just before the scoring budget ends (deterministic verdict then).
        scorer = scorer_with_judge(settings_from_args(args), budget_seconds=config.scoring_budget_seconds)
    except ConfigError as error:
        print(f"otel-semloop: {error}", file=sys.stderr)
        return 2
    return serve(config, scorer=scorer)


def _health(args: argparse.Namespace) -> int:
    import time
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + args.wait
    while True:
        try:
            with urllib.request.urlopen(args.url, timeout=3) as response:
                if 200 <= response.status < 300:
                    return 0
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() >= deadline:
            print(f"otel-semloop: {args.url} is not healthy", file=sys.stderr)
            return 1
        time.sleep(0.5)


class _Version(argparse.Action):
    """``--version``, looked up only when asked for: reading the installed package's
    metadata slows every other run's start-up."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from otel_semloop.evaluation import package_version

        print(f"{parser.prog} {package_version() or 'unknown'}")
        parser.exit()


if __name__ == "__main__":
    sys.exit(main())
