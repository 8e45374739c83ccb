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
drops it when its holder dies; a holder that lives but does not let go (stopped with
SIGSTOP) is waited for no longer than the store's commit deadline: the batch then fails
with a `StoreError` saying another process holds the turn and nothing was saved, and
`GuardedWriter.stop` ends the wait (`agora.store.write_turn`). This module must not import
trio.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from agora.errors import StoreError
from agora.store.guard import BUMP, CREATE, LAST_STAMP, TOUCH, VERSION, guarded_keys, judge
from agora.store.guard import kept_changes as kept
from agora.store.jobs import DROPPED, PENDING, complete, run_alone, run_jobs
from agora.store.neutral import URI_MARK
from agora.store.write_turn import WriteTurn
from agora.store.writer import Writer
from agora.store.writer_child import note_statement

if TYPE_CHECKING:
    import sqlite3

    from agora.store.jobs import Job

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

    def __init__(
        self, *args: object, turns: str, turn_timeout: float = 10.0, **kwargs: object
    ) -> None:
        """`Writer`'s arguments; ``turns``: the file whose ``flock`` writers take turns on;
        ``turn_timeout``: the most seconds a batch waits for its turn, from its oldest job's
        submission (the store's commit deadline).

        Raises:
            OSError: the turns file cannot be opened.
        """
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.conflicts = 0
        self.own: set[int] = set()
        self._stamp: int | None = None  # the change stamp of the batch being committed
        self._turn = WriteTurn(turns)
        self.turn_timeout = turn_timeout

    @property
    def turn(self) -> WriteTurn:
        """The write turn this writer takes around each batch."""
        return self._turn

    @property
    def closed(self) -> bool:
        """Whether `close` let go of the turns file."""
        return self._turn.closed

    def commit_batch(self, batch: list[Job]) -> None:
        """`Writer.commit_batch`, in this process's turn (see the module docstring)."""
        if all(job.state == DROPPED for job in batch):
            return  # nobody waits: do not queue for the turn
        deadline = (batch[0].queued or time.perf_counter()) + self.turn_timeout
        if not self._turn.take(deadline, lambda: all(job.state == DROPPED for job in batch)):
            self._refuse(batch)
            return
        try:
            committed, self._stamp = self.batches, None
            super().commit_batch(batch)
            stamp = self._written_stamp()
            if stamp is not None and self.batches == committed:
                # Rolled back: the next commit, maybe another process's, takes this stamp.
                self.own.discard(stamp)
        finally:
            self._turn.give()

    def _refuse(self, batch: list[Job]) -> None:
        """Fail the jobs of ``batch`` still waiting: their turn did not come. Each is dropped
        (never run) under the writer's lock, so the store's watchdog, if it gets to one
        first, says the same: nothing of it was saved."""
        with self._claims:
            refused = [job for job in batch if job.state == PENDING]
            for job in refused:
                job.state = DROPPED
        if not refused:
            return
        if self._stopped:
            text = "the store closed while another process held the shared database's write turn"
        else:
            text = (
                f"another process has held the shared database's write turn for over "
                f"{self.turn_timeout:g} s (a stopped or stuck agora process?)"
            )
        log.warning("%d writes dropped: %s", len(refused), text)
        error = StoreError(f"write not saved: {text}; nothing was saved, retry later")

        self._hand_back(lambda: complete((job, error) for job in refused), len(refused))

    def _written_stamp(self) -> int | None:
        """The change stamp the last batch wrote, if it bumped anything."""
        return self._stamp

    def stop(self, timeout: float | None = None) -> bool:
        """`Writer.stop`; if the thread is still busy after ``timeout``, a wait for the turn
        ends (that batch and those queued behind it fail: see `_refuse`) and the thread is
        waited for once more, as long."""
        if super().stop(timeout):
            return True
        self._turn.stop()
        return super().stop(timeout)

    def close(self) -> None:
        """Close the turns file (after `stop`)."""
        self._turn.close()

    def _run_batch(self, conn: sqlite3.Connection, batch: list[Job]) -> list[BaseException | None]:
        keys, fresh = guarded_keys(batch)
        if not keys and not any(job.updated for job in batch):
            return run_jobs(conn, batch)
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
    sql = ""
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
            note_statement(exc, sql)
            return [exc]
        outcomes = [run_alone(conn, job) for job in jobs]
        conn.execute("RELEASE guarded")
        return outcomes
    conn.execute("RELEASE guarded")
    return [None] * len(jobs)
