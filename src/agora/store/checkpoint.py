"""Checkpoints of a SQLite store's write-ahead log, kept out of the writer's COMMITs.

SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past
``wal_autocheckpoint`` pages: it copies those pages into the database file and fsyncs it
while the writer holds its transaction (26-59 ms on a slow disk, several times a second at
2,000 writes/s), and every reply of that batch waits for it. So the store's writable
connections turn it off (`agora.store.sqlite_connect.connect`), and a `Checkpointer` thread, on a
connection of its own, runs ``wal_checkpoint(PASSIVE)`` once about `CHECKPOINT_PAGES` frames
of the WAL are not yet in the database: meanwhile the writer keeps committing.

It learns how far behind the database is from the WAL index (the ``-shm`` file, whose
layout is part of SQLite's documented file format: ``mxFrame``, the last valid frame, and
``nBackfill``, the frames already copied), read at most every `POLL_SECONDS` and only after
the writer said it committed (`Checkpointer.wake`): an idle store costs nothing. It reads
it through a hold on the file (`agora.store.wal_index`), never opening and closing the
``-shm`` itself, which would drop this process's SQLite locks on it. The hold stands for the
whole store, which lets go of it (`Checkpointer.close`) once its connections are closed.

A PASSIVE checkpoint never waits, for readers or for a checkpoint another connection or
process runs (SQLite runs one at a time: a busy one is counted and skipped), and never loses
a commit: the WAL keeps every frame until the database holds it and is synced.

Under steady commits a PASSIVE checkpoint rarely ends with the whole WAL copied, so the
writer's next BEGIN seldom starts the WAL over: the WAL stays long, and the writer's own
`agora.store.wal.restart_if_long` still bounds it. Errors are logged, never raised, and once
per episode (`agora.store.episode`): a full disk fails every look, 20 a second under load, so
the first failure is one WARNING, the ones after it are counted, and the next checkpoint that
runs is one INFO line with how long they failed and how many. The thread ends with `stop`.
A checkpoint that fails because the file is malformed (SQLite's ``database disk image is
malformed``) is an ERROR that says so, never "committed data is safe": the file and its WAL
do not make a sound database (a restored backup beside an old ``-wal``, or damage), and the
next start's check (`agora.store.wal_leftover`) refuses it. `final_checkpoint` is the store's
last one, worded the same way. Must not import trio.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any

from agora.store.episode import Episode
from agora.store.stats import COMMIT_MS, Histogram
from agora.store.wal_index import hold
from agora.store.wal_leftover import malformed

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.store.writer_process import WriterProcess

__all__ = ["CHECKPOINT_PAGES", "POLL_SECONDS", "Checkpointer", "damaged", "final_checkpoint"]

log = logging.getLogger(__name__)

#: Frames of the WAL not yet in the database past which a checkpoint runs (SQLite's own
#: ``wal_autocheckpoint`` default).
CHECKPOINT_PAGES = 1000
#: Least seconds between two looks at the WAL index while the writer commits.
POLL_SECONDS = 0.05


def damaged(path: str, exc: object = None) -> str:
    """What to do about a checkpoint of ``path`` that failed with ``exc``, a malformed file."""
    cause = "" if exc is None else f" ({exc})"
    return (
        f"the database file is damaged{cause}: it and its write-ahead log do not make a sound "
        f"database (a backup restored beside an old -wal, or damage), so committed data is NOT "
        f"safe. Stop the server if it runs: the next start (not --shared) checks the file read "
        f"through its write-ahead log (integrity_check) and refuses it if it is damaged. If a "
        f"backup was put in place beside an old -wal, remove that -wal and -shm and restore "
        f"again; otherwise set {path} and its -wal and -shm aside and restore a backup"
    )


def final_checkpoint(path: str, conn: sqlite3.Connection | WriterProcess) -> None:
    """The store's last checkpoint, as it closes (never raises: a failure is logged, an ERROR
    if the file is malformed, else a WARNING: a full disk leaves committed data in the WAL,
    which the next start applies)."""
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error as exc:
        if malformed(exc):
            log.error("final checkpoint of %s failed: %s", path, damaged(path, exc))
            return
        log.warning(
            "final checkpoint of %s failed (%s); committed data is safe in its write-ahead log, "
            "which the next start checks and applies",
            path, exc,
        )  # fmt: skip


class Checkpointer:
    """A thread that checkpoints one database file's WAL while its writer commits.

    Attributes:
        runs: Checkpoints run; ``busy``: those skipped because another connection was
            checkpointing; ``failures``: those that failed, or found no connection (logged
            once per episode).
        ms: How long each checkpoint run took (copy and fsync), a `Histogram`.
    """

    def __init__(
        self,
        path: str,
        open_conn: Callable[[], sqlite3.Connection],
        *,
        pages: int | None = None,
        poll_seconds: float | None = None,
    ) -> None:
        """``open_conn`` opens the thread's connection to ``path`` (in the thread)."""
        self._path = path
        #: The store's hold on the file's WAL index (`agora.store.wal_index`).
        self.index = hold(path)
        self._open = open_conn
        self.pages = CHECKPOINT_PAGES if pages is None else pages
        self.poll_seconds = POLL_SECONDS if poll_seconds is None else poll_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agora-checkpointer", daemon=True)
        self.runs = self.busy = self.failures = 0
        self.ms = Histogram(COMMIT_MS)
        self._failing = Episode()  # its strikes: the failures (only the thread touches it)

    def start(self) -> None:
        """Start the thread; its first look at the WAL is at once (a migration may have
        left it long)."""
        self._wake.set()
        self._thread.start()

    def wake(self) -> None:
        """The writer committed: look at the WAL soon (cheap; called after every batch)."""
        if not self._wake.is_set():
            self._wake.set()

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        return self._thread.is_alive()

    def stop(self, timeout: float | None = None) -> bool:
        """End the thread (a checkpoint under way finishes first); whether it ended within
        ``timeout`` seconds (one stuck in an fsync is left behind)."""
        self._stop.set()
        self._wake.set()
        if self._thread.ident is None:
            return True  # never started
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Let go of the WAL index, once the thread has ended and every connection the store
        opened on the file is closed (earlier, closing it would drop their locks). A thread
        still running (stuck) keeps it."""
        if not self.running:
            self.index.release()

    def counters(self) -> dict[str, Any]:
        """``checkpoints`` run, ``checkpoints_busy`` skipped, ``checkpoint_failures`` (failed
        or found no connection: a full disk fails every look), and ``checkpoint_ms``."""
        return {
            "checkpoints": self.runs,
            "checkpoints_busy": self.busy,
            "checkpoint_failures": self.failures,
            "checkpoint_ms": self.ms.snapshot(),
        }

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                if self._stop.is_set():
                    return
                self._wake.clear()
                frames = self.index.behind()
                if (frames is None or frames >= self.pages) and not self.index.immutable():
                    conn = self._connected(conn)
                    if conn is not None and not self.checkpoint(conn):
                        conn.close()  # it may pin a file system that failed: a fresh one next
                        conn = None
                if self._stop.wait(self.poll_seconds):
                    return
        finally:
            if conn is not None:
                conn.close()

    def _connected(self, conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
        if conn is not None:
            return conn
        try:
            return self._open()
        except Exception as exc:
            self._failed(f"cannot open {self._path} to checkpoint it: {exc}")
            return None

    def checkpoint(self, conn: sqlite3.Connection) -> bool:
        """Run one PASSIVE checkpoint on ``conn`` and count it; whether it did not fail
        (never raises: a failure is logged)."""
        began = time.perf_counter()
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0]
        except Exception as exc:  # a full or failed disk: the next commit says so
            self._failed(f"checkpoint of {self._path} failed: {exc}", malformed(exc))
            return False
        if (length := self._failing.end()) is not None:
            log.info(
                "checkpoints of %s run again, after %.1f s of failures: %s",
                self._path, length, self._failing.told("failure"),
            )  # fmt: skip
        if busy:
            self.busy += 1
        else:
            self.runs += 1
            self.ms.add((time.perf_counter() - began) * 1e3)
        return True

    def _failed(self, why: str, malformed: bool = False) -> None:
        """A checkpoint failed for ``why``: the first of an episode is a WARNING (an ERROR if
        the file is ``malformed``), the rest are counted (DEBUG)."""
        self.failures += 1
        if not self._failing.strike():
            log.debug("%s", why)
            return
        if malformed:
            log.error(
                "%s; %s; further checkpoint failures are counted, not logged",
                why, damaged(self._path),
            )  # fmt: skip
            return
        log.warning(
            "%s; further checkpoint failures are counted, not logged, until one runs again "
            "(committed data is safe in the WAL meanwhile)",
            why,
        )
