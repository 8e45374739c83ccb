"""LISTEN in Trio without a thread: one connection, its socket watched by Trio's loop.

`listen` keeps one connection that has run ``LISTEN <channel>``. It waits for the socket to
become readable (`trio.lowlevel.wait_readable`), lets libpq consume what arrived
(``PGconn.consume_input``; libpq keeps its sockets non-blocking) and hands each notification
to ``on_note``. When the connection breaks (the server restarted, an operator killed the
backend, a network cut noticed by keepalives), it reconnects after ``retry`` seconds and
calls ``on_connect`` again, so the caller can re-check whatever it may have missed: PostgreSQL
keeps no notifications for an absent listener. This module knows nothing of actors.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

import psycopg
import trio
from psycopg import pq, sql

from agora.logsafe import one_line
from agora.store.pg_bound import Lease, opened
from agora.store.pg_sql import PgConn, connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.store.outage import Outage

log = logging.getLogger(__name__)

#: Seconds between two connection attempts while the server cannot be reached.
RETRY_SECONDS = 0.5


def _open(url: str, channel: str, lease: Lease | None = None) -> PgConn:
    conn = PgConn(connect(url, role="listener"))
    if lease is not None:
        lease.adopt(conn)
    conn.raw.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    return conn


async def listen(
    url: str,
    channel: str,
    on_note: Callable[[str, int], None],
    on_connect: Callable[[int], None],
    *,
    retry: float = RETRY_SECONDS,
    inline: bool = False,
    outage: Outage | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Deliver every notification on ``channel`` until cancelled.

    Args:
        url: The database.
        channel: The channel to LISTEN on.
        on_note: Called with (payload, sending backend's pid) for each notification.
        on_connect: Called with the listening backend's pid after each (re)connection,
            before any notification of that connection is delivered.
        retry: Seconds to wait before reconnecting.
        inline: Connect on the Trio thread rather than in a worker thread (an inline store's
            listener: no thread may hide work from an autojump clock).
        outage: The store's account of its outages (`agora.store.outage`): a lost connection
            and failed reconnections are told to it, which logs them once and then seldom,
            and so is the reconnection that ends them. None: each is logged as it happens.
        task_status: Started once the first LISTEN is in place.
    """
    started = False
    while True:
        try:
            if inline:
                await trio.lowlevel.checkpoint()
                conn = _open(url, channel)
            else:  # left behind at shutdown, as connecting may take connect_timeout
                conn = await opened(functools.partial(_open, url, channel))
        except psycopg.Error as exc:
            if outage is not None:
                outage.failed("the change listener", exc)
            else:
                log.warning(
                    "cannot listen for changes (%s); retrying in %g s", one_line(exc), retry
                )
            await trio.sleep(retry)
            continue
        fd = conn.raw.pgconn.socket  # read now: libpq forgets it once the connection is lost
        try:
            if outage is not None:
                outage.answered("the change listener reconnected")
            on_connect(conn.raw.info.backend_pid)
            if not started:
                started = True
                task_status.started()
            await _drain(conn.raw.pgconn, fd, on_note)
        except psycopg.Error as exc:
            if outage is not None:
                outage.failed("the change listener lost its connection", exc)
            else:
                log.warning(
                    "the change listener lost its connection (%s); reconnecting", one_line(exc)
                )
        finally:
            trio.lowlevel.notify_closing(fd)
            conn.close()
        await trio.sleep(retry)


async def _drain(pgconn: pq.abc.PGconn, fd: int, on_note: Callable[[str, int], None]) -> None:
    while True:
        await trio.lowlevel.wait_readable(fd)
        pgconn.consume_input()  # raises OperationalError when the connection is gone
        if pgconn.status != pq.ConnStatus.OK:
            raise psycopg.OperationalError("the listening connection closed")
        while (note := pgconn.notifies()) is not None:
            on_note(note.extra.decode(), note.be_pid)
