"""Keeping a SQLite write-ahead log short while readers keep reading.

PASSIVE checkpoints (the store's checkpointer's, `agora.store.checkpoint`) never wait for
readers, nor for the writer's next commit, so under a steady load a reader is on the WAL, or
frames are past the checkpoint, whenever a write begins, and the WAL grows without end
(3.2 GiB in a 30-minute mixed soak). The writer thread calls `restart_if_long` between
batches, at most once a second: past `RESTART_FRAMES` it runs ``wal_checkpoint(RESTART)``,
which waits up to `RESTART_WAIT_MS` for the readers on the WAL, and the connection's
``journal_size_limit`` then cuts the file back.
The WAL's length is read from its file's size, not from a checkpoint: a checkpoint in the
writer's thread would copy pages into the database (and fsync it) behind the queue's back.
"""

from __future__ import annotations

import logging
import os
import sqlite3

__all__ = ["RESTART_FRAMES", "RESTART_WAIT_MS", "restart_if_long"]

log = logging.getLogger(__name__)

#: A WAL past this many frames (64 MiB of 4 KiB pages) is restarted.
RESTART_FRAMES = 16_384
#: How long a restart waits for the readers still on the WAL (ms).
RESTART_WAIT_MS = 100
_HEADER, _FRAME_HEADER = 32, 24  # bytes: the WAL file's header, each frame's header


def restart_if_long(conn: sqlite3.Connection, frames: int | None = None) -> bool:
    """Restart ``conn``'s WAL if it is past ``frames`` (default `RESTART_FRAMES`); whether it
    was restarted.

    Never raises for SQLite: a full or failed disk is logged (the next batch says so)."""
    try:
        path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
        if not path:
            return False  # in memory: no WAL file
        (page,) = conn.execute("PRAGMA page_size").fetchone()
        try:
            size = os.path.getsize(f"{path}-wal")
        except FileNotFoundError:
            return False
        limit = RESTART_FRAMES if frames is None else frames
        if (size - _HEADER) // (int(page) + _FRAME_HEADER) < limit:
            return False
        (wait,) = conn.execute("PRAGMA busy_timeout").fetchone()
        conn.execute(f"PRAGMA busy_timeout={RESTART_WAIT_MS}")
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[0]
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(wait)}")
    except sqlite3.Error as exc:
        log.warning("could not checkpoint the write-ahead log: %s", exc)
        return False
    return not busy
