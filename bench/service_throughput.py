"""Sustained throughput of ``otel-semloop serve`` beside a pass-through floor, in one run.

Several sender processes send agent traces (an ``invoke_agent`` root, then ``chat`` and
``execute_tool`` spans; half of them loop) over OTLP/gRPC as fast as they are acknowledged
(backing off on UNAVAILABLE for the RetryInfo delay the service sends, as the OTel
exporters do); the next hop is a real
OTLP/gRPC receiver in its own process, all on loopback. Two services are measured side by
side in each round:

* ``floor``: a pass-through service that only decodes each request and forwards it;
* ``serve``: ``otel-semloop serve`` with the default detectors (receive, group, score,
  write back, export).

Printed per round and as medians: acknowledged spans/s, the ratio serve/floor, CPU
microseconds per span, the share of agent traces that went out scored (not ``unscored``),
spans lost (acknowledged but never received) and duplicated, and the service's RSS
(start, peak, end: flat means no growth over the run).

``--logs``: each traces request follows a logs request holding its traces' GenAI log
records (two per chat span, as ``opentelemetry-instrumentation-openai-v2`` emits them),
to both services; also printed: log records acknowledged per second, lost and duplicated.

    python bench/service_throughput.py                      # 3 rounds of 15 s
    python bench/service_throughput.py --duration 300 --rounds 1   # the 5-minute RSS run
    python bench/service_throughput.py --against main       # and main's service, each round
    python bench/service_throughput.py --logs               # logs traffic beside the traces

Targets (issue 13): serve >= 0.2x the floor's spans/s, >= 95% of agent traces scored,
RSS flat and < 1 GB, nothing lost or duplicated.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

from checkout import extracted
from service_support import ROOT, Downstream, Floor, Serve, cpu_of, median, run_senders

MIB = 1 << 20


def _measure_serve(args: argparse.Namespace, code: str | None) -> dict[str, float]:
    """One ``otel-semloop serve`` (its package from directory ``code``, else this tree)
    under the senders: its rate, CPU per span, verdicts, losses and RSS."""
    downstream = Downstream()
    serve = Serve(
        [
            "--grpc", "127.0.0.1:0", "--http", "off", "--export-endpoint", downstream.endpoint,
            "--grace-seconds", str(args.grace), *args.serve_args,
        ],
        env={"PYTHONPATH": f"{code}{os.pathsep}{ROOT}"} if code else {},
        cwd=code,
    )  # fmt: skip
    cpu0 = serve.cpu_seconds()
    sent = run_senders(
        serve.grpc_port,
        args.senders,
        args.duration,
        args.traces_per_request,
        args.rounds_per_trace,
        logs=args.logs,
    )
    serve_cpu = serve.cpu_seconds() - cpu0
    rss = [r for _, r in serve.rss]
    code = serve.stop()
    got = downstream.stop()
    labels = got["labels"]
    roots = sum(labels.values())
    scored = sum(n for label, n in labels.items() if label in ("loop", "suspected", "no_loop"))
    return {
        "spans_s": sent["acked"] / args.duration,
        "us_per_span": serve_cpu / max(1, sent["acked"]) * 1e6,
        "scored_pct": 100.0 * scored / roots if roots else 0.0,
        "refusals": sent["refused"],
        "acked": sent["acked"],
        "lost": max(0, sent["acked"] - got["unique"]),
        "duplicated": got["duplicated"],
        "log_records_s": sent["log_records_acked"] / args.duration,
        "log_records_lost": max(0, sent["log_records_acked"] - got["log_records_unique"]),
        "log_records_duplicated": got["log_records_duplicated"],
        "rss_start_mb": (rss[min(len(rss) - 1, 8)] if rss else 0) / MIB,
        "rss_peak_mb": max(rss, default=0) / MIB,
        "rss_end_mb": (rss[-1] if rss else 0) / MIB,
        "exit": code,
    }


def one_round(args: argparse.Namespace, against: str | None) -> dict[str, float]:
    # -- the floor
    downstream = Downstream()
    floor = Floor(downstream.port)
    cpu0 = cpu_of(floor.pid)
    sent = run_senders(
        floor.grpc_port,
        args.senders,
        args.duration,
        args.traces_per_request,
        args.rounds_per_trace,
        logs=args.logs,
    )
    floor_cpu = cpu_of(floor.pid) - cpu0
    floor.stop()
    downstream.stop()
    floor_rate = sent["acked"] / args.duration

    # -- the service (and the same service at another revision, when asked)
    serve = _measure_serve(args, None)
    result = {
        "floor_spans_s": floor_rate,
        "floor_us_per_span": floor_cpu / max(1, floor_rate * args.duration) * 1e6,
        "serve_spans_s": serve["spans_s"],
        "ratio": serve["spans_s"] / floor_rate if floor_rate else 0.0,
        "serve_us_per_span": serve["us_per_span"],
        **{key: serve[key] for key in serve if key not in ("spans_s", "us_per_span")},
    }
    if against is not None:
        base = _measure_serve(args, against)
        result["base_spans_s"] = base["spans_s"]
        result["base_us_per_span"] = base["us_per_span"]
        result["serve_vs_base"] = serve["spans_s"] / base["spans_s"] if base["spans_s"] else 0.0
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--duration", type=float, default=15.0, help="seconds of sending per service (default 15)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="side-by-side rounds (default 3)")
    parser.add_argument("--senders", type=int, default=4, help="sender processes (default 4)")
    parser.add_argument("--traces-per-request", type=int, default=8)
    parser.add_argument("--rounds-per-trace", type=int, default=4, help="chat+tool rounds per agent trace")
    parser.add_argument("--grace", type=float, default=0.5)
    parser.add_argument("--logs", action="store_true", help="send each trace's GenAI log records too")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="also run the service of git revision REV (its otel_semloop/ extracted) in each round",
    )
    parser.add_argument("serve_args", nargs="*", help="extra `serve` flags after --")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        against = str(stack.enter_context(extracted(args.against))) if args.against else None
        run(args, against)


def run(args: argparse.Namespace, against: str | None) -> None:
    spans_per_trace = 1 + 2 * args.rounds_per_trace
    print(
        f"{args.senders} senders x {args.duration:g} s, {args.traces_per_request} agent traces of "
        f"{spans_per_trace} spans per request; {args.rounds} round(s)"
    )
    header = (
        "round  floor/s   serve/s  ratio  floor us/span  serve us/span  scored%  lost  dup  "
        "refusals  rss MB start/peak/end  exit"
    )
    print(header)
    results = []
    for n in range(args.rounds):
        started = time.monotonic()
        r = one_round(args, against)
        results.append(r)
        print(
            f"{n + 1:>5}  {r['floor_spans_s']:>7.0f}  {r['serve_spans_s']:>8.0f}  {r['ratio']:>5.2f}  "
            f"{r['floor_us_per_span']:>13.1f}  {r['serve_us_per_span']:>13.1f}  {r['scored_pct']:>7.1f}  "
            f"{r['lost']:>4.0f}  {r['duplicated']:>3.0f}  {r['refusals']:>8.0f}  "
            f"{r['rss_start_mb']:>6.0f}/{r['rss_peak_mb']:.0f}/{r['rss_end_mb']:.0f}  {r['exit']:>4.0f}"
            f"   ({time.monotonic() - started:.0f} s)",
            flush=True,
        )
        if args.logs:
            print(
                f"       log records: {r['log_records_s']:.0f}/s acknowledged, "
                f"{r['log_records_lost']:.0f} lost, {r['log_records_duplicated']:.0f} duplicated",
                flush=True,
            )
        if against is not None:
            print(
                f"       {args.against}: {r['base_spans_s']:.0f} spans/s, "
                f"{r['base_us_per_span']:.1f} us/span;"
                f" this tree / {args.against} = {r['serve_vs_base']:.3f}",
                flush=True,
            )
    if len(results) > 1:
        m = {key: median([r[key] for r in results]) for key in results[0]}
        print(
            f"{'median':>5}  {m['floor_spans_s']:>7.0f}  {m['serve_spans_s']:>8.0f}  {m['ratio']:>5.2f}  "
            f"{m['floor_us_per_span']:>13.1f}  {m['serve_us_per_span']:>13.1f}  {m['scored_pct']:>7.1f}  "
            f"{m['lost']:>4.0f}  {m['duplicated']:>3.0f}  {m['refusals']:>8.0f}  "
            f"{m['rss_start_mb']:>6.0f}/{m['rss_peak_mb']:.0f}/{m['rss_end_mb']:.0f}"
        )
        if args.logs:
            print(
                f"median log records: {m['log_records_s']:.0f}/s, {m['log_records_lost']:.0f} lost, "
                f"{m['log_records_duplicated']:.0f} duplicated"
            )
        if against is not None:
            print(
                f"median {args.against}: {m['base_spans_s']:.0f} spans/s, "
                f"{m['base_us_per_span']:.1f} us/span;"
                f" this tree / {args.against} = {m['serve_vs_base']:.3f}"
            )


if __name__ == "__main__":
    main()
