"""Opening and migrating a SQLite file in a worker thread that a cancellation stops.

Opening a file may wait for another process's write lock (a backup, the sqlite3 shell, a
second agora mid-transaction), for up to `LOCK_WAIT` seconds, and a toolset's migration step
may run for seconds (a backfill). Neither runs on the Trio thread: an embedding program's own
tasks, timeouts and cancel scopes keep working while `agora.open_server` opens the file
(`open_in_thread`).

A cancelled open ends at once and leaves nothing behind that could still write. The lock is
waited for in slices of `SLICE_MS` (the opening connection's busy timeout): between two, the
thread sees the cancellation and gives up, having written nothing. A statement running when the
cancellation comes is stopped (interrupted, and a progress handler for one that starts later),
and no migration step begins or commits after it: the step under way is rolled back (each step
is one transaction; those before it stay applied). The Trio side waits for the thread to close
its connection, at most `agora.store.sqlite.STOP_SECONDS` (a toolset's step stuck in its own
Python code is left behind, and commits nothing), before it returns and the file's lock is let
go of.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from typing import TYPE_CHECKING, TypeVar

import trio

from agora.errors import STORE_CAUSES, StoreError
from agora.store.guard import TABLES
from agora.store.migrations import apply_migrations
from agora.store.sqlite import STOP_SECONDS
from agora.store.sqlite_connect import BUSY_MS, connect

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from agora.store.migrations import Migration

T = TypeVar("T")

#: Seconds an open waits in all for another process's write lock (as long as a write may).
LOCK_WAIT = BUSY_MS / 1000
#: Milliseconds of one wait for the lock; the thread looks for a cancellation between two.
SLICE_MS = 100
#: SQLite VM instructions between two looks for a cancellation while a statement runs.
PROGRESS_STEPS = 1000


class OpenCancelled(Exception):
    """The open was cancelled: its thread stops (nobody wants what it would return)."""


class Opening:
    """One open's worker thread, as its Trio task sees it: `cancel` stops it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._finished = False
        self._conn: sqlite3.Connection | None = None
        #: Set once the thread is done with the file (its connection closed if cancelled).
        self.done = threading.Event()

    def adopt(self, conn: sqlite3.Connection) -> None:
        """Make ``conn`` the opening connection (the thread, as it connects): a statement
        it runs stops once the open is cancelled."""
        conn.set_progress_handler(self.cancelled, PROGRESS_STEPS)
        with self._lock:
            self._conn = conn

    def cancelled(self) -> bool:
        """Whether the open was cancelled."""
        return self._cancelled

    def check(self) -> None:
        """Raise `OpenCancelled` if the open was cancelled."""
        if self._cancelled:
            raise OpenCancelled("the open was cancelled")

    def run(self, fn: Callable[[Opening], T]) -> T:
        """``fn(self)`` in the worker thread; what it opened is closed if it was cancelled."""
        try:
            return fn(self)
        finally:
            with self._lock:
                self._finished = True
                close = self._cancelled
            if close:
                self._close()
            self.done.set()

    def cancel(self) -> None:
        """Stop the thread (the Trio side, cancelled): it closes its connection, or this
        does if the thread already returned it to nobody."""
        with self._lock:
            self._cancelled = True
            close = self._finished
            conn = self._conn
        if close:
            self._close()
        elif conn is not None:
            with contextlib.suppress(sqlite3.ProgrammingError):  # the thread just closed it
                conn.interrupt()  # a statement too short for the progress handler stops too

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()  # rolls back what is open, lets go of any lock


async def open_in_thread(fn: Callable[[Opening], T]) -> T:
    """``fn(opening)`` in a worker thread; a cancellation ends it as the module says.

    Raises:
        What ``fn`` raises; the caller's cancellation (once the thread let go of the file,
        or after `STOP_SECONDS`: a thread stuck in a toolset's own step is left behind).
    """
    opening = Opening()
    try:
        return await trio.to_thread.run_sync(opening.run, fn, abandon_on_cancel=True)
    except BaseException:
        opening.cancel()  # nothing to do if ``fn`` raised: it closed what it opened
        if not opening.done.is_set():
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(opening.done.wait, STOP_SECONDS)
        raise


def _busy(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from) is SQLite's "database is locked"."""
    while exc is not None:
        if isinstance(exc, sqlite3.OperationalError):
            return exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
        exc = exc.__cause__
    return False


def migrated_file(
    path: str,
    migrations: Iterable[Migration],
    synchronous: str,
    shared: bool,
    opening: Opening,
) -> tuple[sqlite3.Connection, dict[str, int]]:
    """`migrated` in slices of waiting for the write lock, stopping once cancelled.

    Every attempt starts over on a fresh connection: a step applied before the lock was
    lost is not applied again (`apply_migrations` skips it).
    """
    for _ in range(round(BUSY_MS / SLICE_MS) - 1):
        opening.check()
        try:
            return migrated(path, migrations, synchronous, shared, opening)
        except StoreError as exc:
            if not _busy(exc):
                raise
    opening.check()
    return migrated(path, migrations, synchronous, shared, opening)


def migrated(
    path: str,
    migrations: Iterable[Migration],
    synchronous: str,
    shared: bool,
    opening: Opening | None = None,
) -> tuple[sqlite3.Connection, dict[str, int]]:
    """A write connection to ``path``, its schema migrated; and each component's version.

    With ``opening``, the connection waits `SLICE_MS` for the write lock (the caller tries
    again) and stops when the open is cancelled; it is set to wait `BUSY_MS` on its return.

    Raises:
        StoreError: the file cannot be opened, migrated or written.
    """
    try:
        busy_ms = BUSY_MS if opening is None else SLICE_MS
        conn = connect(path, synchronous=synchronous.upper(), busy_ms=busy_ms)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open database {path}: {exc}") from exc
    if opening is not None:
        opening.adopt(conn)
    try:
        if shared:
            _create_guard_tables(conn)
        check = None if opening is None else opening.check
        versions = apply_migrations(conn, migrations, check)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot migrate database {path}: {exc}") from exc
    except BaseException:
        conn.close()  # a newer schema or a failed step: leave nothing open
        raise
    try:
        writable = path == ":memory:" or _writable(conn)  # what access() could not see
        if opening is not None:
            conn.set_progress_handler(None, 0)
            conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot open database {path}: {exc}") from exc
    if not writable:
        conn.close()
        raise StoreError(f"cannot open database {path}: {STORE_CAUSES['read_only']}")
    return conn, versions


def _writable(conn: sqlite3.Connection) -> bool:
    """Whether SQLite lets ``conn`` write: a migrated file writes nothing at open, so a file
    it opened read-only (a WAL file it may not write, say) would be found out by the first
    call's write. The table made here is rolled back: the file does not change."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE agora_write_probe (x)")
        finally:
            conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_READONLY:
            return False
        raise  # another failure: the caller words it
    return True


def _create_guard_tables(conn: sqlite3.Connection) -> None:
    """The version table of a shared file (`agora.store.guard.TABLES`), if it is missing."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql in TABLES:
            conn.execute(sql)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
