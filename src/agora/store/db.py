"""The store as Trio code sees it: `await store.write(...)`, `await store.read(...)`.

A file store runs its writer in a thread and reads on a small pool of WAL read connections,
so readers never wait for the writer. An in-memory store (``:memory:``) runs everything
inline on one connection: nothing to lose on a crash, and tests under Trio's autojump clock
stay exact (a task waiting on a thread would look idle to the clock). A reply is released
only after its COMMIT returned.
"""

from __future__ import annotations

import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import trio

from agora.errors import StoreError
from agora.store.migrations import apply_migrations
from agora.store.writer import Job, Writer, WriterStopped

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable

    from agora.store.migrations import Migration
    from agora.store.writer import Write

T = TypeVar("T")

READERS = 4


def _connect(path: str, *, synchronous: str, readonly: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path,
        isolation_level=None,
        check_same_thread=False,
        timeout=30.0,
        uri=path.startswith("file:"),
    )
    conn.row_factory = sqlite3.Row
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    if readonly:
        conn.execute("PRAGMA query_only=ON")
    return conn


def _wait_for_commit(_: object) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED


def _read_only(fn: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
    # Inline reads share the writer's connection; refuse writes as a read connection would,
    # so code tested on ``:memory:`` behaves as it will on a file.
    conn.execute("PRAGMA query_only=ON")
    try:
        return fn(conn)
    finally:
        conn.execute("PRAGMA query_only=OFF")


class Store:
    """Durable storage for every toolset.

    Attributes:
        path: The database file, or ``:memory:``.
        versions: Schema version of each component after migration.
    """

    def __init__(
        self,
        path: str,
        writer_conn: sqlite3.Connection,
        writer: Writer,
        *,
        inline: bool,
        versions: dict[str, int],
    ) -> None:
        self.path = path
        self.versions = versions
        self._writer_conn = writer_conn
        self._writer = writer
        self._inline = inline
        self._readers: list[sqlite3.Connection] = []
        self._reader_limit = trio.CapacityLimiter(READERS)
        self._closed = False

    @property
    def stats(self) -> tuple[int, int]:
        """(transactions committed, jobs committed) since open: the group-commit ratio.

        A job that failed inside a committed transaction is not counted.
        """
        return self._writer.batches, self._writer.jobs

    async def write(self, writes: list[Write]) -> None:
        """Commit ``writes`` atomically; return once they are durable.

        A caller already cancelled on entry commits nothing. Once submitted, the wait is
        shielded: the write is either committed or failed, and the caller learns which even
        if it was cancelled meanwhile (the cancellation lands at its next checkpoint).

        Raises:
            StoreError: if the statements failed; none of them is committed.
        """
        if self._closed:
            raise StoreError("write failed: the store is closed")
        if not writes:
            return
        await trio.lowlevel.checkpoint_if_cancelled()  # never committed-but-cancelled
        outcome: list[BaseException | None] = []
        if self._inline:
            self._writer.commit_batch([Job(writes, outcome.append)])
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:
            task = trio.lowlevel.current_task()

            def complete(result: BaseException | None) -> None:  # in this thread, per batch
                outcome.append(result)
                trio.lowlevel.reschedule(task)

            try:
                self._writer.submit(Job(writes, complete))
            except WriterStopped as exc:
                raise StoreError("write failed: the store is closed") from exc
            # Not abortable: a cancellation waits for the outcome and lands afterwards.
            await trio.lowlevel.wait_task_rescheduled(_wait_for_commit)
        if outcome[0] is not None:
            raise StoreError(f"write failed: {outcome[0]}") from outcome[0]

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` against committed rows and return its result.

        Raises:
            StoreError: if SQLite raised.
        """
        if self._closed:
            raise StoreError("read failed: the store is closed")
        try:
            if self._inline:
                await trio.lowlevel.checkpoint()
                return _read_only(fn, self._writer_conn)
            async with self._reader_limit:
                conn = self._readers.pop() if self._readers else self._open_reader()
                try:
                    return await trio.to_thread.run_sync(fn, conn)
                finally:
                    self._readers.append(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"read failed: {exc}") from exc

    def _open_reader(self) -> sqlite3.Connection:
        return _connect(self.path, synchronous="NORMAL", readonly=True)

    def close(self) -> None:
        """Finish queued writes, then close every connection; later calls raise StoreError."""
        self._closed = True
        if not self._inline:
            self._writer.stop()
        for conn in self._readers:
            conn.close()
        self._readers.clear()
        if not self._inline:
            self._writer_conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._writer_conn.close()


@asynccontextmanager
async def open_store(
    path: str | Path,
    migrations: Iterable[Migration] = (),
    *,
    synchronous: str = "FULL",
    group_commit: bool = True,
    trace: bool = False,
) -> AsyncIterator[Store]:
    """Open (creating and migrating) the database at ``path``; close it on exit.

    Args:
        path: A file path, or ``:memory:`` for a throwaway store.
        migrations: Every component's migrations.
        synchronous: SQLite's ``synchronous`` pragma; FULL makes every commit durable.
        group_commit: Fold concurrent writes into one transaction (off only to measure it).
        trace: Log when each transaction became durable (see `Writer`).

    Raises:
        StoreError: if the file cannot be opened or migrated.
    """
    path = str(path)
    if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
        raise StoreError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
    inline = path == ":memory:"
    try:
        if not inline:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(path, synchronous=synchronous.upper())
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"cannot open database {path}: {exc}") from exc
    try:
        versions = apply_migrations(conn, migrations)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot migrate database {path}: {exc}") from exc
    except BaseException:
        conn.close()  # a newer schema or a failed step: leave nothing open
        raise
    deliver = None if inline else trio.lowlevel.current_trio_token().run_sync_soon
    writer = Writer(conn, group_commit=group_commit, deliver=deliver, trace=trace)
    store = Store(path, conn, writer, inline=inline, versions=versions)
    if not inline:
        writer.start()
    try:
        yield store
    finally:
        with trio.CancelScope(shield=True):
            if inline:
                store.close()
            else:
                await trio.to_thread.run_sync(store.close)
