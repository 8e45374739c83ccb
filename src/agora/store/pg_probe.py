"""Version probes on the Trio thread: one connection, its socket watched by Trio's loop.

A probe (`agora.store.pg.PgStore.probe`) is one short statement, sent for read-only replies
from cached entities. Sent from a worker thread, each one cost the event loop a thread
hand-off and the GIL traffic that goes with it, more than the query itself on a CPU-capped
node. `ProbeConn` sends it on a connection of its own without a thread, as the change
listener does (`agora.store.listen`): libpq sends the prepared statement on its non-blocking
socket, `trio.lowlevel.wait_readable` waits for the answer, and libpq parses it. One query at
a time: the store gathers the callers that arrive meanwhile into the next one.

Connecting is blocking, so it runs in a worker thread, once (and again after the connection
broke: that probe fails with `StoreError`, the next one reconnects); a caller cancelled
meanwhile (the store's deadline) leaves that thread behind, which closes what it opens
(`agora.store.pg_bound.Lease`). This module knows nothing of entities beyond the
``agora_entities`` table.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
import trio
from psycopg import errors, pq

from agora.errors import StoreError
from agora.store.pg_bound import Lease, opened, unanswered
from agora.store.pg_pipe import Pipe
from agora.store.pg_sql import PgConn, connect

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

#: Keys to their versions.
Versions = dict[tuple[str, str], int]

#: One statement text whatever the number of keys (they travel as two arrays), so it is
#: prepared once per connection; one statement, so it needs no snapshot of its own.
VERSIONS = (
    "SELECT e.kind, e.key, e.version FROM agora_entities AS e "
    "JOIN unnest(?::text[], ?::text[]) AS k(kind, key) ON e.kind = k.kind AND e.key = k.key"
)
_NAME = b"agora_probe"


def _open(url: str, lease: Lease) -> PgConn:
    conn = lease.adopt(PgConn(connect(url, role="probe")))
    query, _, types, _ = Pipe.wire(VERSIONS, ([], []))
    result = conn.raw.pgconn.prepare(_NAME, query, types)
    if result.status != pq.ExecStatus.COMMAND_OK:
        raise errors.error_from_result(result, encoding=conn.raw.info.encoding)
    return conn


def read_versions(conn: PgConn, keys: list[tuple[str, str]]) -> Versions:
    """The versions of ``keys`` read on ``conn`` (an inline store's probe, in its thread)."""
    rows = conn.execute(VERSIONS, ([k for k, _ in keys], [key for _, key in keys])).fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}


class ProbeConn:
    """The probe connection of one store (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: PgConn | None = None
        self._fd = -1

    async def versions(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The committed version of each (kind, key) that has one. Not concurrently.

        Raises:
            StoreError: PostgreSQL cannot be reached, or refused the query.
        """
        wanted = sorted(keys)
        for attempt in (1, 2):
            fresh = self._conn is None
            try:
                if self._conn is None:
                    self._conn = await opened(functools.partial(_open, self._url))
                    self._fd = self._conn.raw.pgconn.socket
                return await self._query(self._conn.raw.pgconn, wanted)
            except (psycopg.Error, trio.ClosedResourceError) as exc:
                self.close()
                # A connection that died idle (a server restart, an idle timeout): once more
                # on a new one. A query changes nothing, so asking twice is harmless.
                lost = isinstance(exc, psycopg.OperationalError | trio.ClosedResourceError)
                if fresh or attempt == 2 or not lost:
                    raise StoreError(f"read failed: {exc}") from exc
            except BaseException:  # cancelled mid-query: its answer would confuse the next
                self.close()
                raise
        raise AssertionError("unreachable")

    async def _query(
        self, pgconn: pq.abc.PGconn, keys: list[tuple[str, str]]
    ) -> dict[tuple[str, str], int]:
        _, values, _, formats = Pipe.wire(VERSIONS, ([k for k, _ in keys], [k for _, k in keys]))
        pgconn.send_query_prepared(_NAME, values, formats)
        while pgconn.flush():  # 1: more to send once the socket is writable
            await trio.lowlevel.wait_writable(self._fd)
        out: dict[tuple[str, str], int] = {}
        failed: pq.abc.PGresult | None = None
        while True:
            while pgconn.is_busy():
                await trio.lowlevel.wait_readable(self._fd)
                pgconn.consume_input()  # raises OperationalError when the connection is gone
            result = pgconn.get_result()
            if result is None:
                break
            if result.status == pq.ExecStatus.TUPLES_OK:
                for row in range(result.ntuples):
                    kind, key, version = (result.get_value(row, col) for col in range(3))
                    assert kind is not None
                    assert key is not None
                    assert version is not None
                    out[(bytes(kind).decode(), bytes(key).decode())] = int(bytes(version))
            elif failed is None:
                failed = result
        if failed is not None:
            raise errors.error_from_result(failed, encoding="utf-8")
        return out

    def close(self) -> None:
        """Close the connection (the next probe opens another); never raises."""
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._fd >= 0:
                # Wakes a probe waiting on the socket; only possible on the Trio thread (a
                # store closing in a worker thread has no probe out: its callers are gone).
                with contextlib.suppress(RuntimeError):
                    trio.lowlevel.notify_closing(self._fd)
            conn.close()
        self._fd = -1


@dataclass(slots=True, eq=False)
class _Batch:
    keys: set[tuple[str, str]] = field(default_factory=set)
    done: trio.Event = field(default_factory=trio.Event)
    versions: Versions = field(default_factory=dict)
    error: BaseException | None = None


class Prober:
    """One store's version probes, batched and bounded.

    Callers arriving together share one query: the first waits one scheduling pass for the
    others (and for the query before, if one is out: one at a time), asks for every key,
    and hands each caller the answer. The query is sent only after every caller in it
    arrived. The first caller is shielded from cancellation, since the others wait for its
    answer, but for no longer than ``seconds``: then every caller of the batch fails, and
    the connection is closed (the next probe opens another).

    Attributes:
        probes: Queries sent.
        probed: Keys they asked for.
    """

    def __init__(self, conn: ProbeConn, seconds: float) -> None:
        self._conn = conn
        self._seconds = seconds
        self._batch: _Batch | None = None
        self._turn = trio.Lock()
        self.probes = 0
        self.probed = 0

    async def probe(
        self,
        keys: Iterable[tuple[str, str]],
        ask: Callable[[list[tuple[str, str]]], Awaitable[Versions]] | None = None,
    ) -> Versions:
        """The committed version of each (kind, key), 0 if never written.

        Args:
            keys: The entities.
            ask: How to read the versions of sorted keys, instead of the probe connection
                (an inline store's reads).

        Raises:
            StoreError: PostgreSQL cannot be read, or did not answer within the deadline.
        """
        wanted = set(keys)
        batch = self._batch
        if batch is not None:
            batch.keys |= wanted
            await batch.done.wait()
        else:
            batch = self._batch = _Batch(set(wanted))  # its own set: others add to it
            try:
                await self._ask(batch, ask)
            finally:
                batch.done.set()
        if batch.error is not None:
            raise StoreError(str(batch.error)) from batch.error
        return {k: batch.versions.get(k, 0) for k in wanted}

    async def _ask(
        self, batch: _Batch, ask: Callable[[list[tuple[str, str]]], Awaitable[Versions]] | None
    ) -> None:
        answered = False
        with trio.CancelScope(shield=True, deadline=trio.current_time() + self._seconds):
            try:
                await trio.lowlevel.cancel_shielded_checkpoint()  # let the others join
                await self._turn.acquire()  # they join while the last one is out
            finally:
                self._batch = None
            try:
                self.probes += 1
                self.probed += len(batch.keys)
                if ask is not None:
                    batch.versions = await ask(sorted(batch.keys))
                else:
                    batch.versions = await self._conn.versions(batch.keys)
                answered = True
            except StoreError as exc:
                batch.error = exc
            finally:
                self._turn.release()
        if not answered and batch.error is None:  # the deadline passed
            batch.error = unanswered("read failed", self._seconds)
