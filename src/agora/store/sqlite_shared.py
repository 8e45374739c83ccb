"""A SQLite file shared by several agora processes: the guarded store and its change feed.

A process opens a file *shared* (``shared = true``, ``--shared``) to run beside others on it,
say ``agora serve`` and ``agora stdio --db`` on one ``agora.db``. Then, as on PostgreSQL, the
local actors are a per-process cache and the file has the final word:

- writes carry version guards, checked and bumped inside the batch's ``BEGIN IMMEDIATE``
  transaction (`agora.store.sqlite_guard`); a job another process overtook is rejected and
  the runtime reloads and re-runs it (`agora.runtime.handling`);
- a read from a cached entity is confirmed by `SharedStore.probe`, one indexed lookup per key
  on the store's own watch connection, run in place: cheaper than a worker-thread hop;
- `SharedStore.watch` replaces NOTIFY: every `POLL_SECONDS` a thread asks ``PRAGMA
  data_version`` (it changes when another connection committed; a read of shared memory, no
  I/O), and when it moved, reads the version rows stamped since it last looked and hands
  them to the runtime, which drops stale copies and wakes waiters (`agora.store.sqlite_feed`);
- a background task runs in one process at a time (`SharedStore.try_singleton`, an ``flock``
  beside the database, dropped by the OS when its holder dies).

Locking the file so that an unshared process never writes beside shared ones is
`agora.store.lock`'s; opening is `agora.store.db`'s. This module must stay free of toolsets.
"""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
from typing import TYPE_CHECKING, Any, TypeVar

import trio

from agora.errors import StoreError
from agora.store.guard import VERSION
from agora.store.lock import lock_path
from agora.store.sqlite import Store
from agora.store.sqlite_connect import connect
from agora.store.sqlite_feed import ChangeFeed
from agora.store.wal_index import hold

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from agora.store.sqlite_feed import Changes
    from agora.store.sqlite_guard import GuardedWriter

T = TypeVar("T")


#: Seconds between two ``PRAGMA data_version`` checks: the bound on cross-process wake-up
#: latency (the runtime's ~2 s sweep bounds anything missed otherwise).
POLL_SECONDS = 0.01


class SharedStore(Store):
    """`Store` over a SQLite file other agora processes may use at the same time.

    Attributes:
        probes: Version-probe lookups since open (each may ask for several keys).
    """

    guarded = True
    shared = True

    def __init__(
        self,
        *args: Any,
        watch_conn: sqlite3.Connection,
        poll_seconds: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._watch_conn = watch_conn
        self.poll_seconds = POLL_SECONDS if poll_seconds is None else poll_seconds
        self.probes = 0
        self._feed: ChangeFeed | None = None

    @property
    def _guarded_writer(self) -> GuardedWriter:
        return self._writer  # type: ignore[return-value]

    @property
    def conflicts(self) -> int:
        """Guarded jobs rejected since open because another process changed their entity."""
        return self._guarded_writer.conflicts

    def counters(self) -> dict[str, Any]:
        """`Store.counters`, plus ``conflicts``, ``probes`` (see the class) and ``polls``
        (change-feed polls that found another connection's commit)."""
        return super().counters() | {
            "conflicts": self.conflicts,
            "probes": self.probes,
            "polls": self._feed.polls if self._feed is not None else 0,
        }

    async def blocking(self, fn: Callable[[], T]) -> T:
        """``fn()``: a task lock's call, which never blocks here (see `TaskLock`)."""
        await trio.lowlevel.checkpoint()
        return fn()

    async def read_versioned(self, kind: str, key: str, fn: Callable[[Any], T]) -> tuple[T, int]:
        """``fn(conn)`` and the version of entity (kind, key) (0: never written), one snapshot."""

        def both(conn: sqlite3.Connection) -> tuple[T, int]:
            conn.execute("BEGIN")  # the snapshot starts at the first read: the version's
            try:
                row = conn.execute(VERSION, (kind, key)).fetchone()
                return fn(conn), (0 if row is None else int(row[0]))
            finally:
                conn.execute("ROLLBACK")  # nothing was written: ends the snapshot

        return await self.read(both)

    async def probe(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The committed version of each (kind, key), 0 if never written.

        Raises:
            StoreError: if the file cannot be read.
        """
        # No yield to the scheduler: a few indexed lookups cost less than the round trip.
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closed:
            raise StoreError("read failed: the store is closed")
        self.shm.check("read")  # a read could touch it
        self.probes += 1
        execute = self._watch_conn.execute
        found: dict[tuple[str, str], int] = {}
        try:
            for key in keys:
                row = execute(VERSION, key).fetchone()
                found[key] = 0 if row is None else int(row[0])
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc
        return found

    async def try_singleton(self, name: str) -> TaskLock | None:
        """Take the lock of background task ``name`` (its public name, ``chamber: purge``) if
        no process holds it, else None: an ``flock`` on ``<db>.lock.chamber-purge.task``."""
        await trio.lowlevel.checkpoint()
        lock = TaskLock(f"{lock_path(self.path)}.{_safe(name)}")
        return lock if lock.acquire() else None

    async def watch(
        self,
        on_changes: Callable[[Changes, list[str]], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hand ``on_changes`` what other processes commit, until cancelled.

        ``on_changes(changes, uris)`` runs in the Trio thread with the (kind, key, version)
        of each entity changed and the resource URIs named changed since the last call
        (`agora.store.sqlite_feed`).

        Raises:
            StoreError: if the file cannot be read when the feed starts.
        """
        token = trio.lowlevel.current_trio_token()

        def deliver(changes: Changes, uris: list[str]) -> None:
            token.run_sync_soon(on_changes, changes, uris)

        index = hold(self.path)  # the feed's thread lets go once its connection is closed
        conn: sqlite3.Connection | None = None
        try:
            conn = connect(self.path, synchronous="NORMAL", readonly=True, create=False)
            conn.execute("PRAGMA busy_timeout=1000")
            feed = ChangeFeed(conn, self._guarded_writer.own, deliver, self.poll_seconds, index)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            index.release()
            raise StoreError(f"cannot follow changes to {self.path}: {exc}") from exc
        self._feed = feed
        feed.start()
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            feed.stop()

    def close(self) -> None:
        """`Store.close`, and the watch connection (first: the store lets go of the file's
        WAL index last) and the writers' turns file."""
        self._closed = True  # no probe starts on the watch connection any more
        self._watch_conn.close()
        super().close()
        if not self._writer.running:  # a stuck writer keeps what it holds (see Store.close)
            self._guarded_writer.close()


class TaskLock:
    """An exclusive ``flock`` on a file of its own, for one background task.

    The OS drops it when the descriptor closes, however the process ends.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock if free; whether it was taken (never waits).

        Raises:
            StoreError: the lock file cannot be created.
        """
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot lock {self._path}: {exc.strerror}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def alive(self) -> bool:
        """Whether the lock is held (an flock cannot be lost while its descriptor is open)."""
        return self._fd is not None

    def release(self) -> None:
        """Give the lock back; never raises."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _safe(name: str) -> str:
    """``name`` (a task's public name, ``chamber: purge``) as a file name suffix
    (``chamber-purge.task``)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", name).strip("-")[:100] + ".task"
