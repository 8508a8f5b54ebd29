"""CPU cost of ``SemloopSpanProcessor`` over ``BatchSpanProcessor`` alone: app thread and whole process.

    python bench/processor_overhead.py [--rounds 9] [--traces 120] [--io-ms 0.5] [--json]
    python bench/processor_overhead.py --against main     # this tree and main, 3 runs each
    python bench/processor_overhead.py --contention [--threads 32] [--rounds 3] [--traces 40]

One process, two pipelines, alternated round by round (the order flips every round so
neither always runs on a warmer heap):

* baseline: ``BatchSpanProcessor(exporter)``
* semloop:  ``SemloopSpanProcessor(BatchSpanProcessor(exporter))`` with default options
  and the default detectors (every trace is scored and written back off the app thread).

The exporter encodes every batch to OTLP protobuf (the real encoder of
``opentelemetry-exporter-otlp``) and discards the bytes: a real exporter's CPU and GIL use
without a network. The workload is agent-shaped: traces of 20 spans (an ``invoke_agent``
root, 9 rounds of a ``chat`` LLM span and an ``execute_tool`` span, one HTTP client span),
with GenAI attributes of realistic size (message JSON of a few hundred bytes, tool
arguments and results). A real agent waits on I/O (model and tool calls) inside those
spans; that wait is modelled by ``time.sleep(io_ms)`` inside every LLM and tool span,
which is when the background threads (BatchSpanProcessor's and semloop's) get the GIL.
Real model calls take 100 ms to seconds, so a short sleep is the harsher case.

What is measured per span:

* app CPU: ``time.thread_time_ns()``, the application thread's own CPU time (span
  creation, the processors' ``on_start``/``on_end``, GC triggered on this thread);
* process CPU: ``time.process_time()`` from the first span to the end of
  ``provider.shutdown()``, so it includes every thread: the application, semloop's worker
  and scoring threads (records, trace, detectors, lexical score, write-back copies) and
  the batch processor's export thread. This is what scoring really costs the host;
* wall minus I/O: wall time minus the nominal sleep time, i.e. what the app spent
  outside its modelled I/O, including waiting for the GIL held by background threads
  (that is where a worker thread's cost shows up) and the OS's sleep overshoot (equal on
  both sides, so it dilutes the ratio slightly).

Every run checks that the exporter received every span exactly once (each span id once,
none missing, none twice) and that semloop wrote a verdict on every trace's root.

Printed: the figures for both pipelines per round, the per-round ratios, and the median
ratio of each. Targets: app-thread CPU ratio at most 1.25, whole-process CPU ratio at
most 2.0.

``--contention``: many application threads (``--threads``, 32) run the same agent workload
at once, and every span call (the ``start_span`` and the ``end`` of each span, where the
processors' ``on_start``/``on_end`` run) is timed on its own thread. Printed per round:
the share of span calls that took over 10 ms with ``BatchSpanProcessor`` alone and with
semloop in front of it, side by side, and their ratio; then the median of the rounds.
Those stalls come from lock waits, the GIL and garbage collection of what the pipeline
keeps alive, so this is where the objects semloop holds per span show.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if "--code" in sys.argv:  # another revision's package first (see --against)
    sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from otel_semloop import SemloopSpanProcessor  # noqa: E402

SPANS_PER_TRACE = 20
TOOL_ROUNDS = 9


class EncodingExporter(SpanExporter):
    """Encodes each batch as an OTLP export request would be, then drops the bytes."""

    def __init__(self) -> None:
        self.spans = 0
        self.bytes = 0
        self.semloop_roots = 0
        self.seen: set[tuple[int, int]] = set()
        self.duplicates = 0

    def export(self, spans):  # type: ignore[no-untyped-def]
        self.bytes += len(encode_spans(spans).SerializeToString())
        self.spans += len(spans)
        for span in spans:
            key = (span.context.trace_id, span.context.span_id)
            if key in self.seen:
                self.duplicates += 1
            self.seen.add(key)
            if "semloop.label" in (span.attributes or {}):
                self.semloop_roots += 1
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


QUESTION = "Find the three most cited papers on retrieval augmented generation published in 2023."
LLM_OUTPUT = (
    "I searched the index and found candidate papers; next I will look up the citation counts "
    "for each candidate before ranking them and summarising the findings for the user."
)


def _attribute_sets(traces: int) -> list[list[dict]]:
    """Per trace, the attributes of its 20 spans, built before timing: serialising
    messages is the instrumentation's work, the same with or without semloop, and
    leaving it in would flatter the ratio."""
    input_messages = _messages("user", QUESTION)
    out = []
    for t in range(traces):
        spans: list[dict] = [
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "researcher",
                "gen_ai.system": "openai",
                "gen_ai.input.messages": input_messages,
            }
        ]
        for step in range(TOOL_ROUNDS):
            spans.append(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.response.id": f"chatcmpl-{t}-{step}",
                    "gen_ai.input.messages": input_messages,
                    "gen_ai.output.messages": _messages("assistant", f"{LLM_OUTPUT} (step {step})"),
                    "gen_ai.usage.input_tokens": 412 + step,
                    "gen_ai.usage.output_tokens": 57,
                    "gen_ai.response.finish_reasons": ("tool_calls",),
                }
            )
            spans.append(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "search_papers",
                    "gen_ai.tool.call.id": f"call_{t}_{step}",
                    "gen_ai.tool.call.arguments": json.dumps({"query": "retrieval augmented", "page": step}),
                    "gen_ai.tool.call.result": json.dumps(
                        [{"title": f"Paper {step}-{i}", "citations": 100 * i + step} for i in range(5)]
                    ),
                }
            )
        spans.append(
            {"http.request.method": "POST", "server.address": "reports.internal", "url.path": "/v1/report"}
        )
        out.append(spans)
    return out


def run_agent(tracer, workload: list[list[dict]], io_seconds: float, ids: set | None = None) -> int:  # type: ignore[no-untyped-def]
    """Run one agent per entry of ``workload``; returns the number of modelled I/O waits.
    ``ids`` collects the (trace id, span id) of every root span started."""
    sleeps = 0
    sleep = time.sleep
    start = tracer.start_as_current_span
    for attrs in workload:
        with start("invoke_agent researcher", attributes=attrs[0]) as root:
            if ids is not None:
                ids.add((root.get_span_context().trace_id, root.get_span_context().span_id))
            for step in range(TOOL_ROUNDS):
                with start("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attrs[1 + 2 * step]):
                    sleep(io_seconds)
                with start("execute_tool search_papers", attributes=attrs[2 + 2 * step]):
                    sleep(io_seconds)
                sleeps += 2
            with start("POST /v1/report", kind=SpanKind.CLIENT, attributes=attrs[-1]):
                pass
    return sleeps


def one_run(variant: str, traces: int, io_seconds: float, live_guard: str = "off") -> dict[str, float]:
    exporter = EncodingExporter()
    batch = BatchSpanProcessor(exporter)
    processor = batch if variant == "baseline" else SemloopSpanProcessor(batch, live_guard=live_guard)
    provider = TracerProvider(
        resource=Resource.create({"service.name": "bench-agent"}), shutdown_on_exit=False
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    roots: set[tuple[int, int]] = set()
    run_agent(tracer, _attribute_sets(2), io_seconds, roots)  # warm caches and threads
    processor.force_flush()  # the warm-up's scoring and export are not measured
    workload = _attribute_sets(traces)
    gc.collect()
    process0 = time.process_time()
    cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
    sleeps = run_agent(tracer, workload, io_seconds, roots)
    cpu = time.thread_time_ns() - cpu0
    wall = time.perf_counter_ns() - wall0
    provider.shutdown()
    process = time.process_time() - process0
    spans = traces * SPANS_PER_TRACE
    expected = (traces + 2) * SPANS_PER_TRACE
    if exporter.spans != expected or len(exporter.seen) != expected or exporter.duplicates:
        raise SystemExit(
            f"{variant}: exported {exporter.spans} spans ({len(exporter.seen)} distinct, "
            f"{exporter.duplicates} twice), expected each of {expected} exactly once"
        )
    if variant != "baseline" and exporter.semloop_roots != traces + 2:
        raise SystemExit(f"{variant}: {exporter.semloop_roots} verdicts for {traces + 2} traces")
    if not roots <= exporter.seen:
        raise SystemExit(f"{variant}: a root span was not exported")
    return {
        "cpu_us": cpu / spans / 1000,
        "process_us": process / spans * 1e6,
        "wall_us": wall / spans / 1000,
        "busy_us": (wall - sleeps * io_seconds * 1e9) / spans / 1000,
        "scored": exporter.semloop_roots,
    }


STALL_NS = 10_000_000


def _timed_agent(tracer, workload: list[list[dict]], io_seconds: float, durations: list[int]) -> None:  # type: ignore[no-untyped-def]
    """:func:`run_agent`'s spans, each span call's duration (start, end) appended in ns."""
    clock = time.perf_counter_ns
    sleep = time.sleep

    def span(name: str, attributes: dict, parent, kind: SpanKind, io: float):  # type: ignore[no-untyped-def]
        t0 = clock()
        current = tracer.start_span(name, context=parent, kind=kind, attributes=attributes)
        durations.append(clock() - t0)
        if io:
            sleep(io)
        return current

    def end(current) -> None:  # type: ignore[no-untyped-def]
        t0 = clock()
        current.end()
        durations.append(clock() - t0)

    from opentelemetry.trace import set_span_in_context

    for attrs in workload:
        root = span("invoke_agent researcher", attrs[0], None, SpanKind.INTERNAL, 0)
        inside = set_span_in_context(root)
        for step in range(TOOL_ROUNDS):
            end(span("chat gpt-4o-mini", attrs[1 + 2 * step], inside, SpanKind.CLIENT, io_seconds))
            end(
                span("execute_tool search_papers", attrs[2 + 2 * step], inside, SpanKind.INTERNAL, io_seconds)
            )
        end(span("POST /v1/report", attrs[-1], inside, SpanKind.CLIENT, 0))
        end(root)


def contention_run(variant: str, threads: int, traces: int, io_seconds: float) -> float:
    """The share of span calls over 10 ms with ``threads`` application threads, each
    running ``traces`` agent runs at once."""
    exporter = EncodingExporter()
    # a queue every span fits in: spans dropped by a full queue would flatter either side
    batch = BatchSpanProcessor(exporter, max_queue_size=threads * traces * SPANS_PER_TRACE)
    processor = batch if variant == "baseline" else SemloopSpanProcessor(batch)
    provider = TracerProvider(
        resource=Resource.create({"service.name": "bench-agent"}), shutdown_on_exit=False
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    workloads = [_attribute_sets(traces) for _ in range(threads)]
    per_thread: list[list[int]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def app(index: int) -> None:
        start.wait()
        _timed_agent(tracer, workloads[index], io_seconds, per_thread[index])

    gc.collect()
    workers = [threading.Thread(target=app, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    provider.shutdown()
    calls = [d for durations in per_thread for d in durations]
    expected = threads * traces * SPANS_PER_TRACE
    if exporter.spans != expected or exporter.duplicates:
        raise SystemExit(f"{variant}: exported {exporter.spans} spans, expected {expected} once each")
    return sum(d > STALL_NS for d in calls) / len(calls)


def contention(args: argparse.Namespace) -> None:
    io_seconds = args.io_ms / 1000
    print(
        f"{args.threads} application threads x {args.traces} traces x {SPANS_PER_TRACE} spans at once, "
        f"{args.rounds} rounds alternating; each LLM/tool span waits {args.io_ms} ms. "
        f"Share of span calls (start_span, end) over {STALL_NS // 1_000_000} ms:"
    )
    print(f"{'round':>5}  {'baseline':>9}  {'semloop':>9}  {'ratio':>7}")
    bases, sems, ratios = [], [], []
    for r in range(args.rounds):
        order = ("baseline", "semloop") if r % 2 == 0 else ("semloop", "baseline")
        result = {
            variant: contention_run(variant, args.threads, args.traces, io_seconds) for variant in order
        }
        base, sem = result["baseline"], result["semloop"]
        ratio = sem / base if base else float("inf")
        bases.append(base)
        sems.append(sem)
        ratios.append(ratio)
        print(f"{r + 1:>5}  {base:>9.2%}  {sem:>9.2%}  {ratio:>7.2f}")
    print(
        f"median  {statistics.median(bases):>8.2%}  {statistics.median(sems):>9.2%}  "
        f"{statistics.median(ratios):>7.2f}"
    )
    if args.json:
        print(json.dumps({"baseline": bases, "semloop": sems, "ratios": ratios}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--traces", type=int, default=120, help="agent runs per measured run")
    parser.add_argument(
        "--io-ms",
        type=float,
        default=None,
        help="modelled I/O wait inside each LLM/tool span (default 0.5; 0 with --contention: busy threads)",
    )
    parser.add_argument(
        "--live-guard",
        choices=["off", "warn", "stop"],
        default="off",
        help="semloop's live guard (off by default; on, it runs detectors on the app thread)",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    parser.add_argument(
        "--contention",
        action="store_true",
        help="instead: many application threads at once; the share of span calls over 10 ms",
    )
    parser.add_argument("--threads", type=int, default=32, help="with --contention: application threads")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="run this bench for this tree and for git revision REV in turn, 3 times each, and compare",
    )
    parser.add_argument("--code", help=argparse.SUPPRESS)  # read before the imports
    args = parser.parse_args()
    if args.contention:
        args.io_ms = 0.0 if args.io_ms is None else args.io_ms
        contention(args)
        return
    args.io_ms = 0.5 if args.io_ms is None else args.io_ms
    if args.against:
        compare(args)
        return
    io_seconds = args.io_ms / 1000
    print(
        f"{args.traces} traces x {SPANS_PER_TRACE} spans per run, {args.rounds} rounds alternating; "
        f"semloop live guard {args.live_guard}; "
        f"each LLM/tool span waits {args.io_ms} ms (time.sleep) to model the agent's I/O.\n"
        f"Per span: app = application thread's CPU (thread_time); process = whole-process CPU "
        f"(process_time, all threads, first span to end of shutdown); busy = app wall minus the modelled I/O."
    )
    header = ("round", "base app", "semloop app", "ratio", "base proc", "semloop proc", "ratio", "busy ratio")
    widths = (5, 9, 11, 6, 9, 12, 6, 10)
    print("  ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    cpu_ratios, process_ratios, busy_ratios, rows = [], [], [], []
    for r in range(args.rounds):
        order = ("baseline", "semloop") if r % 2 == 0 else ("semloop", "baseline")
        result = {variant: one_run(variant, args.traces, io_seconds, args.live_guard) for variant in order}
        base, sem = result["baseline"], result["semloop"]
        if sem["scored"] < args.traces:
            raise SystemExit(f"semloop scored {sem['scored']} traces, expected {args.traces}+")
        cpu_ratio = sem["cpu_us"] / base["cpu_us"]
        process_ratio = sem["process_us"] / base["process_us"]
        busy_ratio = sem["busy_us"] / base["busy_us"]
        cpu_ratios.append(cpu_ratio)
        process_ratios.append(process_ratio)
        busy_ratios.append(busy_ratio)
        rows.append(result)
        print(
            f"{r + 1:>5}  {base['cpu_us']:>7.1f}us  {sem['cpu_us']:>9.1f}us  {cpu_ratio:>6.3f}  "
            f"{base['process_us']:>7.1f}us  {sem['process_us']:>10.1f}us  {process_ratio:>6.3f}  "
            f"{busy_ratio:>10.3f}"
        )
    median_cpu = statistics.median(cpu_ratios)
    median_process = statistics.median(process_ratios)
    median_busy = statistics.median(busy_ratios)
    app_ok, process_ok = median_cpu <= 1.25, median_process <= 2.0
    print(
        f"median ratio, app-thread CPU per span:            {median_cpu:.3f}  (target <= 1.25) "
        f"-> {'OK' if app_ok else 'MISSED'}"
    )
    print(
        f"median ratio, whole-process CPU per span:         {median_process:.3f}  (target <= 2.0) "
        f"-> {'OK' if process_ok else 'MISSED'}"
    )
    print(f"median ratio, app-thread wall minus I/O per span: {median_busy:.3f}")
    base_process = statistics.median(r["baseline"]["process_us"] for r in rows)
    semloop_process = statistics.median(r["semloop"]["process_us"] for r in rows)
    print(
        f"median whole-process CPU per span: baseline {base_process:.1f}us, semloop {semloop_process:.1f}us "
        f"(semloop's own: {semloop_process - base_process:.1f}us per span)"
    )
    base_wall = statistics.median(r["baseline"]["wall_us"] for r in rows)
    semloop_wall = statistics.median(r["semloop"]["wall_us"] for r in rows)
    print(f"median wall per span incl. I/O: baseline {base_wall:.1f}us, semloop {semloop_wall:.1f}us")
    if args.json:
        print(
            json.dumps(
                {
                    "median_cpu_ratio": median_cpu,
                    "median_process_ratio": median_process,
                    "median_busy_ratio": median_busy,
                    "rounds": rows,
                }
            )
        )


def _medians(code: str | None, args: argparse.Namespace) -> dict[str, float]:
    """One run of this bench in a subprocess (the package from ``code``, else this tree)."""
    command = [sys.executable, __file__, "--json", "--rounds", str(args.rounds), "--traces", str(args.traces)]
    command += ["--io-ms", str(args.io_ms), "--live-guard", args.live_guard]
    if code:
        command += ["--code", code]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compare(args: argparse.Namespace) -> None:
    """This tree and ``args.against`` side by side: each ratio to BatchSpanProcessor alone
    (measured in the same process as its baseline), 3 runs each in turn, medians."""
    from checkout import extracted

    runs: dict[str, list[dict[str, float]]] = {"this": [], args.against: []}
    with extracted(args.against) as code:
        for n in range(3):
            for name, where in (("this", None), (args.against, str(code))):
                result = _medians(where, args)
                runs[name].append(result)
                print(
                    f"run {n + 1} {name:>10}: app-thread CPU ratio {result['median_cpu_ratio']:.3f}, "
                    f"whole-process CPU ratio {result['median_process_ratio']:.3f}",
                    flush=True,
                )
    this_app = statistics.median(r["median_cpu_ratio"] for r in runs["this"])
    this_proc = statistics.median(r["median_process_ratio"] for r in runs["this"])
    ref_app = statistics.median(r["median_cpu_ratio"] for r in runs[args.against])
    ref_proc = statistics.median(r["median_process_ratio"] for r in runs[args.against])
    print(f"median app-thread CPU ratio:     this {this_app:.3f}, {args.against} {ref_app:.3f}")
    print(
        f"median whole-process CPU ratio: this {this_proc:.3f}, {args.against} {ref_proc:.3f} "
        f"(this / {args.against}: {this_proc / ref_proc:.3f})"
    )


if __name__ == "__main__":
    main()
