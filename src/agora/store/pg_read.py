"""One read on PostgreSQL, in the worker thread that runs it: the snapshot, the pooled
connection, and a new one when the pooled one died idle.

`agora.store.pg.PgStore.read` hands the thread a `agora.store.pg_bound.Lease` holding the
pooled connection; whatever connection the read ends on stays in the lease, for the store to
pool again or, when the caller gave up on the read, for the thread to close. A read's
``BEGIN`` travels with its first statement and its ``COMMIT`` is sent without waiting for
the answer (`agora.store.pg_sql.PgConn`): two round trips fewer per read. No Trio here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import pq

from agora.store.pg_bound import GivenUp
from agora.store.pg_sql import PgConn, connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.store.pg_bound import Lease

T = TypeVar("T")

_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


def _fresh(url: str, lease: Lease) -> PgConn:
    """A new connection in ``lease`` in place of its old one (closed).

    Raises:
        GivenUp: the caller gave up on this read (no use connecting for it).
    """
    if lease.given_up:
        raise GivenUp("read failed: given up on")
    for old in lease.links:
        old.close()
    lease.links.clear()
    return lease.adopt(PgConn(connect(url, role="reader")))


def read_in_thread(url: str, fn: Callable[[Any], T], lease: Lease, snapshot: bool) -> T:
    """``fn(conn)`` on ``lease``'s pooled connection or a new one (blocking I/O, in a worker
    thread): in a snapshot, unless not ``snapshot`` (each statement on its own); once more on
    a new connection if the pooled one died idle (nothing ran yet).

    Raises:
        psycopg.Error: PostgreSQL raised, or the connection broke (or was cut) while
            ``fn`` ran.
        GivenUp: the caller gave up on the read before it could start.
    """
    conn = lease.links[0] if lease.links else None
    if isinstance(conn, PgConn) and conn.committing:
        try:
            conn.settle()  # the last read's COMMIT (see `_in_snapshot`)
        except psycopg.OperationalError:  # the connection died idle: nothing ran yet
            conn.close()
    if not isinstance(conn, PgConn) or not conn.usable:
        conn = _fresh(url, lease)
    if not snapshot:
        try:
            return fn(conn)
        except psycopg.OperationalError:  # maybe a pooled connection that died idle
            return fn(_fresh(url, lease))
    try:
        return _in_snapshot(fn, conn)
    except psycopg.OperationalError:
        if conn.began:
            raise
        # A pooled connection that died idle: the snapshot's BEGIN, sent with the first
        # statement, never reached the server, so nothing ran yet.
        return _in_snapshot(fn, _fresh(url, lease))


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
            conn.close()
        elif raw.info.transaction_status != pq.TransactionStatus.IDLE:
            raw.execute("ROLLBACK")
        raise
    conn.begin = None
    if raw.info.transaction_status != pq.TransactionStatus.IDLE:  # fn ran a statement
        conn.commit_later()  # (in a transaction a failed statement aborted: a ROLLBACK)
    return result
