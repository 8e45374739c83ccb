"""A write-ahead log left beside the database (by a server that did not close, or whose last
checkpoint failed), checked before the database is served.

A server that closes checkpoints its ``-wal`` into the database and deletes it; one that was
killed (a power cut, the OOM killer, SIGKILL) leaves it, and the next open applies it: that is
how SQLite keeps every acknowledged write. But a ``-wal`` applies to the file it was written
beside. An operator who restores a backup after a crash (``cp backup.db agora.db``) and leaves
the crashed server's ``-wal`` gets the old file's pages laid over the copy: an operator's
finding, where the server started as usual, ``/readyz`` said ready, 1,291 writes were
acknowledged, and the file was then malformed (``btreeInitPage() returns error code 11``).

SQLite's format ties a ``-wal`` to no particular database file, and a backup of the same
database carries the same id (``agora_identity``), so the mix cannot be told for certain. What
can be told is its usual result: pages that do not fit together, or an index out of step with
its table. So when the database has a ``-wal`` with frames in it at start (a server that did
not close leaves one, and so does one whose last checkpoint failed), `check_leftover_wal` runs
``PRAGMA integrity_check`` (every page read once, every index compared with its table) on a
read-only connection, which never checkpoints or deletes a ``-wal`` as it closes, before
anything opens the file for writing: a damaged result refuses the start with one line that
says what to remove if a backup was just put in place, and nothing on disk has changed. An
INFO line says the check runs, on how many MB, before it starts (a long one is not a silent
hang), and another how long it took. Its cost, measured on a 160 MB agora database (debate
messages, deliveries, history, router events): 0.4-0.5 s with the file in the page cache,
2.5-3.3 s read from disk, against 0.2-0.3 s and 2.8-3.0 s for ``quick_check``, which compares
no index with its table and passed a restored file whose index had lost rows. A ``-wal``
whose frames happen to fit the restored file is not found (its writes lost, or the crash's
state served in place of the backup's): README's restore steps remove it first. A shared file
(``--shared``) is not checked: other processes keep its ``-wal`` while they run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import sqlite3
import time
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import quote

from agora.errors import StoreError

if TYPE_CHECKING:
    from agora.store.opening import Opening

__all__ = ["WAL_HEADER_BYTES", "check_leftover_wal", "malformed"]

log = logging.getLogger(__name__)

#: The ``-wal`` file's header: a longer file holds frames (a shorter one holds none).
WAL_HEADER_BYTES = 32
#: SQLite's primary result codes that say the file is not a sound database.
_MALFORMED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
#: SQLite VM instructions between two looks for a cancellation of the open.
_PROGRESS_STEPS = 10000


def _interrupt(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.ProgrammingError):  # the thread has just closed it
        conn.interrupt()


def malformed(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying the file is not a sound database."""
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in _MALFORMED


def _said(rows: list[tuple[object, ...]]) -> str:
    """integrity_check's rows as one short line (its first row may span lines)."""
    lines = [line for row in rows for line in str(row[0]).splitlines()]
    said = "; ".join(line for line in lines if line and not line.startswith("***"))
    return said if len(said) <= 200 else f"{said[:200]}..."


def check_leftover_wal(path: str, opening: Opening | None = None) -> None:
    """Refuse ``path`` if a ``-wal`` with frames lies beside it and the database read through
    it fails ``integrity_check``; nothing if there is none (a clean stop), or the check could
    not run (the open that follows says why).

    Raises:
        StoreError: the database is damaged with the ``-wal`` applied (the message says
            what to remove if a backup was just restored); nothing on disk was changed.
    """
    wal = f"{path}-wal"
    try:
        if os.path.getsize(wal) <= WAL_HEADER_BYTES:
            return
        size = os.path.getsize(path) + os.path.getsize(wal)
    except OSError:  # none: the last server closed the file and checkpointed it
        return
    log.info(
        "%s has a write-ahead log not yet checkpointed into it (a server that did not close "
        "leaves one, and so does one whose last checkpoint failed): checking the database "
        "read through it (%.1f MB) with PRAGMA integrity_check before anything writes; this "
        "reads the whole file once",
        path, size / 2**20,
    )  # fmt: skip
    began = time.perf_counter()
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        log.debug("cannot check %s read-only: %s", path, exc)
        return
    if opening is not None:
        conn.set_progress_handler(opening.cancelled, _PROGRESS_STEPS)
        opening.adopt(partial(_interrupt, conn), None)
    try:
        rows = conn.execute("PRAGMA integrity_check(3)").fetchall()
        problem = None if rows == [("ok",)] else _said(rows)
    except sqlite3.Error as exc:
        if not malformed(exc):
            log.debug("cannot check %s read-only: %s", path, exc)
            return
        problem = str(exc)
    finally:
        conn.close()
    if opening is not None:
        opening.check()
    seconds = time.perf_counter() - began
    if problem is None:
        log.info(
            "%s: the database read through its write-ahead log passed integrity_check in %.1f s",
            path, seconds,
        )  # fmt: skip
        return
    remove = f"rm -f {shlex.quote(wal)} {shlex.quote(path + '-shm')}"
    raise StoreError(
        f"cannot open database {path}: it is damaged once the write-ahead log beside it (left "
        f"by a server that did not close, or whose last checkpoint failed) is applied "
        f"(integrity_check: {problem}). If you just put "
        f"a backup in its place, that log is the old file's: remove it, then start again "
        f"({remove}; the restored file is untouched). Otherwise the file itself is damaged: set "
        f"all three files aside and restore a backup"
    )
