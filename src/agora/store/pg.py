"""The PostgreSQL store: the `Store` API over psycopg 3, shared by several agora nodes.

Same shape as the SQLite store: one writer thread that group-commits (`PgWriter`, under
version guards, with NOTIFY in the commit), reads on a small pool of connections in worker
threads behind the same limiter, and the same commit deadline and shutdown bound. What
differs: reads run in a ``REPEATABLE READ READ ONLY`` snapshot (a loader sees the entity's
version and rows together), writes may carry `Guard`s, `probe` batches version checks of
cached entities, and nothing locks the database for one process: many nodes share it.
Reads and probes have the commit deadline too (`agora.store.pg_bound`).

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

import contextlib
import functools
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import trio

from agora.errors import StoreError
from agora.store.failures import store_error
from agora.store.neutral import POSTGRESQL, MissingTable
from agora.store.opening import loop_delivery, open_in_thread
from agora.store.outage import Outage
from agora.store.pg_bound import Lease, in_thread
from agora.store.pg_cluster import ClusterLock, migrate
from agora.store.pg_probe import ProbeConn, Prober, read_versions
from agora.store.pg_read import read_in_thread
from agora.store.pg_sql import PgConn, refusal
from agora.store.pg_writer import PgWriter
from agora.store.ready import select_one
from agora.store.sqlite import COMMIT_TIMEOUT, STOP_SECONDS, Store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable

    from agora.store.migrations import Migration
    from agora.store.opening import Opening

T = TypeVar("T")

log = logging.getLogger(__name__)

_VERSION = "SELECT version FROM agora_entities WHERE kind = ? AND key = ?"


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
        self._probe_conn = ProbeConn(url)
        self._prober = Prober(self._probe_conn, commit_timeout)
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
        """``fn()`` (a `ClusterLock`'s blocking I/O): in a worker thread, left behind if the
        caller is cancelled (the lock's `release` then cuts its connection), or on the Trio
        thread if inline."""
        if self._inline:
            await trio.lowlevel.checkpoint()
            return fn()
        return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)

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
            "probes": self._prober.probes,
            "probed": self._prober.probed,
            "notes_sent": writer.notes_sent,
            "writer_reconnects": writer.reconnects,
            "reruns": writer.reruns,
        }

    async def read(
        self, fn: Callable[[Any], T], *, snapshot: bool = True, queued: bool = True
    ) -> T:
        """Run ``fn(conn)`` in a read-only snapshot and return its result.

        Without ``snapshot``, each statement of ``fn`` runs on its own (no BEGIN, no
        COMMIT: two round trips fewer), for a reader of one statement. Without ``queued``, it
        does not wait for one of the reader slots the tool reads share (the readiness probe:
        `answers`); its connection joins the pool only if there is room.

        The read is bounded by ``commit_timeout``, like a write: past it, or if the caller
        is cancelled meanwhile, its worker thread is given up on and its connection cut
        (`agora.store.pg_bound`), and the next read opens another.

        Raises:
            StoreError: if PostgreSQL raised, cannot be reached or did not answer in time
                (``permanent`` when a retry cannot help: a missing column, a syntax error).
        """
        if self._closed:
            raise StoreError("read failed: the store is closed")
        self.reads += 1
        async with self._reader_limit if queued else contextlib.nullcontext():
            # The connection used goes back to the pool even when ``fn`` raised (a loader's
            # LookupError): it is rolled back and reusable, or closed. Never while a thread
            # given up on may still use it (`Lease.end` says which).
            lease = Lease(list(self._pg_readers[-1:]))
            del self._pg_readers[-1:]
            try:
                work = functools.partial(read_in_thread, self.url, fn, lease, snapshot)
                if self._inline:
                    await trio.lowlevel.checkpoint()
                    result = lease.run(work)
                else:
                    result = await in_thread(lease, work, self.commit_timeout, "read failed")
            except psycopg.Error as exc:  # retryable, or a bug (`agora.store.failures`)
                raise self._told(store_error("read failed", exc)) from exc
            except MissingTable as exc:  # SQLite's "no such table", as `PgConn` names it
                raise store_error("read failed", exc.__cause__ or exc) from exc
            except StoreError as exc:  # no answer in time
                self._told(exc)
                raise
            else:
                if self.outage is not None and self.outage.away:
                    self.outage.answered("a read")
            finally:
                for conn in lease.end():
                    room = queued or len(self._pg_readers) < self._reader_limit.total_tokens
                    if isinstance(conn, PgConn) and conn.usable and not self._closed and room:
                        self._pg_readers.append(conn)
                    else:
                        conn.close()
        return result

    async def answers(self) -> None:
        """Once PostgreSQL answered a trivial read, not waiting for a reader slot (``/readyz``);
        bounded as every read is."""
        await self.read(select_one, snapshot=False, queued=False)

    def _told(self, exc: StoreError) -> StoreError:
        """``exc``, told to the outage account first if a retry may cure it (the database
        away: one line, then a count, instead of one per failed call), and marked ``told``:
        its caller's line goes to DEBUG."""
        if not exc.permanent and self.outage is not None:
            self.outage.failed("a read", exc, refused=1)
            exc.told = True
        return exc

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

        Callers arriving together share one query (`agora.store.pg_probe.Prober`), sent on
        the Trio thread, except on an inline store, whose reads all run there anyway; it is
        bounded by ``commit_timeout``.

        Raises:
            StoreError: if PostgreSQL cannot be read, or did not answer in time.
        """
        if self._closed:
            raise StoreError("read failed: the store is closed")
        try:
            if self._inline:
                return await self._prober.probe(
                    keys, lambda k: self.read(lambda c: read_versions(c, k), snapshot=False)
                )
            return await self._prober.probe(keys)
        except StoreError as exc:
            self._told(exc)
            raise

    _queued_cause = "the writer was busy with a batch PostgreSQL did not answer, or reconnecting"
    _stalled_cause = (
        "PostgreSQL did not answer (or this node was paused); its connection is cut and replaced"
    )

    def _commit_stalled(self) -> None:
        self._pg_writer.cut()

    async def try_singleton(self, name: str) -> ClusterLock | None:
        """Take the cluster-wide lock ``name`` if free: a `ClusterLock`, or None if held.

        A session-level advisory lock on a connection of its own: it is released when the
        lock is, or when that connection dies with its node (``kill -9`` included). Asking
        is bounded by ``commit_timeout``, as a read is.

        Raises:
            StoreError: PostgreSQL cannot be reached or did not answer in time.
        """
        lock = ClusterLock(self.url, f"agora:{self.schema}:task:{name}")
        try:
            if self._inline:
                got = await self.blocking(lambda: lock.lease.run(lock.acquire))
            else:
                got = await in_thread(
                    lock.lease, lock.acquire, self.commit_timeout, f"cannot take lock {name}"
                )
        except psycopg.Error as exc:
            lock.release()
            raise StoreError(f"cannot take lock {name}: {exc}") from exc
        except BaseException:
            lock.release()
            raise
        if not got:
            lock.release()
            return None
        return lock

    def close(self) -> None:
        """Finish queued writes, then close every connection; never raises.

        A batch PostgreSQL does not answer is not waited for beyond `STOP_SECONDS`: its
        connection is cut (its callers were answered when their deadline passed), so
        closing ends even when the database never answers again; a writer still stuck
        then (connecting to such a server) is left behind, said in the log.
        """
        self._closed = True
        stopped = self._inline or self._writer.stop(STOP_SECONDS)
        if not stopped:
            self._pg_writer.cut()
            stopped = self._writer.stop(STOP_SECONDS)
            if stopped:
                log.warning(
                    "PostgreSQL did not answer the last batch at shutdown; its connection "
                    "was cut (that batch may or may not have been saved)"
                )
            else:
                log.error(
                    "the PostgreSQL writer is stuck (connecting to a server that does not "
                    "answer?); leaving it behind"
                )
        for conn in self._pg_readers:
            conn.close()
        self._pg_readers.clear()
        self._probe_conn.close()
        if stopped:
            self._pg_writer.close()


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
        steps = list(migrations)
        if inline:
            schema, versions = migrate(url, steps)
        else:  # a cancellation ends the wait for another node's lock, or a step
            schema, versions = await open_in_thread(functools.partial(migrate, url, steps))
        deliver = None if inline else loop_delivery()
        channel = f"agora:{schema}"
        make = functools.partial(
            PgWriter, url, channel, group_commit=group_commit, deliver=deliver, trace=trace
        )
        # A cancellation ends the wait for the connection (a server that does not answer is
        # waited for up to connect_timeout): the thread closes it, if it comes, itself.
        writer = make() if inline else await open_in_thread(functools.partial(_adopted, make))
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the PostgreSQL database: {refusal(url, exc)}") from exc
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


def _adopted(make: Callable[[], PgWriter], opening: Opening) -> PgWriter:
    """``make()``, its connection closed by ``opening`` if the open is cancelled."""
    writer = make()
    opening.adopt(_nothing, writer.conn.close)
    opening.check()
    return writer


def _nothing() -> None:
    """A connection made cannot be interrupted: it is closed instead."""
