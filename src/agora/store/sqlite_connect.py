"""How every connection to a SQLite store file is opened: WAL, and the pragmas they share.

Standard library only: the writer's child process (`agora.store.writer_child`) loads this
file by path and opens its write connection with the same `connect` as the server's own
readers, checkpointer and writer thread.
"""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

#: Bytes the WAL file is cut back to once a checkpoint has emptied it. A checkpoint cannot
#: pass a snapshot still read, so under a load that keeps the readers busy (or after a stall
#: that let work pile up) the WAL can grow to hundreds of MiB before it is emptied; without a
#: limit SQLite then reuses the file at that size for ever (a 30-minute soak: 660 MiB).
WAL_SIZE_LIMIT = 64 * 2**20
#: Milliseconds a statement waits for another connection's lock before SQLITE_BUSY. The writer
#: may wait this long in BEGIN IMMEDIATE for another process's write lock. It can exceed
#: commit_timeout: waiters give up on their own, and the jobs they gave up are dropped once
#: the lock comes, never run.
BUSY_MS = 30_000


def connect(
    path: str,
    *,
    synchronous: str,
    readonly: bool = False,
    create: bool = True,
    busy_ms: int = BUSY_MS,
) -> sqlite3.Connection:
    """A connection to ``path`` set up as every store connection is (WAL, pragmas);
    ``create`` False opens an existing file only (a reopen never makes a new empty one);
    ``busy_ms`` is how long it waits for another connection's lock (`BUSY_MS`)."""
    conn = sqlite3.connect(
        path if create else f"file:{quote(path)}?mode=rw",
        isolation_level=None,
        check_same_thread=False,
        timeout=busy_ms / 1000,
        uri=not create,
    )
    try:  # a lock it waited for in vain (busy) leaves no connection open
        conn.row_factory = sqlite3.Row
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            if not readonly:  # no checkpoint in a COMMIT: they are `agora.store.checkpoint`'s
                conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={busy_ms}")
        if readonly:
            conn.execute("PRAGMA query_only=ON")
    except BaseException:
        conn.close()
        raise
    return conn
