"""Cost per step of the default scoring, from span records to verdict, at 10 to 10,000 steps.

    python bench/detector_speed.py [--runs 5] [--sizes 10 50 100 1000 10000] [--history grow]
    python bench/detector_speed.py --against REF [--runs 15]    # side by side with a git ref

Each trace is what a GenAI-instrumented agent records (:func:`genai_records`): an
``invoke_agent`` root over alternating ``chat`` and ``execute_tool`` spans carrying the
OpenTelemetry GenAI attributes as instrumentations write them: ``gen_ai.input.messages``
(system prompt, the user's task and the latest tool exchange, as JSON parts),
``gen_ai.output.messages`` (30 to 120 words of text and a ``tool_call`` part),
usage, model and response ids; tools with JSON ``gen_ai.tool.call.arguments`` and a text
``gen_ai.tool.call.result`` of 10 to 80 words with numbers. About one tool call in seven
repeats an earlier one and one LLM output in ten repeats the previous one. (Real agents
resend their whole history on every call, which makes input size, not step count, the
cost driver; the window keeps the per-step input constant so growth in step count shows.)

``--history grow`` makes every LLM call resend the whole history instead, as real agents
do (system prompt, task, then every earlier assistant message and tool result): the input
of step k holds k/2 exchanges, so anything that decodes or reads every LLM input is
O(n^2) per trace and shows as per-step cost growing with the size (sizes default to 10 to
1,000 steps there: the records of a 10,000-step run would hold gigabytes of history).

Timed per size, CPU time of this process (``time.process_time``: a shared machine's
other work does not count), median of ``--runs`` runs, each scoring about
``STEPS_PER_RUN`` steps:

* ``records->verdict``: :func:`~otel_semloop.builder.build_trace` on the records and
  ``Scorer().score(trace)``, the default scorer with the deepeval-compatible lexical
  score: what every front door runs per trace (write-back excluded);
* ``score``: ``Scorer().score(trace)`` alone on the built trace;
* ``detectors`` and ``lexical`` (as the scorer reads it: from the steps, no tree view
  built): the two halves of ``score``;
* ``floor``: what merely reading the same records costs (:func:`read_floor`: every JSON
  attribute decoded by orjson, each string attribute hashed once with blake2b and
  lower-cased and split once), and ``x floor``, records->verdict as a multiple of it: the
  target seen against the cost of reading the spans at all.

``--against REF`` instead scores the same 50-step traces (40 seeds) with this tree and with
``otel_semloop/`` of the git ref REF (extracted and imported under another package name,
so both run in this one process), alternating them round by round, and prints each part
side by side, median of ``--runs`` rounds and the old/new ratio: ``records->verdict``,
``score``, ``detectors`` (``DetectorSuite.detect``), ``own`` (the detectors' own work:
every step's facts computed beforehand, then only the detectors' ``observe_facts``, as the
suite dispatches them), ``lexical`` (the lexical score as the scorer reads it: from the
steps where the tree has ``evaluate_trace``, else its tree view) and ``policy`` (the
verdict from findings, ``unreadable_steps``).

Promises checked (exit status 1 when broken): the full records->verdict cost at 50 steps
is at most ``TARGET_US`` (25) microseconds per step, and the per-step cost at the largest
size is at most ``MAX_RATIO`` (2) times that at the smallest (linear, no hidden quadratic
term).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otel_semloop.builder import build_trace  # noqa: E402
from otel_semloop.detectors.lexical import LexicalDetector  # noqa: E402
from otel_semloop.detectors.suite import DetectorSuite  # noqa: E402
from otel_semloop.model import SpanRecord  # noqa: E402
from otel_semloop.scoring import Scorer  # noqa: E402

#: Promise: CPU microseconds per step of records->verdict on the 50-step trace.
TARGET_US = 25.0
TARGET_SIZE = 50
#: Promise: per-step cost at the largest size over that at the smallest.
MAX_RATIO = 2.0
#: Each timed run scores the same trace until about this many steps were scored, so the
#: small sizes are not timing a single microsecond-scale call.
STEPS_PER_RUN = 10_000
#: ``--history`` modes (see the module doc) and the default sizes of each.
HISTORIES = ("window", "grow")
DEFAULT_SIZES = {"window": [10, TARGET_SIZE, 100, 1_000, 10_000], "grow": [10, TARGET_SIZE, 100, 1_000]}

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
SYSTEM_PROMPT = (
    "You are a careful software engineering agent. Use the tools to inspect the repository, "
    "run the tests and make the smallest change that fixes the problem. Explain each step briefly."
)
TASK = "Find why /api/orders returns 500 for guest users and fix it; keep the public API unchanged."


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


def _text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def genai_records(n_steps: int, seed: int = 7, history: str = "window") -> list[SpanRecord]:
    """The span records of one agent run of ``n_steps`` LLM and tool steps (plus the
    ``invoke_agent`` root), deterministic per seed. See the module doc. ``history``:
    ``"window"`` (each LLM call sends the system prompt, the task and the latest tool
    exchange) or ``"grow"`` (each sends the whole history so far)."""
    if history not in HISTORIES:
        raise ValueError(f"history must be one of {HISTORIES}, not {history!r}")
    grow = history == "grow"
    past: list[dict] = []  # every assistant message and tool result so far (grow)
    rng = random.Random(seed * 100_003 + n_steps)
    trace_id = f"{rng.getrandbits(128):032x}"
    root_id = f"{1:016x}"
    start = clock = 1_767_225_600 * NS
    records: list[SpanRecord] = []
    calls: list[tuple[str, dict, str]] = []
    last_text = ""
    requested: tuple[str, str, dict, str] | None = None  # the call the last LLM output asked for
    last_exchange: tuple[str, str, dict, str] | None = None
    for i in range(n_steps):
        begin = clock
        clock += rng.randint(1, 5) * NS // 10
        span_id = f"{i + 2:016x}"
        if i % 2 == 0:
            if last_text and rng.random() < 0.10:
                text = last_text
            else:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 120))) + "."
            last_text = text
            if calls and rng.random() < 0.15:
                name, args, result = rng.choice(calls[-50:])
            else:
                name = rng.choice(TOOLS)
                args = {
                    "path": f"src/{rng.choice(MODULES)}/{rng.choice(WORDS)}_{rng.randint(1, 99)}.py",
                    "limit": rng.choice((50, 100)),
                }
                result = f"{rng.randint(1, 400)} lines: " + " ".join(
                    rng.choice(WORDS) for _ in range(rng.randint(10, 80))
                )
                calls.append((name, args, result))
            call_id = f"call_{rng.getrandbits(64):016x}"
            requested = (call_id, name, args, result)
            messages = [_text("system", SYSTEM_PROMPT), _text("user", TASK)]
            if grow:
                messages.extend(past)
            elif last_exchange is not None:
                cid, tool_name, tool_args, tool_result = last_exchange
                messages.append(
                    {
                        "role": "assistant",
                        "parts": [
                            {"type": "tool_call", "id": cid, "name": tool_name, "arguments": tool_args}
                        ],
                    }
                )
                messages.append(
                    {
                        "role": "tool",
                        "parts": [{"type": "tool_call_response", "id": cid, "response": tool_result}],
                    }
                )
            output = {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": text},
                    {"type": "tool_call", "id": call_id, "name": name, "arguments": args},
                ],
                "finish_reason": "tool_call",
            }
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.request.temperature": 0.2,
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                "gen_ai.response.id": f"chatcmpl-{rng.getrandbits(64):x}",
                "gen_ai.response.finish_reasons": ("tool_calls",),
                "gen_ai.input.messages": _json(messages),
                "gen_ai.output.messages": _json([output]),
                "gen_ai.usage.input_tokens": 900 + i,
                "gen_ai.usage.output_tokens": 120,
                "server.address": "api.openai.com",
            }
            records.append(
                SpanRecord(trace_id, span_id, root_id, "chat gpt-4o-mini", begin, clock, attributes, kind=3)
            )
            if grow:
                past.append(output)
        else:
            assert requested is not None
            call_id, name, args, result = requested
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": _json(args),
                "gen_ai.tool.call.result": result,
            }
            last_exchange = requested
            if grow:
                past.append(
                    {
                        "role": "tool",
                        "parts": [{"type": "tool_call_response", "id": call_id, "response": result}],
                    }
                )
            records.append(
                SpanRecord(
                    trace_id, span_id, root_id, f"execute_tool {name}", begin, clock, attributes, kind=1
                )
            )
    root_attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "coder",
        "gen_ai.provider.name": "openai",
        "gen_ai.input.messages": _json([_text("user", TASK)]),
    }
    root = SpanRecord(
        trace_id, root_id, "", "invoke_agent coder", start - 1, clock + 1, root_attributes, kind=1
    )
    return [root, *records]


def read_floor(records: list[SpanRecord]) -> None:
    """The least any scorer must do with ``records``: decode each JSON attribute (a string
    starting with ``[`` or ``{``) with orjson, hash each string attribute once (blake2b) and
    lower-case and split it once."""
    for record in records:
        for value in record.attributes.values():
            if isinstance(value, str):
                if value[:1] in ("[", "{"):
                    orjson.loads(value)
                hashlib.blake2b(value.encode(), digest_size=8).digest()
                value.lower().split()


def per_step_us(work: Callable[[], object], steps: int, runs: int) -> float:
    """Median over ``runs`` of the CPU microseconds per step of ``work`` (one call scores ``steps``)."""
    repeats = max(1, STEPS_PER_RUN // steps)
    work()  # warm up caches and lazy imports
    samples = []
    for _ in range(runs):
        start = time.process_time()
        for _ in range(repeats):
            work()
        samples.append((time.process_time() - start) / (repeats * steps) * 1e6)
    return statistics.median(samples)


def _ref_package(ref: str, into: Path) -> str:
    """``otel_semloop/`` of git ref ``ref`` copied under ``into`` as package
    ``otel_semloop_ref`` (every reference to the package renamed); its name."""
    import io
    import re
    import subprocess
    import tarfile

    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "otel_semloop"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as archive:
        archive.extractall(into, filter="data")
    target = into / "otel_semloop_ref"
    (into / "otel_semloop").rename(target)
    for path in target.rglob("*.py"):
        path.write_text(re.sub(r"\botel_semloop\b", "otel_semloop_ref", path.read_text()))
    return "otel_semloop_ref"


def _parts(package: str, records: list[list[SpanRecord]]) -> tuple[int, dict[str, Callable[[], object]]]:
    """(steps, part name -> one timed call over every trace) for the code of ``package``."""
    import importlib

    def module(name: str) -> Any:
        return importlib.import_module(f"{package}.{name}")

    build = module("builder").build_trace
    traces = [build(recs) for recs in records]
    config = module("detectors.config").DetectorConfig()
    scorer = module("scoring").DetectorScorer(config=config)
    suite = module("detectors.suite").DetectorSuite(config)
    try:  # the fingerprinter's home since session 5; earlier refs kept it in base.py
        fingerprinter = module("detectors.facts").Fingerprinter(config)
    except ModuleNotFoundError:
        fingerprinter = module("detectors.base").Fingerprinter(config)
    fingerprinter.lazy = True
    facts = []
    for trace in traces:
        fingerprinter.reset()
        facts.append([(fingerprinter.facts(step, i), step) for i, step in enumerate(trace.steps)])
    lexical = module("detectors.lexical").LexicalDetector()
    lazy_view = "lazy" in inspect.signature(traces[0].tree_view).parameters
    policy = module("policy").Policy()
    unreadable = module("scoring").unreadable_steps
    findings = [suite.detect(trace) for trace in traces]

    def end_to_end() -> None:
        for recs in records:
            scorer.score(build(recs))

    def own() -> None:
        observers = getattr(suite, "_observers", None)  # per-kind dispatch, where the suite has it
        # Plain tool calls skip the detectors that do not read them, where the suite does that.
        plain = getattr(suite, "_plain_tool_observers", None)
        plain_step = getattr(module("detectors.suite"), "plain_tool_step", None)
        for steps in facts:
            suite.reset()
            if observers is None:
                for f, step in steps:
                    for detector in suite.detectors:
                        detector.observe_facts(f, step)
            elif plain is None:
                for f, step in steps:
                    for observe in observers[f.kind]:
                        observe(f, step)
            else:
                for f, step in steps:
                    for observe in plain if plain_step(step) else observers[f.kind]:
                        observe(f, step)
            suite.findings()

    by_steps = hasattr(lexical, "evaluate_trace")  # as the scorer reads it, where it can

    def lex() -> None:
        for trace in traces:
            if by_steps:
                lexical.evaluate_trace(trace)
            else:
                lexical.evaluate(trace.tree_view(lazy=True) if lazy_view else trace.tree_view())

    def decide() -> None:
        for trace, found in zip(traces, findings, strict=True):
            policy.verdict(found, lexical=None, partial=False, calibration=None)
            unreadable(trace)

    parts: dict[str, Callable[[], object]] = {
        "records->verdict": end_to_end,
        "score": lambda: [scorer.score(trace) for trace in traces],
        "detectors": lambda: [suite.detect(trace) for trace in traces],
        "own": own,
        "lexical": lex,
        "policy": decide,
    }
    return sum(len(trace.steps) for trace in traces), parts


def compare(ref: str, runs: int) -> int:
    """Print this tree's cost per step beside git ref ``ref``'s (see the module doc)."""
    import tempfile

    records = [genai_records(TARGET_SIZE, seed) for seed in range(40)]
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        package = _ref_package(ref, Path(tmp))
        sides = {"ref": _parts(package, records), "this": _parts("otel_semloop", records)}
        for _, parts in sides.values():
            for work in parts.values():
                work()  # warm up
        for round_ in range(runs):
            for part in sides["ref"][1]:
                for side in ("ref", "this") if round_ % 2 == 0 else ("this", "ref"):
                    steps, parts = sides[side]
                    start = time.process_time()
                    parts[part]()
                    samples.setdefault((side, part), []).append((time.process_time() - start) / steps * 1e6)
    print(
        f"CPU us per step on 40 distinct {TARGET_SIZE}-step GenAI traces, median of {runs} alternating "
        f"rounds; ref = {ref}; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{'part':>16}  {'ref':>8}  {'this':>8}  {'ref/this':>8}")
    for part in sides["ref"][1]:
        old = statistics.median(samples[("ref", part)])
        new = statistics.median(samples[("this", part)])
        print(f"{part:>16}  {old:>8.1f}  {new:>8.1f}  {old / new:>7.2f}x")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per size (the median is reported)")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        help="steps per trace (default: 10 50 100 1000 10000; without 10000 for --history grow)",
    )
    parser.add_argument(
        "--history",
        choices=HISTORIES,
        default="window",
        help="window: each LLM call sends a constant-size input (default); grow: each resends "
        "the whole history, as real agents do",
    )
    parser.add_argument("--against", metavar="REF", help="compare with git ref REF side by side (module doc)")
    args = parser.parse_args()
    if args.against:
        return compare(args.against, args.runs)
    if args.sizes is None:
        args.sizes = DEFAULT_SIZES[args.history]

    scorer, lexical = Scorer(), LexicalDetector()
    print(
        f"CPU us per step, median of {args.runs} runs of ~{STEPS_PER_RUN} steps; GenAI span records "
        f"(chat + execute_tool spans under invoke_agent); LLM input history: {args.history}"
    )
    columns = ("records->verdict", "score", "detectors", "lexical", "label", "floor", "x floor")
    print(f"{'steps':>7}  " + "  ".join(f"{c:>{max(len(c), 7)}}" for c in columns))
    full: dict[int, float] = {}
    for size in args.sizes:
        records = genai_records(size, history=args.history)
        trace = build_trace(records)
        n = len(trace.steps)

        def end_to_end(records: list[SpanRecord] = records) -> object:
            return scorer.score(build_trace(records))

        full[size] = per_step_us(end_to_end, n, args.runs)
        score = per_step_us(lambda trace=trace: scorer.score(trace), n, args.runs)
        detectors = per_step_us(lambda trace=trace: DetectorSuite().detect(trace), n, args.runs)
        lex = per_step_us(lambda trace=trace: lexical.evaluate_trace(trace), n, args.runs)
        label = scorer.score(trace).label.value
        floor = per_step_us(lambda records=records: read_floor(records), n, args.runs)
        print(
            f"{size:>7}  {full[size]:>16.1f}  {score:>7.1f}  {detectors:>9.1f}  {lex:>7.1f}  {label:>7}"
            f"  {floor:>7.1f}  {full[size] / floor:>6.2f}x"
        )
    ok = True
    if TARGET_SIZE in full:
        met = full[TARGET_SIZE] <= TARGET_US
        ok = ok and met
        print(
            f"records->verdict at {TARGET_SIZE} steps: {full[TARGET_SIZE]:.1f} us/step "
            f"(target: at most {TARGET_US:.0f}) -> {'OK' if met else 'BROKEN'}"
        )
    small, large = min(args.sizes), max(args.sizes)
    if large != small:
        ratio = full[large] / full[small]
        linear = ratio <= MAX_RATIO
        ok = ok and linear
        print(
            f"per-step cost at {large} vs {small} steps: {ratio:.2f}x "
            f"(linear: at most {MAX_RATIO:.0f}x) -> {'OK' if linear else 'BROKEN'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
