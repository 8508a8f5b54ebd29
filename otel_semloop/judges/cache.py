"""Answers cached by content hash, so rescoring the same traces costs nothing.

The key is the SHA-256 of the backend name, the model, and the exact (already redacted)
state and questions: the same trace asked the same questions of the same model hits; any
change of text, question wording or model misses. Only hashes and answers are stored,
never trace text. In memory (an LRU of ``max_entries``), and optionally in an SQLite file
shared by runs (``otel-semloop rescore --judge-cache FILE``). Thread-safe.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import orjson

from otel_semloop.judges.base import Answer, JudgeRequest, JudgeResponse

__all__ = ["AnswerCache", "cache_key"]


def cache_key(backend: str, model: str, request: JudgeRequest) -> str:
    document = orjson.dumps(
        {"backend": backend, "model": model, "state": request.state, "questions": request.questions},
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=str,
    )
    return hashlib.sha256(document).hexdigest()


def _encode(response: JudgeResponse) -> bytes:
    return orjson.dumps(
        {
            "answers": {qid: a.to_json() for qid, a in response.answers.items()},
            "model": response.model,
            "input_tokens": response.input_tokens,
            "output_tokens": response.output_tokens,
        }
    )


def _decode(blob: bytes) -> JudgeResponse:
    data: dict[str, Any] = orjson.loads(blob)
    return JudgeResponse(
        answers={qid: Answer.from_json(a) for qid, a in data["answers"].items()},
        model=str(data.get("model", "")),
        input_tokens=int(data.get("input_tokens", 0)),
        output_tokens=int(data.get("output_tokens", 0)),
        cached=True,
    )


class AnswerCache:
    """LRU in memory, optionally backed by an SQLite file (see the module doc)."""

    def __init__(self, path: str | Path | None = None, max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.path = Path(path) if path else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def get(self, key: str) -> JudgeResponse | None:
        with self._lock:
            blob = self._memory.get(key)
            if blob is not None:
                self._memory.move_to_end(key)
            elif self._db is not None:
                row = self._db.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
                blob = row[0] if row else None
                if blob is not None:
                    self._remember(key, blob)
        return _decode(blob) if blob is not None else None

    def put(self, key: str, response: JudgeResponse) -> None:
        blob = _encode(response)
        with self._lock:
            self._remember(key, blob)
            if self._db is not None:
                self._db.execute("INSERT OR REPLACE INTO answers (key, value) VALUES (?, ?)", (key, blob))

    def _remember(self, key: str, blob: bytes) -> None:
        self._memory[key] = blob
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
