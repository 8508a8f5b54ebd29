"""``otel-semloop rescore``: arguments in, exit status out.

Exit status, one meaning each (the table with examples: docs/rescore.md): 0 everything read
was valid OTLP and the output was written; 1 ``--fail-on-loop`` and a trace is a loop; 2 a
usage error or a problem in the input (malformed units unless ``--skip-invalid``, an
unreadable or unrecognised input, a truncated stream); 3 the output could not be written
(nothing partial is left in its place). Input problems win over loops: a run that could not
read everything says so first.

Streams: a ``--table`` is the only thing written to stdout (``--table csv > loops.csv`` is a
CSV file); the summary, problems and the judge's totals go to stderr then, as they do when
the output itself is stdout (``-o -``).

Size: the whole command in one place (arguments, the run with its error handling, the
summary, evaluations-only output and the judge's totals), so each exit status has one home.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, TextIO

from otel_semloop.batch.engine import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_MEMORY_BUDGET,
    DEFAULT_WINDOW,
    Engine,
    EngineOptions,
)
from otel_semloop.batch.inputs import (
    DEFAULT_MAX_UNIT_BYTES,
    InputError,
    ReadState,
    Source,
    expand_inputs,
    iter_units,
)
from otel_semloop.batch.logs import read_log_events, split_logs
from otel_semloop.batch.summary import Summary, summarize, write_table
from otel_semloop.batch.units import InputProblem, Spool
from otel_semloop.batch.worker import ScorerSpec, clean
from otel_semloop.batch.writer import Output, OutputError, UsageError, format_for, write_atomically
from otel_semloop.errors import ConfigError
from otel_semloop.scoring import collector_paused

__all__ = ["EXIT_INPUT", "EXIT_LOOPS", "EXIT_OK", "EXIT_OUTPUT", "add_arguments", "run"]

EXIT_OK = 0
EXIT_LOOPS = 1
EXIT_INPUT = 2
EXIT_OUTPUT = 3
_MAX_REPORTED = 50


def add_arguments(rescore: argparse.ArgumentParser) -> None:
    """The rescore options (the judge options are added beside them by the CLI)."""
    rescore.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="files or directories of OTLP JSON lines or length-prefixed protobuf (the Collector file "
        "exporter's formats), or single ExportTraceServiceRequest files; plain, gzip or zstd; '-' for stdin",
    )
    rescore.add_argument("-o", "--output", help="output file ('-' for stdout); .gz / .zst compress")
    rescore.add_argument(
        "--format", choices=("json", "proto"), help="output format (default: from the output name, else json)"
    )
    rescore.add_argument(
        "--mode",
        choices=("default", "lexical"),
        default="default",
        help="who decides the verdict: the default detectors and policy, or deepeval's lexical metric "
        "alone (the deepeval-compatible score is written either way); thresholds come from "
        "SEMLOOP_DETECT_* variables",
    )
    rescore.add_argument("-q", "--quiet", action="store_true", help="no summary, no progress bar")
    rescore.add_argument(
        "--skip-invalid", action="store_true", help="count malformed lines instead of failing"
    )
    rescore.add_argument("--fail-on-loop", action="store_true", help="exit 1 when any trace is a loop")
    rescore.add_argument(
        "--only-loops", action="store_true", help="the table lists loops and suspected loops only"
    )
    rescore.add_argument(
        "--table", choices=("none", "text", "csv"), default="none", help="one row per scored trace"
    )
    rescore.add_argument("--summary", metavar="FILE", help="write the summary as JSON")
    rescore.add_argument("--report", metavar="FILE", help="write a self-contained HTML report")
    rescore.add_argument(
        "--emit",
        choices=("spans", "evaluations"),
        default="spans",
        help="spans: every span with the verdict written back; evaluations: only evaluation records "
        "(for traces a backend already stores)",
    )
    rescore.add_argument(
        "--evaluations-as",
        choices=("logs", "spans", "both"),
        default="logs",
        help="with --emit evaluations: log records with event_name gen_ai.evaluation.result, carrier "
        "spans linked to each root, or both (both needs --export-endpoint)",
    )
    rescore.add_argument(
        "--export-endpoint", metavar="URL", help="send evaluation records to this OTLP endpoint"
    )
    rescore.add_argument(
        "--export-protocol",
        choices=("http/protobuf", "grpc"),
        default="http/protobuf",
        help="OTLP protocol of --export-endpoint: a base URL for http/protobuf, host:port (or "
        "http:// / https:// for TLS) for grpc (default %(default)s)",
    )
    rescore.add_argument(
        "--window",
        type=int,
        default=DEFAULT_WINDOW,
        metavar="LINES",
        help=f"a trace whose root was seen is complete after this many lines without its spans "
        f"(default {DEFAULT_WINDOW})",
    )
    rescore.add_argument(
        "--memory-budget",
        type=float,
        default=DEFAULT_MEMORY_BUDGET / (1 << 20),
        metavar="MIB",
        help="held input before open traces spill to disk (default %(default)s)",
    )
    rescore.add_argument(
        "--max-line-bytes",
        type=int,
        default=DEFAULT_MAX_UNIT_BYTES,
        metavar="BYTES",
        help="longest line/message decompressed into memory; longer ones are copied through unscored",
    )
    rescore.add_argument("--workers", type=int, default=0, help="scoring processes (default: one per core)")
    rescore.add_argument(
        "--chunk-mb",
        type=float,
        default=DEFAULT_CHUNK_BYTES / (1 << 20),
        metavar="MIB",
        help="an input larger than this is scored in the worker processes (default %(default)s)",
    )
    rescore.add_argument("--spill-dir", metavar="DIR", help="where to spill (default: the temp directory)")
    rescore.add_argument("--engine", choices=("local", "dask"), default="local", help="where to run")
    rescore.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --engine dask: a running Dask scheduler"
    )


def scorer_spec(args: argparse.Namespace) -> ScorerSpec:
    """The scorer every worker builds (raises ConfigError for bad SEMLOOP_DETECT_*). Options
    that choose another scorer (a judge) set ``factory``/``options`` on the spec here."""
    from otel_semloop.batch.worker import init_worker
    from otel_semloop.detectors.config import DetectorConfig
    from otel_semloop.judges.settings import settings_from_args

    spec = ScorerSpec(mode=args.mode, config=DetectorConfig.from_env())
    judge = settings_from_args(args)
    if not judge.enabled:
        spec.build()  # validate here, once, before any worker starts
        return spec
    # A judge holds a connection pool, an answer cache and its totals: it runs in this process
    # (one request per trace, many in flight), so the scorer is built once, here, and reused.
    args.workers = 1
    spec = ScorerSpec(mode=args.mode, config=spec.config, factory=_judged_scorer, options=(("judge", judge),))
    init_worker(spec)
    return spec


def _judged_scorer(spec: ScorerSpec) -> Any:
    from otel_semloop.judges.settings import scorer_with_judge
    from otel_semloop.scoring import DetectorScorer

    base = DetectorScorer(mode=spec.mode, config=spec.config)  # type: ignore[arg-type]
    return scorer_with_judge(dict(spec.options)["judge"], base)


def _close_judge(stream: TextIO) -> None:
    """Print the judge's totals (calls, calls saved, tokens, cost, latency) and close it."""
    from otel_semloop.batch import worker

    judge = getattr(worker._SCORER, "judge", None)
    if judge is None:
        return
    print(judge.stats.summary(judge.name, judge.model), file=stream)
    judge.close()


def _err(message: str) -> None:
    print(f"otel-semloop: {message}", file=sys.stderr)


class _Progress:
    """A progress bar on a terminal (bytes, spans/s, traces, loops), erased when done;
    nothing when stderr is not a terminal."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.progress: Any = None
        self._last = 0.0
        self._start = time.monotonic()
        if not enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
        except ImportError:  # the batch extra brings rich
            return
        self.progress = Progress(
            TextColumn("rescore"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
            auto_refresh=False,
        )
        self.progress.start()
        self.task = self.progress.add_task("rescore", total=total or None, info="")

    def update(self, read: int, stats: Any) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if now - self._last < 0.2:
            return
        self._last = now
        rate = stats.spans / max(now - self._start, 1e-9)
        info = f"{rate:,.0f} spans/s, {stats.traces:,} traces, {stats.loops:,} loops"
        self.progress.update(self.task, completed=read, info=info)
        self.progress.refresh()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        inputs = expand_inputs(args.inputs)
        # Logs files beside the traces files: their GenAI records join their spans.
        sources, log_sources = split_logs(inputs, args.max_line_bytes)
    except InputError as exc:
        _err(str(exc))
        return EXIT_INPUT
    if args.emit == "spans" and not args.output:
        _err("rescore needs -o OUTPUT ('-' for stdout)")
        return EXIT_INPUT
    if args.emit == "evaluations" and not (args.output or args.export_endpoint):
        _err("--emit evaluations needs -o OUTPUT or --export-endpoint URL")
        return EXIT_INPUT
    if args.evaluations_as == "both" and not args.export_endpoint:
        _err("--evaluations-as both needs --export-endpoint (a file holds one signal)")
        return EXIT_INPUT
    if args.window < 1 or args.memory_budget <= 0 or args.max_line_bytes < 1 or args.chunk_mb <= 0:
        _err("--window, --memory-budget, --max-line-bytes and --chunk-mb must be positive")
        return EXIT_INPUT
    try:
        spec = scorer_spec(args)
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_INPUT
    fmt = format_for(args.output or "", args.format)
    output = None
    try:
        if args.output:
            output = Output(args.output, fmt, inputs)
    except UsageError as exc:
        _err(str(exc))
        return EXIT_INPUT
    except OutputError as exc:
        _err(str(exc))
        return EXIT_OUTPUT
    if args.engine == "dask" and any(s.path == "-" for s in sources):
        _err("--engine dask reads files, not stdin")
        return EXIT_INPUT
    if log_sources and args.engine == "dask":
        _err("logs files are read with --engine local only")
        return EXIT_INPUT
    if args.engine == "dask" and not _dask_installed():
        return EXIT_INPUT
    options = EngineOptions(
        window=args.window,
        memory_budget=int(args.memory_budget * (1 << 20)),
        workers=args.workers,
        spec=spec,
        spill_dir=args.spill_dir,
        output_format=fmt,
        chunk_bytes=max(1, int(args.chunk_mb * (1 << 20))),
    )
    state = ReadState([], Spool())
    if log_sources:
        options.log_events = read_log_events(log_sources, state, args.max_line_bytes)
    sizes = [s.size() for s in sources]
    total = sum(sizes) if all(sizes) else 0  # a stream or a special file: size unknown
    progress = _Progress(sum(sizes), not args.quiet and sys.stderr.isatty())
    write = output.write_unit if args.emit == "spans" and output is not None else _discard
    try:
        if output is not None:
            output.open()
        if args.engine == "dask":
            from otel_semloop.batch.dask_engine import run_dask

            stats = run_dask(
                sources, options, write, state, max_unit_bytes=args.max_line_bytes, scheduler=args.scheduler
            )
        else:
            engine = Engine(options, write)
            try:
                # The reading process's objects (parsed lines, the buffer's entries, the
                # results) hold no cycles: the collector would walk the held lines for nothing.
                with collector_paused():
                    engine.expect(total)
                    for unit in iter_units(sources, state, max_unit_bytes=args.max_line_bytes):
                        engine.feed(unit)
                        progress.update(state.compressed_read, engine.stats)
                    stats = engine.finish()
            finally:
                engine.close()
        if args.emit == "evaluations":
            _emit(args, stats.rows, output, fmt)
        if output is not None:
            output.commit()
    except OutputError as exc:
        if output is not None:
            output.abort()
        _err(str(exc))
        _silence_stdout(args)
        return EXIT_OUTPUT
    except RuntimeError as exc:  # the export endpoint refused
        if output is not None:
            output.abort()
        _err(str(exc))
        return EXIT_OUTPUT
    except KeyboardInterrupt:
        if output is not None:
            output.abort()
        _err("interrupted; no output written")
        return 130
    except Exception as exc:  # a bug: still leave nothing partial behind, and say so
        if output is not None:
            output.abort()
        _err(f"internal error ({type(exc).__name__}: {clean(str(exc), 300)}); no output written")
        raise
    finally:
        progress.close()
        state.spool.close()
    _annotate_phoenix(stats.rows)
    code = _finish(args, sources, state, stats, output, time.monotonic() - started)
    _close_judge(_text_stream(args))
    return code


def _fate(problem: InputProblem, left_out: set[str], fmt: str) -> str:
    """What the output holds of a malformed unit: the writer copies it (converted, unscored,
    when the output format differs and it parses) or names it among those it left out."""
    unit_where = problem.where
    for where in left_out:
        if unit_where == where or unit_where.startswith(where + " "):
            return f"left out: it cannot be written as {fmt}"
    return "copied through unscored"


def _text_stream(args: argparse.Namespace) -> TextIO:
    """Where the summary and the judge's totals go: stdout, unless stdout holds the output
    (``-o -``) or a table, which must stay parseable."""
    return sys.stderr if args.output == "-" or args.table != "none" else sys.stdout


def _dask_installed() -> bool:
    """Whether ``--engine dask`` can run; if not, says which extra to install (as ``serve``
    does for its extra)."""
    try:
        import dask.bag  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as error:
        _err(f"--engine dask needs the dask extra (pip install 'otel-semloop[dask]'): {error}")
        return False
    return True


def _discard(*_: Any) -> None:
    pass


def _annotate_phoenix(rows: list[Any]) -> None:
    """With ``SEMLOOP_PHOENIX_URL`` set: each scored trace's evaluation record as a Phoenix
    span annotation on its root (the spans are expected in Phoenix already, from the original
    export). Spans Phoenix does not know yet are handed to its own retrying queue after 10 s.
    Without the variable nothing is imported (the HTTP client stack is slow to import)."""
    if not os.environ.get("SEMLOOP_PHOENIX_URL", "").strip():
        return
    from otel_semloop.evaluation import EvaluationRecord
    from otel_semloop.phoenix import PhoenixAnnotator

    annotator = PhoenixAnnotator.from_env()
    if annotator is None:
        return
    annotator.retry_seconds = 10.0
    for row in rows:
        if row.root_span_id and row.evaluation:
            annotator.submit(EvaluationRecord(row.trace_id, row.root_span_id, row.event_ns, row.evaluation))
    annotator.flush(annotator.retry_seconds + 30.0)
    annotator.shutdown()
    print(
        f"otel-semloop: Phoenix annotations: {annotator.sent} stored, {annotator.deferred} queued by "
        f"Phoenix for spans it has not ingested yet, {annotator.dropped} dropped",
        file=sys.stderr,
    )


def _silence_stdout(args: argparse.Namespace) -> None:
    """After a closed stdout pipe, keep Python from printing a second error at exit."""
    if args.output == "-":
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass


def _emit(args: argparse.Namespace, rows: list[Any], output: Output | None, fmt: str) -> None:
    from otel_semloop.batch.emit import export_evaluations, records_for

    if output is not None:
        carrier = "spans" if args.evaluations_as == "spans" else "logs"
        for data in records_for(rows, carrier, fmt):
            output.write_bytes(data)
    if args.export_endpoint:
        export_evaluations(rows, args.export_endpoint, args.evaluations_as, protocol=args.export_protocol)


def _finish(
    args: argparse.Namespace,
    sources: list[Source],
    state: ReadState,
    stats: Any,
    output: Output | None,
    seconds: float,
) -> int:
    problems = list(state.problems)
    malformed = list(stats.malformed)
    summary: Summary = summarize(
        stats.rows,
        spans=stats.spans,
        units=stats.units,
        traces=stats.traces,
        late_spans=stats.late_spans,
        malformed=len(malformed),
        input_problems=[clean(str(p), 500) for p in problems],
        spilled_traces=stats.spilled_traces,
        bytes_read=state.compressed_read,
        seconds=seconds,
        workers=stats.workers,
    )
    for problem in problems:
        _err(clean(str(problem), 500))
    if malformed and not args.skip_invalid:
        left_out = output.left_out if output is not None else set()
        fmt = output.fmt if output is not None else ""
        for problem in malformed[:_MAX_REPORTED]:
            _err(f"malformed ({_fate(problem, left_out, fmt)}): {clean(str(problem), 500)}")
        if len(malformed) > _MAX_REPORTED:
            _err(f"... and {len(malformed) - _MAX_REPORTED} more malformed units")
    if args.table != "none":  # stdout, unless the output is there (then stderr)
        table_stream = sys.stderr if args.output == "-" else sys.stdout
        write_table(stats.rows, table_stream, args.table, args.only_loops)
    if not args.quiet:
        summary.write(_text_stream(args))
    if args.summary:
        try:
            write_atomically(args.summary, (json.dumps(summary.as_dict(), indent=2) + "\n").encode())
        except OSError as exc:
            _err(f"cannot write {args.summary}: {exc.strerror or exc}")
            return EXIT_OUTPUT
    if args.report:
        from otel_semloop.batch.report import write_report

        try:
            write_report(args.report, summary, stats.rows)
        except OSError as exc:
            _err(f"cannot write {args.report}: {exc.strerror or exc}")
            return EXIT_OUTPUT
    if problems or (malformed and not args.skip_invalid):
        return EXIT_INPUT
    if args.fail_on_loop and summary.loops:
        return EXIT_LOOPS
    return EXIT_OK
