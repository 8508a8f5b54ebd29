"""``otel-semloop``: the command line.

``otel-semloop rescore INPUT... -o OUTPUT`` rescores exported OTLP files
(:mod:`otel_semloop.batch`; exit status in :mod:`otel_semloop.batch.run`);
``otel-semloop serve`` runs the collector plugin (:mod:`otel_semloop.service`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from otel_semloop.errors import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "rescore":
        return _rescore(args)
    if args.command == "serve":
        return _serve(args)
    parser.print_help()
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otel-semloop", description="Detect AI agents stuck in loops from their OpenTelemetry traces."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command")
    _add_rescore(sub)
    _add_serve(sub)
    return parser


def _add_rescore(sub: argparse._SubParsersAction) -> None:
    from otel_semloop.batch.run import add_arguments

    rescore = sub.add_parser(
        "rescore",
        help="score the agent traces in exported OTLP files",
        description="Score every agent trace in exported OTLP files (JSON lines or protobuf, plain, gzip "
        "or zstd) and write the spans back out with the verdict on each trace's root span. Exit status: "
        "0 ok, 1 a loop was found (--fail-on-loop), 2 usage or input problems, 3 output not written.",
    )
    add_arguments(rescore)


def _add_serve(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the collector plugin: OTLP in, loop verdicts written onto the spans, OTLP out",
        description="Receive OTLP traces (gRPC and HTTP), score every finished agent trace for loops, "
        "write the verdict onto its spans and forward every span once to --export-endpoint. "
        "Runs until SIGINT/SIGTERM, then drains. Flags override the --config file.",
    )
    serve.add_argument("--config", metavar="FILE", help="TOML file with the options below (a [serve] table)")
    serve.add_argument(
        "--grpc",
        metavar="HOST:PORT",
        help="OTLP/gRPC listen address ('off' to disable); default 127.0.0.1:4317",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="OTLP/HTTP listen address ('off' to disable); default 127.0.0.1:4318",
    )
    serve.add_argument("--export-endpoint", metavar="URL", help="downstream OTLP endpoint (required)")
    serve.add_argument("--export-protocol", choices=("grpc", "http/protobuf"), help="default grpc")
    serve.add_argument(
        "--export-header",
        action="append",
        metavar="KEY=VALUE",
        help="header / gRPC metadata for the downstream (repeatable)",
    )
    serve.add_argument("--export-compression", choices=("gzip", "none"), help="default none")
    serve.add_argument(
        "--idle",
        type=float,
        metavar="SECONDS",
        help="release a trace without a root after this long without spans (default 120)",
    )
    serve.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        help="wait after a trace's last span once its root arrived (default 2)",
    )
    serve.add_argument("--scoring-budget", type=float, metavar="SECONDS", help="default 5")
    serve.add_argument("--drain-timeout", type=float, metavar="SECONDS", help="default 30")
    serve.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))


def _rescore(args: argparse.Namespace) -> int:
    from otel_semloop.batch.run import run

    return run(args)


def _serve(args: argparse.Namespace) -> int:
    import logging

    try:
        from otel_semloop.service import ServiceConfig, serve
    except ImportError as error:
        print(
            f"otel-semloop: serve needs the collector extra (pip install 'otel-semloop[collector]'): {error}",
            file=sys.stderr,
        )
        return 2
    headers = None
    if args.export_header:
        headers = {}
        for item in args.export_header:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                print(f"otel-semloop: --export-header {item!r}: expected KEY=VALUE", file=sys.stderr)
                return 2
            headers[key.strip()] = value.strip()
    compression = None if args.export_compression is None else args.export_compression == "gzip"
    try:
        config = ServiceConfig.load(
            args.config,
            grpc=None if args.grpc is None else ("" if args.grpc == "off" else args.grpc),
            http=None if args.http is None else ("" if args.http == "off" else args.http),
            export_endpoint=args.export_endpoint,
            export_protocol=args.export_protocol,
            export_headers=headers,
            export_compression=compression,
            idle=args.idle,
            grace=args.grace,
            scoring_budget=args.scoring_budget,
            drain_timeout=args.drain_timeout,
        )
    except ConfigError as error:
        print(f"otel-semloop: {error}", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return serve(config)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("otel-semloop")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
