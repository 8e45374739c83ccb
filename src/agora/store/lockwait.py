"""Writes kept from a SQLite file's write lock, told in the log once per episode.

Another process holding the database's write lock (``agora cards sign``, a backup, an
operator's ``sqlite3`` shell in a transaction) is not a bug in agora: the writes that wait
past ``commit_timeout`` are dropped, nothing of them saved, and each caller is told to retry
(`agora.store.sqlite.Store.write`). The log tells the episode as the disk's refusals are told
(`agora.store.diskfault.DiskDoctor.told`): its first dropped write at WARNING (what, and since
when), the ones that follow counted, not logged; the first commit after them one INFO line
with the episode's length and count. The calls that failed meanwhile log their correlation
ids at DEBUG only (`agora.server.failed`, `agora.runtime.failures`: the error is ``told``).
"""

from __future__ import annotations

import logging

from agora.store.episode import Episode

log = logging.getLogger("agora.store.sqlite")  # the operator's filters name this one


class LockWaits:
    """The account of one database file's writes dropped while waiting for its write lock."""

    __slots__ = ("_episode", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self._episode = Episode()  # its strikes: the writes dropped

    @property
    def waiting(self) -> bool:
        """Whether an episode is under way (a write was dropped, none committed since)."""
        return self._episode.under_way

    def dropped(self, waited: float) -> None:
        """A write waited ``waited`` seconds (``commit_timeout``) for the lock, then was
        dropped: the episode's first is logged, the rest counted."""
        if not self._episode.strike(ago=waited):  # it began when the write began to wait
            return
        log.warning(
            "writes to %s wait for the database's write lock (another process holding it?): "
            "a write waited %g s (commit_timeout) and was dropped, nothing of it saved; "
            "further dropped writes are counted, not logged, until a write commits",
            self.path, waited,
        )  # fmt: skip

    def committed(self) -> None:
        """A write committed: the episode under way, if any, is over (one line)."""
        if (length := self._episode.end()) is None:
            return
        log.info(
            "writes to %s commit again, after %.1f s waiting for the write lock: "
            "%s dropped meanwhile",
            self.path, length, self._episode.told("write"),
        )  # fmt: skip
