"""The PostgreSQL store: the `Store` API over psycopg 3, shared by several agora nodes.

Same shape as the SQLite store: one writer thread that group-commits (`PgWriter`, under
version guards, with NOTIFY in the commit), reads on a small pool of connections in worker
threads behind the same limiter, and the same commit deadline and shutdown bound. What
differs: reads run in a ``REPEATABLE READ READ ONLY`` snapshot (a loader sees the entity's
version and rows together), writes may carry `Guard`s, `probe` batches version checks of
cached entities, and nothing locks the database for one process: many nodes share it.

An inline store (``inline=True``) runs all of that on the Trio thread instead, as SQLite's
``:memory:`` store does, so tests under Trio's autojump clock stay exact: a task waiting on a
thread would look idle to the clock. It blocks the event loop for each round trip, so it is
for tests, never for serving; its schema is its own alone (`shared` is False), so the runtime
neither listens for other nodes nor takes cluster locks for it.

The namespace is the connection's ``search_path`` schema (``public`` by default), so tests
and benches can run many stores on one server (``?options=-csearch_path%3Dname``); the
NOTIFY channel and advisory-lock names include it. This module must stay free of toolsets.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import trio
from psycopg import pq

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.store.failures import store_error
from agora.store.neutral import POSTGRESQL, MissingTable
from agora.store.outage import Outage
from agora.store.pg_cluster import ClusterLock, migrate
from agora.store.pg_probe import VERSIONS, ProbeConn
from agora.store.pg_sql import PgConn, connect
from agora.store.pg_writer import PgWriter
from agora.store.sqlite import COMMIT_TIMEOUT, STOP_SECONDS, Store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable

    from agora.store.migrations import Migration

T = TypeVar("T")

log = logging.getLogger(__name__)

_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_VERSION = "SELECT version FROM agora_entities WHERE kind = ? AND key = ?"


@dataclass(slots=True, eq=False)
class _Probe:
    keys: set[tuple[str, str]] = field(default_factory=set)
    done: trio.Event = field(default_factory=trio.Event)
    versions: dict[tuple[str, str], int] = field(default_factory=dict)
    error: BaseException | None = None


class PgStore(Store):
    """Durable storage on PostgreSQL (see the module docstring).

    Attributes:
        url: The database URL (it may hold a password: never log it).
        schema: The namespace the tables live in.
        channel: The NOTIFY channel of this namespace.
    """

    guarded = True
    dialect = POSTGRESQL

    def __init__(
        self,
        url: str,
        schema: str,
        writer: PgWriter,
        *,
        versions: dict[str, int],
        commit_timeout: float,
        inline: bool = False,
    ) -> None:
        super().__init__(
            "postgresql",
            None,  # type: ignore[arg-type]  # the writer owns its connection
            writer,
            inline=inline,
            versions=versions,
            commit_timeout=commit_timeout,
        )
        self.url = url
        self.schema = schema
        self.channel = f"agora:{schema}"
        self._pg_writer = writer
        self._pg_readers: list[PgConn] = []
        self._probe: _Probe | None = None
        self._probe_conn = ProbeConn(url)
        self._probe_turn = trio.Lock()
        self.probes = 0
        self.probed = 0
        self.reads = 0
        self.outage: Outage | None = Outage("PostgreSQL")
        writer.teller.outage = self.outage

    @property
    def shared(self) -> bool:  # type: ignore[override]
        """Other nodes may use this database; an inline store's schema is its own alone."""
        return not self._inline

    @property
    def inline(self) -> bool:
        """Whether every round trip runs on the Trio thread (see the module docstring)."""
        return self._inline

    async def blocking(self, fn: Callable[[], T]) -> T:
        """``fn()`` (blocking I/O): in a worker thread, or on the Trio thread if inline."""
        if self._inline:
            await trio.lowlevel.checkpoint()
            return fn()
        return await trio.to_thread.run_sync(fn)

    @property
    def writer_pid(self) -> int:
        """The server process of the write connection (its notifications are our own)."""
        return self._pg_writer.backend_pid

    @property
    def conflicts(self) -> int:
        """Guarded jobs rejected since open because their entity changed elsewhere."""
        return self._pg_writer.conflicts

    def counters(self) -> dict[str, Any]:
        """`Store.counters`, plus the version guard's and the shared store's own:
        ``conflicts`` (guarded commands rejected: their entity changed on another node),
        ``reads`` (read calls: entity loads and listings), ``probes``
        (version-probe queries) and ``probed`` (keys they checked),
        ``notes_sent`` (NOTIFY calls committed), ``writer_reconnects`` and ``reruns``
        (batches rerun one savepoint per command after a statement failed).

        A commit's split is SQLite's where it maps (`agora.store.pg_writer`): ``begin_ms``
        is the first round trip (BEGIN, the guarded rows' locks), ``end_ms`` and
        ``end_cpu_ms`` the second (the writes, NOTIFY and COMMIT together); there is no
        ``statements_ms`` or ``statements_cpu_ms``: the statements go out with the COMMIT."""
        writer = self._pg_writer
        split = super().counters()
        del split["statements_ms"], split["statements_cpu_ms"]
        return split | {
            "conflicts": writer.conflicts,
            "reads": self.reads,
            "probes": self.probes,
            "probed": self.probed,
            "notes_sent": writer.notes_sent,
            "writer_reconnects": writer.reconnects,
            "reruns": writer.reruns,
        }

    async def read(self, fn: Callable[[Any], T], *, snapshot: bool = True) -> T:
        """Run ``fn(conn)`` in a read-only snapshot and return its result.

        Without ``snapshot``, each statement of ``fn`` runs on its own (no BEGIN, no
        COMMIT: two round trips fewer), for a reader of one statement.

        Raises:
            StoreError: if PostgreSQL raised or cannot be reached (``permanent`` when a
                retry cannot help: a missing column, a syntax error).
        """
        if self._closed:
            raise StoreError("read failed: the store is closed")
        self.reads += 1
        async with self._reader_limit:
            # The connection used goes back to the pool even when ``fn`` raised (a loader's
            # LookupError): it is rolled back and reusable, or closed.
            held: list[PgConn] = self._pg_readers[-1:]
            del self._pg_readers[-1:]
            try:
                return await self.blocking(lambda: self._read_in_thread(fn, held, snapshot))
            except psycopg.Error as exc:  # retryable, or a bug (`agora.store.failures`)
                raise store_error("read failed", exc) from exc
            except MissingTable as exc:  # SQLite's "no such table", as `PgConn` names it
                raise store_error("read failed", exc.__cause__ or exc) from exc
            finally:
                self._pg_readers += [c for c in held if not c.raw.closed]

    def _read_in_thread(
        self, fn: Callable[[Any], T], held: list[PgConn], snapshot: bool = True
    ) -> T:
        if held and held[0].committing:
            try:
                held[0].settle()  # the last read's COMMIT (see `_in_snapshot`)
            except psycopg.OperationalError:  # the connection died idle: nothing ran yet
                held[0].raw.close()
        if not held or held[0].raw.closed or held[0].raw.broken:
            held[:] = [PgConn(connect(self.url))]
        if not snapshot:
            try:
                return fn(held[0])
            except psycopg.OperationalError:  # maybe a pooled connection that died idle
                held[0].raw.close()
                held[:] = [PgConn(connect(self.url))]
                return fn(held[0])
        conn = held[0]
        try:
            return self._in_snapshot(fn, conn)
        except psycopg.OperationalError:
            if conn.began:
                raise
            # A pooled connection that died idle: the snapshot's BEGIN, sent with the first
            # statement, never reached the server, so nothing ran yet.
            conn.raw.close()
            held[:] = [PgConn(connect(self.url))]
            return self._in_snapshot(fn, held[0])

    @staticmethod
    def _in_snapshot(fn: Callable[[Any], T], conn: PgConn) -> T:
        # BEGIN travels with fn's first statement, and COMMIT is sent without waiting for
        # its answer (the next read on this connection reads it): two round trips fewer.
        conn.begin, conn.began = _SNAPSHOT, False
        raw = conn.raw
        try:
            result = fn(conn)
        except BaseException:
            conn.begin = conn.ahead = None
            if raw.broken:
                raw.close()
            elif raw.info.transaction_status != pq.TransactionStatus.IDLE:
                raw.execute("ROLLBACK")
            raise
        conn.begin = None
        if raw.info.transaction_status != pq.TransactionStatus.IDLE:  # fn ran a statement
            conn.commit_later()  # (in a transaction a failed statement aborted: a ROLLBACK)
        return result

    async def read_versioned(self, kind: str, key: str, fn: Callable[[Any], T]) -> tuple[T, int]:
        """``fn(conn)`` and the version of entity (kind, key) (0: never written), one snapshot.

        The version's query travels with the loader's first statement (one round trip).
        """

        def both(conn: PgConn) -> tuple[T, int]:
            conn.send_ahead(_VERSION, (kind, key))
            result = fn(conn)
            rows = conn.ahead_result()
            if rows is None:  # the loader ran no statement
                rows = conn.execute(_VERSION, (kind, key)).fetchall()
            return result, (int(rows[0][0]) if rows else 0)

        return await self.read(both)

    async def probe(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The committed version of each (kind, key), 0 if never written.

        Callers arriving together share one query: the first waits one scheduling pass for
        the others (and for the query before, if one is out: one at a time), asks for every
        key, and hands each caller the answer. The query is sent only after every caller in
        it arrived. It runs on the Trio thread (`agora.store.pg_probe`), except on an inline
        store, whose reads all run there anyway.

        Raises:
            StoreError: if PostgreSQL cannot be read.
        """
        wanted = set(keys)
        batch = self._probe
        if batch is not None:
            batch.keys |= wanted
            await batch.done.wait()
        else:
            batch = self._probe = _Probe(set(wanted))  # its own set: others add to it
            with trio.CancelScope(shield=True):  # followers wait for this answer
                try:
                    await trio.lowlevel.cancel_shielded_checkpoint()  # let the others join
                    await self._probe_turn.acquire()  # they join while the last one is out
                finally:
                    self._probe = None
                self.probes += 1
                self.probed += len(batch.keys)
                try:
                    if self._closed:
                        raise StoreError("read failed: the store is closed")
                    if self._inline:
                        batch.versions = await self.read(
                            lambda c: _versions(c, sorted(batch.keys)), snapshot=False
                        )
                    else:
                        batch.versions = await self._probe_conn.versions(batch.keys)
                except StoreError as exc:
                    batch.error = exc
                finally:
                    self._probe_turn.release()
                    batch.done.set()
        if batch.error is not None:
            raise StoreError(str(batch.error)) from batch.error
        return {k: batch.versions.get(k, 0) for k in wanted}

    async def try_singleton(self, name: str) -> ClusterLock | None:
        """Take the cluster-wide lock ``name`` if free: a `ClusterLock`, or None if held.

        A session-level advisory lock on a connection of its own: it is released when the
        lock is, or when that connection dies with its node (``kill -9`` included).
        """
        lock = ClusterLock(self.url, f"agora:{self.schema}:task:{name}")
        try:
            got = await self.blocking(lock.acquire)
        except psycopg.Error as exc:
            lock.release()
            raise StoreError(f"cannot take lock {name}: {exc}") from exc
        if not got:
            lock.release()
            return None
        return lock

    def close(self) -> None:
        """Finish queued writes, then close every connection; never raises."""
        self._closed = True
        if not self._inline and not self._writer.stop(STOP_SECONDS):
            log.error("the PostgreSQL writer is stuck (a commit that does not return)")
            return
        for conn in self._pg_readers:
            conn.raw.close()
        self._pg_readers.clear()
        self._probe_conn.close()
        self._pg_writer.close()


def _versions(conn: PgConn, keys: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    rows = conn.execute(VERSIONS, ([k for k, _ in keys], [key for _, key in keys])).fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}


@asynccontextmanager
async def open_pg_store(
    url: str,
    migrations: Iterable[Migration] = (),
    *,
    group_commit: bool = True,
    trace: bool = False,
    commit_timeout: float = COMMIT_TIMEOUT,
    inline: bool = False,
) -> AsyncIterator[PgStore]:
    """Open (migrating) the PostgreSQL database at ``url``; close it on exit.

    Args:
        url: The database URL.
        migrations: Every component's migrations.
        group_commit: Fold concurrent writes into one transaction.
        trace: Log when each transaction became durable.
        commit_timeout: Seconds a write waits for its commit.
        inline: Run every round trip on the Trio thread (tests on an autojump clock; see
            the module docstring).

    Raises:
        StoreError: the server cannot be reached, or migrating failed.
    """

    async def blocking(fn: Callable[[], T]) -> T:
        if inline:
            return fn()
        return await trio.to_thread.run_sync(fn)

    try:
        schema, versions = await blocking(lambda: migrate(url, list(migrations)))
        deliver = None if inline else trio.lowlevel.current_trio_token().run_sync_soon
        channel = f"agora:{schema}"
        writer = await blocking(
            lambda: PgWriter(url, channel, group_commit=group_commit, deliver=deliver, trace=trace)
        )
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the PostgreSQL database: {one_line(exc)}") from exc
    store = PgStore(
        url, schema, writer, versions=versions, commit_timeout=commit_timeout, inline=inline
    )
    if not inline:
        writer.start()
        trio.lowlevel.spawn_system_task(store._watch, name="agora store watchdog")
    try:
        yield store
    finally:
        store._watch_scope.cancel()
        store._probe_conn.close()  # here: its socket is watched by this thread's loop
        with trio.CancelScope(shield=True):
            await blocking(store.close)
