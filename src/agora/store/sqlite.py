"""The open store as Trio code sees it: `await store.write(...)`, `await store.read(...)`.

A file store runs its writer in a thread and reads on a small pool of WAL read connections,
so readers never wait for the writer. An in-memory store (``:memory:``) runs everything
inline on one connection: nothing to lose on a crash, and tests under Trio's autojump clock
stay exact (a task waiting on a thread would look idle to the clock). A reply is released
only after its COMMIT returned.

Nothing waits on the writer for ever: a write not committed within ``commit_timeout`` fails
with a retryable `StoreError` saying truthfully what became of it (see `Store.write`), and
closing the store waits at most `STOP_SECONDS` for the writer thread. The deadline runs on
Trio's clock: a test that lets an autojump clock race ahead while a file store's thread
works (threshold 0) would see writes time out, so such tests use ``:memory:``.

This module owns a store once it is open (writes, their deadline, the read pool, closing);
choosing the backend, locking the file and migrating it is `agora.store.db`'s.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar, cast

import trio

from agora.errors import StoreError
from agora.store.checkpoint import final_checkpoint
from agora.store.failures import store_error
from agora.store.jobs import Job, WriterStopped
from agora.store.lockwait import LockWaits
from agora.store.neutral import SQLITE
from agora.store.ready import file_answers, schema_version
from agora.store.refusals import WriteRefusals
from agora.store.shm_guard import ShmGuard, frozen_close
from agora.store.sqlite_connect import connect
from agora.store.stats import writer_counters

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from agora.store.checkpoint import Checkpointer
    from agora.store.jobs import Write
    from agora.store.neutral import Guard
    from agora.store.outage import Outage
    from agora.store.writer import Writer
    from agora.store.writer_process import WriterProcess

T = TypeVar("T")

READERS = 4
#: Default seconds a write may wait for its commit (the ``commit_timeout`` setting).
COMMIT_TIMEOUT = 10.0
#: Seconds closing the store waits for the writer thread. By then every write's waiter has
#: returned, so a healthy writer has nothing left to do; a stuck one is left behind.
STOP_SECONDS = 1.0

log = logging.getLogger(__name__)


def _wait_for_commit(_: object) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED


class _Waiter(Job):
    """A task waiting for its write's outcome, and that write's job: the writer completes
    it (`complete`), or the watchdog gives up on it."""

    __slots__ = ("deadline", "done", "outcome", "queue", "task")

    def __init__(
        self,
        writes: list[Write],
        guards: tuple[Guard, ...],
        updated: tuple[str, ...],
        queue: deque[_Waiter],
        task: trio.lowlevel.Task,
        deadline: float,
    ) -> None:
        Job.__init__(self, writes, guards=guards, updated=updated)
        self.queue = queue
        self.task = task
        self.deadline = deadline
        self.outcome: BaseException | None = None
        self.done = False

    def complete(self, outcome: BaseException | None) -> None:
        """The writer's report, in the Trio thread, once per batch for each job."""
        if not self.done:
            self.finish(outcome)
        queue = self.queue
        while queue and queue[0].done:  # outcomes come in order: this keeps it short
            queue.popleft()

    def finish(self, result: BaseException | None) -> None:
        self.done = True
        self.outcome = result
        trio.lowlevel.reschedule(self.task)


def _read_only(fn: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
    # Inline reads share the writer's connection: writes refused as on a read connection.
    conn.execute("PRAGMA query_only=ON")
    try:
        return fn(conn)
    finally:
        conn.execute("PRAGMA query_only=OFF")


class Store:
    """Durable storage for every toolset.

    Attributes:
        path: The database file, or ``:memory:``.
        versions: Schema version of each component after migration.
        guarded: Whether writes carry version guards (False: this process is the only
            writer of its file, so the actor's copy is the truth).
        dialect: The SQL dialect of the toolsets' migrations this store runs.
        shared: Whether other processes may use this database at the same time (then the
            runtime follows their changes and runs background tasks once per cluster).
    """

    guarded = False
    shared = False
    dialect = SQLITE
    checkpointer: Checkpointer | None = None  # a file's (`agora.store.checkpoint`)
    shm = ShmGuard(":memory:", None)  # a file's: no read while its -shm is immutable
    #: A shared database's account of its outages, for the log (`agora.store.outage`);
    #: None where nothing retries against a database that went away.
    outage: Outage | None = None

    def __init__(
        self,
        path: str,
        writer_conn: sqlite3.Connection | WriterProcess,
        writer: Writer,
        *,
        inline: bool,
        versions: dict[str, int],
        commit_timeout: float = COMMIT_TIMEOUT,
    ) -> None:
        self.path = path
        self.commit_timeout = commit_timeout
        self._waiting: deque[_Waiter] = deque()
        self._lock_waits = LockWaits(path)  # writes dropped for another's write lock
        self._watch_scope = trio.CancelScope()
        self.versions = versions
        self._writer_conn = writer_conn
        self._writer = writer
        self._inline = inline
        self._readers: list[tuple[int, sqlite3.Connection]] = []
        #: Bumped by the writer thread when it reopens the database: older readers close.
        self.generation = 0
        self._reader_limit = trio.CapacityLimiter(READERS)
        self._closed = False
        #: The writes refused since open, for ``/healthz`` (`agora.store.refusals`).
        self.refusals = WriteRefusals()

    @property
    def stats(self) -> tuple[int, int]:
        """(transactions committed, jobs committed) since open: the group-commit ratio (a job
        that failed inside a committed transaction is not counted)."""
        return self._writer.batches, self._writer.jobs

    def counters(self) -> dict[str, Any]:
        """What the writer and the checkpointer did since open, for ``/healthz``
        (`agora.store.stats.writer_counters`)."""
        ckpt = {} if self.checkpointer is None else self.checkpointer.counters()
        return ckpt | writer_counters(self._writer, self.dialect) | self.refusals.counters()

    @property
    def committing(self) -> int:
        """Writes waiting for their commit now: their callers answer once it comes, or at
        ``commit_timeout`` (a cancellation waits for the outcome: `write`)."""
        return sum(not waiter.done for waiter in self._waiting)

    async def write(
        self, writes: list[Write], guards: Sequence[Guard] = (), updated: Sequence[str] = ()
    ) -> None:
        """Commit ``writes`` atomically; return once they are durable.

        ``guards`` (honoured where `guarded`) make the commit conditional: if an entity's
        version moved, nothing is written and `agora.store.neutral.Conflict` is raised.
        ``updated`` names resource URIs the writes change; a shared store announces them to
        the other nodes with the commit (SQLite has no other nodes to tell).

        A caller already cancelled on entry commits nothing. Once submitted, the wait is
        shielded: the write is either committed or failed, and the caller learns which even
        if it was cancelled meanwhile (the cancellation lands at its next checkpoint). The
        wait is bounded by ``commit_timeout``: past it the caller gets a `StoreError`, and
        its message says which of two things happened. If the writer had not yet begun the
        write (it waited for the database's write lock, held by another process), the
        write is dropped: nothing of it is saved, ever. If the write was already inside its
        transaction (a COMMIT or fsync that does not return), it may still be saved later.

        Raises:
            StoreError: if the statements failed (none of them is committed), or the commit
                did not come within ``commit_timeout`` (as above); retrying is safe in the
                first case and in the "nothing was saved" one. When the disk is to blame
                (full, read-only, an I/O error) its ``cause`` says so
                (`agora.store.diskfault`); writes succeed again once the disk takes them.
                A statement that fails for a reason no retry can cure (a constraint, a
                missing column) is ``permanent`` (`agora.store.failures`).
        """
        if self._closed:
            raise StoreError("write failed: the store is closed")
        if not writes:
            return
        await trio.lowlevel.checkpoint_if_cancelled()  # never committed-but-cancelled
        held = guards if type(guards) is tuple else tuple(guards)
        uris = updated if type(updated) is tuple else tuple(updated)
        if self._inline:
            outcome: list[BaseException | None] = []
            self._writer.commit_batch([Job(writes, outcome.append, guards=held, updated=uris)])
            await trio.lowlevel.cancel_shielded_checkpoint()
            result = outcome.pop()
        else:
            # In this frame (no coroutine of its own), and the waiter is the job (no job and
            # callback apart): a burst of writes keeps fewer objects per waiting call, and
            # the collector scans fewer.
            waiter = _Waiter(
                writes,
                held,
                uris,
                self._waiting,
                trio.lowlevel.current_task(),
                trio.current_time() + self.commit_timeout,
            )
            try:
                self._writer.submit(waiter)
            except WriterStopped as exc:
                raise StoreError("write failed: the store is closed") from exc
            self._waiting.append(waiter)
            # Not abortable: a cancellation waits for the outcome and lands afterwards. Only
            # the watchdog ends the wait early, past the commit deadline.
            await trio.lowlevel.wait_task_rescheduled(_wait_for_commit)
            result, waiter.outcome = waiter.outcome, None  # (raised below: no cycle through it)
        if result is None:
            if self._lock_waits.waiting:  # the write lock came back: one line
                self._lock_waits.committed()
            return
        # the deadline passed, or the disk refused; else a statement failed: retryable, or a
        # bug (`failures`)
        error = result if isinstance(result, StoreError) else store_error("write failed", result)
        del result
        self.refusals.note(error)
        try:
            raise error
        finally:  # the raised error's traceback holds this frame: no cycle through it
            del error

    async def _watch(self) -> None:
        """Fail every write still waiting past its deadline; runs until the store closes.

        One task for all writes, waking a few times per deadline: cheaper than a timer per
        write. Waiters queue in submission order, which is deadline order.
        """
        period = min(self.commit_timeout / 4, 1.0)
        with self._watch_scope:
            while True:
                await trio.sleep(period)
                now = trio.current_time()
                waiting = self._waiting
                while waiting and (waiting[0].done or waiting[0].deadline <= now):
                    waiter = waiting.popleft()
                    if not waiter.done:
                        self._give_up(waiter)

    #: Why a write waited past its deadline before its transaction, or a commit did not end.
    _queued_cause = "another process holding its write lock?"
    _stalled_cause = "a stalled disk?"

    def _give_up(self, waiter: _Waiter) -> None:
        outage = self.outage  # a shared database's account: once, then counted (not per write)
        if self._writer.abandon(waiter):
            if outage is None:  # once per episode, then counted (`agora.store.lockwait`)
                self._lock_waits.dropped(self.commit_timeout)
            error = StoreError(
                f"write not saved: the database did not take it within "
                f"{self.commit_timeout:g} s ({self._queued_cause}); nothing was saved, retry later",
                told=outage is None,
            )
        else:
            if outage is None:
                log.error(
                    "a commit did not finish within %g s (%s)",
                    self.commit_timeout,
                    self._stalled_cause,
                )
            error = StoreError(
                f"write not acknowledged: its commit did not finish within "
                f"{self.commit_timeout:g} s ({self._stalled_cause}); it may or may not have "
                "been saved",
                outcome_unknown=True,
            )
            self._commit_stalled()
        if outage is not None:
            outage.failed("a write", error, refused=1)
            error.told = True  # (its caller's line at DEBUG: the account has it)
        waiter.finish(error)

    def _commit_stalled(self) -> None:
        """A commit passed its deadline: a disk cannot be hurried (PostgreSQL's is cut)."""

    async def answers(self) -> None:
        """Once the database answered a trivial read queued behind no other (``/readyz``)."""
        self.shm.check("read")
        await (self.read(schema_version) if self._inline else file_answers(self.path))

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` against committed rows and return its result.

        Raises:
            StoreError: if SQLite raised (``permanent`` when a retry cannot help).
        """
        if self._closed:
            raise StoreError("read failed: the store is closed")
        self.shm.check("read")
        try:
            if self._inline:
                await trio.lowlevel.checkpoint()
                return _read_only(fn, cast("sqlite3.Connection", self._writer_conn))
            async with self._reader_limit:
                generation, conn = self._reader()
                try:
                    return await trio.to_thread.run_sync(fn, conn)
                finally:
                    if generation == self.generation:
                        self._readers.append((generation, conn))
                    else:  # opened before the database was reopened: on the old mount
                        conn.close()
        except sqlite3.Error as exc:
            raise store_error("read failed", exc) from exc

    async def read_versioned(self, kind: str, key: str, fn: Callable[[Any], T]) -> tuple[T, int]:
        """``fn(conn)`` and the version of entity (kind, key), read in one snapshot.

        On SQLite, where nothing is guarded, the version is always 0.
        """
        return await self.read(fn), 0

    async def probe(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The committed version of each (kind, key); unguarded SQLite answers 0 for each."""
        await trio.lowlevel.checkpoint()
        return dict.fromkeys(keys, 0)

    def _reader(self) -> tuple[int, sqlite3.Connection]:
        while self._readers:
            generation, conn = self._readers.pop()
            if generation == self.generation:
                return generation, conn
            conn.close()
        # An existing file only: a reader opened while the disk is away must not leave an
        # empty database where it is mounted again.
        conn = connect(self.path, synchronous="NORMAL", readonly=True, create=False)
        return self.generation, conn

    def close(self) -> None:
        """Finish queued writes, then close every connection; later calls raise StoreError.

        Never raises: a writer thread that does not stop within `STOP_SECONDS` is left
        behind with its connection (logged), and a final checkpoint that fails (a full
        disk) is logged (`agora.store.checkpoint.final_checkpoint`). The
        WAL index is let go of last (`agora.store.wal_index`), only if nothing was left open.
        """
        self._closed = True
        stuck = not self._inline and not self._writer.stop(STOP_SECONDS)
        if self.checkpointer is not None and not self.checkpointer.stop(STOP_SECONDS):
            log.error("the checkpointer of %s is stuck; leaving it behind", self.path)
        if stuck:
            log.error(
                "the database writer is stuck (waiting for the write lock, or a commit that "
                "does not return); leaving it behind without closing %s",
                self.path,
            )
            return
        for _, conn in self._readers:
            conn.close()
        self._readers.clear()
        self._writer_conn = self._writer.conn  # reopened after a disk error, maybe
        if self.shm.frozen():
            frozen_close(self.path, self._writer_conn)  # a checkpoint would touch the -shm
        elif not self._inline:
            final_checkpoint(self.path, self._writer_conn)
        self._writer_conn.close()
        if self.checkpointer is not None:
            self.checkpointer.close()
