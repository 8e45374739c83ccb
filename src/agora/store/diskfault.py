"""Why a SQLite write failed, when the disk is to blame: full, read-only, or failing.

SQLite says ``SQLITE_FULL`` for a full disk and ``SQLITE_READONLY`` when it could only open
the file for reading, but a file system that refuses writes under an open database (made
read-only by the kernel after an error, or files made immutable) shows only as
``SQLITE_IOERR`` ("disk I/O error"), and Python does not expose the ``errno`` behind it.
`DiskDoctor` then asks the operating system itself: it writes, syncs and removes a small
probe file beside the database (``<database>.probe``) and reads the errno of the refusal
(``EROFS``, ``EPERM``, ``EACCES``: read-only; ``ENOSPC``, ``EDQUOT``: full). The probe runs
only after a failed write, on the writer's thread, never on the Trio thread.

`DiskDoctor.name` turns such an exception into a `StoreError` whose ``cause`` and message
name the cause; the toolsets' failure replies carry it on (`agora.errors.Failure`). A write
that failed this way changed nothing and may be retried: writes succeed again as soon as space
or write permission returns, without a restart (after a read-only or failed file system the
writer reopens the database first, so one mounted again at its path is used: `Writer`).
On PostgreSQL the server names the cause itself (SQLSTATE ``53100`` disk full, ``25006``
read-only transaction, ``58030`` I/O error): `name_pg`.

The log tells such a refusal once per episode (`DiskDoctor.told`): its first batch at
WARNING, naming the cause and SQLite's words; the refusals that follow for the same cause are
counted, not logged (every refused call already says the cause to its client, and a full disk
under load refused hundreds a second); its end is one INFO line with the episode's length and
count, once writes have committed for `SETTLE_SECONDS` with no refusal for that cause (or at
the store's close): a disk at its limit takes a small commit and refuses the next, and each
turn was a WARNING and an INFO line of its own. The calls refused meanwhile log their
correlation ids at DEBUG only (`agora.server.failed`, `agora.runtime.failures`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import time
from typing import TYPE_CHECKING

from agora.errors import STORE_CAUSES, StoreError
from agora.logsafe import one_line
from agora.store.episode import Episode

if TYPE_CHECKING:
    from agora.errors import StoreCause

# SQLite's primary result codes (the low byte of an extended code).
_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 10, 13, 14

_ERRNO_CAUSES: dict[int, StoreCause] = {
    errno.ENOSPC: "disk_full",
    errno.EDQUOT: "disk_full",
    errno.EROFS: "read_only",
    errno.EPERM: "read_only",
    errno.EACCES: "read_only",
}

log = logging.getLogger(__name__)

#: Bytes the probe writes: one page, so a full file system refuses it.
PROBE_BYTES = 4096
#: Least seconds between two reopens of the database after disk errors with no commit between
#: them (the disk takes a probe file but not the database's writes): otherwise each refused
#: batch would reopen it, a new writer process each time (`Reopening`).
REOPEN_SECONDS = 1.0


def sqlite_cause(exc: BaseException) -> StoreCause | None:
    """The cause SQLite's own result code names, None if it names none."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.Error) or code is None:
        return None
    primary = code & 0xFF
    if primary == _SQLITE_FULL:
        return "disk_full"
    if primary == _SQLITE_READONLY:
        return "read_only"
    if primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN):
        return "io_error"
    return None


#: PostgreSQL's SQLSTATEs that name a cause: disk_full, read_only_sql_transaction (a server
#: or database made read-only, a standby), io_error.
_PG_CAUSES: dict[str, StoreCause] = {
    "53100": "disk_full",
    "25006": "read_only",
    "58030": "io_error",
}


def pg_cause(exc: BaseException) -> StoreCause | None:
    """The cause a PostgreSQL error's SQLSTATE names, None if it names none."""
    return _PG_CAUSES.get(str(getattr(exc, "sqlstate", None) or ""))


def named(exc: BaseException, cause: StoreCause) -> StoreError:
    """``exc`` as the retryable `StoreError` that names ``cause`` (nothing was saved)."""
    error = StoreError(f"write failed: {STORE_CAUSES[cause]} ({exc})", cause=cause)
    error.__cause__ = exc
    return error


def name_pg(outcomes: list[BaseException | None]) -> list[BaseException | None]:
    """A PostgreSQL batch's ``outcomes`` with each failure whose SQLSTATE names a cause
    replaced by a `StoreError` naming it."""
    return [o if o is None or (cause := pg_cause(o)) is None else named(o, cause) for o in outcomes]


def errno_cause(error: OSError) -> StoreCause:
    """The cause an operating-system refusal names (any other errno: an I/O error)."""
    return _ERRNO_CAUSES.get(error.errno or 0, "io_error")


#: Writes that commit for this long after refusals, with no refusal for the same cause, end
#: the episode (a refusal within it continues the episode: a disk at its limit).
SETTLE_SECONDS = 5.0


class DiskDoctor:
    """Names the disk's part in failed writes to one database file."""

    def __init__(self, path: str) -> None:
        """Args: path: the database file (the probe goes beside it)."""
        self.path = path
        self.probe_path = f"{path}.probe"
        #: The cause of the refusals under way (None: writes are taken).
        self.episode: StoreCause | None = None
        self._refusals = Episode()  # its strikes: the writes refused
        #: When writes began to commit again in the episode under way (None: refusing).
        self._resumed: float | None = None

    def probe(self) -> StoreCause | None:
        """Write, sync and remove the probe file; what the OS refused, None if it took it."""
        try:
            fd = os.open(self.probe_path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        except OSError as exc:
            return errno_cause(exc)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        except OSError as exc:
            return errno_cause(exc)
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):  # one that refuses it refused the write
                os.unlink(self.probe_path)
        return None

    def name(self, outcomes: list[BaseException | None]) -> list[BaseException | None]:
        """A batch's ``outcomes`` with each failure the disk caused replaced by a
        `StoreError` naming the cause. At most one probe per batch: its jobs share a disk."""
        probed: list[StoreCause | None] = []

        def one(outcome: BaseException | None) -> BaseException | None:
            if outcome is None or (cause := sqlite_cause(outcome)) is None:
                return outcome
            if cause == "io_error":  # SQLite cannot tell why: ask the OS, once
                if not probed:
                    probed.append(self.probe())
                cause = probed[0] or "io_error"
            return named(outcome, cause)

        return [one(outcome) for outcome in outcomes]

    def told(self, outcomes: list[BaseException | None]) -> bool:
        """Account for a batch's ``outcomes`` (already `name`d) in the log: whether a
        failure among them was the disk's (then logged once per episode, here)."""
        named_ = [o for o in outcomes if isinstance(o, StoreError) and o.cause is not None]
        if not named_:
            return False
        first = named_[0]
        cause = first.cause
        assert cause is not None
        resumed = self._resumed
        if resumed is not None and (
            cause != self.episode or self._refusals.now() - resumed >= SETTLE_SECONDS
        ):  # it was over (it settled, or another cause strikes now): tell it, then begin anew
            self._tell_end()
        elif cause != self.episode and self.episode is not None:  # another cause now
            self._changed(self.episode)
        self._resumed = None  # (the same cause again within the settling: the same episode)
        self.episode = cause
        if not self._refusals.strike(len(named_)):
            return True
        log.warning(
            "writes to %s refused: %s (%s); further refusals for this cause are counted, "
            "not logged, until writes have succeeded again for %g s",
            self.path, STORE_CAUSES[cause], one_line(first.__cause__ or first), SETTLE_SECONDS,
        )  # fmt: skip
        return True

    def _changed(self, was: StoreCause) -> None:
        """The refusals go on for another cause than ``was``: that episode ends (one line),
        and the next refusal begins a new one. Nothing succeeded in between."""
        length = self._refusals.end()
        if length is None:  # pragma: no cover - an episode under way has begun
            return
        log.info(
            "writes to %s still refused, no longer because %s: %s refused in %.1f s",
            self.path, STORE_CAUSES[was], self._refusals.told("write"), length,
        )  # fmt: skip

    def wrote(self) -> None:
        """A commit went through: the episode under way, if any, is over once commits have
        gone on for `SETTLE_SECONDS` (then one line)."""
        if self.episode is None:
            return
        now = self._refusals.now()
        if self._resumed is None:
            self._resumed = now
        if now - self._resumed >= SETTLE_SECONDS:
            self._tell_end()

    def close(self) -> None:
        """The store closes: an episode whose writes had begun to commit again is told over."""
        if self.episode is not None and self._resumed is not None:
            self._tell_end()

    def _tell_end(self) -> None:
        """The episode under way is over, since writes resumed (one line)."""
        if (length := self._refusals.end(self._resumed)) is None or self.episode is None:
            return
        self._resumed = None
        log.info(
            "writes to %s succeed again, after %.1f s of refusals (%s): %s refused",
            self.path, length, STORE_CAUSES[self.episode], self._refusals.told("write"),
        )  # fmt: skip
        self.episode = None


class Reopening:
    """When the writer reopens its database after the file system failed its writes.

    A batch refused as read-only or as an I/O error makes the connection suspect
    (`suspect`): the file system may have been remounted, and the old connection pins the
    failed one. The next batch reopens first, but only once the disk takes writes again
    (the doctor's probe file), and then at once: while it still refuses, a reopen (a new
    writer process) would fail as the batch does, one per refused batch. A reopen after
    which nothing committed yet is not tried again for `REOPEN_SECONDS` (a disk that takes
    the probe but not the database). The first reopen since the last commit is logged at
    INFO, the rest at DEBUG.
    """

    def __init__(self, doctor: DiskDoctor | None) -> None:
        """Args: doctor: the disk's probe (None: reopen without asking)."""
        self._doctor = doctor
        #: The last batch failed for the file system: reopen before the next one.
        self.suspect = False
        #: Reopens done, in all.
        self.count = 0
        self._next = 0.0  # `time.perf_counter` before which no reopen is retried
        self._since_commit = False  # reopened since the last commit

    def due(self) -> int | None:
        """Whether to reopen now: the log level of the reopen's lines, or None (not now)."""
        if not self.suspect:
            return None
        if self._doctor is not None and self._doctor.probe() is not None:
            return None  # still refused: the batch runs on the old connection, and fails
        now = time.perf_counter()
        if self._since_commit and now < self._next:
            return None
        self._next = now + REOPEN_SECONDS
        first, self._since_commit = not self._since_commit, True
        return logging.INFO if first else logging.DEBUG

    def committed(self) -> None:
        """A batch committed: the next reopen is a first one again."""
        self._since_commit = False
