"""A WAL index (``-shm``) made immutable under a running server: refuse, do not die.

SQLite shares a WAL database's index between connections by mapping its ``-shm`` file into
memory (``MAP_SHARED``) and writing to it with plain stores: a reader records its snapshot in
the index's read marks, a writer its new frames, a checkpoint how far it copied, and a new
connection checks the header as it opens. No system call is made, so no error code can come
back. Once the file is immutable (``chattr +i``), Linux's ext4 answers a write to a page of
that map the kernel has to make writable again (one written back to the disk since it was
last dirtied, so every page sooner or later) with SIGBUS ("ext4: enforce the immutable flag
on open files", 2019): the process that touched it dies at once, with no chance to
answer. Immutable database and WAL files do not kill anyone (SQLite writes those with
``write(2)``, which fails with EPERM and becomes a ``read_only`` refusal).

So the store looks before it leaps: every read, every batch of writes, each checkpoint and
each ``/readyz`` probe first asks the ``-shm`` file's inode flags (one ``ioctl`` on the
descriptor the process keeps: `agora.store.wal_index`) and, while it is immutable, fails
with a retryable `StoreError` naming a read-only database instead of touching the map. The
log says it once (WARNING) when the flag is first seen and once (INFO) when it is gone; reads
and writes then resume without a restart. What it cannot close is the window between the
look and SQLite's touch: an immutable flag set in those microseconds still kills the process
touching the map (docs/architecture.md, "A WAL index made immutable").
Must not import trio.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING, Any

from agora.errors import StoreError
from agora.store.episode import Episode

if TYPE_CHECKING:
    from agora.store.wal_index import WalIndex

log = logging.getLogger(__name__)


class ShmGuard:
    """Whether a database's ``-shm`` may be touched, told in the log once per change."""

    def __init__(self, path: str, index: WalIndex | None) -> None:
        """Args: path: the database file; index: this process's hold on its ``-shm`` (None:
        nothing to guard, as for ``:memory:``)."""
        self.path = path
        self._index = index
        self._lock = threading.Lock()  # the readers', writer's and checkpointer's threads
        self._episode = Episode()  # begun when the flag is seen; its strikes: refusals

    def frozen(self) -> bool:
        """Whether the ``-shm`` file is immutable now (logged when that changes)."""
        immutable = self._index is not None and self._index.immutable()
        with self._lock:
            episode = self._episode
            if immutable == episode.under_way:
                return immutable
            if immutable:
                episode.strike(0)
                log.warning(
                    "%s-shm (the database's WAL index) is immutable: reads and writes are "
                    "refused until it is writable again (SQLite writes it through a memory map, "
                    "and the kernel kills a process that does so with SIGBUS)",
                    self.path,
                )
            else:
                log.info(
                    "%s-shm is writable again, after %.1f s: reads and writes resume "
                    "(%d refused meanwhile)",
                    self.path, episode.end(), episode.count,
                )  # fmt: skip
            return immutable

    def check(self, doing: str) -> None:
        """Raise `error` (``doing``: "read") if the ``-shm`` file is immutable now."""
        if self.frozen():
            raise self.error(doing)

    def error(self, doing: str) -> StoreError:
        """The refusal of a ``doing`` ("read", "write") while `frozen` (a new one each)."""
        with self._lock:
            if self._episode.under_way:  # else it ended meanwhile: nothing to count
                self._episode.strike()
        return StoreError(
            f"{doing} failed: the database is read-only ({self.path}-shm, its WAL index, is "
            "immutable); nothing was changed",
            cause="read_only",
        )


def frozen_close(path: str, writer_conn: Any) -> None:
    """Prepare the last connection of a store whose ``-shm`` is immutable for its close.

    The last connection to a WAL database checkpoints as it closes, which writes the index.
    The writer's child process closes last (the server's own connections are closed while it
    still holds its own): if that kills it, nothing else goes with it. A writer connection
    in this process (``writer_process = false``) is told not to checkpoint at its close
    where Python can say so (3.12's ``setconfig``); on 3.11 it cannot, and its close may
    still end the process with SIGBUS (docs/architecture.md, "A WAL index made immutable").
    """
    log.warning(
        "final checkpoint of %s skipped: its -shm is immutable; committed data is safe in its "
        "write-ahead log and is checkpointed at the next start",
        path,
    )
    option = getattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", None)
    if isinstance(writer_conn, sqlite3.Connection) and option is not None:
        writer_conn.setconfig(option, True)  # type: ignore[attr-defined,unused-ignore]
