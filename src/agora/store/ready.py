"""The read behind ``/readyz``: does the database answer, whatever the tool reads are doing?

The probe used to be an ordinary read, ``SELECT 1`` through the store's reader pool, which
serves the tool reads first come, first served (4 at a time). Under a load of 300 sessions
it waited behind their backlog past its 2 s, and ``/readyz`` told a balancer the database was
unavailable while it answered every call (an operator's load test: 2-3 of 50 probes). So the
probe skips that queue, each store its own way (``answers``):

- a SQLite file: a connection of the probe's own, opened, asked ``PRAGMA schema_version``
  (read from the file's header: a wedged disk shows) and closed, in a worker thread the
  probe's deadline may abandon (an ordinary read's thread cannot be abandoned, and a wedged
  disk would hold ``/readyz`` itself);
- ``:memory:``: the writer's connection, as every read there;
- PostgreSQL: the store's bounded read (``commit_timeout``, its connection cut when given up
  on) without waiting for a reader slot.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import trio

from agora.store.failures import store_error
from agora.store.sqlite_connect import connect


def schema_version(conn: Any) -> Any:
    """The read of a SQLite probe: the schema's version, from the file's header."""
    return conn.execute("PRAGMA schema_version").fetchone()


def select_one(conn: Any) -> Any:
    """The read of a PostgreSQL probe."""
    return conn.execute("SELECT 1").fetchone()


def _probe_file(path: str) -> None:
    conn = connect(path, synchronous="NORMAL", readonly=True, create=False)
    try:
        schema_version(conn)
    finally:
        conn.close()


async def file_answers(path: str) -> None:
    """Return once the SQLite file at ``path`` answered `schema_version` on a connection of the
    probe's own, in a worker thread the caller's deadline may abandon.

    Raises:
        StoreError: SQLite raised.
    """
    try:
        await trio.to_thread.run_sync(_probe_file, path, abandon_on_cancel=True)
    except sqlite3.Error as exc:
        raise store_error("read failed", exc) from exc
