"""The SQLite writer of a shared file: each batch under the version guard, in its transaction.

`agora.store.writer.Writer` opens every batch with ``BEGIN IMMEDIATE``, which holds the
file's one write lock across processes; inside it, this writer reads the version row of each
guarded entity, rejects a job whose version moved (another process committed that entity
since this one loaded it) with `agora.store.neutral.Conflict` before any of its writes run,
runs the accepted jobs, and bumps the versions of those that committed, stamped with the
batch's change number (`agora.store.guard`). All of it commits or rolls back with the batch.

A failed write rolls back to a savepoint taken after the checks, never out of the
transaction: releasing the write lock there would let another process move an entity that
was already judged. A batch that guards nothing and names no URI runs exactly as on an
unshared file.

The writers of the processes sharing a file take turns on an ``flock`` of their own
(``<db>.lock.write``) around each batch, before ``BEGIN IMMEDIATE``: the kernel wakes the
next one the moment the lock is given back, where SQLite's busy handler would sleep and poll
(1, 2, 5, 10 ms...), which made every turn under contention a few milliseconds late. The OS
drops it when its holder dies. This module must not import trio.
"""

from __future__ import annotations

import fcntl
import logging
import os
from typing import TYPE_CHECKING

from agora.store.guard import BUMP, CREATE, LAST_STAMP, TOUCH, VERSION, guarded_keys, judge
from agora.store.guard import kept_changes as kept
from agora.store.neutral import URI_MARK
from agora.store.writer import _DROPPED, Writer, _run_job, _run_together

if TYPE_CHECKING:
    import sqlite3

    from agora.store.writer import Job

log = logging.getLogger(__name__)

#: Own change stamps remembered for the follower (it skips them); older ones are forgotten.
OWN_STAMPS = 4096


class GuardedWriter(Writer):
    """A `Writer` whose batches check and bump version rows (see the module docstring).

    Attributes:
        conflicts: Jobs rejected because a guarded version had moved.
        own: Change stamps of this writer's batches (the follower skips those rows: this
            process already knows them). Written by the writer thread, read by Trio's.
    """

    def __init__(self, *args: object, turns: str, **kwargs: object) -> None:
        """`Writer`'s arguments, and ``turns``: the file whose ``flock`` writers take turns on.

        Raises:
            OSError: the turns file cannot be opened.
        """
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.conflicts = 0
        self.own: set[int] = set()
        self._stamp: int | None = None  # the change stamp of the batch being committed
        self._turns = os.open(turns, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def commit_batch(self, batch: list[Job]) -> None:
        """`Writer.commit_batch`, in this process's turn (see the module docstring)."""
        if all(job.state == _DROPPED for job in batch):
            return  # nobody waits: do not queue for the turn
        fcntl.flock(self._turns, fcntl.LOCK_EX)
        try:
            committed, self._stamp = self.batches, None
            super().commit_batch(batch)
            stamp = self._written_stamp()
            if stamp is not None and self.batches == committed:
                # Rolled back: the next commit, maybe another process's, takes this stamp.
                self.own.discard(stamp)
        finally:
            fcntl.flock(self._turns, fcntl.LOCK_UN)

    def _written_stamp(self) -> int | None:
        """The change stamp the last batch wrote, if it bumped anything."""
        return self._stamp

    def close(self) -> None:
        """Close the turns file (after `stop`)."""
        os.close(self._turns)

    def _run_batch(self, conn: sqlite3.Connection, batch: list[Job]) -> list[BaseException | None]:
        keys, fresh = guarded_keys(batch)
        if not keys and not any(job.updated for job in batch):
            return _run_together(conn, batch)
        cursor = conn.cursor()
        if fresh:
            cursor.executemany(CREATE, fresh)
        current: dict[tuple[str, str], int] = {}
        for key in keys:
            row = cursor.execute(VERSION, key).fetchone()
            if row is not None:
                current[key] = int(row[0])
        outcomes, accepted, changes = judge(batch, current)
        self.conflicts += len(batch) - len(accepted)
        if accepted:
            jobs = [batch[i] for i in accepted]
            for i, outcome in zip(accepted, _run_guarded(conn, jobs), strict=True):
                outcomes[i] = outcome
        bumps = kept(batch, outcomes, changes)
        uris = [u for job, o in zip(batch, outcomes, strict=True) if o is None for u in job.updated]
        if bumps or uris:
            row = cursor.execute(LAST_STAMP).fetchone()
            stamp = int(row[0]) + 1
            if bumps:
                cursor.executemany(BUMP, [(v, stamp, kind, key) for kind, key, v in bumps])
            if uris:
                cursor.executemany(TOUCH, [(URI_MARK, uri, stamp) for uri in dict.fromkeys(uris)])
            self._stamp = stamp
            own = self.own
            own.add(stamp)
            if len(own) > OWN_STAMPS:
                own.discard(min(own))
        return outcomes


def _run_guarded(conn: sqlite3.Connection, jobs: list[Job]) -> list[BaseException | None]:
    """The writes of ``jobs``, back to back; on a failure, one savepoint each, all inside
    the transaction that holds the checks (see the module docstring)."""
    conn.execute("SAVEPOINT guarded")
    execute = conn.cursor().execute
    try:
        for job in jobs:
            for sql, params in job.writes:
                execute(sql, params)
    except Exception as exc:
        if not conn.in_transaction:
            raise  # SQLite rolled it all back (a full disk, an I/O error): the batch fails
        conn.execute("ROLLBACK TO guarded")
        if len(jobs) == 1:
            conn.execute("RELEASE guarded")
            return [exc]
        outcomes = [_run_job(conn, job) for job in jobs]
        conn.execute("RELEASE guarded")
        return outcomes
    conn.execute("RELEASE guarded")
    return [None] * len(jobs)
