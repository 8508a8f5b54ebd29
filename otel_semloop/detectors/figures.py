"""Figures read from a tool result: explicit progress, work remaining, numbers that grow.

Masked results hide numbers (a new request id is not progress), which would also hide work
getting done. These figures let it through: the fingerprinter
(:class:`~otel_semloop.detectors.facts.Fingerprinter`) compares them between calls of the
same action and counts a step as progress when they moved the right way. All pure
functions of the text, read from its tail only (:data:`PROGRESS_TAIL_CHARS`: status lines
come last, and the bound keeps the cost per step constant).

Progress
    :func:`progress_value` reads an explicit progress figure (a percentage, ``n/m`` or
    ``n of m``, a ``progress``/``percent`` field, a ``done`` count with a ``total``) from the
    end of a result. A figure above anything the same call returned before is progress even
    when the masked result is unchanged.
Work remaining
    :func:`remaining_counts` reads counts labelled as work still to do ("12 pending");
    :func:`counts_fell` says whether they only fell.
Numbers
    :func:`result_numbers` reads the numbers that could be counts (not clocks, durations,
    ids, attempts); :func:`numbers_progressed` says whether they grew (or many changed).

Each reader costs O(length of the tail).
"""

from __future__ import annotations

import re

from otel_semloop.detectors.normalize import _mask_ids

__all__ = [
    "MANY_CHANGED_NUMBERS",
    "MAX_COUNTS",
    "MAX_NUMBERS",
    "PROGRESS_TAIL_CHARS",
    "best_numbers",
    "counts_fell",
    "numbers_progressed",
    "progress_value",
    "remaining_counts",
    "result_numbers",
]

#: Only the end of a result is searched for a progress figure: status lines come last, and
#: the bound keeps the cost per step constant on huge results.
PROGRESS_TAIL_CHARS = 2048

_PERCENT = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?%")
#: ``n/m`` or ``n of m`` as a whole (not a date, a path or a time); a colon after it is
#: allowed when a blank follows (``Step 58/800: loss=1.83``), not inside ``12/25:30``.
_FRACTION = re.compile(r"(?<![\w/.:-])(\d+)\s*(?:/|\bof\b)\s*(\d+)(?![\w/.-]|:\S)", re.IGNORECASE)


#: Structured progress fields: ``"progress": 0.45``, ``percent=45``, ``pct: 45.5``.
_PROGRESS_FIELD = re.compile(
    r"\b(progress|percent(?:age)?(?:_complete|_done)?|pct|completion|percent_complete)\b[\"']?\s*[:=]\s*[\"']?"
    r"(\d{1,3}(?:\.\d+)?)(?![\d.])",
    re.IGNORECASE,
)
#: ``done``/``total`` pairs: ``{"done": 3, "total": 10}``, ``processed=40 total=100``.
_DONE_FIELD = re.compile(
    r"\b(?:done|completed|processed|finished|succeeded|current|written|downloaded|uploaded|indexed)\b"
    r"[\"']?\s*[:=]\s*(\d{1,12})\b",
    re.IGNORECASE,
)
_TOTAL_FIELD = re.compile(
    r"\b(?:total|expected|count_total|total_count)\b[\"']?\s*[:=]\s*(\d{1,12})\b", re.IGNORECASE
)


_FIELD_HINT = re.compile(r"progress|percent|pct|completion|total|expected", re.IGNORECASE)


def _field_progress(tail: str) -> tuple[int, float] | None:
    """(position, fraction) of the last structured progress field, or None."""
    best: tuple[int, float] | None = None
    for match in _PROGRESS_FIELD.finditer(tail):
        value = float(match.group(2))
        key = match.group(1).lower()
        if value <= 1.0 and not key.startswith(("percent", "pct")) and "." in match.group(2):
            best = (match.start(), value)
        elif value <= 100.0:
            best = (match.start(), value / 100.0)
    done = _DONE_FIELD.search(tail)
    total = _TOTAL_FIELD.search(tail)
    if done and total:
        finished, whole = int(done.group(1)), int(total.group(1))
        if whole >= 1 and finished <= whole:
            position = max(done.start(), total.start())
            if best is None or position > best[0]:
                best = (position, finished / whole)
    return best


def progress_value(text: str) -> float | None:
    """The last explicit progress figure in the tail of ``text`` as a fraction, or None.

    ``45%`` is 0.45, ``3/10`` and ``3 of 10`` are 0.3. A fraction needs ``n <= m`` and
    ``m >= 2`` (so dates such as ``2024/05/01`` and ratios like ``5/1`` are not progress).
    Structured fields count too: ``progress: 0.45`` / ``percent=45`` / ``pct: 45``, and a
    ``done``/``completed``/``processed`` count with a ``total``.
    """
    tail = text[-PROGRESS_TAIL_CHARS:]
    has_percent = "%" in tail
    has_fraction = "/" in tail or "of" in tail or "OF" in tail or "Of" in tail
    has_field = (":" in tail or "=" in tail) and _FIELD_HINT.search(tail) is not None
    if not (has_percent or has_fraction or has_field) or not _HAS_DIGIT.search(tail):
        return None
    best: tuple[int, float] | None = None
    if has_field:
        best = _field_progress(tail)
    for match in _PERCENT.finditer(tail) if has_percent else ():
        value = float(match.group(1))
        if value <= 100.0:
            best = (match.start(), value / 100.0)
    for match in _FRACTION.finditer(tail) if has_fraction else ():
        done, total = int(match.group(1)), int(match.group(2))
        if total >= 2 and done <= total and (best is None or match.start() > best[0]):
            best = (match.start(), done / total)
    return best[1] if best is not None else None


_HAS_DIGIT = re.compile(r"\d")


#: A count is a whole number of at most this many digits: longer runs are ids, epoch
#: times or sizes, whose change says nothing about work remaining.
COUNT_MAX_DIGITS = 6
#: At most this many counts are compared per result; a result with more is a table or a
#: listing, not a status line.
MAX_COUNTS = 8
_REMAINING_WORDS = r"(?:pending|remaining|left|queued|outstanding|waiting|to\s+go|todo|unprocessed)"
#: "12 pending", "3 files left", "remaining: 40", "queued=7": a count next to a word that
#: says it is work still to do (at most one word between number and word).
_REMAINING_COUNT = re.compile(
    rf"(?<![\w.:/#-])(\d{{1,{COUNT_MAX_DIGITS}}})(?:\s+[a-z_-]+)?\s+{_REMAINING_WORDS}\b"
    rf"|\b{_REMAINING_WORDS}\s*[:=]?\s*(\d{{1,{COUNT_MAX_DIGITS}}})(?![\w.:/%-])",
    re.IGNORECASE,
)


def remaining_counts(text: str) -> tuple[int, ...] | None:
    """Counts of work remaining in the tail of ``text`` ("12 pending", "3 files left",
    "remaining: 40"), or None when there are none or too many to be a status line.

    Digits are masked in result fingerprints (a new request id is not progress), which
    would also hide a queue draining from 12 to 0. :class:`~otel_semloop.detectors.facts.
    Fingerprinter` compares these counts between calls of the same action: remaining work
    that only falls is progress. Only numbers labelled as remaining work count: bare
    numbers (pids, attempt numbers, ids) fall and rise at random in loops too, so the rule
    errs toward a loop for unlabelled counters.
    """
    tail = text[-PROGRESS_TAIL_CHARS:]
    counts = tuple(int(m.group(1) or m.group(2)) for m in _REMAINING_COUNT.finditer(tail))
    if not counts or len(counts) > MAX_COUNTS:
        return None
    return counts


def counts_fell(before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> bool:
    """True when ``after`` has the same shape as ``before``, no count rose and one fell."""
    if before is None or after is None or len(before) != len(after):
        return False
    fell = False
    for old, new in zip(before, after, strict=True):
        if new > old:
            return False
        fell = fell or new < old
    return fell


#: Numbers compared between two results of one call (the last ones of its tail): more is a
#: table, whose numbers are compared only for the "many changed" rule.
MAX_NUMBERS = 64
#: Numbers that changed between two otherwise identical results from which the change is
#: progress even if some fell: a log tail that moved on, metrics of a running job.
MANY_CHANGED_NUMBERS = 3
_NUMBER = re.compile(r"(?<![\w.])(\d{1,8}(?:\.\d+)?)(?![\w.]*\d)(?!\.\d)")
#: Contexts that make a number volatile, not a count: clocks (``10:42:07``), durations
#: (``35 ms``, ``2.5s``), and numbers labelled as identifiers, attempts or clocks.
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\b")
_DURATION_UNIT = re.compile(
    r"\s?(?:ns|us|\u00b5s|ms|s|sec|secs|seconds?|m|mins?|minutes?|h|hrs?|hours?|days?)\b", re.IGNORECASE
)
_VOLATILE_LABEL = re.compile(
    r"(?:\b(?:pid|ppid|id|uid|gid|port|job|request|req|run|build|session|ticket|attempt|attempts|retry|"
    r"retries|try|tries|iteration|iter|round|turn|loop|version|ver|v|no|number|num|seq|sequence|"
    r"epoch|time|timestamp|ts|uptime|elapsed|took|duration|latency|age|ago|line|port|pass|cycle)\b|#)"
    r"[\"']?\s*[:=#]?\s*$",
    re.IGNORECASE,
)

_VOLATILE_AFTER = re.compile(r"\s*(?:ago|times?\b|attempts?\b|tries\b|retries\b)", re.IGNORECASE)


def result_numbers(text: str) -> tuple[float, ...] | None:
    """The numbers of a result's tail that could be counts (see :func:`numbers_progressed`),
    in order: clock times, ISO dates, durations, long digit runs (epochs, ids), numbers
    inside identifiers and numbers labelled as ids, pids, attempts, versions or clocks are
    left out. None when the tail holds none."""
    tail = _mask_ids(_CLOCK.sub(" ", text[-PROGRESS_TAIL_CHARS:]))
    numbers: list[float] = []
    for match in _NUMBER.finditer(tail):
        start, end = match.span()
        if _DURATION_UNIT.match(tail, end) and not _UNIT_NOT_DURATION.match(tail, end):
            continue
        if _VOLATILE_LABEL.search(tail, max(0, start - 24), start):
            continue
        if _VOLATILE_AFTER.match(tail, end):
            continue
        numbers.append(float(match.group(1)))
    if not numbers:
        return None
    return tuple(numbers[-MAX_NUMBERS:])


_UNIT_NOT_DURATION = re.compile(r"\s?(?:mb|m\b(?=\s*(?:rows|lines|records))|items?|msgs?)", re.IGNORECASE)


def numbers_progressed(
    before: tuple[float, ...] | None, best: tuple[float, ...] | None, after: tuple[float, ...] | None
) -> bool:
    """True when the numbers of a result show progress over the same call's last result
    (``before``) and its best so far (``best``, element-wise maxima).

    Counts that grow (line counts, sizes, rows processed) are progress: no number fell
    since the last result and one rose above anything it showed before. Many numbers
    changing at once (:data:`MANY_CHANGED_NUMBERS`), in any direction, are a log tail or a
    job's metrics moving on. Results of different shapes are not compared. Clocks,
    epochs, durations, pids and ids never reach here (:func:`result_numbers`)."""
    if before is None or after is None or len(before) != len(after):
        return False
    changed = sum(1 for old, new in zip(before, after, strict=True) if old != new)
    if changed >= MANY_CHANGED_NUMBERS:
        return True
    if changed == 0 or any(new < old for old, new in zip(before, after, strict=True)):
        return False
    reference = best if best is not None and len(best) == len(after) else before
    return any(new > top for top, new in zip(reference, after, strict=True))


def best_numbers(best: tuple[float, ...] | None, now: tuple[float, ...] | None) -> tuple[float, ...] | None:
    """Element-wise maxima of ``best`` and ``now`` (``now`` when the shapes differ)."""
    if now is None:
        return best
    if best is None or len(best) != len(now):
        return now
    return tuple(max(a, b) for a, b in zip(best, now, strict=True))
