"""Version probes on the Trio thread: one connection, its socket watched by Trio's loop.

A probe (`agora.store.pg.PgStore.probe`) is one short statement, sent for read-only replies
from cached entities. Sent from a worker thread, each one cost the event loop a thread
hand-off and the GIL traffic that goes with it, more than the query itself on a CPU-capped
node. `ProbeConn` sends it on a connection of its own without a thread, as the change
listener does (`agora.store.listen`): libpq sends the prepared statement on its non-blocking
socket, `trio.lowlevel.wait_readable` waits for the answer, and libpq parses it. One query at
a time: the store gathers the callers that arrive meanwhile into the next one.

Connecting is blocking, so it runs in a worker thread, once (and again after the connection
broke: that probe fails with `StoreError`, the next one reconnects). This module knows
nothing of entities beyond the ``agora_entities`` table.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import psycopg
import trio
from psycopg import errors, pq

from agora.errors import StoreError
from agora.store.pg_pipe import Pipe
from agora.store.pg_sql import connect

if TYPE_CHECKING:
    from collections.abc import Iterable

#: One statement text whatever the number of keys (they travel as two arrays), so it is
#: prepared once per connection; one statement, so it needs no snapshot of its own.
VERSIONS = (
    "SELECT e.kind, e.key, e.version FROM agora_entities AS e "
    "JOIN unnest(?::text[], ?::text[]) AS k(kind, key) ON e.kind = k.kind AND e.key = k.key"
)
_NAME = b"agora_probe"


def _open(url: str) -> psycopg.Connection[Any]:
    conn = connect(url)
    query, _, types, _ = Pipe.wire(VERSIONS, ([], []))
    result = conn.pgconn.prepare(_NAME, query, types)
    if result.status != pq.ExecStatus.COMMAND_OK:
        conn.close()
        raise errors.error_from_result(result, encoding=conn.info.encoding)
    return conn


class ProbeConn:
    """The probe connection of one store (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.Connection[Any] | None = None
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
                    self._conn = await trio.to_thread.run_sync(_open, self._url)
                    self._fd = self._conn.pgconn.socket
                return await self._query(self._conn.pgconn, wanted)
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
