"""The PostgreSQL writer: one connection, one batch per transaction, under version guards.

The thread, queue and abandon rules are `agora.store.writer.Writer`'s; only the batch differs.
Per batch, on one connection, in two round trips (pipeline mode):

1. ``BEGIN``; create the version rows of entities guarded at version 0 (``ON CONFLICT DO
   NOTHING``); lock every guarded entity's row ``FOR UPDATE`` in sorted (kind, key) order,
   so two nodes' batches cannot deadlock on them.
2. A job whose entity version moved is rejected with `Conflict` before any of its writes
   run (no savepoint needed); the others bump their versions (one statement for the
   batch), run their writes, send every ``kind\\tkey\\tversion`` line in payloads under
   8,000 bytes (one ``pg_notify`` statement), then ``COMMIT``.

Where a commit's time goes is counted as on SQLite where it maps (`Writer`'s counters): the
oldest job's queue wait and the hand-off back (``queue_ms``, ``reply_ms``, ``latency_ms``),
the writer thread's CPU, ``begin_s`` for the first round trip (BEGIN and the guarded rows'
locks, the batch's judging included), ``end_s`` and ``end_cpu_s`` for the second (the
writes, NOTIFY and COMMIT, sent together). The statements are not timed apart from their
COMMIT: they travel in one round trip with it.

If a statement fails, the transaction is rolled back and the batch rerun without pipelining,
each job in its own savepoint (at most 64 per transaction), so a bad job fails alone. A
broken connection before COMMIT was sent is replaced and the batch run once more (nothing of
it was committed); if that fails too, or COMMIT was in flight (the outcome is unknown: the
waiter says so), the batch fails and the next one reconnects. This module must not import trio.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import psycopg

from agora.errors import StoreError
from agora.logsafe import one_line
from agora.store.diskfault import name_pg, pg_cause
from agora.store.guard import guarded_keys, judge, kept_changes
from agora.store.jobs import DROPPED, Job, untraced
from agora.store.neutral import Conflict, payload_lines
from agora.store.outage import Teller
from agora.store.pg_bound import Cutter
from agora.store.pg_guard_sql import (
    BUMP,
    BUMP_Q,
    CREATE_Q,
    LOCK_Q,
    NOTIFY,
    NOTIFY_Q,
    columns,
    lock_rows,
    run_job,
)
from agora.store.pg_pipe import Pipe, Unsupported
from agora.store.pg_sql import connect, convert
from agora.store.writer import Writer

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

#: Why a batch whose connection `PgWriter.cut` cut failed. Not told to the outage account:
#: the store told it already, as the write whose deadline passed ("a write"); told again as
#: the writer's, a node paused past its deadlines (PostgreSQL healthy) logged a WARNING
#: outage that "answers again after 0 s" (an operator's finding).
_CUT_EXC = psycopg.OperationalError("no answer within the commit deadline; its connection was cut")

#: Jobs per transaction when a failed batch is rerun one savepoint per job.
SAVEPOINTS_PER_TRANSACTION = 64


class PgWriter(Writer):
    """Owns the PostgreSQL write connection and the thread that uses it.

    Attributes:
        backend_pid: The server process of the write connection: listeners skip the
            notifications it sent (their node already knows).
        conflicts: Jobs rejected because a guarded version had moved.
        notes_sent: ``pg_notify`` calls in committed transactions.
        reconnects: Times the write connection was replaced after it broke.
        reruns: Batches rerun one savepoint per job after a statement failed.
    """

    def __init__(
        self,
        url: str,
        channel: str,
        *,
        group_commit: bool = True,
        deliver: Callable[[Callable[[], None]], None] | None = None,
        trace: bool = False,
    ) -> None:
        """Connect the write connection; `start` runs the thread.

        Raises:
            psycopg.Error: if the database cannot be reached.
        """
        conn = connect(url, role="writer")
        super().__init__(conn, group_commit=group_commit, deliver=deliver, trace=trace)
        self._url = url
        self._channel = channel
        self.backend_pid: int = self._conn.info.backend_pid
        #: Cuts the write connection from the Trio thread (`cut`).
        self._cutter = Cutter(self._conn.pgconn.socket)
        #: `cut` was called during the current batch: it is not run again on a new
        #: connection (its callers were answered; the server may not answer a new one).
        self._was_cut = False
        self.conflicts = 0
        self.notes_sent = 0
        self.reconnects = 0
        self.reruns = 0
        self._notes = 0  # pg_notify calls of the batch being committed
        self._pipe: Pipe | None = None
        #: COMMIT of the current transaction has been sent: if the connection breaks now,
        #: whether it was saved is unknown.
        self._committing = False
        #: `time.perf_counter` and `time.thread_time` when the batch's second round trip
        #: (writes and COMMIT) was about to go out.
        self._second = (0.0, 0.0)
        #: Tells the node's account of the database being away (its outage is set by the
        #: store) of this connection's failures, instead of a line per batch.
        self.teller = Teller(deliver)

    def close(self) -> None:
        """Close the write connection (after `stop`)."""
        self._conn.close()
        self._cutter.close()

    def cut(self) -> None:
        """Cut the write connection (any thread): a batch waiting on a PostgreSQL that does
        not answer fails at once, as on a lost connection, and the next one reconnects.
        Its callers were already answered (their deadline passed)."""
        self._was_cut = True
        self._cutter.cut()

    def _commit_reconnecting(self, batch: list[Job]) -> list[BaseException | None]:
        """`_commit`, once more on a fresh connection if the connection broke before COMMIT
        was sent (say the server restarted since the last batch): nothing was saved."""
        self._ensure_connected()
        try:
            return self._commit(batch)
        except psycopg.OperationalError as exc:
            if self._committing or self._was_cut:
                raise
            if not self.teller.failed("the writer", exc):
                log.warning("the database connection broke (%s); reconnecting", one_line(exc))
            self._reset()
            self._ensure_connected()
            return self._commit(batch)

    def commit_batch(self, batch: list[Job]) -> None:
        """Run ``batch`` in one guarded transaction, then complete every job."""
        if all(job.state == DROPPED for job in batch):
            return
        batch = self._take(batch)
        outcomes: list[BaseException | None]
        self._committing = self._was_cut = False
        self._notes = 0
        clock, cpu_clock = time.perf_counter, time.thread_time
        queued = batch[0].queued
        began, began_cpu = clock(), cpu_clock()
        if queued:
            self.queue_ms.add((began - queued) * 1e3)
        self._second = (began, began_cpu)
        try:
            outcomes = self._commit_reconnecting(batch)
            self.teller.answered("the writer")
            sent, sent_cpu = self._second
            self.begin_s += sent - began
            self.end_s += clock() - sent
            self.end_cpu_s += cpu_clock() - sent_cpu
        except psycopg.OperationalError as exc:  # the server went away: an event, not a bug
            if pg_cause(exc) is not None and not self._conn.broken:  # it refused: disk full
                log.warning("commit of %d jobs refused: %s", len(batch), one_line(exc))
                self._reset()
                outcomes = [exc] * len(batch)
            elif self._was_cut:  # ours, not the server's: the account has it ("a write")
                log.debug("a batch of %d jobs failed on the connection this node cut", len(batch))
                self._reset()
                outcomes = [_broken(_CUT_EXC, unknown=self._committing, told=True)] * len(batch)
            else:
                told = self.teller.failed("the writer", exc, refused=len(batch))
                if not told:
                    log.error(
                        "commit of %d jobs failed, the database connection broke: %s",
                        len(batch),
                        one_line(exc),
                    )
                self._reset()
                outcomes = [_broken(exc, unknown=self._committing, told=told)] * len(batch)
        except Exception as exc:  # COMMIT failed otherwise: nothing is known good
            if pg_cause(exc) is None:
                log.exception("commit of %d jobs failed", len(batch))
            else:  # read-only, named in every refusal: no traceback per batch
                log.warning("commit of %d jobs refused: %s", len(batch), one_line(exc))
            self._reset()
            outcomes = [exc] * len(batch)
        committed = outcomes.count(None)
        if committed != len(outcomes):
            outcomes = name_pg(outcomes)
            untraced(outcomes)  # logged: no cycle through this frame (`jobs.untraced`)
        if committed:
            self.notes_sent += self._notes
        self.counted(committed, began)
        self.conflicts += sum(isinstance(o, Conflict) for o in outcomes)
        # Counted before any job hears its outcome, as on SQLite.
        self.cpu_s += cpu_clock() - began_cpu
        self._report(batch, outcomes, queued)

    def _report(
        self, batch: list[Job], outcomes: list[BaseException | None], queued: float
    ) -> None:
        returned = time.perf_counter()

        def finish() -> None:
            now = time.perf_counter()
            self.reply_ms.add((now - returned) * 1e3)
            if queued:
                self.latency_ms.add((now - queued) * 1e3)
            for job, outcome in zip(batch, outcomes, strict=True):
                try:
                    job.complete(outcome)
                except Exception:
                    log.exception("could not report a write's outcome")

        if self._deliver is None:
            finish()
            return
        try:
            self._deliver(finish)
        except Exception:
            log.exception("could not report the outcome of %d writes", len(batch))

    def _ensure_connected(self) -> None:
        """A new connection if the current one broke, or if `cut` cut it: one this node cut
        itself (a deadline that passed as the batch ended, or between batches) is replaced
        before its next use, not met as the server closing it."""
        if self._conn.closed or self._conn.broken or self._cutter.used:
            self._conn.close()
            self._cutter.close()  # (it kept the lost connection's socket open)
            self._conn = connect(self._url, role="writer")
            self._cutter = Cutter(self._conn.pgconn.socket)
            self.backend_pid = self._conn.info.backend_pid
            self.reconnects += 1

    def _reset(self) -> None:
        conn = self._conn
        try:
            if not conn.closed and not conn.broken:
                conn.execute("ROLLBACK")
        except psycopg.Error:
            conn.close()
            self._cutter.close()

    def _commit(self, batch: list[Job]) -> list[BaseException | None]:
        try:
            return self._attempt(batch, pipelined=True)
        except psycopg.errors.Error as exc:
            if self._conn.broken or isinstance(exc, psycopg.OperationalError):
                raise
            self._conn.execute("ROLLBACK")
            self._committing = False  # that COMMIT was refused: nothing of it is saved
        self.reruns += 1
        self._notes = 0
        if len(batch) == 1:
            try:
                return self._attempt(batch, pipelined=False)
            except psycopg.errors.Error as exc:
                if self._conn.broken:
                    raise
                self._conn.execute("ROLLBACK")
                return [exc]
        # At most SAVEPOINTS_PER_TRANSACTION subtransactions each: past a few dozen, with
        # row locks held, PostgreSQL's subtransaction bookkeeping gets slow for everyone.
        outcomes: list[BaseException | None] = []
        for i in range(0, len(batch), SAVEPOINTS_PER_TRANSACTION):
            outcomes += self._attempt(batch[i : i + SAVEPOINTS_PER_TRANSACTION], pipelined=False)
        return outcomes

    def _piped(self, batch: list[Job]) -> list[BaseException | None]:
        """`_attempt` through `Pipe`: two round trips, two socket writes.

        Raises:
            Unsupported: a write has a parameter the pipe does not send (nothing was sent).
        """
        if self._pipe is None or self._pipe.conn is not self._conn:
            self._pipe = Pipe(self._conn)
        pipe = self._pipe
        writes = [[pipe.wire(sql, params) for sql, params in job.writes] for job in batch]
        keys, fresh = guarded_keys(batch)
        first = [pipe.wire("BEGIN", ())]
        if fresh:
            first.append(pipe.wire(CREATE_Q, columns(fresh)))
        if keys:
            first.append(pipe.wire(LOCK_Q, columns(keys)))
        results = pipe.run(first)
        current: dict[tuple[str, str], int] = {}
        if keys:
            locked = results[-1]
            for row in range(locked.ntuples):
                kind, key, version = (locked.get_value(row, col) for col in range(3))
                assert kind is not None
                assert key is not None
                assert version is not None
                current[(bytes(kind).decode(), bytes(key).decode())] = int(bytes(version))
        outcomes, accepted, changes = judge(batch, current)
        notes = payload_lines(changes, [u for i in accepted for u in batch[i].updated])
        second = [pipe.wire(BUMP_Q, columns(changes))] if changes else []
        for i in accepted:
            second += writes[i]
        if notes:
            second.append(pipe.wire(NOTIFY_Q, (self._channel, notes)))
        second.append(pipe.wire("COMMIT", ()))
        self._notes = len(notes)
        self._committing = True  # sent with the writes: their fate is COMMIT's
        self._second = (time.perf_counter(), time.thread_time())
        pipe.run(second)
        return outcomes

    def _attempt(self, batch: list[Job], *, pipelined: bool) -> list[BaseException | None]:
        conn = self._conn
        if pipelined:
            try:
                return self._piped(batch)
            except Unsupported:
                pass  # psycopg's own pipeline below sends any type it adapts
            with conn.pipeline():
                conn.execute("BEGIN")
                current = lock_rows(conn, batch)
        else:
            conn.execute("BEGIN")
            current = lock_rows(conn, batch)
        outcomes, accepted, changes = judge(batch, current)
        notes = payload_lines(changes, [u for i in accepted for u in batch[i].updated])
        self._second = (time.perf_counter(), time.thread_time())
        if pipelined:
            with conn.pipeline():
                if changes:
                    conn.execute(BUMP, columns(changes))
                for i in accepted:
                    for sql, params in batch[i].writes:
                        conn.execute(*convert(sql, params))
                if notes:
                    conn.execute(NOTIFY, (self._channel, notes))
                self._notes = len(notes)
                self._committing = True  # sent with the writes: their fate is COMMIT's
                conn.execute("COMMIT")
            return outcomes
        for i in accepted:
            outcomes[i] = run_job(conn, batch[i])
        # A failed job's version is not bumped and its change not announced.
        kept = kept_changes(batch, outcomes, changes)
        if kept:
            conn.execute(BUMP, columns(kept))
        uris = [u for job, o in zip(batch, outcomes, strict=True) if o is None for u in job.updated]
        notes = payload_lines(kept, uris)
        if notes:
            conn.execute(NOTIFY, (self._channel, notes))
        self._notes += len(notes)
        self._committing = True
        conn.execute("COMMIT")
        return outcomes


def _broken(exc: psycopg.OperationalError, *, unknown: bool, told: bool) -> StoreError:
    """The outcome of a batch whose connection broke: certain (before COMMIT was sent,
    nothing of it is saved) or unknown (COMMIT was sent; PostgreSQL may have applied it).
    ``told``: the outage account has it (each caller's line at DEBUG)."""
    if unknown:
        error = StoreError(
            f"write not acknowledged: the database connection broke during its COMMIT ({exc}); "
            "it may or may not have been saved",
            outcome_unknown=True,
            told=told,
        )
    else:
        error = StoreError(
            f"write failed: the database connection broke ({exc}); nothing was saved", told=told
        )
    error.__cause__ = exc
    return error
