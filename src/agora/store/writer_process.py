"""The SQLite writer whose statements and COMMITs run in a child process.

`ProcessWriter` is the `Writer` (the same thread, queue, group commit, abandoned jobs and
counters) with its write connection in `agora.store.writer_child`, a child process reached
over a pipe (`WriterProcess`). Each batch costs the writer thread two round trips, BEGIN
IMMEDIATE and then the batch's writes with its COMMIT, and the thread holds the GIL only to
pickle the writes and to read the reply: the statements and the fsync run on another core.
Under a busy event loop this removes the wait for the GIL after every SQLite step
(`docs/architecture.md`, "The writer and the GIL").

What the thread cannot do itself it learns from the child's replies: each job's outcome (a
failure rebuilt as the same ``sqlite3`` exception with SQLite's codes, so
`agora.store.diskfault` names the disk's part as before), whether a transaction is open,
and the time and CPU the statements and the COMMIT took (counted in the writer's totals).

A child that dies (killed, out of memory) fails the batch it held: with a retryable "nothing
was saved" if it died before it was sent the batch's writes, and with ``outcome_unknown`` if
it died after (its COMMIT may have been done). The next batch starts a new child. A child
outlives its server by at most the batch it is running: it ends at the end of its input.
"""

from __future__ import annotations

import logging
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agora.errors import StoreError
from agora.store import wal, writer_child
from agora.store.writer import Writer
from agora.store.writer_child import frame, rebuild, receive, write_all

if TYPE_CHECKING:
    from agora.store.jobs import Job, Write
    from agora.store.opening import Opening

log = logging.getLogger(__name__)

#: The child's program: this package's own file, run by path.
CHILD = Path(writer_child.__file__)
#: Seconds `WriterProcess.close` waits for the child to end before killing it.
CLOSE_SECONDS = 5.0


class ChildDied(sqlite3.OperationalError):
    """The writer's child process ended while a request was with it, or before.

    Attributes:
        unknown: The request was a batch the child had been sent: its COMMIT may be done.
    """

    def __init__(self, message: str, *, unknown: bool) -> None:
        super().__init__(message)
        self.unknown = unknown


class Rows(list[tuple[Any, ...]]):
    """The rows a `WriterProcess.execute` returned, read as from a ``sqlite3.Cursor``."""

    def fetchone(self) -> tuple[Any, ...] | None:
        """The first row, or None."""
        return self[0] if self else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every row."""
        return list(self)


class WriterProcess:
    """A write connection in a child process: as much of a ``sqlite3.Connection`` as
    `agora.store.writer.Writer` uses (``execute`` of a statement without parameters,
    ``in_transaction``, ``close``), and `batch` and `restart_wal` for `ProcessWriter`."""

    def __init__(self, path: str, *, synchronous: str, opening: Opening | None = None) -> None:
        """Start the child and open the existing database file ``path`` in it, as every
        store connection is opened (`agora.store.sqlite_connect.connect`).

        With ``opening`` (the store's open, run by `agora.store.opening.open_in_thread`), a
        cancellation of the open kills the child, which ends the wait for its answer.

        Raises:
            OSError: the child could not be started.
            sqlite3.Error: the child could not open the database (or died meanwhile).
            OpenCancelled: the open was cancelled.
        """
        self._proc = subprocess.Popen(
            # Isolated, and without site (no .pth hooks of the installed packages): the child
            # needs the standard library only.
            [sys.executable, "-I", "-S", str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            # Its own session: a Ctrl-C at the terminal is the server's to act on, and the
            # writes still in flight at shutdown need the child.
            start_new_session=True,
        )
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._to = self._proc.stdin.fileno()
        self._from = self._proc.stdout.fileno()
        self._dead = False
        #: Whether the child's connection is inside a transaction (as of its last reply).
        self.in_transaction = False
        try:
            if opening is not None:
                opening.adopt(self._proc.kill, self.close)
                opening.check()
            self._call(frame(("open", path, synchronous)), unknown=False)
        except BaseException:
            self.close()
            raise

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._proc.pid

    @property
    def alive(self) -> bool:
        """Whether the child is there to take the next request."""
        return not self._dead and self._proc.poll() is None

    def execute(self, sql: str) -> Rows:
        """Run one statement without parameters (BEGIN, ROLLBACK, a pragma); its rows.

        Raises:
            sqlite3.Error: what SQLite raised in the child, or `ChildDied`.
        """
        return Rows(self._call(frame(("exec", sql)), unknown=False))

    def batch(
        self, jobs: list[list[Write]]
    ) -> tuple[list[BaseException | None], float, float, float, float]:
        """Run ``jobs`` in the open transaction, then COMMIT (ROLLBACK if every job failed).

        Returns each job's outcome, then the seconds of wall time and of the child's CPU
        in the statements, and in the COMMIT. A job whose parameters cannot be pickled fails
        alone, with the pickling error, and is not sent.

        Raises:
            sqlite3.Error: the whole batch failed (SQLite rolled it back itself, the COMMIT
                failed), or `ChildDied` (``unknown`` once the writes were sent).
        """
        try:
            message = frame(("batch", jobs))
        except Exception:  # which job it was is found below
            return self._batch_without_unpicklable(jobs)
        described, statements_s, statements_cpu_s, end_s, end_cpu_s = self._call(
            message, unknown=True
        )
        outcomes: list[BaseException | None] = [
            None if d is None else rebuild(d) for d in described
        ]
        return outcomes, statements_s, statements_cpu_s, end_s, end_cpu_s

    def _batch_without_unpicklable(
        self, jobs: list[list[Write]]
    ) -> tuple[list[BaseException | None], float, float, float, float]:
        failed: dict[int, BaseException] = {}
        for i, writes in enumerate(jobs):
            try:
                pickle.dumps(writes, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # any reason fails that job alone
                failed[i] = exc
        kept = [writes for i, writes in enumerate(jobs) if i not in failed]
        sent, *times = self.batch(kept)  # none kept: the transaction is rolled back
        it = iter(sent)
        outcomes = [failed[i] if i in failed else next(it) for i in range(len(jobs))]
        return outcomes, times[0], times[1], times[2], times[3]

    def restart_wal(self) -> bool:
        """`agora.store.wal.restart_if_long` on the child's connection (past this process's
        `agora.store.wal.RESTART_FRAMES`)."""
        return bool(self._call(frame(("wal", wal.RESTART_FRAMES)), unknown=False))

    def _call(self, message: bytes, *, unknown: bool) -> Any:
        if self._dead:
            raise ChildDied("the database writer's process has ended", unknown=False)
        sent = False
        try:
            write_all(self._to, message)
            sent = True
            reply = receive(self._from)  # None: the end of its output
        except OSError:  # a broken pipe: it is gone
            reply = None
        if reply is None:
            self._dead = True
            self.in_transaction = False
            raise ChildDied(
                f"the database writer's process (pid {self.pid}) ended: {self.ended()}",
                unknown=unknown and sent,
            )
        ok, result, self.in_transaction = reply
        if not ok:
            raise rebuild(result)
        return result

    def ended(self) -> str:
        """How the child ended, in words ("killed by signal 9"); waits up to 1 s for it."""
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def close(self) -> None:
        """End the child: it closes its connection at the end of its input; a child still
        there after `CLOSE_SECONDS` (a COMMIT that does not return) is killed."""
        self._dead = True
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self._proc.wait(timeout=CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            log.error("the database writer's process %d did not end; killing it", self.pid)
            self._proc.kill()
            self._proc.wait()


class ProcessWriter(Writer):
    """`Writer` with its connection a `WriterProcess` (see the module docstring)."""

    _conn: WriterProcess
    #: Children started in place of one that died (or after a disk error).
    restarts = 0

    def _refresh(self) -> None:
        before = self._conn
        if before.alive:
            super()._refresh()  # after a disk error, a new child once the disk takes writes
        else:  # at once, whatever the disk: the pacing of reopens is for disk errors
            why = f"in a new writer process (the last one, pid {before.pid}, {before.ended()})"
            self._swap(why, logging.WARNING)
        if self._conn is not before:
            self.restarts += 1

    def _transact(self, conn: WriterProcess, batch: list[Job]) -> list[BaseException | None]:
        outcomes, statements_s, statements_cpu_s, end_s, end_cpu_s = conn.batch(
            [job.writes for job in batch]
        )
        self.statements_s += statements_s
        self.statements_cpu_s += statements_cpu_s
        self.end_s += end_s
        self.end_cpu_s += end_cpu_s
        self.cpu_s += statements_cpu_s + end_cpu_s  # the child's, beside the thread's own
        return outcomes

    def _diagnose(
        self, outcomes: list[BaseException | None], failed: Exception | None
    ) -> list[BaseException | None]:
        if not isinstance(failed, ChildDied):
            return super()._diagnose(outcomes, failed)
        log.error("commit of %d jobs failed: %s", len(outcomes), failed)
        if failed.unknown:
            error = StoreError(
                f"write not acknowledged: {failed} during its commit; "
                "it may or may not have been saved",
                outcome_unknown=True,
            )
        else:
            error = StoreError(f"write failed: {failed}; nothing was saved")
        error.__cause__ = failed
        return [error] * len(outcomes)

    def _between_batches(self) -> None:
        if self.on_batch is not None:
            self.on_batch()
        if self._wal_check_due():
            try:
                self.wal_restarts += self._conn.restart_wal()
            except sqlite3.Error as exc:  # a dead child: the next batch starts another
                log.warning("could not checkpoint the write-ahead log: %s", exc)
