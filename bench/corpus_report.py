"""How the detectors do on the independent evaluation corpus (``bench/corpus/``).

    python bench/corpus_report.py [--source synthetic|recording|all] [--variants N]
                                  [--situation ID ...] [--json OUT]

Reads the committed OTLP JSON lines (synthetic situations in three conventions, and the
recordings of real agent frameworks) with the package's own file reader, builds each
trace, and scores it three ways side by side:

* ``default``: ``Scorer()`` (the deterministic detectors and the policy);
* ``lexical``: ``Scorer(mode="lexical")`` (deepeval's AgentLoopDetectionMetric alone);
* ``exact``: the baseline rule below: "same tool, same arguments, same result three times".

How ``suspected`` counts: the default scorer has three labels. The report shows both
readings: ``loop`` (only ``loop`` is a positive, which is what ``semloop.loop.detected``
means) and ``loop|susp`` (``suspected`` is a positive too). ``unscored`` (no agent steps
read from the trace) is a negative in both, and counted per convention, because a trace
the reader cannot read must not pass silently.

Figures: accuracy (verdicts right), FPR (healthy traces flagged / healthy traces),
recall (loops flagged / loops); per situation, per convention, per framework; and per
signal (default scorer, conclusive findings) precision and recall. ``blind`` counts traces
whose steps were read but carry no content at all (no tool arguments or results, no model
output): they can only pass as healthy, so they are shown rather than hidden.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.corpus_cv import FP_WEIGHT, CrossValidation  # noqa: E402
from otel_semloop.batch.inputs import read_records  # noqa: E402
from otel_semloop.builder import build_trace  # noqa: E402
from otel_semloop.model import SpanRecord, StepKind, Trace  # noqa: E402
from otel_semloop.scoring import Scorer  # noqa: E402
from otel_semloop.verdict import Label  # noqa: E402

CORPUS = ROOT / "bench" / "corpus"
COLUMNS = ("default", "default_susp", "lexical", "exact")
HEADERS = {
    "default": "default(loop)",
    "default_susp": "default(loop|susp)",
    "lexical": "lexical",
    "exact": "exact-repeat",
}


def exact_repeat_rule(trace: Trace, times: int = 3) -> bool:
    """The 20-line baseline: some tool step whose (tool, arguments, result) triple occurs
    ``times`` times in the trace, compared as canonical JSON / raw text, nothing masked.
    An error counts as its message."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for step in trace.steps:
        if step.kind is not StepKind.TOOL:
            continue
        args = _canon(step.tool_arguments if step.tool_arguments is not None else step.input)
        result = step.error_message if step.is_error else _canon(step.tool_result)
        key = (step.name, args, result)
        seen[key] += 1
        if seen[key] >= times:
            return True
    return False


def _canon(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


# --- loading -----------------------------------------------------------------------------


@dataclass
class Row:
    trace_id: str
    situation: str
    label: str
    convention: str
    source: str
    framework: str = ""
    variant: int = 0
    predictions: dict[str, bool] = field(default_factory=dict)
    default_label: str = ""
    signals: tuple[str, ...] = ()
    blind: bool = False
    #: The blind batch the trace comes from ("" for the rest of the corpus).
    batch: str = ""

    @property
    def loop(self) -> bool:
        return self.label == "loop"


def label_files(source: str) -> list[Path]:
    """The labels files of a source. ``first_look`` (and ``all``) holds only the blind
    batches whose first look is recorded (:data:`FIRST_LOOK_DATA`): a batch joins the
    corpus after it was scored once, never before."""
    files = []
    if source in ("synthetic", "all"):
        files += sorted((CORPUS / "data").glob("*.labels.jsonl"))
    if source in ("recording", "all"):
        files += sorted((CORPUS / "recordings").glob("**/labels.jsonl"))
    if source in ("first_look", "all"):
        recorded = {entry["batch"] for entry in recorded_first_looks()}
        files += [batch / "labels.jsonl" for batch in blind_batches() if batch.name in recorded]
    return files


#: The blind batches: ``bench/corpus/first_look/batchN/`` (situations written without
#: reading the detection code; see ``bench/corpus/FIRST_LOOK.md``).
FIRST_LOOK_DIR = CORPUS / "first_look"
#: Each batch's figures as first scored, before anyone tuned on it (the command that
#: scores a batch first writes them here; nothing rewrites them).
FIRST_LOOK_DATA = CORPUS / "FIRST_LOOK.json"


def blind_batches() -> list[Path]:
    """The batch folders that hold labels, in batch order (batch2 before batch10)."""
    found = [p.parent for p in FIRST_LOOK_DIR.glob("batch*/labels.jsonl")]
    return sorted(found, key=lambda p: (len(p.name), p.name))


def recorded_first_looks() -> list[dict]:
    if not FIRST_LOOK_DATA.exists():
        return []
    return list(json.loads(FIRST_LOOK_DATA.read_text())["batches"])


def data_files_for(labels_path: Path) -> list[Path]:
    """The OTLP files a labels file describes: the files beside it (``synthetic.*`` for
    the synthetic labels, every ``*.otlp.jsonl[.gz]`` in a recording folder)."""
    folder = labels_path.parent
    if labels_path.name == "synthetic.labels.jsonl":
        return sorted(folder.glob("synthetic.*.otlp.jsonl*"))
    return sorted(p for p in folder.glob("*.otlp.jsonl*"))


def load_rows(
    source: str,
    variants: int | None,
    situations: set[str] | None,
    conventions: set[str] | None,
    files: list[Path] | None = None,
) -> tuple[list[Row], dict[str, list[SpanRecord]]]:
    """The labelled rows of ``source`` (or of the labels ``files`` given) and their spans."""
    rows: dict[str, Row] = {}
    data: list[Path] = []
    for path in files if files is not None else label_files(source):
        batch = path.parent.name if path.parent.parent == FIRST_LOOK_DIR else ""
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            if variants is not None and d.get("variant", 0) >= variants:
                continue
            if situations and d["situation"] not in situations:
                continue
            if conventions and d["convention"] not in conventions:
                continue
            rows[d["trace_id"]] = Row(
                d["trace_id"],
                d["situation"],
                d["label"],
                d["convention"],
                d.get("source", ""),
                d.get("framework", ""),
                d.get("variant", 0),
                batch=batch,
            )
        data += data_files_for(path)
    spans: dict[str, list[SpanRecord]] = defaultdict(list)
    for path in data:
        for record in read_records(path):
            if record.trace_id in rows:
                spans[record.trace_id].append(record)
    missing = [t for t in rows if t not in spans]
    if missing:
        raise SystemExit(
            f"{len(missing)} labelled traces have no spans in the data files (first: {missing[0]})"
        )
    return list(rows.values()), spans


# --- scoring -----------------------------------------------------------------------------


def score_rows(rows: list[Row], spans: dict[str, list[SpanRecord]]) -> dict[str, Trace]:
    """Score every row three ways (see the module doc); the built traces, by trace id."""
    default, lexical = Scorer(), Scorer(mode="lexical")
    traces: dict[str, Trace] = {}
    for row in rows:
        trace = traces[row.trace_id] = build_trace(spans[row.trace_id])
        d = default.score(trace)
        row.default_label = d.label.value
        row.predictions["default"] = d.label is Label.LOOP
        row.predictions["default_susp"] = d.label in (Label.LOOP, Label.SUSPECTED)
        row.predictions["lexical"] = lexical.score(trace).label is Label.LOOP
        row.predictions["exact"] = bool(trace.steps) and exact_repeat_rule(trace)
        row.signals = tuple(dict.fromkeys(f.signal for f in d.findings if f.conclusive))
        row.blind = is_blind(trace)
    return traces


def is_blind(trace: Trace) -> bool:
    """Steps were read but no content was: no tool arguments or results and no model output
    text anywhere (instrumentation that records no content, or content in a place the
    reader does not look). Such a trace can only pass as healthy; the report counts them."""
    if not trace.steps:
        return False
    for step in trace.steps:
        if step.kind is StepKind.TOOL and (
            step.tool_arguments not in (None, "", {}) or step.tool_result not in (None, "")
        ):
            return False
        if step.kind is StepKind.LLM and (step.output_text or step.tool_calls):
            return False
    return True


# --- figures -----------------------------------------------------------------------------


@dataclass
class Tally:
    n: int = 0
    loops: int = 0
    right: Counter = field(default_factory=Counter)
    fp: Counter = field(default_factory=Counter)
    tp: Counter = field(default_factory=Counter)
    unscored: int = 0
    blind: int = 0

    def add(self, row: Row) -> None:
        self.n += 1
        self.loops += row.loop
        self.unscored += row.default_label == Label.UNSCORED.value
        self.blind += row.blind
        for col, flagged in row.predictions.items():
            self.right[col] += flagged == row.loop
            self.fp[col] += flagged and not row.loop
            self.tp[col] += flagged and row.loop

    @property
    def healthy(self) -> int:
        return self.n - self.loops

    def acc(self, col: str) -> float:
        return self.right[col] / self.n if self.n else 0.0

    def fpr(self, col: str) -> float:
        return self.fp[col] / self.healthy if self.healthy else 0.0

    def recall(self, col: str) -> float:
        return self.tp[col] / self.loops if self.loops else 0.0


def tally_by(rows: Iterable[Row], key) -> dict[str, Tally]:
    out: dict[str, Tally] = defaultdict(Tally)
    for row in rows:
        out[key(row)].add(row)
    return dict(sorted(out.items()))


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def print_group_table(title: str, groups: dict[str, Tally], width: int = 16) -> None:
    print(f"\n## {title}\n")
    head = f"{'':{width}} {'n':>5} {'loops':>5} {'unscored':>8} {'blind':>5}"
    for col in COLUMNS:
        head += f" | {HEADERS[col]:^26}"
    print(head)
    sub = f"{'':{width}} {'':>5} {'':>5} {'':>8} {'':>5}" + (
        " | " + f"{'acc':>8} {'FPR':>8} {'recall':>8}"
    ) * len(COLUMNS)
    print(sub)
    print("-" * len(sub))
    for name, t in groups.items():
        line = f"{name:{width}} {t.n:>5} {t.loops:>5} {t.unscored:>8} {t.blind:>5}"
        for col in COLUMNS:
            line += f" | {_pct(t.acc(col)):>8} {_pct(t.fpr(col)):>8} {_pct(t.recall(col)):>8}"
        print(line)


def print_situation_table(rows: list[Row]) -> None:
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row.situation].append(row)
    print("\n## Per situation (share of verdicts right; signals: default scorer, most frequent first)\n")
    head = (
        f"{'situation':34} {'label':7} {'n':>4}"
        + "".join(f" {HEADERS[c]:>18}" for c in COLUMNS)
        + "  signals"
    )
    print(head)
    print("-" * len(head))
    for name in sorted(groups, key=lambda s: (groups[s][0].label, s)):
        rs = groups[name]
        t = Tally()
        for r in rs:
            t.add(r)
        sig = Counter(s for r in rs for s in r.signals)
        sig_text = ", ".join(f"{s}:{c}" for s, c in sig.most_common(3))
        cells = "".join(f" {t.right[c]:>11}/{t.n:<3}  " for c in COLUMNS)
        print(f"{name:34} {rs[0].label:7} {t.n:>4}{cells} {sig_text}")


def signal_stats(rows: list[Row]) -> dict[str, dict[str, float]]:
    loops = sum(r.loop for r in rows)
    fired: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for r in rows:
        for s in r.signals:
            fired[s] += 1
            hits[s] += r.loop
    return {
        s: {"fired": fired[s], "precision": hits[s] / fired[s], "recall": hits[s] / loops if loops else 0.0}
        for s in sorted(fired)
    }


def print_signal_table(rows: list[Row]) -> None:
    print("\n## Per signal (default scorer, conclusive findings): precision / recall\n")
    convs = sorted({r.convention for r in rows})
    per = {c: signal_stats([r for r in rows if r.convention == c]) for c in convs}
    overall = signal_stats(rows)
    head = f"{'signal':22} {'fired':>6} {'prec':>7} {'recall':>7}" + "".join(
        f" | {c[:14]:^23}" for c in convs
    )
    print(head)
    print("-" * len(head))
    for s, st in overall.items():
        line = f"{s:22} {st['fired']:>6} {_pct(st['precision']):>7} {_pct(st['recall']):>7}"
        for c in convs:
            cs = per[c].get(s)
            prec, rec = (_pct(cs["precision"]), _pct(cs["recall"])) if cs else ("-", "-")
            line += f" | {prec:>11} {rec:>11}"
        print(line)


def summary(rows: list[Row]) -> dict:
    t = Tally()
    for r in rows:
        t.add(r)
    return {
        "traces": t.n,
        "loops": t.loops,
        "healthy": t.healthy,
        "unscored": t.unscored,
        "blind": t.blind,
        "situations": len({r.situation for r in rows}),
        **{col: {"accuracy": t.acc(col), "fpr": t.fpr(col), "recall": t.recall(col)} for col in COLUMNS},
    }


def report(rows: list[Row]) -> dict:
    s = summary(rows)
    print(
        f"# Corpus report: {s['traces']} traces ({s['loops']} loop, {s['healthy']} healthy) "
        f"over {s['situations']} situations; {s['unscored']} unscored by the default scorer, "
        f"{s['blind']} blind (steps read, no content)"
    )
    print_group_table("Overall", {"all": tally_by(rows, lambda r: "all")["all"]})
    print_group_table("Per convention", tally_by(rows, lambda r: r.convention))
    recorded = [r for r in rows if r.source == "recording"]
    if recorded:
        print_group_table("Per framework (recordings)", tally_by(recorded, lambda r: r.framework), width=30)
    print_situation_table(rows)
    print_signal_table(rows)
    s["per_convention"] = {
        c: {col: {"accuracy": t.acc(col), "fpr": t.fpr(col), "recall": t.recall(col)} for col in COLUMNS}
        | {"n": t.n, "unscored": t.unscored}
        for c, t in tally_by(rows, lambda r: r.convention).items()
    }
    s["signals"] = signal_stats(rows)
    return s


def cross_validate(rows: list[Row], traces: dict[str, Trace]) -> dict:
    """Leave-situation-out figures (``bench/corpus_cv.py``) printed beside the in-sample
    ones, overall, per convention and per recording framework."""
    started = time.perf_counter()
    cv = CrossValidation(rows, traces, {r.trace_id: r.predictions["default"] for r in rows})
    held_out = cv.run()
    for row in rows:
        row.predictions["held_out"] = held_out[row.trace_id]
    print(
        "\n## In-sample and leave-situation-out (default scorer, `loop` is the positive)\n\n"
        "In-sample: the default thresholds on every trace. Held out: for each situation, every "
        "threshold family's setting\nchosen on the other situations (grid in bench/corpus_cv.py, "
        f"misses + {FP_WEIGHT} x false positives), then that situation scored with it.\n"
    )
    head = f"{'':30} {'n':>5} {'loops':>5} | {'in-sample':^26} | {'leave-situation-out':^26}"
    print(head)
    print(f"{'':30} {'':>5} {'':>5}" + (" | " + f"{'acc':>8} {'FPR':>8} {'recall':>8}") * 2)
    print("-" * len(head))
    groups = {"all": tally_by(rows, lambda r: "all")["all"]}
    groups |= {f"convention {c}": t for c, t in tally_by(rows, lambda r: r.convention).items()}
    recorded = [r for r in rows if r.source == "recording"]
    groups |= {f"framework {f}": t for f, t in tally_by(recorded, lambda r: r.framework).items()}
    first_look = [r for r in rows if r.batch]
    if first_look:
        groups |= {f"blind {b}": t for b, t in tally_by(first_look, lambda r: r.batch).items()}
    for name, t in groups.items():
        line = f"{name:30} {t.n:>5} {t.loops:>5}"
        for col in ("default", "held_out"):
            line += f" | {_pct(t.acc(col)):>8} {_pct(t.fpr(col)):>8} {_pct(t.recall(col)):>8}"
        print(line)
    print("\nSettings chosen over the folds (per family):")
    for line in cv.choice_lines():
        print(line)
    changed = [r for r in rows if r.predictions["held_out"] != r.predictions["default"]]
    by_situation = Counter(r.situation for r in changed)
    if by_situation:
        differ = ", ".join(f"{s} {n}" for s, n in by_situation.items())
        print(f"Held-out verdicts that differ from in-sample: {differ}")
    print(f"(cross-validation: {time.perf_counter() - started:.1f} s)")
    t = groups["all"]
    return {"accuracy": t.acc("held_out"), "fpr": t.fpr("held_out"), "recall": t.recall("held_out")}


def run(
    source: str = "all",
    variants: int | None = None,
    situations: set[str] | None = None,
    conventions: set[str] | None = None,
    cv: bool = True,
) -> tuple[list[Row], dict]:
    rows, spans = load_rows(source, variants, situations, conventions)
    traces = score_rows(rows, spans)
    figures = report(rows)
    if cv:
        figures["leave_situation_out"] = cross_validate(rows, traces)
    return rows, figures


# --- first look ----------------------------------------------------------------------------


def batch_figures(rows: list[Row]) -> dict:
    """One batch's figures under the default scorer (``loop`` is the positive): traces,
    verdicts right, healthy runs flagged, and the situations with a wrong verdict."""
    t = Tally()
    for r in rows:
        t.add(r)
    by_situation: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_situation[r.situation].append(r)
    missed = []
    for name, rs in sorted(by_situation.items()):
        right = sum(r.predictions["default"] == r.loop for r in rs)
        if right < len(rs):
            signals = Counter(s for r in rs if r.predictions["default"] != r.loop for s in r.signals)
            missed.append(
                {
                    "situation": name,
                    "label": rs[0].label,
                    "right": right,
                    "traces": len(rs),
                    "signals": [s for s, _ in signals.most_common(3)],
                }
            )
    return {
        "situations": len(by_situation),
        "traces": t.n,
        "loops": t.loops,
        "healthy": t.healthy,
        "correct": t.right["default"],
        "accuracy": round(t.acc("default"), 4),
        "false_positives": t.fp["default"],
        "unscored": t.unscored,
        "missed": missed,
    }


def _git_head() -> str:
    """The commit scored, with ``+changes`` when the detectors or the scoring differ from it."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--", "otel_semloop")
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"{head}+changes" if changed else head


def _batch_line(name: str, f: dict) -> str:
    return (
        f"accuracy {100 * f['accuracy']:.1f}% ({f['correct']}/{f['traces']}), "
        f"false positives {f['false_positives']}/{f['healthy']}"
    )


def first_look(record: bool = True, only: set[str] | None = None) -> list[dict]:
    """Every blind batch: its first-look figures (recorded the first time the batch is
    scored, then only read back) beside the figures now. A batch scored here for the first
    time is recorded in :data:`FIRST_LOOK_DATA` (with the date and the commit scored);
    nothing already recorded is ever rewritten. ``only``: the batches not recorded yet
    that may be scored now (the others are left unread, for a later first look)."""
    recorded = {entry["batch"]: entry for entry in recorded_first_looks()}
    entries = list(recorded.values())
    waiting = [b.name for b in blind_batches() if b.name not in recorded]
    if only is None and waiting:
        # One first look at a time: the earliest batch waiting; the next waits until the
        # lessons of this one are taken (``--batch`` names another).
        only = {waiting[0]}
        if len(waiting) > 1:
            print(f"first look of {waiting[0]} only; still unread: {', '.join(waiting[1:])}")
    batches = [b for b in blind_batches() if b.name in recorded or only is None or b.name in only]
    if not batches:
        print("no blind batches under bench/corpus/first_look/")
    for folder in batches:
        rows, spans = load_rows("first_look", None, None, None, files=[folder / "labels.jsonl"])
        score_rows(rows, spans)
        now = batch_figures(rows)
        first = recorded.get(folder.name)
        if first is None and record:
            import datetime

            first = {
                "batch": folder.name,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "commit": _git_head(),
                **now,
            }
            entries.append(first)
            FIRST_LOOK_DATA.write_text(json.dumps({"batches": entries}, indent=2) + "\n")
            print(f"{folder.name}: first look recorded in {FIRST_LOOK_DATA.name}")
        print(f"\n## {folder.name} ({now['situations']} situations, {now['traces']} traces)")
        if first is not None:
            print(f"  first look ({first['date']}, {first['commit']}): {_batch_line(folder.name, first)}")
            for m in first["missed"]:
                print(f"    missed at first look: {m['situation']} ({m['label']}) {m['right']}/{m['traces']}")
        print(f"  now: {_batch_line(folder.name, now)}")
        for m in now["missed"]:
            sig = f" [{', '.join(m['signals'])}]" if m["signals"] else ""
            print(f"    wrong now: {m['situation']} ({m['label']}) {m['right']}/{m['traces']}{sig}")
    entries = [e for e in entries if any(b.name == e["batch"] for b in batches)] or entries
    if entries:
        latest = entries[-1]
        situations = sum(e["situations"] for e in entries)
        traces = sum(e["traces"] for e in entries)
        flagged = f"{latest['false_positives']}/{latest['healthy']}"
        print(
            f"\nfirst look: batches {len(entries)}, situations {situations}, traces {traces}; latest batch: "
            f"accuracy {100 * latest['accuracy']:.1f}%, false positives {flagged}"
        )
    else:
        print("\nfirst look: batches 0, situations 0, traces 0; latest batch: accuracy -, false positives -")
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--first-look",
        action="store_true",
        help="score the blind batches: first-look figures (recorded on a batch's first scoring) beside now",
    )
    parser.add_argument(
        "--batch",
        action="append",
        help="with --first-look: score for the first time only this batch (repeatable; e.g. batch3)",
    )
    parser.add_argument("--source", choices=("synthetic", "recording", "first_look", "all"), default="all")
    parser.add_argument("--variants", type=int, help="only the first N variants of each situation")
    parser.add_argument("--situation", action="append", help="only this situation (repeatable)")
    parser.add_argument("--convention", action="append", help="only this convention (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the summary figures as JSON")
    parser.add_argument("--no-cv", action="store_true", help="skip the leave-situation-out figures")
    args = parser.parse_args(argv)
    if args.first_look:
        first_look(only=set(args.batch) if args.batch else None)
        return 0
    _, figures = run(
        args.source,
        args.variants,
        set(args.situation) if args.situation else None,
        set(args.convention) if args.convention else None,
        cv=not args.no_cv,
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
