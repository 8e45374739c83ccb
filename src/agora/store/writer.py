"""The single writer: a thread that batches concurrent commits into one transaction.

Trio tasks hand it `Job`s (`agora.store.jobs`: SQL writes plus a completion callback); it drains
everything queued, runs them in one transaction, COMMITs once, and only then completes the
batch's jobs with a single ``deliver`` call into the Trio thread (one wake-up per batch, not
per job). With ``synchronous=FULL`` a completed job is on disk. Jobs run back to back at
first; if one fails, the batch is rolled back and rerun with a SAVEPOINT around each job, so
a bad job fails alone at no cost to the common case. A failure after which SQLite rolled the
transaction back itself (a full disk, an I/O error) fails the whole batch instead, with that
error (named by `agora.store.diskfault` when a doctor is given). This module must not import
trio: it talks back only through the callbacks it was given.

A job's waiter may give up on it (the store's commit deadline). Whether that job can still
be saved is settled under one lock: `Writer.abandon` succeeds only while the job is
pending, and the writer takes the jobs of a batch only once its transaction holds the
database's write lock, dropping the abandoned ones. So a waiter that gave up while the
writer waited for the lock (another process holding it) knows nothing of its job is saved;
one that gave up later (a stalled COMMIT or fsync) cannot know.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any

from agora.store import wal
from agora.store.diskfault import Reopening
from agora.store.episode import counted
from agora.store.jobs import (
    DROPPED,
    TAKEN,
    Job,
    WriterStopped,
    complete,
    rollback,
    run_jobs,
    untraced,
)
from agora.store.stats import BATCH_SIZE, COMMIT_MS, Histogram

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.store.diskfault import DiskDoctor
    from agora.store.shm_guard import ShmGuard

log = logging.getLogger(__name__)

#: Most jobs folded into one transaction; bounds the latency of the first job in a batch.
MAX_BATCH = 512
#: SQLite: seconds between the writer's checks of the WAL's length (`wal.restart_if_long`).
WAL_CHECK_SECONDS = 1.0

_STOP = object()


class Writer:
    """Owns the write connection and the thread that uses it."""

    def __init__(
        self,
        conn: Any,
        *,
        group_commit: bool = True,
        deliver: Callable[[Callable[[], None]], None] | None = None,
        trace: bool = False,
        doctor: DiskDoctor | None = None,
        reopen: Callable[[], Any] | None = None,
    ) -> None:
        """Set up the writer; `start` runs its thread.

        Args:
            conn: The write connection (autocommit mode: the writer issues BEGIN itself);
                a ``sqlite3.Connection`` here, a psycopg one in `agora.store.pg_writer`.
            group_commit: Fold queued jobs into one transaction (off only to measure it).
            deliver: Runs a function in the thread that owns the jobs' callbacks (Trio's
                ``run_sync_soon``); None runs it in place (inline use).
            trace: Log, at INFO, the wall time at which each transaction became durable.
            doctor: Names the disk's part in failed jobs (full, read-only, I/O error).
            reopen: Opens a fresh write connection: after a batch failed because the file
                system went read-only or failed, the next batch swaps it in first (a file
                system mounted again is written through without a restart; the old
                connection pinned the failed one). A reopen that fails keeps the old one.
        """
        self._conn = conn
        self._doctor = doctor
        self._reopen = reopen
        self.reopening = Reopening(doctor)
        self._unopened: str | None = None  # why the last reopen failed, if it did
        self._group = group_commit
        self._deliver = deliver
        self._trace = trace
        self._queue: queue.SimpleQueue[Job | object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="agora-writer", daemon=True)
        self._lock = threading.Lock()
        self._claims = threading.Lock()  # guards every Job.state
        self._stopped = False
        self._next_wal_check = 0.0
        self.wal_restarts = 0  # by `_between_batches` (SQLite), the readers keeping it long
        self.on_batch: Callable[[], None] | None = None  # SQLite: the checkpointer's wake
        self.guard: ShmGuard | None = None  # SQLite: no batch while the -shm is immutable
        self.batches = 0
        self.jobs = 0
        #: Commands per committed transaction, and ms from BEGIN to COMMIT's return (lock
        #: waits included): the operator's counters.
        self.batch_sizes = Histogram(BATCH_SIZE)
        self.commit_ms = Histogram(COMMIT_MS)
        #: Seconds of the writer thread's CPU on batches (statements, COMMIT, checkpoints),
        #: and of wall time in SQLite batches' statements (the rest of ``commit_ms`` is the
        #: COMMIT, its fsync and any checkpoint).
        self.cpu_s = 0.0
        self.statements_s = 0.0
        #: Where a commit's latency goes, per transaction, on its oldest job: ``queue_ms``
        #: (submitted to BEGIN), ``reply_ms`` (COMMIT's return to the callbacks running in
        #: the Trio thread, the GIL included), ``latency_ms`` (the whole). Totals in seconds:
        #: BEGIN's wall (the write lock), the statements' CPU (their wall minus it waited
        #: for the GIL or a core), the COMMIT's wall and CPU (the rest: WAL write, fsync,
        #: the GIL back).
        self.queue_ms = Histogram(COMMIT_MS)
        self.reply_ms = Histogram(COMMIT_MS)
        self.latency_ms = Histogram(COMMIT_MS)
        self.begin_s = 0.0
        self.statements_cpu_s = 0.0
        self.end_s = 0.0
        self.end_cpu_s = 0.0

    def counted(self, committed: int, began: float) -> None:
        """Count a transaction of ``committed`` jobs begun at ``began`` (perf_counter)."""
        if committed:
            self.reopening.committed()
            self.batches += 1
            self.jobs += committed
            self.batch_sizes.add(committed)
            self.commit_ms.add((time.perf_counter() - began) * 1e3)
            if self._trace:
                log.info("committed %s at %.6f", counted(committed, "job"), time.time())

    @property
    def conn(self) -> Any:
        """The write connection now (a reopen replaces it)."""
        return self._conn

    def _refresh(self) -> None:
        """Swap in a fresh connection if the last batch failed for the file system and
        `Reopening` says now."""
        level = None if self._reopen is None else self.reopening.due()
        if level is not None and self._swap("after a disk error", level):
            self.reopening.count += 1

    def _swap(self, why: str, level: int) -> bool:
        """Open a fresh connection in place of the present one (closed); whether it was.

        A failed open keeps the old one (the batch then runs on it, and fails), logged at
        WARNING if ``level`` is INFO or above; ``why`` ends the log lines.
        """
        try:
            fresh = self._reopen() if self._reopen is not None else None
        except Exception as exc:  # still away: the batch runs on the old one and fails
            # A reason not given before is news (the disk is back, but with the wrong file).
            news, self._unopened = str(exc) != self._unopened, str(exc)
            failed = logging.WARNING if level >= logging.INFO or news else logging.DEBUG
            log.log(failed, "could not reopen the database %s: %s", why, exc)
            return False
        self._unopened = None
        if fresh is None:
            return False
        old, self._conn, self.reopening.suspect = self._conn, fresh, False
        try:
            old.close()
        except Exception as exc:  # a connection to a failed file system may not close
            log.log(level, "could not close the database connection left behind: %s", exc)
        log.log(level, "reopened the database %s", why)
        return True

    def _diagnose(
        self, outcomes: list[BaseException | None], failed: Exception | None
    ) -> list[BaseException | None]:
        """Name the disk's part in a batch's failures (``failed``: the whole batch's), log
        them, and reopen before the next batch if the file system failed."""
        told = False
        if self._doctor is not None:
            outcomes = self._doctor.name(outcomes)
            causes = {getattr(o, "cause", None) for o in outcomes}
            self.reopening.suspect = bool(causes & {"read_only", "io_error"})
            told = self._doctor.told(outcomes)  # the disk's fault: once per episode
        if failed is not None and not told:
            log.error("commit of %d jobs failed", len(outcomes), exc_info=failed)
        return outcomes

    def start(self) -> None:
        """Start the writer thread."""
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the writer thread is alive (started and not stopped, or stuck)."""
        return self._thread.is_alive()

    def submit(self, job: Job) -> None:
        """Queue a job; never blocks.

        Raises:
            WriterStopped: if `stop` was called (the job would never run).
        """
        with self._lock:
            if self._stopped:
                raise WriterStopped("the writer has stopped")
            job.queued = time.perf_counter()
            self._queue.put(job)

    def abandon(self, job: Job) -> bool:
        """Give up on ``job``; True if it will never run, False if it may already commit."""
        with self._claims:
            if job.state == TAKEN:
                return False
            job.state = DROPPED
            return True

    def stop(self, timeout: float | None = None) -> bool:
        """Finish every queued job, then stop the thread; whether it stopped within
        ``timeout`` seconds (None: as long as it takes; a thread still busy then, a commit
        that never returns, is left behind)."""
        with self._lock:
            if not self._stopped:
                self._stopped = True
                self._queue.put(_STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        if self._doctor is not None:
            self._doctor.close()  # an episode whose writes had resumed is told over
        return True

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch: list[Job] = [first]  # type: ignore[list-item]
            stopping = False
            while self._group and len(batch) < MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)  # type: ignore[arg-type]
            self.commit_batch(batch)
            if stopping:
                return
            if self.guard is None or not self.guard.frozen():
                self._between_batches()

    def _between_batches(self) -> None:
        """SQLite: tell `on_batch`; once every `WAL_CHECK_SECONDS`, restart a WAL grown long."""
        if type(self._conn) is not sqlite3.Connection:
            return
        if self.on_batch is not None:
            self.on_batch()
        if self._wal_check_due():
            self.wal_restarts += wal.restart_if_long(self._conn)

    def _wal_check_due(self) -> bool:
        """Whether `WAL_CHECK_SECONDS` passed since the last check (then it starts again)."""
        if (now := time.perf_counter()) < self._next_wal_check:
            return False
        self._next_wal_check = now + WAL_CHECK_SECONDS
        return True

    def _run_batch(self, conn: Any, batch: list[Job]) -> list[BaseException | None]:
        """Run ``batch``'s writes inside the open transaction; each job's outcome.

        A failure SQLite rolled back itself raises (the whole batch fails). The guarded
        writer of a shared file (`agora.store.sqlite_shared`) adds its checks here.
        """
        return run_jobs(conn, batch)

    def _take(self, batch: list[Job]) -> list[Job]:
        """The jobs of ``batch`` whose waiters are still there, now bound to run or fail."""
        with self._claims:
            taken = [job for job in batch if job.state != DROPPED]
            for job in taken:
                job.state = TAKEN
        return taken

    def commit_batch(self, batch: list[Job]) -> None:
        """Run ``batch`` in one transaction, then complete every job (also usable inline).

        Jobs abandoned before the transaction holds the write lock are dropped unrun and
        not completed (their waiters are gone).
        """
        if all(job.state == DROPPED for job in batch):
            return  # nobody waits: do not queue for the write lock
        if self.guard is not None and self.guard.frozen():  # touching it could kill us
            batch = self._take(batch)
            refused = [(job, self.guard.error("write")) for job in batch]
            self._hand_back(lambda: complete(refused), len(batch))
            return
        self._refresh()
        conn = self._conn
        outcomes: list[BaseException | None]
        committed = 0
        failed: Exception | None = None
        clock, cpu_clock = time.perf_counter, time.thread_time
        queued = batch[0].queued
        began, began_cpu = clock(), cpu_clock()
        if queued:
            self.queue_ms.add((began - queued) * 1e3)
        try:
            conn.execute("BEGIN IMMEDIATE")  # waits here while another process writes
            batch = self._take(batch)
            self.begin_s += clock() - began
            outcomes = self._transact(conn, batch)
            committed = outcomes.count(None)
        except Exception as exc:  # the whole batch failed: nothing of it is committed
            rollback(conn)
            batch = self._take(batch)  # each one not dropped learns of the failure
            outcomes = [exc] * len(batch)
            failed, committed = exc, 0
        else:
            self.counted(committed, began)
            if committed and self._doctor is not None:
                self._doctor.wrote()
        if committed != len(outcomes):
            outcomes = self._diagnose(outcomes, failed)
            untraced(outcomes)  # logged: their tracebacks would hold this frame, which holds them

        # Counted before any job hears its outcome: a caller that reads the counters after
        # its write returned sees its batch in them.
        self.cpu_s += cpu_clock() - began_cpu
        returned = clock()

        def finish() -> None:
            now = time.perf_counter()
            self.reply_ms.add((now - returned) * 1e3)
            if queued:
                self.latency_ms.add((now - queued) * 1e3)
            complete(zip(batch, outcomes, strict=True))

        self._hand_back(finish, len(batch))

    def _transact(self, conn: Any, batch: list[Job]) -> list[BaseException | None]:
        """In the transaction BEGIN opened: run ``batch``, then COMMIT if any job succeeded
        (else ROLLBACK: no fsync for nothing); each job's outcome. Raises if the whole batch
        failed (SQLite rolled it back itself, or the COMMIT failed)."""
        clock, cpu_clock = time.perf_counter, time.thread_time
        began, cpu = clock(), cpu_clock()
        outcomes = self._run_batch(conn, batch) if batch else []
        ended, ended_cpu = clock(), cpu_clock()
        self.statements_s += ended - began
        self.statements_cpu_s += ended_cpu - cpu
        conn.execute("COMMIT" if None in outcomes else "ROLLBACK")
        self.end_s += clock() - ended
        self.end_cpu_s += cpu_clock() - ended_cpu
        return outcomes

    def _hand_back(self, finish: Callable[[], None], count: int) -> None:
        """Run ``finish`` (``count`` jobs' outcomes) where `deliver` says, or here."""
        if self._deliver is None:
            finish()
            return
        try:
            self._deliver(finish)
        except Exception:  # e.g. its Trio run ended: nobody is left to tell
            log.exception("could not report the outcome of %d writes", count)
