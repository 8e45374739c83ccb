"""Opening a store: `open_store` picks the backend by path, locks and migrates the file.

A file path opens SQLite (held with `agora.store.lock.database_lock`: one process per file,
or, opened ``shared``, any number of guarded processes: `agora.store.sqlite_shared`),
``:memory:`` a throwaway inline store, and a ``postgresql://`` URL the shared store of
`agora.store.pg`. The open store itself (writes and their deadline, the read pool, closing)
is `agora.store.sqlite.Store`, also importable from here as before.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from contextlib import ExitStack, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING

import trio

from agora.errors import STORE_CAUSES, StoreError
from agora.store.checkpoint import Checkpointer
from agora.store.db_path import check_database_path, open_problem
from agora.store.diskfault import DiskDoctor
from agora.store.lock import database_lock, database_problem, lock_path
from agora.store.opening import loop_delivery, open_in_thread
from agora.store.shm_guard import ShmGuard
from agora.store.sqlite import COMMIT_TIMEOUT, READERS, STOP_SECONDS, Store
from agora.store.sqlite_connect import connect
from agora.store.sqlite_guard import GuardedWriter
from agora.store.sqlite_open import checked_connect, migrated, migrated_file, refuse_foreign
from agora.store.sqlite_shared import SharedStore
from agora.store.wal_leftover import check_leftover_wal
from agora.store.writer import Writer
from agora.store.writer_process import ProcessWriter, WriterProcess

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable
    from pathlib import Path

    from agora.store.migrations import Migration
    from agora.store.opening import Opening

__all__ = [
    "COMMIT_TIMEOUT",
    "READERS",
    "STOP_SECONDS",
    "TEST_BACKEND_ENV",
    "Store",
    "open_store",
]

log = logging.getLogger(__name__)

#: The test suite's switch to run every SQLite store on PostgreSQL (`agora.store.pg_redirect`).
TEST_BACKEND_ENV = "AGORA_TEST_BACKEND"
#: Why a file the server may not write is refused at open (the words its callers would get).
READ_ONLY = STORE_CAUSES["read_only"]


@asynccontextmanager
async def open_store(
    path: str | Path,
    migrations: Iterable[Migration] = (),
    *,
    synchronous: str = "FULL",
    group_commit: bool = True,
    trace: bool = False,
    commit_timeout: float = COMMIT_TIMEOUT,
    shared: bool = False,
    writer_process: bool = True,
) -> AsyncIterator[Store]:
    """Open (creating and migrating) the database at ``path``; close it on exit.

    A file database is held with `agora.store.lock.database_lock` while open: one process
    (and one open store) per file, unless it is opened ``shared``.

    Args:
        path: A file path, ``:memory:`` for a throwaway store, or a ``postgresql://`` URL
            (`agora.store.pg`: shared by several nodes, no file lock; ``synchronous`` is
            then the server's ``synchronous_commit``).
        migrations: Every component's migrations.
        synchronous: SQLite's ``synchronous`` pragma; FULL makes every commit durable.
        group_commit: Fold concurrent writes into one transaction (off only to measure it).
        trace: Log when each transaction became durable (see `Writer`).
        commit_timeout: Seconds a write waits for its commit (see `Store.write`).
        shared: Open a SQLite file so that other agora processes opening it shared may use
            it at the same time: writes under the version guard, their changes followed
            (`agora.store.sqlite_shared`). Ignored for PostgreSQL, which is always shared
            (said in a warning).
        writer_process: Run the writer's statements and COMMITs in a child process
            (`agora.store.writer_process`), out of this process's GIL; False runs them in
            the writer thread. Only for an unshared file (not ``:memory:``, not shared).

    Raises:
        DatabaseInUse: another process holds the file (see `agora.store.lock`).
        StoreError: if the file cannot be opened or migrated, cannot be written (read-only:
            refused before it is locked or opened when the file system says so), or ``path``
            is not a file path or ``:memory:``.
    """
    path = str(path)
    if problem := database_problem(path):
        raise StoreError(f"cannot open database: {problem}")
    if path.startswith(("postgresql://", "postgres://")):
        try:
            from agora.store.pg import open_pg_store
        except ImportError as exc:
            raise StoreError(
                "a postgresql:// database needs psycopg: pip install '.[pg]' in agora's checkout"
            ) from exc
        if shared:
            log.warning(
                "shared = true (--shared) is for a SQLite file; a postgresql:// database is "
                "always shared by the nodes that open it, so the setting is ignored"
            )
        async with open_pg_store(
            path,
            migrations,
            group_commit=group_commit,
            trace=trace,
            commit_timeout=commit_timeout,
        ) as pg_store:
            yield pg_store
        return
    if shared and path == ":memory:":
        raise StoreError("cannot share :memory:: only a database file can be shared")
    if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
        raise StoreError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
    if os.environ.get(TEST_BACKEND_ENV):  # the test suite's PostgreSQL pass
        from agora.store.pg_redirect import open_redirected, redirect_server

        if (server := redirect_server()) is not None:
            if path != ":memory:":
                _prepare(path)
            async with open_redirected(
                server,
                path,
                migrations,
                group_commit=group_commit,
                trace=trace,
                commit_timeout=commit_timeout,
            ) as redirected:
                yield redirected
            return
    with ExitStack() as held:
        if path != ":memory:":
            _prepare(path)
            held.enter_context(database_lock(path, shared=shared))
        async with _open_locked(
            path,
            migrations,
            synchronous,
            group_commit,
            trace,
            commit_timeout,
            shared,
            writer_process=writer_process,
        ) as store:
            yield store


def _prepare(path: str) -> None:
    # Refused in words before anything is opened (the lock, the WAL), so the file and its
    # directory stay as they were: `agora.store.db_path`.
    check_database_path(path)


@asynccontextmanager
async def _open_locked(
    path: str,
    migrations: Iterable[Migration],
    synchronous: str,
    group_commit: bool,
    trace: bool,
    commit_timeout: float,
    shared: bool = False,
    *,
    writer_process: bool = False,
) -> AsyncIterator[Store]:
    inline = path == ":memory:"
    process = writer_process and not inline and not shared
    conn: sqlite3.Connection | WriterProcess
    if inline:  # nothing else opens it: no lock to wait for
        migrations_conn, versions, identity = migrated(path, migrations, synchronous, shared)
    else:  # off the Trio thread: the lock may be waited for, a step may take long
        if not shared:  # a crashed server's -wal: before anything writes (`wal_leftover`)
            await open_in_thread(partial(check_leftover_wal, path))
        migrations_conn, versions, identity = await open_in_thread(
            partial(migrated_file, path, migrations, synchronous, shared)
        )
    conn = migrations_conn
    if process:  # the child writes from now on
        conn = await _handed_to_child(migrations_conn, path, synchronous.upper())
    deliver = None if inline else loop_delivery()
    doctor = None if inline else DiskDoctor(path)
    holder: list[Store] = []

    def reopen() -> sqlite3.Connection | WriterProcess:
        # Raising keeps the old connection: writes are refused, retryably, until a reopen
        # finds the database at its path again.
        fresh: sqlite3.Connection | WriterProcess
        if process:
            refuse_foreign(path, versions, identity)
            fresh = _spawn(path, synchronous.upper())
        else:
            fresh = checked_connect(path, versions, identity, synchronous.upper())
        holder[0].generation += 1  # the readers follow at their next use
        return fresh

    make: Callable[..., Writer]
    if shared:
        make = partial(GuardedWriter, turns=f"{lock_path(path)}.write", turn_timeout=commit_timeout)
    else:
        make = ProcessWriter if process else Writer
    try:
        writer = make(
            conn,
            group_commit=group_commit,
            deliver=deliver,
            trace=trace,
            doctor=doctor,
            reopen=None if inline else reopen,
        )
    except OSError as exc:  # the turns file of a shared one
        conn.close()
        raise StoreError(f"cannot open database {path}: {exc}") from exc
    store: Store
    if shared:
        try:
            watch = connect(path, synchronous="NORMAL", readonly=True, create=False)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open database {path}: {open_problem(path, exc)}") from exc
        watch.execute("PRAGMA busy_timeout=1000")  # it runs on the Trio thread
        store = SharedStore(
            path,
            conn,
            writer,
            inline=False,
            versions=versions,
            commit_timeout=commit_timeout,
            watch_conn=watch,
        )
    else:
        store = Store(
            path, conn, writer, inline=inline, versions=versions, commit_timeout=commit_timeout
        )
    holder.append(store)
    if not inline:
        store.checkpointer = Checkpointer(  # it opens again after a failed checkpoint
            path, partial(checked_connect, path, versions, identity, synchronous.upper())
        )
        writer.on_batch = store.checkpointer.wake
        store.shm = writer.guard = ShmGuard(path, store.checkpointer.index)
        writer.start()
        store.checkpointer.start()
        # A system task: it must outlive nothing but the store, and a nursery here would
        # wrap the caller's exceptions in groups.
        trio.lowlevel.spawn_system_task(store._watch, name="agora store watchdog")
    try:
        yield store
    finally:
        store._watch_scope.cancel()
        with trio.CancelScope(shield=True):
            if inline:
                store.close()
            else:
                await trio.to_thread.run_sync(store.close)


async def _handed_to_child(conn: sqlite3.Connection, path: str, synchronous: str) -> WriterProcess:
    """The writer's child process on ``path``, started in a thread that a cancellation ends
    (it kills the child); ``conn``, the migrations' connection, is closed either way.

    Raises:
        StoreError: the child could not start or open the file.
    """
    try:
        child = await open_in_thread(partial(_spawn, path, synchronous))
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open database {path}: its writer process: {exc}") from exc
    finally:
        # Closed only once the child has the file open: the last connection to close would
        # checkpoint the WAL and delete it and its index, for the child to create anew (new
        # files a failing disk may never have written out).
        conn.close()
    return child


def _spawn(path: str, synchronous: str, opening: Opening | None = None) -> WriterProcess:
    """The writer's child process on the existing file ``path`` (``opening``: the store's
    open, which a cancellation ends)."""
    return WriterProcess(path, synchronous=synchronous, opening=opening)
