"""Forward scored spans and log records downstream: a bounded queue, batches that keep each
item's Resource and InstrumentationScope, and retries.

:meth:`ExportQueue.put` (loop thread) queues items; one task sends them in requests of at
most ``export_batch_spans``, retrying a retryable failure after the downstream's hint
(``Retry-After``, ``RetryInfo``) or an exponential backoff for up to ``retry_max_elapsed``,
later items waiting behind it in order. A timed-out attempt doubles the sender's timeout
(up to ``8 x export_timeout``), so a slow downstream is waited for rather than sent every
batch again. :attr:`ExportQueue.full` makes the receivers refuse retryably while the
downstream is down. ``settle(items)`` is called once for every item that leaves for good.
Nothing here raises. The delivery promise is in ``docs/service.md`` ("Delivery semantics").

Size: the queue and its two senders (OTLP/HTTP and OTLP/gRPC) share the batching and the
retry rules, so they are read together.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gzip
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx
from google.rpc import error_details_pb2, status_pb2

from otel_semloop.judges.http import parse_retry_after
from otel_semloop.service.config import ServiceConfig, Signal, read_file, redact_url
from otel_semloop.service.held import SHALLOW_ENVELOPE, SHALLOW_REQUEST, WIRE, Held
from otel_semloop.telemetry import SelfTelemetry, get_logger

__all__ = ["ExportQueue", "SendResult"]

_logger = get_logger("otel_semloop.service")
_RETRYABLE_HTTP = frozenset({429, 502, 503, 504})
_RETRYABLE_GRPC = frozenset(
    {
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
#: A timed-out export attempt doubles the timeout, up to this many times export_timeout.
_TIMEOUT_GROWTH = 8
#: A part-filled batch waits up to this long for a full one before it goes (not while
#: draining; as the Collector's batch processor, whose default timeout this is): an export
#: call costs the loop about the same whatever its size, so fuller batches cost less a
#: span than sending each trace as it was scored.
_LINGER_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class SendResult:
    """The outcome of one export attempt. ``retry_after`` is the downstream's own hint."""

    ok: bool
    retryable: bool = False
    message: str = ""
    retry_after: float | None = None
    rejected: int = 0


def encode_request(batch: list[Held]) -> bytes:
    """The wire bytes of an export request with ``batch`` under the envelopes they arrived
    in (items from the same received envelopes share one entry). Items go in as the bytes
    they are held as, through :data:`~otel_semloop.service.held.SHALLOW_REQUEST`, never decoded and
    encoded again; spans and log records nest alike, so this frames both signals."""
    groups: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
    for held in batch:
        resource = groups.setdefault(id(held.resource), (held.resource, {}))
        scope = resource[1].setdefault(id(held.scope), (held.scope, []))
        scope[1].append(held.serialized())
    request = SHALLOW_REQUEST()
    for envelope, scopes in groups.values():
        out = _shallow(envelope, "resource")
        for scope_envelope, items in scopes.values():
            scope = _shallow(scope_envelope, "scope")
            scope.items.extend(items)
            out.items.append(scope.SerializeToString())
        request.items.append(out.SerializeToString())
    return request.SerializeToString()  # type: ignore[no-any-return]


def _shallow(envelope: Any, head: str) -> Any:
    """A shallow envelope with ``envelope``'s head (its resource or scope) and schema URL."""
    out = SHALLOW_ENVELOPE()
    if envelope.HasField(head):
        out.head = getattr(envelope, head).SerializeToString()
    if envelope.schema_url:
        out.schema_url = envelope.schema_url.encode()
    return out


class ExportQueue:
    """The bounded queue and the sending task (see the module docstring).

    ``sender`` is a :class:`GrpcSender` or :class:`HttpSender`. Loop-thread only.
    """

    def __init__(
        self,
        config: ServiceConfig,
        sender: Any,
        telemetry: SelfTelemetry,
        settle: Any = None,
        signal: Signal = "traces",
    ) -> None:
        self._config = config
        self._signal = signal
        #: What the log lines call the items: spans or log records.
        self.items = "log records" if signal == "logs" else "spans"
        self.sender = sender
        self._telemetry = telemetry
        self._settle = settle
        self._queue: collections.deque[Held] = collections.deque()
        self._in_flight = 0
        self._ready = asyncio.Event()
        #: Set once a whole batch is queued (or a drain starts): the linger ends.
        self._full = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing_deadline: float | None = None
        self._halted = False
        #: True while the last attempt failed (the downstream is down).
        self.down = False

    @property
    def pending(self) -> int:
        """Spans queued or being sent."""
        return len(self._queue) + self._in_flight

    @property
    def full(self) -> bool:
        """True when receivers should refuse new data (retryably)."""
        return self.pending >= self._config.export_queue_spans

    def put(self, spans: list[Held]) -> None:
        """Queue spans for export (never drops: admission bounds the queue)."""
        queue = self._queue
        queue.extend(spans)
        if queue:
            self._idle.clear()
            self._ready.set()
            if len(queue) >= self._config.export_batch_spans:
                self._full.set()

    async def run(self) -> None:
        """Send until cancelled; a batch being retried blocks the ones behind it."""
        while True:
            if self._halted:
                await asyncio.get_running_loop().create_future()  # until cancelled
            if not self._queue:
                self._idle.set()
                self._ready.clear()
                await self._ready.wait()
                continue
            if len(self._queue) < self._config.export_batch_spans and self._closing_deadline is None:
                self._full.clear()  # let a batch fill: calls, not spans, cost
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._full.wait(), _LINGER_SECONDS)
            size = min(len(self._queue), self._config.export_batch_spans)
            batch = [self._queue.popleft() for _ in range(size)]
            self._in_flight = size
            try:
                await self._deliver(batch)
            except asyncio.CancelledError:
                self._queue.extendleft(reversed(batch))
                raise
            except Exception as exc:  # pragma: no cover - never let the sender die
                self._telemetry.add("semloop.errors", "export")
                self._log("export_bug", f": export failed unexpectedly: {exc!r}")
            finally:
                self._in_flight = 0
            if self._settle is not None and not self._halted:
                try:
                    recorded = self._settle(batch)
                    if recorded is not None:
                        await recorded  # durable: on disk before the next batch goes
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # pragma: no cover - accounting must not stop sending
                    self._telemetry.add("semloop.errors", "settle")
                    self._log("settle", f": settling a batch failed: {exc!r}")

    async def drain(self, deadline: float) -> int:
        """Send what is queued until ``deadline``; returns the spans left unsent (counted
        as dropped by the caller's shutdown)."""
        self._closing_deadline = deadline
        self._full.set()  # a lingering batch goes now
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._idle.wait(), max(0.0, deadline - time.monotonic()))
        return self.pending

    async def _deliver(self, batch: list[Held]) -> None:
        request = encode_request(batch)
        first_failure = time.monotonic()
        attempt = 0
        while True:
            try:
                result = await self.sender.send(request)
            except Exception as exc:  # a sender bug counts as a retryable failure
                result = SendResult(False, True, f"{type(exc).__name__}: {exc}")
            if result.ok:
                if self.down:
                    _logger.info("otel-semloop: downstream %s is back", self.sender.describe())
                self.down = False
                self._count_sent(len(batch) - result.rejected)
                if result.rejected:
                    self.count_dropped("rejected_by_downstream", result.rejected)
                    self._log(
                        "partial",
                        f"rejected {result.rejected} of {len(batch)} {self.items}: {result.message}",
                    )
                return
            self.down = True
            self._telemetry.add("semloop.export.failures", "retryable" if result.retryable else "permanent")
            now = time.monotonic()
            if result.retryable and self._closing_deadline is not None and now >= self._closing_deadline:
                # Shutdown ran out of time: stop sending; the caller counts what is left.
                self._queue.extendleft(reversed(batch))
                self._halted = True
                return
            limit = self._config.retry_max_elapsed
            give_up = not result.retryable or (limit and now - first_failure >= limit)
            if give_up:
                why = "permanent_error" if not result.retryable else "retries_exhausted"
                self.count_dropped(why, len(batch))
                after = f" and still failed after {now - first_failure:.1f} s" if result.retryable else ""
                self._log(why, f"failed ({result.message}){after}; dropped {len(batch)} {self.items}")
                return
            delay = self._config.retry_initial_backoff * (2**attempt)
            delay = min(delay, self._config.retry_max_backoff)
            if result.retry_after is not None:
                delay = max(0.0, min(result.retry_after, self._config.retry_max_backoff))
            if self._closing_deadline is not None:
                delay = min(delay, max(0.0, self._closing_deadline - now))
            attempt += 1
            self._telemetry.add("semloop.export.retries", "retryable")
            waiting = f"{self.pending} {self.items} waiting; retrying in {delay:.1f} s"
            self._log("retry", f"unavailable ({result.message}); {waiting}")
            await asyncio.sleep(delay)

    def _count_sent(self, items: int) -> None:
        if self._signal == "logs":
            self._telemetry.add("semloop.export.log_records", "sent", items)
        else:
            self._telemetry.add("semloop.export.spans", "sent", items)

    def count_dropped(self, reason: str, items: int) -> None:
        """Count ``items`` dropped for ``reason`` under the signal's counter."""
        if self._signal == "logs":
            self._telemetry.add("semloop.export.log_records.dropped", reason, items)
        else:
            self._telemetry.add("semloop.export.dropped", reason, items)

    def _log(self, key: str, message: str) -> None:
        """One line per kind a minute (the package's one limiter), naming the downstream;
        every event is counted."""
        _logger.warning(
            "otel-semloop: downstream %s %s (counted; further reports of this kind limited to one a minute)",
            self.sender.describe(),
            message,
            extra={"semloop_limit": f"export.{key}"},
        )


# -- senders: one attempt each, never raise for a downstream failure -----------------------


def _partial(response: Any) -> tuple[int, str]:
    """What a downstream's ``partial_success`` rejected (spans or log records) and why."""
    if not response.HasField("partial_success"):
        return 0, ""
    partial = response.partial_success
    rejected = partial.rejected_spans if hasattr(partial, "rejected_spans") else partial.rejected_log_records
    return int(rejected), partial.error_message


class HttpSender:
    """OTLP/HTTP protobuf via ``httpx.AsyncClient`` (one attempt per :meth:`send`)."""

    def __init__(self, config: ServiceConfig, signal: Signal = "traces") -> None:
        target = config.export_target(signal)
        self._url = target.url
        self._gzip = target.compression
        self._response = WIRE[signal].response
        headers = {"Content-Type": "application/x-protobuf", **dict(target.headers)}
        if self._gzip:
            headers["Content-Encoding"] = "gzip"
        verify: Any = True
        if config.export_certificate or config.export_client_certificate:
            verify = ssl.create_default_context(cafile=config.export_certificate)
            if config.export_client_certificate:
                verify.load_cert_chain(config.export_client_certificate, config.export_client_key)
        self._client = httpx.AsyncClient(timeout=config.export_timeout, headers=headers, verify=verify)
        self._timeout = config.export_timeout
        self._max_timeout = config.export_timeout * _TIMEOUT_GROWTH

    def describe(self) -> str:
        return f"http/protobuf {redact_url(self._url)}"

    async def send(self, body: bytes) -> SendResult:
        if self._gzip:
            body = gzip.compress(body, compresslevel=5)
        try:
            response = await self._client.post(self._url, content=body, timeout=self._timeout)
        except httpx.TimeoutException as exc:
            self._timeout = min(self._timeout * 2, self._max_timeout)
            return SendResult(False, True, f"{type(exc).__name__}: {exc} (timeout now {self._timeout:g} s)")
        except httpx.TransportError as exc:
            return SendResult(False, True, f"{type(exc).__name__}: {exc}")
        status = response.status_code
        if 200 <= status < 300:
            parsed = self._response()
            try:
                parsed.ParseFromString(response.content)
            except Exception:
                return SendResult(True)
            rejected, message = _partial(parsed)
            return SendResult(True, rejected=rejected, message=message)
        detail = response.text[:200].strip() if response.content else ""
        message = f"HTTP {status}" + (f": {detail}" if detail else "")
        if status in _RETRYABLE_HTTP:
            return SendResult(False, True, message, parse_retry_after(response.headers.get("retry-after")))
        return SendResult(False, False, message)

    async def close(self) -> None:
        await self._client.aclose()


class GrpcSender:
    """OTLP/gRPC via a ``grpc.aio`` channel (one attempt per :meth:`send`)."""

    def __init__(self, config: ServiceConfig, signal: Signal = "traces") -> None:
        downstream = config.export_target(signal)
        split = urlsplit(downstream.url)
        port = split.port or (443 if split.scheme == "https" else 4317)
        target = f"{split.hostname}:{port}"
        if ":" in (split.hostname or ""):
            target = f"[{split.hostname}]:{port}"
        self._target = redact_url(f"{split.scheme}://{target}")
        # gRPC's own reconnect backoff grows to 120 s: a downstream that came back would
        # go unnoticed that long. Keep it within the retry backoff.
        options = [
            ("grpc.initial_reconnect_backoff_ms", max(1, int(config.retry_initial_backoff * 1000))),
            ("grpc.min_reconnect_backoff_ms", max(1, int(config.retry_initial_backoff * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(config.retry_max_backoff * 1000))),
            ("grpc.max_send_message_length", -1),
        ]
        if split.scheme == "https" or config.export_certificate:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=read_file(config.export_certificate),
                private_key=read_file(config.export_client_key),
                certificate_chain=read_file(config.export_client_certificate),
            )
            self._channel = grpc.aio.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=options)
        self._export = self._channel.unary_unary(
            f"/{WIRE[signal].service}/Export",
            request_serializer=None,  # bytes go out as they are
            response_deserializer=WIRE[signal].response.FromString,
        )
        self._timeout = config.export_timeout
        self._max_timeout = config.export_timeout * _TIMEOUT_GROWTH
        self._metadata = tuple((k.lower(), v) for k, v in dict(downstream.headers).items())
        self._compression = grpc.Compression.Gzip if downstream.compression else None

    def describe(self) -> str:
        return f"grpc {self._target}"

    async def send(self, body: bytes) -> SendResult:
        try:
            response = await self._export(
                body, timeout=self._timeout, metadata=self._metadata or None, compression=self._compression
            )
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            message = f"{code.name}: {exc.details()}"
            if code is grpc.StatusCode.DEADLINE_EXCEEDED:
                self._timeout = min(self._timeout * 2, self._max_timeout)
                message += f" (timeout now {self._timeout:g} s)"
            retry_after = _retry_info(exc)
            retryable = code in _RETRYABLE_GRPC or (
                code is grpc.StatusCode.RESOURCE_EXHAUSTED and retry_after is not None
            )
            return SendResult(False, retryable, message, retry_after)
        rejected, message = _partial(response)
        return SendResult(True, rejected=rejected, message=message)

    async def close(self) -> None:
        await self._channel.close()


def _retry_info(exc: Any) -> float | None:
    """The ``RetryInfo.retry_delay`` a gRPC server attached to its error, if any."""
    for key, value in exc.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status()
        try:
            status.ParseFromString(value)
        except Exception:
            return None
        for detail in status.details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                return info.retry_delay.seconds + info.retry_delay.nanos / 1e9
    return None


def make_sender(config: ServiceConfig, signal: Signal = "traces") -> HttpSender | GrpcSender:
    """The sender to ``signal``'s downstream (:meth:`ServiceConfig.export_target`)."""
    if config.export_target(signal).protocol == "grpc":
        return GrpcSender(config, signal)
    return HttpSender(config, signal)
