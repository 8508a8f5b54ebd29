"""The HTTP client every remote judge shares: one ``httpx.AsyncClient``, used well.

* Connection reuse: one client (keep-alive pool) per backend for the process's life.
* A concurrency limit: at most ``max_concurrency`` requests in flight; the rest wait.
* Timeouts: ``timeout`` per attempt (connect, read, write, pool) and an overall
  ``deadline`` per call (a monotonic time the caller passes: a trace's scoring budget).
* Retries: 429, 500, 502, 503, 504, connection errors and timeouts are retried up to
  ``retries`` times with exponential backoff and full jitter; a ``Retry-After`` header
  (seconds or an HTTP date) is honoured, up to ``max_retry_after``. A wait that would
  pass the deadline is not taken: the call fails at once with the last error.
* A circuit breaker: after ``breaker_failures`` calls in a row fail, calls fail fast with
  :class:`~otel_semloop.judges.base.JudgeUnavailable` for ``breaker_cooldown`` seconds;
  then one trial call is let through (half open), and a success closes the breaker.

Failures end as one :class:`~otel_semloop.judges.base.JudgeError` subclass whose ``kind``
is written to ``semloop.judge.error``. Error messages never include the request body or
headers (they hold trace text and the API key).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from otel_semloop.judges.base import (
    JudgeError,
    JudgeHTTPError,
    JudgeProtocolError,
    JudgeTimeout,
    JudgeUnavailable,
)
from otel_semloop.redact import safe_text

__all__ = ["CircuitBreaker", "HttpBackend", "RetryPolicy", "token_count"]

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(0.0, retry_after), self.max_retry_after)
        return random.uniform(0.0, min(self.max_backoff, self.backoff * (2**attempt)))


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class CircuitBreaker:
    """Closed -> open after ``failures`` consecutive failures -> half open after
    ``cooldown`` seconds (one trial) -> closed on a success. ``clock`` is monotonic."""

    def __init__(self, failures: int = 5, cooldown: float = 30.0, clock: Any = time.monotonic) -> None:
        self.failures = failures
        self.cooldown = cooldown
        self._clock = clock
        self._consecutive = 0
        self._opened_at: float | None = None
        self._trial = False

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self.cooldown else "open"

    def before_call(self) -> None:
        state = self.state
        if state == "open" or (state == "half_open" and self._trial):
            raise JudgeUnavailable("judge circuit breaker is open after repeated failures")
        if state == "half_open":
            self._trial = True

    def record(self, ok: bool) -> None:
        if ok:
            self._consecutive = 0
            self._opened_at = None
            self._trial = False
            return
        self._consecutive += 1
        if self._opened_at is not None or self._consecutive >= self.failures:
            self._opened_at = self._clock()
            self._trial = False


class HttpBackend:
    """What the remote judge backends share: their endpoint, model and client (a bearer
    ``key``, none for a local server without one): :meth:`post` with the guarantees of the
    module doc, and ``aclose``, which releases the connections. Create it (and call it) on
    one event loop."""

    name = ""

    def __init__(
        self,
        base_url: str,
        key: str,
        model: str,
        *,
        timeout: float = 30.0,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.retry = retry or RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self._headers = {"authorization": f"Bearer {key}"} if key else {}
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def _ensure(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        if self._client is None or self._semaphore is None:
            limits = httpx.Limits(
                max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
            )
            self._client = httpx.AsyncClient(
                headers=self._headers, timeout=httpx.Timeout(self.timeout), limits=limits, trust_env=False
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._client, self._semaphore

    async def post(self, path: str, payload: Any, deadline: float | None) -> tuple[Any, float]:
        """The decoded JSON body of a successful POST and the milliseconds the call took,
        retries included. Raises a :class:`JudgeError`."""
        started = time.monotonic()
        self.breaker.before_call()
        client, semaphore = self._ensure()
        body = orjson.dumps(payload)
        url = f"{self.base_url}{path}"
        attempt = 0
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self.breaker.record(False)
                raise JudgeTimeout("no answer within the scoring budget")
            retry_after: float | None = None
            try:
                async with semaphore:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    timeout = self.timeout if remaining is None else max(0.001, min(self.timeout, remaining))
                    response = await client.post(
                        url,
                        content=body,
                        headers={"content-type": "application/json"},
                        timeout=httpx.Timeout(timeout),
                    )
                if response.status_code == 200:
                    try:
                        decoded = orjson.loads(response.content)
                    except orjson.JSONDecodeError as exc:
                        self.breaker.record(False)
                        raise JudgeProtocolError(f"judge answered with malformed JSON: {exc}") from None
                    self.breaker.record(True)
                    return decoded, (time.monotonic() - started) * 1000.0
                error: JudgeError = JudgeHTTPError(
                    response.status_code,
                    f"judge answered HTTP {response.status_code}: {safe_text(response.text, 200)}",
                )
                retryable = response.status_code in RETRYABLE_STATUS
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            except httpx.TimeoutException:
                error, retryable = JudgeTimeout(f"judge request timed out after {timeout:.1f}s"), True
            except httpx.TransportError as exc:
                error, retryable = (
                    JudgeError(f"judge unreachable: {type(exc).__name__}", kind="connection"),
                    True,
                )
            if not retryable or attempt >= self.retry.retries:
                self.breaker.record(False)
                raise error
            wait = self.retry.delay(attempt, retry_after)
            if deadline is not None and time.monotonic() + wait >= deadline:
                self.breaker.record(False)
                raise error
            attempt += 1
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
            self._semaphore = None


def token_count(value: Any) -> int:
    """A token count from a response's ``usage`` (0 when missing or not a number)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
