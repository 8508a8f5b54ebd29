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

Cost
    O(length of the tail). The patterns are written to be tried only where they can match:
    number patterns start with the digit, matched only where a run of digits starts
    (:func:`_digit_starts`), field patterns only where their key words occur
    (:func:`_anchored`); text the shortcuts cannot read (non-ASCII: ``\\d`` and IGNORECASE
    follow Unicode there) is scanned by the patterns themselves. Each shortcut is checked
    against the plain patterns in ``tests/detectors/test_facts_fast_paths.py``.

Size: three readers of the same tail sharing the same shortcuts; split, the shortcuts
would live apart from the patterns whose shape they depend on.
"""

from __future__ import annotations

import re

from otel_semloop.detectors.normalize import _mask_ids, has_digit

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

#: The patterns that read numbers start with the digit and check what precedes it by a
#: lookbehind over that digit (``\d(?<![\d.]\d)`` is ``(?<![\d.])\d``): a pattern that
#: starts with a character class is only tried where the text holds one (the engine scans
#: for it in C), one that starts with a lookbehind or ``\b`` at every position.
_PERCENT = re.compile(r"(\d(?<![\d.]\d)\d{0,2}(?:\.\d+)?)\s?%")
#: ``n/m`` or ``n of m`` as a whole (not a date, a path or a time); a colon after it is
#: allowed when a blank follows (``Step 58/800: loss=1.83``), not inside ``12/25:30``.
_FRACTION = re.compile(r"(\d(?<![\w/.:-]\d)\d*)\s*(?:/|\bof\b)\s*(\d+)(?![\w/.-]|:\S)", re.IGNORECASE)


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
#: The words every match of each field pattern starts with (:func:`_anchored`).
_PROGRESS_KEYS = ("progress", "percent", "pct", "completion")
_DONE_KEYS = (
    "done", "completed", "processed", "finished", "succeeded", "current", "written",
    "downloaded", "uploaded", "indexed",
)  # fmt: skip
_TOTAL_KEYS = ("total", "expected", "count_total")
_FIELD_HINTS = ("progress", "percent", "pct", "completion", "total", "expected")
#: More candidate starts than this and :func:`_anchored` lets the engine scan instead.
_MAX_ANCHORS = 32


def _anchored(
    pattern: re.Pattern[str], text: str, lowered: str | None, keys: tuple[str, ...], *, first: bool = False
) -> list[re.Match[str]]:
    r"""``list(pattern.finditer(text))`` (with ``first``: only its first match, as ``search``
    finds it) for a pattern each of whose matches starts with one of ``keys`` (matched
    case-insensitively), given ``lowered`` = ``text.lower()`` for ASCII text (None
    otherwise: then the pattern scans).

    The keys are found by substring search in C and the pattern is matched there only
    (:func:`_matches_at`); the pattern, which starts with ``\b`` and an alternation under
    IGNORECASE, would be tried at every position (~50 ns a character here). Lower-casing
    ASCII keeps every position; other text scans.
    """
    starts: set[int] | None = None
    if lowered is not None:
        starts = set()
        for key in keys:
            at = lowered.find(key)
            while at >= 0 and starts is not None:
                starts.add(at)
                if len(starts) > _MAX_ANCHORS:
                    starts = None
                else:
                    at = lowered.find(key, at + 1)
    return _matches_at(pattern, text, sorted(starts) if starts is not None else None, first=first)


def _matches_at(
    pattern: re.Pattern[str], text: str, starts: list[int] | None, *, first: bool = False
) -> list[re.Match[str]]:
    r"""``list(pattern.finditer(text))`` (``first``: its first match only) when every match
    of ``pattern`` starts at one of ``starts`` (ascending; None: scan the whole text).

    ``pattern.match(text, start)`` at each start in order, skipping starts inside the
    previous match, is what ``finditer`` finds: it tries every position in turn with the
    same matcher (a lookbehind and ``\b`` see the text before ``start``), and no other
    position can match.
    """
    if starts is None:
        if first:
            match = pattern.search(text)
            return [match] if match is not None else []
        return list(pattern.finditer(text))
    found: list[re.Match[str]] = []
    end = 0
    for start in starts:
        if start < end:
            continue
        match = pattern.match(text, start)
        if match is not None:
            found.append(match)
            if first:
                break
            end = match.end()
    return found


#: ASCII digits to ``0``, anything else to a blank (runs of ``0`` are digit runs, found
#: by substring searches in C).
_DIGIT_CLASS = bytes(ord("0") if 48 <= c <= 57 else ord(" ") for c in range(256))
#: More digit runs than this and the number patterns scan instead (a table: matching at
#: each run from Python would cost more than the engine's scan).
_MAX_DIGIT_RUNS = 48


def _digit_starts(text: str) -> list[int] | None:
    r"""Where the runs of digits of ASCII ``text`` start (None for other text, or for more
    than :data:`_MAX_DIGIT_RUNS` runs): the only places where a pattern that starts with a
    digit not preceded by a word character or a digit can match (:func:`_matches_at`).
    Other scripts' digits are ``\d`` too, so other text scans."""
    if not text.isascii():
        return None
    classes = text.encode("ascii").translate(_DIGIT_CLASS)
    starts: list[int] = []
    at = classes.find(b"0")
    while at >= 0:
        if len(starts) == _MAX_DIGIT_RUNS:
            return None
        starts.append(at)
        at = classes.find(b" ", at)  # the end of the run
        if at < 0:
            break
        at = classes.find(b"0", at)
    return starts


def _sub_at(pattern: re.Pattern[str], replacement: str, text: str, starts: list[int] | None) -> str:
    """``pattern.sub(replacement, text)`` (a plain replacement, a pattern that never matches
    empty) with the matches found by :func:`_matches_at`."""
    if starts is None:
        return pattern.sub(replacement, text)
    pieces: list[str] = []
    end = 0
    for match in _matches_at(pattern, text, starts):
        pieces.append(text[end : match.start()])
        pieces.append(replacement)
        end = match.end()
    if not pieces:
        return text
    pieces.append(text[end:])
    return "".join(pieces)


def _field_progress(tail: str, lowered: str | None = None) -> tuple[int, float] | None:
    """(position, fraction) of the last structured progress field, or None.

    ``lowered`` is ``tail.lower()`` when ``tail`` is ASCII (None: the patterns scan)."""
    best: tuple[int, float] | None = None
    for match in _anchored(_PROGRESS_FIELD, tail, lowered, _PROGRESS_KEYS):
        value = float(match.group(2))
        key = match.group(1).lower()
        if value <= 1.0 and not key.startswith(("percent", "pct")) and "." in match.group(2):
            best = (match.start(), value)
        elif value <= 100.0:
            best = (match.start(), value / 100.0)
    totals = _anchored(_TOTAL_FIELD, tail, lowered, _TOTAL_KEYS, first=True)
    if totals:  # a done count matters only beside a total
        total = totals[0]
        dones = _anchored(_DONE_FIELD, tail, lowered, _DONE_KEYS, first=True)
        if dones:
            done = dones[0]
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
    lowered = None
    if ":" in tail or "=" in tail:
        if tail.isascii():
            lowered = tail.lower()
            has_field = any(hint in lowered for hint in _FIELD_HINTS)
        else:
            has_field = _FIELD_HINT.search(tail) is not None
    else:
        has_field = False
    if not (has_percent or has_fraction or has_field) or not has_digit(tail):
        return None
    best: tuple[int, float] | None = None
    if has_field:
        best = _field_progress(tail, lowered)
    digits = _digit_starts(tail)
    for match in _matches_at(_PERCENT, tail, digits) if has_percent else ():
        value = float(match.group(1))
        if value <= 100.0:
            best = (match.start(), value / 100.0)
    for match in _matches_at(_FRACTION, tail, digits) if has_fraction else ():
        done, total = int(match.group(1)), int(match.group(2))
        if total >= 2 and done <= total and (best is None or match.start() > best[0]):
            best = (match.start(), done / total)
    return best[1] if best is not None else None


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


_REMAINING_HINTS = ("pending", "remaining", "left", "queued", "outstanding", "waiting", "todo", "unprocessed")
_TO_GO = re.compile(r"to\s+go")


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
    if not has_digit(tail):
        return None
    if tail.isascii():
        # Every match holds one of the words; substring tests in C rule most results out
        # (ASCII only: under IGNORECASE a few non-ASCII letters match ASCII ones).
        lowered = tail.lower()
        if not any(word in lowered for word in _REMAINING_HINTS) and not _TO_GO.search(lowered):
            return None
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
_NUMBER = re.compile(r"(\d(?<![\w.]\d)\d{0,7}(?:\.\d+)?)(?![\w.]*\d)(?!\.\d)")
#: Contexts that make a number volatile, not a count: clocks (``10:42:07``), durations
#: (``35 ms``, ``2.5s``), and numbers labelled as identifiers, attempts or clocks.
_CLOCK = re.compile(r"\d(?<!\w\d)\d?:\d{2}(?::\d{2}(?:[.,]\d+)?)?\b")  # \b\d{1,2}:...
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
#: The words :data:`_VOLATILE_LABEL` names (read from the pattern: one list).
_LABEL_WORDS = frozenset(_VOLATILE_LABEL.pattern.split(r"\b(?:", 1)[1].split(r")\b", 1)[0].split("|"))
#: What may follow a label before the number: quotes, blanks, ``:``, ``=`` and ``#``
#: (ASCII; a superset of what the pattern's tail accepts).
_LABEL_TRAIL = "\"' \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f:=#"
#: ASCII word characters kept (letters lower-cased), anything else to a blank.
_WORD_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if (c < 128 and (chr(c).isalnum() or c == 95)) else 32 for c in range(256)
)


def _may_be_labelled(window: str) -> bool:
    """False only when ``_VOLATILE_LABEL`` cannot match at the end of the ASCII ``window``
    (the text just before a number): a match is a label word or ``#``, then only quotes,
    blanks, ``:``, ``=`` or ``#``. So with no ``#`` in that trailing stretch, the word
    before it (cut at the window's start, which only makes more words candidates) must be
    a label. A quick necessary test before the pattern, which tries each of its words at
    each position of the window."""
    head = window.rstrip(_LABEL_TRAIL)
    if "#" in window[len(head) :]:
        return True
    if not head or not (head[-1].isalnum() or head[-1] == "_"):
        return False  # no word ends where the trailing stretch starts
    return head.encode("ascii").translate(_WORD_BYTES).rsplit(None, 1)[-1].decode("ascii") in _LABEL_WORDS


_VOLATILE_AFTER = re.compile(r"\s*(?:ago|times?\b|attempts?\b|tries\b|retries\b)", re.IGNORECASE)


def result_numbers(text: str) -> tuple[float, ...] | None:
    """The numbers of a result's tail that could be counts (see :func:`numbers_progressed`),
    in order: clock times, ISO dates, durations, long digit runs (epochs, ids), numbers
    inside identifiers and numbers labelled as ids, pids, attempts, versions or clocks are
    left out. None when the tail holds none."""
    tail = text[-PROGRESS_TAIL_CHARS:]
    if not has_digit(tail):
        return None
    if ":" in tail:
        tail = _sub_at(_CLOCK, " ", tail, _digit_starts(tail))
    # UUIDs, timestamps, hex runs and generated identifiers first: a random id's digit
    # groups (``f652-4008-b7b4``) are not counts, and they change on every call.
    tail = _mask_ids(tail)
    if not has_digit(tail):
        return None
    ascii_tail = tail.isascii()
    numbers: list[float] = []
    for match in _matches_at(_NUMBER, tail, _digit_starts(tail)):
        start, end = match.span()
        if _DURATION_UNIT.match(tail, end) and not _UNIT_NOT_DURATION.match(tail, end):
            continue
        before = max(0, start - 24)
        if (not ascii_tail or _may_be_labelled(tail[before:start])) and _VOLATILE_LABEL.search(
            tail, before, start
        ):
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
