"""The optional durable queue: acknowledged data survives a crash and is delivered after
the restart.

SQLite (standard library, one crash-safe file, a WAL commit is one append and an fsync).
A request is committed (``synchronous=FULL``) before the receiver acknowledges it;
concurrent requests share one commit on a writer thread. A request whose items have all
left for good is deleted; while only some have, their keys are recorded and a replay skips
them. At start, unfinished requests are replayed in arrival order. Past
``durable_queue_bytes`` the receivers refuse retryably.

The files (the database, its ``-wal`` and ``-shm``, and ``<queue>.id``, the queue's
generation, also kept inside the database) are checked at start: a queue truncated,
deleted, replaced, or whose log was deleted after a crash is refused with one line
(``serve`` exits 2). A full disk refuses requests until space returns. The delivery
promise is in ``docs/service.md`` ("Delivery semantics").
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import secrets
import sqlite3
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from otel_semloop.errors import StartupError
from otel_semloop.service.held import WIRE
from otel_semloop.telemetry import get_logger

__all__ = ["DurableQueue"]

_logger = get_logger("otel_semloop.service")
#: How long the writer waits before it writes again what a failed commit left (disk full).
_RETRY_SECONDS = 0.5
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY AUTOINCREMENT, body BLOB NOT NULL,"
    " size INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sent (request INTEGER NOT NULL, key BLOB NOT NULL,"
    " PRIMARY KEY (request, key)) WITHOUT ROWID",
)
_STOP = object()


class DurableQueue:
    """The SQLite store (see the module docstring). ``append`` is awaited on the loop; the
    bookkeeping (``track``, ``settle``) is loop-thread only; the database is touched only
    by the writer thread after :meth:`replay`."""

    def __init__(self, path: str | Path, max_bytes: int) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._max_bytes = max_bytes
        id_file = self.path.with_name(self.path.name + ".id")
        _check_files(self.path, id_file)
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            for statement in _SCHEMA:
                self._db.execute(statement)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(requests)")}
            if "signal" not in columns:  # a queue written before logs were received
                self._db.execute("ALTER TABLE requests ADD COLUMN signal TEXT NOT NULL DEFAULT 'traces'")
            _check_generation(self.path, self._db, id_file)
            sizes = self._db.execute("SELECT id, size FROM requests").fetchall()
        except sqlite3.DatabaseError as error:
            raise self._unreadable(error) from None
        self._sizes: dict[int, int] = dict(sizes)
        self._bytes = sum(self._sizes.values())
        self._remaining: dict[int, int] = {}
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    # -- the loop side ---------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Requests not yet finished."""
        return len(self._sizes)

    def full(self, size: int) -> bool:
        return bool(self._sizes) and self._bytes + size > self._max_bytes

    def replay(self, intake: Any) -> int:
        """Feed every unfinished request to ``intake.receive`` (the service's), skipping the
        items already delivered, and start the writer. Returns the requests replayed."""
        try:
            rows = self._db.execute("SELECT id, body, size, signal FROM requests ORDER BY id").fetchall()
            sent = self._db.execute("SELECT request, key FROM sent").fetchall()
        except sqlite3.DatabaseError as error:
            raise self._unreadable(error) from None
        delivered: dict[int, set[bytes]] = defaultdict(set)
        for ticket, key in sent:
            delivered[ticket].add(key)
        replayed = 0
        for ticket, body, size, signal in rows:
            keys = delivered.get(ticket, set())
            try:
                request = WIRE[signal].request.FromString(body)
            except Exception:  # pragma: no cover - only valid requests are stored
                _logger.error("otel-semloop: durable queue: request %d unreadable; removed", ticket)
                self._delete_now(ticket)
                continue
            result = intake.receive(request, size, ticket, skip=keys, signal=signal)
            if result.accepted:
                self._remaining[ticket] = result.accepted
                replayed += 1
            else:
                self._delete_now(ticket)
        self._thread = threading.Thread(target=self._write, name="semloop-durable", daemon=True)
        self._thread.start()
        return replayed

    async def append(self, body: bytes, signal: str = "traces") -> int:
        """Store a request of ``signal`` (``traces`` or ``logs``); returns its id once it
        is committed to disk."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self._bytes += len(body)
        self._jobs.put(("append", body, signal, loop, future))
        try:
            ticket = await future
        except BaseException:
            self._bytes -= len(body)  # not stored: it must not count against the bound
            raise
        self._sizes[ticket] = len(body)
        return ticket

    def track(self, ticket: int, accepted: int) -> None:
        """``accepted`` spans of request ``ticket`` are now in the pipeline."""
        if not ticket:
            return
        if accepted:
            self._remaining[ticket] = self._remaining.get(ticket, 0) + accepted
        else:
            self._forget(ticket)

    def settle(self, batch: list[Any]) -> asyncio.Future[int] | None:
        """Spans that left for good (each a :class:`~otel_semloop.service.held.Held`).
        Returns a future done once that is on disk: the exporter waits for it before its
        next batch, so at most the batch in flight and this one can be resent after a
        crash."""
        keys: dict[int, list[bytes]] = defaultdict(list)
        for held in batch:
            if held.ticket:
                keys[held.ticket].append(held.key)
        partial: dict[int, list[bytes]] = {}
        finished: list[int] = []
        for ticket, done in keys.items():
            left = self._remaining.get(ticket, 0) - len(done)
            if left <= 0:
                self._remaining.pop(ticket, None)
                self._bytes -= self._sizes.pop(ticket, 0)
                finished.append(ticket)
            else:
                self._remaining[ticket] = left
                partial[ticket] = done
        if not partial and not finished:
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self._jobs.put(("settle", finished, partial, loop, future))
        return future

    async def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(_STOP)
            await asyncio.to_thread(self._thread.join, 10)
        self._db.close()

    def _unreadable(self, error: Exception) -> StartupError:
        return StartupError(
            f"durable queue {self.path} cannot be read ({error}); move it away to start a new queue"
        )

    def _forget(self, ticket: int) -> None:
        self._remaining.pop(ticket, None)
        self._bytes -= self._sizes.pop(ticket, 0)
        self._jobs.put(("settle", [ticket], {}, None, None))

    def _delete_now(self, ticket: int) -> None:
        self._bytes -= self._sizes.pop(ticket, 0)
        _delete(self._db, [ticket])

    # -- the writer thread -----------------------------------------------------------------

    def _write(self) -> None:
        db = self._db
        while True:
            jobs = [self._jobs.get()]
            while len(jobs) < 512:
                try:
                    jobs.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in jobs
            done: list[tuple[Any, Any, Any]] = []
            try:
                db.execute("BEGIN")
                for job in jobs:
                    if job is _STOP:
                        continue
                    if job[0] == "append":
                        _, body, signal, loop, future = job
                        cursor = db.execute(
                            "INSERT INTO requests (body, size, signal) VALUES (?, ?, ?)",
                            (body, len(body), signal),
                        )
                        done.append((loop, future, cursor.lastrowid))
                    else:
                        _, finished, partial, loop, future = job
                        _delete(db, finished)
                        for ticket, keys in partial.items():
                            db.executemany(
                                "INSERT OR IGNORE INTO sent (request, key) VALUES (?, ?)",
                                [(ticket, key) for key in keys],
                            )
                        done.append((loop, future, 0))
                db.execute("COMMIT")
            except Exception as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                _logger.error(
                    "otel-semloop: durable queue %s: write failed (%s); requests are refused until it "
                    "succeeds (further reports of this kind limited to one a minute)",
                    self.path,
                    exc,
                    extra={"semloop_limit": "durable.write"},
                )
                for job in jobs:
                    if job is _STOP:
                        continue
                    if job[0] == "append":  # refused: the sender keeps the request and retries
                        job[-2].call_soon_threadsafe(_fail, job[-1], exc)  # its loop and future
                        continue
                    if job[0] == "settle" and job[3] is not None:  # delivery goes on
                        job[3].call_soon_threadsafe(_resolve, job[4], 0)
                        job = (*job[:3], None, None)
                    self._jobs.put(job)  # delivery marks and deletions: written again later
                if not stop:
                    time.sleep(_RETRY_SECONDS)
            else:
                for loop, future, ticket in done:
                    if loop is not None:
                        loop.call_soon_threadsafe(_resolve, future, ticket)
            if stop:
                return


def _check_files(path: Path, id_file: Path) -> None:
    """Refuse queue files that lost what they held (see the module docstring)."""
    move = "; move the queue's files away to start a new queue"
    if not path.exists():
        if id_file.exists():
            raise StartupError(f"durable queue {path} is missing but {id_file} is there: deleted?{move}")
        return
    if path.stat().st_size == 0:
        raise StartupError(f"durable queue {path} is empty (0 bytes): truncated? What it held is gone{move}")
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    if shm.exists() and not wal.exists():
        raise StartupError(
            f"durable queue {path}: its write-ahead log {wal.name} is missing (deleted after a "
            f"crash?): the requests it held are gone{move}"
        )


def _check_generation(path: Path, db: sqlite3.Connection, id_file: Path) -> None:
    """The queue's generation, in the database and in ``id_file``: set on a new queue
    (or one written before generations), refused when the two disagree."""
    row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    on_disk = id_file.read_text().strip() if id_file.exists() else None
    if row is None:
        if on_disk is not None:
            raise StartupError(
                f"durable queue {path} is not the queue {id_file} belongs to (replaced or "
                f"emptied?); move the queue's files away to start a new queue"
            )
        generation = secrets.token_hex(16)
        db.execute("INSERT INTO meta (key, value) VALUES ('generation', ?)", (generation,))
        id_file.write_text(generation + "\n")
        return
    if on_disk is None:
        id_file.write_text(row[0] + "\n")
    elif on_disk != row[0]:
        raise StartupError(
            f"durable queue {path} is another queue than {id_file} names (replaced, or restored "
            f"from a copy?); move the queue's files away to start a new queue"
        )


def _delete(db: sqlite3.Connection, tickets: list[int]) -> None:
    if tickets:
        db.executemany("DELETE FROM requests WHERE id = ?", [(t,) for t in tickets])
        db.executemany("DELETE FROM sent WHERE request = ?", [(t,) for t in tickets])


def _resolve(future: asyncio.Future[int], value: int) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[int], exc: BaseException) -> None:
    if not future.done():
        from otel_semloop.service.receiver import Refusal

        future.set_exception(
            Refusal("durable_write_failed", f"otel-semloop: durable queue write failed: {exc}")
        )
