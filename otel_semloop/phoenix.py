"""The verdict as an Arize Phoenix span annotation, so it shows among Phoenix's evaluations.

Phoenix's annotation columns, evaluations panel and filters (``annotations['semloop.loop']
.label == 'loop'``) read *span annotations*, which arrive through its REST API (``POST
/v1/span_annotations``), not OTLP. One annotation per evaluated trace goes on the root span:
``name`` ``semloop.loop``, ``annotator_kind`` ``CODE``, the record's label, score and
explanation, and the fixed ``identifier`` ``otel-semloop`` so rescoring replaces it.

Opt-in: ``SEMLOOP_PHOENIX_URL`` is Phoenix's base URL (``http://localhost:6006``); an API
key (``SEMLOOP_PHOENIX_API_KEY`` or ``PHOENIX_API_KEY``) is sent as ``Authorization: Bearer``.

Delivery runs on one daemon thread with the standard library's HTTP client. An annotation
can be ready before Phoenix has ingested its span, and the synchronous insert answers 404
for such a span, so those are retried with a backoff for ``retry_seconds`` (60) and then
handed to the asynchronous insert, which retries server-side. Other failures are retried
within ``retry_seconds``, then dropped and counted (the span attributes still carry the
verdict). The queue is bounded (``max_pending``); past it the oldest is dropped and counted.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass
from typing import Any

from otel_semloop.evaluation import EVALUATION_NAME, EvaluationRecord

__all__ = ["ANNOTATOR_IDENTIFIER", "PhoenixAnnotator", "annotation_json"]

_logger = logging.getLogger(__name__)

#: The annotation ``identifier``: Phoenix upserts on (name, span, identifier).
ANNOTATOR_IDENTIFIER = "otel-semloop"
#: Annotations per request (Phoenix accepts lists; a batch keeps a rescore of thousands of
#: traces to a few dozen requests).
BATCH = 100
#: The first retry after a 404 or a failure; doubles up to ``_MAX_BACKOFF``.
_FIRST_BACKOFF = 0.25
_MAX_BACKOFF = 5.0
_MISSING = re.compile(r"Spans with IDs (.*) do not exist")


def annotation_json(record: EvaluationRecord) -> dict[str, Any]:
    """``record`` as one item of Phoenix's ``POST /v1/span_annotations`` body."""
    result: dict[str, Any] = {"label": record.label, "explanation": record.explanation}
    if record.score is not None:
        result["score"] = record.score
    metadata: dict[str, Any] = {"trace_id": record.trace_id, "source": "otel-semloop"}
    if record.error_type:
        metadata["error.type"] = record.error_type
    return {
        "span_id": record.span_id,
        "name": EVALUATION_NAME,
        "annotator_kind": "CODE",
        "result": result,
        "metadata": metadata,
        "identifier": ANNOTATOR_IDENTIFIER,
    }


@dataclass(slots=True)
class _Pending:
    record: EvaluationRecord
    first: float
    due: float
    backoff: float = _FIRST_BACKOFF


class PhoenixAnnotator:
    """Posts span annotations to a Phoenix server from a background thread."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        retry_seconds: float = 60.0,
        timeout: float = 10.0,
        max_pending: int = 10_000,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.retry_seconds = retry_seconds
        self.timeout = timeout
        self.max_pending = max_pending
        self._pending: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._inflight = 0
        self._stopped = False
        self._thread: threading.Thread | None = None
        #: Counters: annotations Phoenix stored, handed to its asynchronous insert, dropped.
        self.sent = 0
        self.deferred = 0
        self.dropped = 0

    @classmethod
    def from_env(cls) -> PhoenixAnnotator | None:
        url = os.environ.get("SEMLOOP_PHOENIX_URL", "").strip()
        if not url:
            return None
        key = os.environ.get("SEMLOOP_PHOENIX_API_KEY") or os.environ.get("PHOENIX_API_KEY")
        return cls(url, api_key=key or None)

    # -- the caller's side ------------------------------------------------------------------

    def submit(self, record: EvaluationRecord) -> None:
        """Queue ``record`` (O(1), never blocks, never raises for a full queue)."""
        now = time.monotonic()
        with self._cond:
            if self._stopped:
                self.dropped += 1
                return
            if len(self._pending) >= self.max_pending:
                self._pending.popleft()
                self.dropped += 1
            self._pending.append(_Pending(record, now, now))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="semloop-phoenix", daemon=True)
                self._thread.start()
            self._cond.notify()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is queued or in flight; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.notify()
                self._cond.wait(min(left, 0.1))
        return True

    def shutdown(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    # -- the sender thread --------------------------------------------------------------------

    def _take_due(self) -> list[_Pending] | None:
        """The due annotations (up to :data:`BATCH`), waiting for some; None when stopped and
        nothing is due any more."""
        with self._cond:
            while True:
                now = time.monotonic()
                due = [p for p in self._pending if p.due <= now][:BATCH]
                if due:
                    for item in due:
                        self._pending.remove(item)
                    self._inflight += len(due)
                    return due
                if self._stopped:
                    return None
                wait = min((p.due for p in self._pending), default=now + 1.0) - now
                self._cond.wait(max(0.01, min(wait, 1.0)))

    def _run(self) -> None:
        while True:
            batch = self._take_due()
            if batch is None:
                return
            try:
                retry = self._send(batch)
            except Exception:  # pragma: no cover - _send handles what it expects
                _logger.warning("otel-semloop: Phoenix annotation sender failed", exc_info=True)
                retry = batch
            now = time.monotonic()
            with self._cond:
                for item in retry:
                    if self._stopped or now - item.first >= self.retry_seconds:
                        self.dropped += 1
                        continue
                    item.due = now + item.backoff
                    item.backoff = min(item.backoff * 2, _MAX_BACKOFF)
                    self._pending.append(item)
                self._inflight -= len(batch)
                self._cond.notify_all()

    def _post(self, items: list[_Pending], *, sync: bool) -> tuple[int, str]:
        body = json.dumps({"data": [annotation_json(p.record) for p in items]}).encode()
        url = f"{self.base_url}/v1/span_annotations?sync={'true' if sync else 'false'}"
        request = urllib.request.Request(url, data=body, headers=self._headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, ""
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")[:500]
        except (OSError, ValueError) as exc:
            return 0, f"{type(exc).__name__}: {exc}"

    def _send(self, batch: list[_Pending]) -> list[_Pending]:
        """Post ``batch``; return what to retry later."""
        status, detail = self._post(batch, sync=True)
        if 200 <= status < 300:
            self.sent += len(batch)
            return []
        if status == 404:
            match = _MISSING.search(detail)
            missing = {s.strip() for s in match.group(1).split(",")} if match else set()
            waiting = [p for p in batch if p.record.span_id in missing] or batch
            known = [p for p in batch if p not in waiting]
            if known:
                return waiting + self._send(known)
            now = time.monotonic()
            late = [p for p in waiting if now - p.first >= self.retry_seconds / 2]
            if late and self._post(late, sync=False)[0] in range(200, 300):
                self.deferred += len(late)
                return [p for p in waiting if p not in late]
            return waiting
        if status in (400, 401, 403, 422):
            self.dropped += len(batch)
            _logger.warning("otel-semloop: Phoenix refused %d annotations: %s %s", len(batch), status, detail)
            return []
        return batch
