"""Break one behaviour at a time and show that a test fails: a small mutation check of the core.

    python bench/mutation_check.py [--only NAME ...] [--list] [--keep]

Each mutation is a one-line change to the package (a verdict turned over, an attribute not
written, a span forwarded twice, a wrong error answer, a retry skipped...). For each, the
repository is copied to a temporary directory, the change applied there (never to the
working tree), and the tests that cover that behaviour are run with ``-x``. A mutation is
*caught* when the tests fail. The script prints one row per mutation and exits 1 if any
mutation survives, so it can run in CI as a check on the suite itself.

Why a list written by hand rather than a mutation tool: each entry names a promise of the
product (docs/architecture.md) and the tests expected to guard it; a surviving mutation is
a gap in those tests, named in words.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


SHARED = ("tests/shared/test_promises.py",)
POOL = ("tests/core/test_pool.py", *SHARED)

MUTATIONS = (
    # -- the verdict ---------------------------------------------------------------------------
    Mutation(
        "verdict-flag-inverted",
        "otel_semloop/writeback.py",
        '"semloop.loop.detected": verdict.loop_detected,',
        '"semloop.loop.detected": not verdict.loop_detected,',
        SHARED,
        "semloop.loop.detected written as the opposite of the label",
    ),
    Mutation(
        "verdict-loop-becomes-suspected",
        "otel_semloop/policy.py",
        "            label = Label.LOOP\n",
        "            label = Label.SUSPECTED\n",
        ("tests/core/test_policy.py", *SHARED),
        "the policy never says loop",
    ),
    Mutation(
        "reason-not-written",
        "otel_semloop/writeback.py",
        'attrs["semloop.reason"] = safe_reason',
        "pass",
        SHARED,
        "semloop.reason missing from the root",
    ),
    Mutation(
        "deepeval-subsignals-not-written",
        "otel_semloop/writeback.py",
        'attrs[f"semloop.deepeval.{name}"] = float(value)',
        "pass",
        SHARED,
        "semloop.deepeval.<sub-signal> attributes missing",
    ),
    Mutation(
        "signals-not-written",
        "otel_semloop/writeback.py",
        'attrs["semloop.signals"] = list(signals)',
        "pass",
        SHARED,
        "semloop.signals missing",
    ),
    Mutation(
        "action-wrong",
        "otel_semloop/writeback.py",
        '"semloop.action": verdict.action.value,',
        '"semloop.action": "continue",',
        SHARED,
        "semloop.action always continue",
    ),
    Mutation(
        "evaluation-name-wrong",
        "otel_semloop/evaluation.py",
        'EVALUATION_NAME = "semloop.loop"',
        'EVALUATION_NAME = "semloop.loops"',
        SHARED,
        "the evaluation event named wrongly",
    ),
    Mutation(
        "in-loop-flag-not-written",
        "otel_semloop/writeback.py",
        'patches.setdefault(span_id, SpanPatch()).attributes["semloop.in_loop"] = True',
        "pass",
        SHARED,
        "the looping steps not marked",
    ),
    Mutation(
        "release-reason-not-written",
        "otel_semloop/writeback.py",
        'root_patch.attributes["semloop.release.reason"] = release.reason.value',
        "pass",
        ("tests/processor/test_processor.py",),
        "an early release does not say why",
    ),
    Mutation(
        "warning-score-clamped-at-half",
        "otel_semloop/policy.py",
        "score = 1.0 - WARNING_SCORE_SPAN * min(strongest, 1.0)",
        "score = 1.0 - WARNING_SCORE_SPAN * min(strongest, 0.5)",
        ("tests/core/test_policy.py",),
        "a warning-only trace scored as if its warning were weaker",
    ),
    # -- the judge -----------------------------------------------------------------------------
    Mutation(
        "judge-undecided-band-edge-open",
        "otel_semloop/judges/assess.py",
        "undecided = stagnation == 1.0 and low <= worst.stagnation",
        "undecided = stagnation == 1.0 and low < worst.stagnation",
        ("tests/judges/test_judged_scoring.py",),
        "an answer exactly at the undecided band's lower edge counted as decided",
    ),
    Mutation(
        "judge-cache-key-without-model",
        "otel_semloop/judges/cache.py",
        '{"backend": backend, "model": model, "state": request.state',
        '{"backend": backend, "state": request.state',
        ("tests/judges/test_judged_scoring.py",),
        "a cached answer of one model reused for another",
    ),
    Mutation(
        "judge-text-cut-before-redaction",
        "otel_semloop/judges/questions.py",
        "text, cut = _truncate(redact(_text(raw)), config.max_chars)",
        "text, cut = _truncate(_text(raw), config.max_chars)",
        ("tests/judges/test_questions.py",),
        "a secret split by the judge's cut sent in part (cut before redaction)",
    ),
    # -- write-back ----------------------------------------------------------------------------
    Mutation(
        "patch-not-applied",
        "otel_semloop/release.py",
        "out.append(adapter.patched(record.source, patch))",
        "out.append(record.source)",
        POOL,
        "the verdict computed but never written onto the spans",
    ),
    Mutation(
        "late-span-not-marked",
        "otel_semloop/processor/worker.py",
        'with_attributes(span, {"semloop.late": True})',
        "span",
        ("tests/processor/test_processor.py", *SHARED),
        "a late span forwarded without semloop.late (processor)",
    ),
    Mutation(
        "late-span-not-marked-service",
        "otel_semloop/service/pipeline.py",
        "apply_patch_proto(held.span, _LATE_PATCH)",
        "pass",
        SHARED,
        "a late span forwarded without semloop.late (service)",
    ),
    # -- forwarding exactly once ---------------------------------------------------------------
    Mutation(
        "delivered-twice",
        "otel_semloop/pool.py",
        "            self._deliver(outcome)\n",
        "            self._deliver(outcome)\n            self._deliver(outcome)\n",
        POOL,
        "every scored trace forwarded twice",
    ),
    Mutation(
        "late-verdict-also-delivered",
        "otel_semloop/pool.py",
        'telemetry.add("semloop.scoring.discarded", "late")',
        'telemetry.add("semloop.scoring.discarded", "late"); self._deliver(Outcome(list(job.release.spans)))',
        POOL,
        "a stuck thread's late verdict forwarded after the trace already left",
    ),
    Mutation(
        "non-agent-trace-dropped",
        "otel_semloop/pool.py",
        '            self._settle(job, Outcome(list(release.spans), "none"))\n            return job.seq',
        "            job.finished = True\n            return job.seq",
        POOL,
        "a trace without agent steps never forwarded",
    ),
    Mutation(
        "late-spans-dropped",
        "otel_semloop/processor/worker.py",
        '        self._forward(marked, 0, "late")',
        "        pass",
        ("tests/processor/test_processor.py",),
        "late spans dropped",
    ),
    # -- budget, stuck threads, errors of the scorer -------------------------------------------
    Mutation(
        "budget-ignored",
        "otel_semloop/pool.py",
        "job = _Job(self._seq, release, now + self._budget)",
        "job = _Job(self._seq, release, now + self._budget * 1000)",
        POOL,
        "the scoring budget never ends",
    ),
    Mutation(
        "stuck-threads-not-replaced",
        "otel_semloop/pool.py",
        "            self._ensure_threads()  # replace the stuck thread while the cap allows",
        "            pass",
        POOL,
        "a stuck scoring thread never replaced",
    ),
    Mutation(
        "staged-verdict-ignored",
        "otel_semloop/pool.py",
        '        if best is not None and key == "budget":',
        "        if False:",
        POOL,
        "a staged scorer's verdict lost when the budget runs out",
    ),
    Mutation(
        "scorer-error-reason-lost",
        "otel_semloop/pool.py",
        'f"scoring failed: {type(failure).__name__}"',
        '"scoring failed"',
        POOL,
        "the scorer's error type left out of semloop.unscored.reason",
    ),
    # -- error answers and retries (service) ---------------------------------------------------
    Mutation(
        "oversized-body-gets-400",
        "otel_semloop/service/receiver.py",
        'raise BadRequest(413, f"body of {length} bytes',
        'raise BadRequest(400, f"body of {length} bytes',
        ("tests/service/test_limits.py", "tests/service/test_security.py", "tests/service/test_service.py"),
        "an oversized body answered 400 instead of 413",
    ),
    Mutation(
        "no-request-size-limit",
        "otel_semloop/service/receiver.py",
        "        if declared > max_request_bytes:",
        "        if False:",
        ("tests/service/test_limits.py", "tests/service/test_security.py", "tests/service/test_service.py"),
        "no request size limit on a declared length",
    ),
    Mutation(
        "http-503-not-retried",
        "otel_semloop/service/exporter.py",
        "_RETRYABLE_HTTP = frozenset({429, 502, 503, 504})",
        "_RETRYABLE_HTTP = frozenset({429, 502, 504})",
        ("tests/service/test_service.py", "tests/service/test_operations.py"),
        "the HTTP exporter does not retry a 503",
    ),
    Mutation(
        "retry-after-ignored",
        "otel_semloop/service/exporter.py",
        "            if result.retry_after is not None:\n",
        "            if False:\n",
        (
            "tests/service/test_service.py::test_a_downstream_retry_after_sets_the_wait_before_the_next_attempt",
        ),
        "the downstream's Retry-After ignored (the exporter's own backoff used)",
    ),
    Mutation(
        "durable-replay-resends-delivered",
        "otel_semloop/service/durable.py",
        "result = intake.receive(request, size, ticket, skip=keys, signal=signal)",
        "result = intake.receive(request, size, ticket, skip=None, signal=signal)",
        ("tests/service/test_durable.py",),
        "a durable replay re-sends the spans of a request already delivered",
    ),
    Mutation(
        "bad-ids-accepted",
        "otel_semloop/service/held.py",
        '        return f"spanId must be 8 bytes, got {len(span.span_id)}"',
        "        return None",
        ("tests/service/test_service.py",),
        "a span with a bad id accepted",
    ),
)


def copy_repo(target: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in files:
        source = ROOT / name
        if source.is_file():
            dest = target / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)


def run(mutation: Mutation, base: Path) -> tuple[str, float]:
    """'caught', 'SURVIVED' or 'not applied', and the seconds the tests took."""
    work = base / mutation.name
    shutil.copytree(base / "clean", work)
    path = work / mutation.path
    text = path.read_text()
    if text.count(mutation.old) != 1:
        return "not applied", 0.0
    path.write_text(text.replace(mutation.old, mutation.new))
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutation.tests],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    took = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)
    return ("caught" if done.returncode != 0 else "SURVIVED"), took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="run only these mutations (names)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name:34} {m.what}")
        return 0
    survived = 0
    with tempfile.TemporaryDirectory(prefix="semloop-mutants-") as tmp:
        base = Path(tmp)
        copy_repo(base / "clean")
        print(f"{'mutation':34} {'result':12} {'seconds':>8}  what it breaks")
        for mutation in chosen:
            result, took = run(mutation, base)
            survived += result != "caught"
            print(f"{mutation.name:34} {result:12} {took:8.1f}  {mutation.what}", flush=True)
    print(f"{len(chosen) - survived}/{len(chosen)} mutations caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
