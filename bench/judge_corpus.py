"""The judge on the independent evaluation corpus (``bench/corpus/``): no worse than the
deterministic detectors alone?

    python bench/judge_corpus.py [--judge local|oracle] [--escalate undecided,always]
                                 [--source synthetic|recording|all] [--variants N]

Loads the corpus with ``bench/corpus_report.py``'s loader, scores each trace with the default
scorer and with the judged scorer (``JudgedScorer``, all requests in flight together), and
prints accuracy, false-positive rate and recall of ``semloop.loop.detected`` for both, the
traces where they differ, and judge calls per trace. ``oracle`` answers from each trace's
label (stagnant loops: no progress, revisits, one repeated action; healthy: the opposite),
so it measures the mechanism; ``local`` is the offline embedding judge.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.corpus_report import load_rows  # noqa: E402
from bench.judge_oracle import HEALTHY, STAGNANT  # noqa: E402
from otel_semloop.builder import build_trace  # noqa: E402
from otel_semloop.judges import Judge, JudgedScorer, JudgeSettings, make_judge  # noqa: E402
from otel_semloop.judges.backends.scripted import ScriptedBackend  # noqa: E402
from otel_semloop.judges.cache import AnswerCache  # noqa: E402
from otel_semloop.scoring import Scorer  # noqa: E402
from otel_semloop.verdict import Label  # noqa: E402


def _figures(predictions: list[bool], truth: list[bool]) -> str:
    n = len(truth)
    right = sum(p == t for p, t in zip(predictions, truth, strict=True))
    healthy = sum(1 for t in truth if not t) or 1
    loops = sum(truth) or 1
    fp = sum(1 for p, t in zip(predictions, truth, strict=True) if p and not t)
    tp = sum(1 for p, t in zip(predictions, truth, strict=True) if p and t)
    return f"accuracy {right}/{n} ({right / n:.1%}), FPR {fp / healthy:.1%}, recall {tp / loops:.1%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", choices=("local", "oracle"), default="local")
    parser.add_argument("--escalate", default="undecided")
    parser.add_argument("--source", choices=("synthetic", "recording", "first_look", "all"), default="all")
    parser.add_argument("--variants", type=int, default=1, help="first N variants per situation (default 1)")
    args = parser.parse_args(argv)
    rows, spans = load_rows(args.source, args.variants, None, None)
    traces = [build_trace(spans[row.trace_id]) for row in rows]
    truth = [row.loop for row in rows]
    base = Scorer()
    default = [base.score(t).label is Label.LOOP for t in traces]
    print(f"corpus: {len(rows)} traces ({sum(truth)} loops), source {args.source}, variants {args.variants}")
    print(f"  default scorer          : {_figures(default, truth)}")
    labels = {t.trace_id: row.loop for t, row in zip(traces, rows, strict=True)}
    for mode in [m.strip() for m in args.escalate.split(",") if m.strip()]:
        if args.judge == "oracle":

            def script(request, labels=labels):
                table = STAGNANT if labels[request.trace_id] else HEALTHY
                return {q: p for q in request.questions for k, p in table.items() if q.startswith(k + "_")}

            # No answer cache: the script answers by trace id, and two traces can share content.
            judge = Judge(
                ScriptedBackend(script, model="oracle-labels"), cache=AnswerCache(max_entries=0), timeout=60
            )
        else:
            judge = make_judge(JudgeSettings(judge="local", timeout=300))
            judge.backend.warm()
        scorer = JudgedScorer(judge, base=base, escalate=mode)
        started = time.perf_counter()
        verdicts = scorer.score_batch(traces)
        wall = time.perf_counter() - started
        judged = [v.label is Label.LOOP for v in verdicts]
        stats = judge.stats
        judge.close()
        print(
            f"  with {args.judge} judge ({mode:9}): {_figures(judged, truth)}; "
            f"{stats.calls / len(traces):.2f} judge calls per trace ({stats.calls} calls, "
            f"{stats.calls_saved} saved), mean latency {stats.mean_latency_ms:.0f} ms, wall {wall:.0f} s"
        )
        changed = [
            (row.situation, row.convention, row.label, d, j)
            for row, d, j in zip(rows, default, judged, strict=True)
            if d != j
        ]
        found = sum(1 for row, d, j in zip(rows, default, judged, strict=True) if row.loop and j and not d)
        lost = sum(1 for row, d, j in zip(rows, default, judged, strict=True) if row.loop and d and not j)
        added_fp = sum(
            1 for row, d, j in zip(rows, default, judged, strict=True) if not row.loop and j and not d
        )
        for part, subset in (
            ("corpus", [r for r in rows if not r.batch]),
            ("blind batches", [r for r in rows if r.batch]),
        ):
            if not subset:
                continue
            ids = {r.trace_id for r in subset}
            pick = [i for i, r in enumerate(rows) if r.trace_id in ids]
            print(
                f"    {part:13}: detectors {_figures([default[i] for i in pick], [truth[i] for i in pick])}; "
                f"judged {_figures([judged[i] for i in pick], [truth[i] for i in pick])}"
            )
        print(
            f"    judge vs detectors alone: {found} more loops found, {lost} lost, "
            f"{added_fp} more false positives"
        )
        for situation, convention, label, d, j in sorted(changed, key=lambda c: c[2] == "loop")[:12]:
            print(f"    changed: {situation} [{convention}] label={label}: default {d} -> judged {j}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
