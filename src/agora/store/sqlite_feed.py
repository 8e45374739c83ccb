"""The change feed of a shared SQLite file: a thread that notices other processes' commits.

SQLite has no NOTIFY. Every `ChangeFeed.poll` seconds, a thread of its own asks its own read
connection ``PRAGMA data_version``, which changes when any other connection committed (a read
of the WAL index in shared memory: a few microseconds, no disk I/O). When it moved, one indexed
query returns the version rows stamped since the feed last looked (`agora.store.guard.CHANGED`):
the changed entities and, as rows of kind ``@``, the changed resource URIs. Rows stamped by
this process's own writer are left out (it knows them). What remains is handed to
``deliver``, which runs it in the Trio thread.

A thread, not a Trio task: it wakes a hundred times a second, and a sleeping thread's wake-up
costs a fraction of a Trio task's (measured about 35 against 200 us of CPU on the busy 2-core
machine), so an idle process pays a few tenths of a percent of a core for it. Only a change
wakes Trio. This module must not import trio.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING

from agora.store.guard import CHANGED, LAST_STAMP
from agora.store.neutral import URI_MARK

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.store.wal_index import WalIndex

log = logging.getLogger(__name__)

Changes = list[tuple[str, str, int]]


class ChangeFeed:
    """Polls one read connection for other processes' commits (see the module docstring).

    Attributes:
        polls: Polls that found the file changed by another connection.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        own: set[int],
        deliver: Callable[[Changes, list[str]], None],
        poll: float,
        index: WalIndex | None = None,
    ) -> None:
        """Read where the file stands now; `start` runs the thread.

        Args:
            conn: A read connection of the feed's own; the feed closes it when it stops.
            own: The change stamps of this process's writer (shared with it).
            deliver: Called from the feed's thread with (changes, uris); must hand them to
                the Trio thread, and raise to stop the feed (the Trio run is over).
            poll: Seconds between two polls.
            index: A hold on the file's WAL index, released once the connection is closed
                (`agora.store.wal_index`: closing the ``-shm`` earlier drops its locks).

        Raises:
            sqlite3.Error: if the file cannot be read.
        """
        self._conn = conn
        self._own = own
        self._deliver = deliver
        self._poll = poll
        self._index = index
        self._stop = threading.Event()
        self._seen = conn.execute("PRAGMA data_version").fetchone()[0]
        self._last = int(conn.execute(LAST_STAMP).fetchone()[0])
        self._thread = threading.Thread(target=self._run, name="agora-change-feed", daemon=True)
        self.polls = 0

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop polling (the thread ends within one poll and closes its connection)."""
        self._stop.set()

    def _run(self) -> None:
        try:
            failing = False
            while not self._stop.wait(self._poll):
                try:
                    found = self.check()
                except Exception as exc:  # a busy or failing file: the next poll retries
                    if not failing:  # once per spell, not every poll
                        log.warning("cannot read changes made by other processes: %s", exc)
                    failing = True
                    continue
                if failing:
                    log.info("reading changes made by other processes again")
                    failing = False
                if found is not None:
                    self._deliver(*found)
        except Exception:  # deliver refused: nobody is left to tell
            log.debug("the change feed stopped", exc_info=True)
        finally:
            self._conn.close()
            if self._index is not None:
                self._index.release()

    def check(self) -> tuple[Changes, list[str]] | None:
        """One poll: what other processes changed since the last one, or None.

        Raises:
            sqlite3.Error: if the file cannot be read.
        """
        conn = self._conn
        if self._index is not None and self._index.immutable():  # a read could touch it
            raise sqlite3.OperationalError("its WAL index (-shm) is immutable")
        moved = conn.execute("PRAGMA data_version").fetchone()[0]
        if moved == self._seen:
            return None
        rows = conn.execute(CHANGED, (self._last,)).fetchall()
        self._seen = moved
        self.polls += 1
        if not rows:
            return None
        last = self._last = int(rows[-1][3])
        own = self._own
        theirs = [r for r in rows if int(r[3]) not in own]
        own.difference_update([s for s in list(own) if s <= last])
        changes = [(r[0], r[1], int(r[2])) for r in theirs if r[0] != URI_MARK]
        uris = [r[1] for r in theirs if r[0] == URI_MARK]
        return (changes, uris) if changes or uris else None
