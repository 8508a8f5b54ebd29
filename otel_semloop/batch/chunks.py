"""A chunk of consecutive units, parsed and (where it can be) scored in a worker process.

Why chunks: the reading process should only read, order and write. Parsing a line
(``orjson.loads``), finding its spans, and decoding and scoring the traces are the heavy
part, so a worker does them for a run of consecutive units (a chunk) and sends back:

* for each unit: its spans' ids and where each span is. A JSON line that is already
  compact (exactly ``orjson.dumps`` of itself parsed, as orjson and most exporters write
  it) gets its spans' byte offsets in the line (``bounds``: start and end of each), and
  nothing else crosses back: the reading process holds the line anyway. Any other unit
  gets each span as compact bytes (JSON or protobuf) and, for JSON, the bytes *around*
  the spans (``gaps``), so that ``gaps[0] + span[0] + gaps[1] + ... + gaps[n]`` is
  exactly ``orjson.dumps`` of the parsed line (checked, else ``gaps`` is None). A line
  whose spans gained patches is then written by re-serialising only those spans, and a
  line that gained nothing is still copied as it was read;
* for each trace that the worker saw start, get its root and end inside the chunk:
  the verdict, computed from the spans it parsed (from their compact JSON, which the
  worker holds as offsets into the line, parsed again when the trace completes: cheaper
  than keeping every parsed span until then; see ``_parse_chunk``).

The worker runs the engine's own completion rule (root seen, then ``window`` units
without a span of the trace) on the chunk alone. The engine, which sees every unit in
order, uses a worker's verdict only when its own rule gave the trace exactly the spans
the worker scored (all from that chunk, same count, same roots); otherwise (a trace that
began in an earlier chunk, or went on in the next) it scores the trace from the span
bytes, as for any other trace. So a verdict never depends on where chunks were cut.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from itertools import accumulate, chain, islice, repeat
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from otel_semloop.batch.ring import shared
from otel_semloop.batch.scan import scan_json_columns, scan_proto
from otel_semloop.batch.spans import apply_json, dump_json, load_json
from otel_semloop.batch.worker import ScorerSpec, TraceJob, score_job, scorer
from otel_semloop.otlp._common import Bad
from otel_semloop.scoring import collector_paused

__all__ = ["ChunkResult", "Parsed", "parse_chunk", "parse_ring", "parse_unit", "render_json"]

#: One parsed unit: (problem where, problem) for a unit that is not OTLP, else
#: (None, None, (span ids, root flags), spans, gaps, groups, bounds) where span ids are
#: every span's 16 hex characters in one string and root flags one byte a span (1: a
#: local root) -- one object each instead of a tuple a span, so a chunk's result pickles
#: in a fifth of the time --, groups are (trace id, span indexes, root span ids) per trace, and either
#: bounds are the spans' (start, end) offsets in a compact line (an ``array``, spans and
#: gaps None), or spans are each span's bytes and gaps the bytes around them (or None).
Parsed = tuple[Any, ...]
#: (parsed units, {trace id: (span count, roots, patched spans, row)}) where patched spans
#: are (unit index in the chunk, span index, patch) and a patch is the span's new compact
#: JSON when its unit has bounds or gaps, else the :class:`~otel_semloop.writeback.SpanPatch`.
ChunkResult = tuple[list[Parsed], dict[str, tuple[int, tuple[str, ...], Any, Any]]]

_LEVELS = ("resourceSpans", "scopeSpans", "spans")


def parse_unit(kind: str, raw: bytes, where: str) -> tuple[Parsed, list[Any]]:
    """The unit parsed, and its spans (the dict or protobuf Span of each) in scan order."""
    try:
        if kind == "json":
            doc = load_json(raw)
            objects, tids, sids, roots = scan_json_columns(doc)
        else:
            doc = TracesData.FromString(raw)
            scanned = scan_proto(doc)
            objects = [s.span for s in scanned]
            tids = [s.trace_id for s in scanned]
            sids = "".join([s.span_id for s in scanned])
            roots = bytes([s.root for s in scanned])
    except Bad as exc:
        return (exc.to_error(where).where, str(exc)), []
    except (orjson.JSONDecodeError, ValueError) as exc:
        return (where, f"invalid JSON: {exc}"), []
    except (DecodeError, RuntimeError) as exc:
        return (where, f"invalid protobuf: {exc}"), []
    except RecursionError:
        return (where, "nested too deeply to decode"), []
    ids = (sids, roots)
    groups = _groups(tids, sids, roots)
    if kind == "json":
        bounds = _compact_bounds(doc, objects, raw)
        if bounds is not None:
            return (None, None, ids, None, None, groups, bounds), objects
        whole = _whole(doc)
        spans = [dump_json(o) for o in objects]
        gaps = _gaps(doc, spans, whole) if whole is not None else None
        # copied to their size: orjson's bytes keep its whole (much larger) buffer
        spans = [bytes(memoryview(b)) for b in spans]
    else:
        spans = [o.SerializeToString() for o in objects]
        gaps = None
    return (None, None, ids, spans, gaps, groups, None), objects


def _load_spans(parts: list[Any]) -> list[Any]:
    """The span dicts of spans' compact JSON (bytes or views), in one ``orjson.loads``."""
    return orjson.loads(b"".join([b"[", b",".join(parts), b"]"]))  # type: ignore[no-any-return]


def _whole(doc: Any) -> bytes | None:
    """``orjson.dumps(doc)``, or None past orjson's nesting limit."""
    try:
        return orjson.dumps(doc)
    except TypeError:
        return None


def _compact_bounds(doc: Any, spans: list[Any], raw: bytes) -> array[int] | None:
    """Start and end of each span in ``raw`` when ``raw`` is exactly ``orjson.dumps(doc)``
    (a compact line), else None.

    Why part by part: orjson writes a container as its members' own serialisations joined
    by fixed punctuation, so ``orjson.dumps(doc)`` is the skeleton's gaps (see
    :func:`_skeleton_gaps`) with each span's own dump between them. Joined, the parts must
    be ``raw`` exactly: that is the check that ``raw`` is compact, and the running sum of
    their lengths is where each span starts and ends. Mapped and summed in C (one dump a
    span, one join and one comparison a line), not a Python step a span; a line's span
    dumps are freed with the line."""
    gaps = _skeleton_gaps(doc)
    if gaps is None or len(gaps) != len(spans) + 1:
        return None
    try:
        parts = list(map(orjson.dumps, spans))
    except TypeError:  # past orjson's nesting limit: not what orjson wrote
        return None
    pieces = list(chain.from_iterable(zip(gaps, parts, strict=False)))  # one gap more: the last
    pieces.append(gaps[-1])
    if sum(map(len, pieces)) != len(raw) or b"".join(pieces) != raw:
        return None
    return array("q", islice(accumulate(map(len, pieces)), 2 * len(spans)))


def _groups(tids: list[str], sids: str, roots: bytes) -> list[tuple[str, list[int], list[str]]]:
    """The unit's spans by trace: ``(trace id, span indexes, root span ids)``, ordered by
    each trace's last span in the unit (the order in which span-by-span grouping would
    leave them most recently seen), so the engine handles a unit trace by trace."""
    last = {tid: i for i, tid in enumerate(tids)}
    indexes: dict[str, list[int]] = {tid: [] for tid in last}
    for i, tid in enumerate(tids):
        indexes[tid].append(i)
    root_ids: dict[str, list[str]] = {}
    i = roots.find(1)
    while i >= 0:
        root_ids.setdefault(tids[i], []).append(sids[16 * i : 16 * i + 16])
        i = roots.find(1, i + 1)
    return [(tid, indexes[tid], root_ids.get(tid, [])) for tid in sorted(last, key=last.__getitem__)]


def _gaps(doc: Any, spans: list[bytes], whole: bytes) -> list[bytes] | None:
    """The compact serialisation of ``doc`` (``whole``) around its spans, or None when it
    cannot be composed exactly."""
    gaps = _skeleton_gaps(doc)
    if gaps is None or len(gaps) != len(spans) + 1 or render_json(gaps, spans) != whole:
        return None
    return gaps


def _skeleton_gaps(doc: Any) -> list[bytes] | None:
    """``orjson.dumps(doc)`` cut at its spans: the bytes before the first span, between
    each two, and after the last (one more than there are spans), or None when orjson
    cannot write a part of it."""
    gaps: list[bytes] = []
    buf: list[bytes] = []
    dumps = orjson.dumps

    def obj(d: dict[str, Any], level: int) -> None:
        buf.append(b"{")
        first = True
        for k, v in d.items():
            if not first:
                buf.append(b",")
            first = False
            buf.append(dumps(k))
            buf.append(b":")
            if k == _LEVELS[level] and type(v) is list:
                buf.append(b"[")
                if level < 2:
                    for i, item in enumerate(v):
                        if i:
                            buf.append(b",")
                        obj(item, level + 1)
                elif v:  # the spans: the bytes before the first, then a comma between each two
                    gaps.append(b"".join(buf))
                    buf.clear()
                    gaps.extend(repeat(b",", len(v) - 1))
                buf.append(b"]")
            else:
                buf.append(dumps(v))
        buf.append(b"}")

    try:
        obj(doc, 0)
    except TypeError:
        return None
    gaps.append(b"".join(buf))
    return gaps


def render_json(gaps: list[bytes], spans: list[bytes]) -> bytes:
    """``gaps[0] + spans[0] + gaps[1] + ... + gaps[-1]``."""
    parts = list(chain.from_iterable(zip(gaps, spans, strict=False)))  # one gap more
    parts.append(gaps[-1])
    return b"".join(parts)


class _Local:
    __slots__ = ("exact", "kinds", "last", "places", "roots", "spans")

    def __init__(self) -> None:
        self.spans: list[Any] = []
        #: per unit: (unit, its span indexes, the unit's span ids, gaps?), in unit order
        self.places: list[tuple[int, list[int], str, bool]] = []
        self.roots: list[str] = []
        self.last = 0
        self.kinds: set[str] = set()
        self.exact = True


def parse_chunk(
    units: list[tuple[str, bytes, str] | None],
    window: int,
    spec: ScorerSpec | None = None,
    carried: frozenset[str] = frozenset(),
) -> ChunkResult:
    """Parse ``units`` (``(kind, raw, where)``, None for a unit that was not read) and
    score the traces complete inside them (see the module docstring). ``carried`` names
    traces that probably began before the chunk: they are not scored here (the engine
    would not use the verdict)."""
    with collector_paused():
        return _parse_chunk(units, window, spec, carried)


def parse_ring(
    key: int,
    offsets: list[int],
    metas: list[Any],
    window: int,
    spec: ScorerSpec | None = None,
    carried: frozenset[str] = frozenset(),
) -> ChunkResult:
    """:func:`parse_chunk` of a chunk whose lines came through the shared
    :class:`~otel_semloop.batch.ring.Ring` (see :func:`~otel_semloop.batch.ring.shared`)."""
    return parse_chunk(shared(key, offsets, metas), window, spec, carried)


def _parse_chunk(
    units: list[tuple[str, bytes, str] | None],
    window: int,
    spec: ScorerSpec | None,
    carried: frozenset[str],
) -> ChunkResult:
    parsed: list[Parsed] = []
    open_: OrderedDict[str, _Local] = OrderedDict()
    stalled: dict[str, _Local] = {}
    closed: set[str] = set()
    scored: dict[str, tuple[int, tuple[str, ...], Any, Any]] = {}
    current = scorer(spec)

    def close(tid: str, t: _Local) -> None:
        # scored at once, so only open traces keep their decoded spans
        closed.add(tid)
        if len(t.kinds) != 1 or not t.exact or tid in carried:
            return  # JSON and protobuf spans in one trace (the engine converts), or not ours
        roots = tuple(t.roots)
        kind = next(iter(t.kinds))
        decoded = t.spans
        if kind == "json":  # the spans' compact JSON: parsed now, while it is hot
            decoded = _load_spans(decoded)
        job = TraceJob(tid, kind, b"", roots, False)
        _, patches, row = score_job(job, current, decoded, parsed=True)
        patched = []
        if patches:
            spans = iter(decoded)
            for unit, indexes, sids, gaps in t.places:
                # t.spans are the places' spans in order; zip takes an index first, so it
                # stops at the unit's last index without taking a span of the next unit
                for index, span in zip(indexes, spans, strict=False):
                    patch = patches.get(sids[16 * index : 16 * index + 16])
                    if patch is not None:
                        if gaps:  # written here, where the span is already decoded
                            apply_json(span, patch)
                            patch = bytes(memoryview(dump_json(span)))
                        patched.append((unit, index, patch))
        scored[tid] = (len(t.spans), roots, patched, row)

    for n, unit in enumerate(units, 1):
        if unit is None:
            parsed.append(())
        else:
            kind, raw, where = unit
            p, objects = parse_unit(kind, raw, where)
            parsed.append(p)
            if p[0] is None:
                # a line orjson cannot write may hold values it cannot read back either:
                # its traces are scored by the engine from the span bytes, as before
                gaps = p[4] is not None or p[6] is not None
                exact = kind != "json" or gaps
                sids = p[2][0]
                bounds = p[6]
                if bounds is not None:
                    view = memoryview(raw)
                # A JSON trace is kept as its spans' compact JSON (views into a compact
                # line, else the span bytes), not the dicts just parsed, and decoded
                # again if it completes here: the line's dicts are freed at once, while
                # they are in the cache. Kept across the lines a trace spans (64 traces
                # open at once on the bench), they made the heap grow and missed the
                # cache when decoded and freed: chunks of the 34 MB bench file, one
                # process, 1.60 -> 1.37 s CPU, peak RSS 130 -> 95 MiB, though every
                # span scored here is now parsed twice.
                if kind == "json" and bounds is None:
                    objects = p[3]
                # trace by trace, each placed after its last span in the unit: the order
                # in which span-by-span grouping would leave the open traces
                for tid, indexes, roots in p[5]:
                    if tid in closed:
                        continue  # late: the engine writes it untouched
                    t = open_.get(tid)
                    if t is None:
                        t = stalled.pop(tid, None) or _Local()
                        open_[tid] = t
                    else:
                        open_.move_to_end(tid)
                    if bounds is not None:
                        t.spans += [view[bounds[2 * i] : bounds[2 * i + 1]] for i in indexes]
                    else:
                        t.spans += [objects[i] for i in indexes]
                    t.places.append((n - 1, indexes, sids, gaps))
                    t.kinds.add(kind)
                    t.exact = t.exact and exact
                    t.last = n
                    if roots:
                        t.roots += roots
        limit = n - window
        while open_:
            tid, t = next(iter(open_.items()))
            if t.last > limit:
                break
            del open_[tid]
            if t.roots:
                close(tid, t)
            else:
                stalled[tid] = t
    for tid, t in open_.items():  # a root and no span since: most likely complete
        if t.roots:
            close(tid, t)
    return parsed, scored
