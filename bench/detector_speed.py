"""Cost per step of the full default scoring, on traces of 10 to 10,000 steps.

    python bench/detector_speed.py [--runs 7] [--sizes 10 100 1000 10000]

Each synthetic trace is a realistic mix: LLM outputs of 50-150 words alternating with tool
calls (reads, searches, test runs, edits) whose arguments and results vary, with some
repetition (about one tool call in seven repeats an earlier one, one LLM output in ten
repeats the previous one). For each size the full default ``Scorer().score(trace)`` is
timed (the deterministic detectors, the policy, and the deepeval-compatible lexical score
with its tree view), median of ``--runs`` runs, each run scoring enough copies to last a
few tens of milliseconds. Detectors and lexical score are also timed on their own.

The promise checked: per-step cost of the whole default scoring (detectors, policy and
the lexical score) at 10,000 steps is at most 2x that at 10 (linear growth, no hidden
quadratic term). Exit status 1 when it is broken. The lexical score's own ratio is
printed beside it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otel_semloop.detectors.lexical import LexicalDetector  # noqa: E402
from otel_semloop.detectors.suite import DetectorSuite  # noqa: E402
from otel_semloop.model import Step, StepKind, Trace  # noqa: E402
from otel_semloop.scoring import Scorer  # noqa: E402

#: The promise: per-step cost at the largest size over that at the smallest.
MAX_RATIO = 2.0
#: Each timed run scores the same trace until about this many steps were scored, so the
#: small sizes are not timing a single microsecond-scale call.
STEPS_PER_RUN = 20_000

_WORD_TEXT = (
    "the handler session request response guard middleware checkout order billing invoice "
    "cart total fixture test suite failure error trace span agent tool call result function "
    "module import export config database query index cache retry timeout token budget plan "
    "read write search find inspect confirm verify patch apply commit branch review deploy "
    "because since therefore however next first then finally looks seems appears probably "
    "value field record payload schema migration version client server endpoint route path "
    "user guest admin account permission role scope limit offset page cursor batch worker "
    "queue job event stream log line chunk output input argument parameter option flag"
)
WORDS = tuple(_WORD_TEXT.split(" "))
TOOLS = ("read_file", "grep", "run_tests", "edit_file", "list_dir", "http_get")
MODULES = ("orders", "billing", "cart", "session", "auth", "export", "worker", "api")
NS = 1_000_000_000


def synthetic_trace(n_steps: int, seed: int = 7) -> Trace:
    """A trace of ``n_steps`` LLM and tool steps (plus the root agent), deterministic per seed."""
    rng = random.Random(seed * 100_003 + n_steps)
    steps: list[Step] = []
    tool_calls: list[tuple[str, dict, str]] = []
    last_text = ""
    clock = 1_767_225_600 * NS
    for i in range(n_steps):
        if i % 2 == 0:
            if last_text and rng.random() < 0.10:
                text = last_text
            else:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 150))) + "."
            last_text = text
            step = Step(
                StepKind.LLM, "chat", output=text, output_text=text, input_tokens=900, output_tokens=120
            )
        else:
            if tool_calls and rng.random() < 0.15:
                name, args, result = rng.choice(tool_calls[-50:])
            else:
                name = rng.choice(TOOLS)
                module = rng.choice(MODULES)
                args = {
                    "path": f"src/{module}/{rng.choice(WORDS)}_{rng.randint(1, 99)}.py",
                    "limit": rng.choice((50, 100)),
                }
                result = f"{rng.randint(1, 400)} lines: " + " ".join(
                    rng.choice(WORDS) for _ in range(rng.randint(5, 40))
                )
                tool_calls.append((name, args, result))
            step = Step(
                StepKind.TOOL, name, tool_arguments=args, tool_result=result, input=args, output=result
            )
        step.span_id = f"{i + 1:016x}"
        step.start_ns = clock
        clock += rng.randint(1, 5) * NS
        step.end_ns = clock
        steps.append(step)
    return Trace.from_steps(steps, trace_id="b" * 32, goal="Find why /api/orders returns 500 and fix it")


def per_step_us(work: Callable[[], object], steps: int, runs: int) -> float:
    """Median over ``runs`` of the microseconds per step of ``work`` (one call scores ``steps``)."""
    repeats = max(1, STEPS_PER_RUN // steps)
    work()  # warm up caches and lazy imports
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(repeats):
            work()
        samples.append((time.perf_counter() - start) / (repeats * steps) * 1e6)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per size (the median is reported)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1_000, 10_000])
    args = parser.parse_args()

    scorer, lexical = Scorer(), LexicalDetector()
    print(f"Scoring cost per step (median of {args.runs} runs; {STEPS_PER_RUN} steps scored per run)")
    print(f"{'steps':>7}  {'full us/step':>12}  {'detectors':>9}  {'lexical':>8}  {'verdict':>9}")
    full: dict[int, float] = {}
    lex: dict[int, float] = {}
    for size in args.sizes:
        trace = synthetic_trace(size)
        n = len(trace.steps)
        full[size] = per_step_us(lambda trace=trace: scorer.score(trace), n, args.runs)
        detectors = per_step_us(lambda trace=trace: DetectorSuite().detect(trace), n, args.runs)
        lex[size] = per_step_us(lambda trace=trace: lexical.evaluate(trace.tree_view()), n, args.runs)
        label = scorer.score(trace).label.value
        print(f"{size:>7}  {full[size]:>12.1f}  {detectors:>9.1f}  {lex[size]:>8.1f}  {label:>9}")
    small, large = min(args.sizes), max(args.sizes)
    ratio_full = full[large] / full[small]
    ratio_lex = lex[large] / lex[small]
    ok = ratio_full <= MAX_RATIO
    print(
        f"per-step cost at {large} vs {small} steps, full default scoring (lexical included): "
        f"{ratio_full:.2f}x (promise: at most {MAX_RATIO:.0f}x) -> {'OK' if ok else 'BROKEN'}"
    )
    print(
        f"lexical score on its own: {ratio_lex:.2f}x "
        + (
            "(within 2x)"
            if ratio_lex <= MAX_RATIO
            else "(over 2x on its own: see otel_semloop.detectors.lexical)"
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
