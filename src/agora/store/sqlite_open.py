"""Opening and migrating a SQLite file in a worker thread that a cancellation stops; the
file's own id, and the check that a file found at its path again is that database.

Opening a file may wait for another process's write lock (a backup, the sqlite3 shell, a
second agora mid-transaction), for up to `LOCK_WAIT` seconds, and a toolset's migration step
may run for seconds (a backfill): `agora.store.db` runs `migrated_file` in
`agora.store.opening.open_in_thread`, off the Trio thread.

A cancelled open ends at once and leaves nothing behind that could still write. The lock is
waited for in slices of `SLICE_MS` (the opening connection's busy timeout): between two, the
thread sees the cancellation and gives up, having written nothing. A statement running when the
cancellation comes is stopped (interrupted, and a progress handler for one that starts later),
and no migration step begins or commits after it: the step under way is rolled back (each step
is one transaction; those before it stay applied).
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import quote

from agora.errors import STORE_CAUSES, StoreError
from agora.store.db_path import open_problem
from agora.store.guard import TABLES
from agora.store.migrations import apply_migrations
from agora.store.sqlite_connect import BUSY_MS, connect

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from agora.store.migrations import Migration
    from agora.store.opening import Opening

#: Seconds an open waits in all for another process's write lock (as long as a write may).
LOCK_WAIT = BUSY_MS / 1000
#: Milliseconds of one wait for the lock; the thread looks for a cancellation between two.
SLICE_MS = 100
#: SQLite VM instructions between two looks for a cancellation while a statement runs.
PROGRESS_STEPS = 1000
#: The table of a database's own id (`database_id`).
IDENTITY = "agora_identity"


def _interrupt(conn: sqlite3.Connection) -> None:
    """Stop the statement ``conn`` runs (one too short for the progress handler too)."""
    with contextlib.suppress(sqlite3.ProgrammingError):  # the thread has just closed it
        conn.interrupt()


def _busy(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from) is SQLite's "database is locked"."""
    while exc is not None:
        if isinstance(exc, sqlite3.OperationalError):
            return exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
        exc = exc.__cause__
    return False


def migrated_file(
    path: str,
    migrations: Iterable[Migration],
    synchronous: str,
    shared: bool,
    opening: Opening,
) -> tuple[sqlite3.Connection, dict[str, int], str]:
    """`migrated` in slices of waiting for the write lock, stopping once cancelled.

    Every attempt starts over on a fresh connection: a step applied before the lock was
    lost is not applied again (`apply_migrations` skips it).
    """
    for _ in range(round(BUSY_MS / SLICE_MS) - 1):
        opening.check()
        try:
            return migrated(path, migrations, synchronous, shared, opening)
        except StoreError as exc:
            if not _busy(exc):
                raise
    opening.check()
    return migrated(path, migrations, synchronous, shared, opening)


def migrated(
    path: str,
    migrations: Iterable[Migration],
    synchronous: str,
    shared: bool,
    opening: Opening | None = None,
) -> tuple[sqlite3.Connection, dict[str, int], str]:
    """A write connection to ``path``, its schema migrated; each component's version; and
    the database's id (`database_id`).

    With ``opening``, the connection waits `SLICE_MS` for the write lock (the caller tries
    again) and stops when the open is cancelled; it is set to wait `BUSY_MS` on its return.

    Raises:
        StoreError: the file cannot be opened, migrated or written.
    """
    try:
        busy_ms = BUSY_MS if opening is None else SLICE_MS
        conn = connect(path, synchronous=synchronous.upper(), busy_ms=busy_ms)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open database {path}: {open_problem(path, exc)}") from exc
    if opening is not None:
        conn.set_progress_handler(opening.cancelled, PROGRESS_STEPS)
        opening.adopt(partial(_interrupt, conn), conn.close)
    try:
        if shared:
            _create_guard_tables(conn)
        check = None if opening is None else opening.check
        versions = apply_migrations(conn, migrations, check)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot migrate database {path}: {open_problem(path, exc)}") from exc
    except BaseException:
        conn.close()  # a newer schema or a failed step: leave nothing open
        raise
    try:
        writable = path == ":memory:" or _writable(conn)  # what access() could not see
        # Drawn while the lock is still waited for in slices and a cancellation still stops it.
        identity = database_id(conn) if writable else ""
        if opening is not None:
            conn.set_progress_handler(None, 0)
            conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot open database {path}: {open_problem(path, exc)}") from exc
    if not writable:
        conn.close()
        raise StoreError(f"cannot open database {path}: {STORE_CAUSES['read_only']}")
    return conn, versions, identity


def database_id(conn: sqlite3.Connection) -> str:
    """The id of the database ``conn`` writes, drawn and stored the first time.

    128 random bits (hex) in `IDENTITY`, one row at most, drawn the first time a server opens
    the file (a file from before ids gets one then). A reopen after a disk error refuses a
    file with another id (`foreign_schema`): another agora database found at the path, with
    the same components, is not this one.

    Args:
        conn: A write connection to the file, outside any transaction.

    Returns:
        The id, as stored.
    """
    found = _stored_id(conn)
    if found is not None:
        return found
    with _immediate(conn):
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {IDENTITY}"
            " (one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL)"
        )
        found = _stored_id(conn)  # (another process may have drawn it meanwhile)
        if found is None:
            found = secrets.token_hex(16)
            conn.execute(f"INSERT INTO {IDENTITY} (one, id) VALUES (1, ?)", (found,))
    return found


def _stored_id(conn: sqlite3.Connection) -> str | None:
    """The id stored in the file ``conn`` reads, None if it has none yet."""
    if not _has_table(conn, IDENTITY):
        return None
    row = conn.execute(f"SELECT id FROM {IDENTITY} WHERE one = 1").fetchone()
    return None if row is None else str(row[0])


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the file ``conn`` reads has a table ``name``."""
    table = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
    return bool(conn.execute(table, (name,)).fetchone()[0])


@contextlib.contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on ``conn``: committed if the block ends, else rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _writable(conn: sqlite3.Connection) -> bool:
    """Whether SQLite lets ``conn`` write: a migrated file writes nothing at open, so a file
    it opened read-only (a WAL file it may not write, say) would be found out by the first
    call's write. The table made here is rolled back: the file does not change."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE agora_write_probe (x)")
        finally:
            conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_READONLY:
            return False
        raise  # another failure: the caller words it
    return True


def _create_guard_tables(conn: sqlite3.Connection) -> None:
    """The version table of a shared file (`agora.store.guard.TABLES`), if it is missing."""
    with _immediate(conn):
        for sql in TABLES:
            conn.execute(sql)


class Unreadable(str):
    """A `foreign_schema` reason that is the file's not being readable at all (no file
    there, most likely, while its file system is mounted again), not its being another."""

    __slots__ = ()


def foreign_schema(path: str, versions: Mapping[str, int], identity: str | None) -> str | None:
    """Why the file at ``path`` cannot be taken for the database a store opened with
    ``versions`` (its components' schema versions) and ``identity`` (its `database_id`; None
    checks none): it cannot be read (no file there, say, while its file system is being
    mounted again: an `Unreadable` reason), it has no ``agora_schema`` table, another id or
    none, or it lacks a component or has one at an older version; None when it is that
    database (or a copy of it: the id cannot tell a stale copy).

    Read on a read-only connection, which never checkpoints or deletes the WAL as it closes:
    a file system mounted again unchecked may show a WAL whose head was overwritten (no
    frames valid, so no tables), and a writer's connection closed on it would delete what is
    left of it.
    """
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        return Unreadable(f"it cannot be read: {exc}")
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        if not _has_table(conn, "agora_schema"):
            return "it has no agora_schema table"
        if identity is not None and (other := _stored_id(conn)) != identity:
            if other is None:
                return (
                    "it has no database id (a database from before ids, or its id was lost"
                    " with its WAL)"
                )
            return f"it is another agora database (id {other}, not {identity})"
        found = dict(conn.execute("SELECT component, version FROM agora_schema").fetchall())
    except sqlite3.Error as exc:
        return Unreadable(f"it cannot be read: {exc}")
    finally:
        conn.close()
    missing = sorted(set(versions) - set(found))
    if missing:
        return f"it lacks the {', '.join(missing)} schema"
    older = sorted(c for c, v in versions.items() if found[c] < v)
    if older:
        return "its " + ", ".join(
            f"{c} schema is at version {found[c]}, not {versions[c]}" for c in older
        )
    return None


def checked_connect(
    path: str, versions: Mapping[str, int], identity: str | None, synchronous: str
) -> sqlite3.Connection:
    """A store connection to ``path`` opened again (`connect`), once `foreign_schema` finds
    it is the database opened with ``versions`` and ``identity``.

    Raises:
        StoreError: it is not, or cannot be read (the connection is then not opened).
    """
    refuse_foreign(path, versions, identity)
    return connect(path, synchronous=synchronous, create=False)


def refuse_foreign(path: str, versions: Mapping[str, int], identity: str | None) -> None:
    """Raise `StoreError` saying why, if `foreign_schema` finds a reason."""
    reason = foreign_schema(path, versions, identity)
    if reason is None:
        return
    if isinstance(reason, Unreadable):
        raise StoreError(f"cannot open {path} again ({reason}): is its file system mounted?")
    raise StoreError(
        f"{path} is not the database this server opened ({reason}): was its file system"
        " mounted again without a check? Writes are refused until the right file is back"
    )
