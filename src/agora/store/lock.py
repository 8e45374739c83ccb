"""Which database a process may open, and the OS lock that makes it the only one on it.

`database_problem` refuses what is neither a SQLite file path, ``:memory:`` nor a
``postgresql://`` URL (another URL would become an odd file name), before anything is created.
A PostgreSQL database takes no file lock: several agora nodes share it by design.

Each agora process keeps its own actors, caches and waiters, so two unguarded processes on
one SQLite file would silently diverge. Whoever opens the database (``agora serve``, ``agora
stdio --db``, ``agora cards sign``) takes an ``flock`` on ``<database>.lock``: an exclusive
one (and writes its pid there), unless it opens the file *shared*, under the version guard
(`agora.store.sqlite_shared`): shared openers take a shared lock, so any number of them run
together while an unshared one can never write beside them. A refused opener gets
`DatabaseInUse`, which names the file and the holder (or says the file is shared). The OS
drops the lock when its holder's file descriptor closes, however the process ends (``kill
-9`` included), so a lock is never stale. The sidecar file itself stays, but for one its
opener has just created and could not write (a full disk): that opener removes it, still
locked, and every opener checks that the file it locked is still the one the path names.
The lock is on a separate file so that SQLite's own POSIX locks on the database stay
independent of it.

This module does no SQLite work and never blocks: a held lock is refused at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from agora.errors import StoreError

if TYPE_CHECKING:
    from collections.abc import Iterator

#: ``scheme://...``, and SQLite's own ``file:`` URIs (agora always opens a plain path).
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|file:)")
#: ``postgresql:`` or ``postgres:`` not followed by ``//`` (``postgresql:/host/db``).
_PG_SLASHLESS = re.compile(r"^((?i:postgres(?:ql)?)):(?!//)")
#: ``postgresql//host/db``: the same URL missing its colon instead.
_PG_COLONLESS = re.compile(r"^((?i:postgres(?:ql)?))//")

#: Bytes of the holder's pid record read back; a pid and a newline fit many times over.
_RECORD_BYTES = 64


class DatabaseInUse(StoreError):
    """Another process holds the database's lock.

    Attributes:
        path: The database file.
        pid: The holder's process id, or None if it had not written it yet.
        command: The holder's command line, when the OS shows it.
    """

    def __init__(
        self, path: str, pid: int | None, command: str = "", *, shared: bool = False
    ) -> None:
        if shared:
            message = f"database {path} is shared by other agora processes (opened --shared)"
        elif pid == os.getpid():  # two servers of one program (`agora.open_server` twice)
            message = f"database {path} is already open in this process (pid {pid})"
        else:
            holder = f"pid {pid}" if pid is not None else "pid unknown"
            if command:
                holder += f": {command}"
            message = f"database {path} is in use by another agora process ({holder})"
        super().__init__(message)
        self.path = path
        self.pid = pid
        self.command = command
        #: The holders opened it shared (an unshared opener was refused).
        self.shared = shared


def database_problem(value: str) -> str | None:
    """Why ``value`` cannot name an agora database, or None if it can.

    Accepted: ``:memory:``, file paths and ``postgresql://`` (or ``postgres://``) URLs.
    Refused: the empty string, any other URL (``mysql://...``, ``file:...``), and a
    PostgreSQL URL missing its ``//`` (``postgresql:/host/db``) or its colon
    (``postgresql//host/db``), which would otherwise become odd file names (and a hint to
    make their directories).
    """
    if value == ":memory:" or value.startswith(("postgresql://", "postgres://")):
        return None
    if not value.strip():
        return "the database path is empty"
    if slashless := _PG_SLASHLESS.match(value):
        # Taken as a file path, it would be a SQLite file under a "postgresql:" directory
        # (and a hint to make that directory). Not echoed: it may hold a password.
        name = slashless.group(1)
        return (
            f"it looks like a PostgreSQL URL missing the // after {name}: (write "
            f"{name}://HOST/DATABASE, or ./{name}:... for a SQLite file of that name)"
        )
    if colonless := _PG_COLONLESS.match(value):
        name = colonless.group(1)
        return (
            f"it looks like a PostgreSQL URL missing the : after {name} (write "
            f"{name}://HOST/DATABASE, or ./{name}//... for a SQLite file of that name)"
        )
    if _URL.match(value):
        scheme = value.split(":", 1)[0]
        return (
            f"{value!r} is a URL; no {scheme} backend exists: give a SQLite file path, "
            ":memory: or a postgresql:// URL"
        )
    if "\0" in value:
        return "the database path contains a NUL character"
    return None


def shown_database(value: str) -> str:
    """``value`` as it may be printed: a URL's password replaced by ``***``, whether in its
    user part or as libpq's ``password=`` query parameter."""
    return _PASSWORD_PARAM.sub(r"\1***", _PASSWORD.sub(r"\1***@", value))


_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:)[^@/]*@")
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&#]*")


def lock_path(database: str | Path) -> Path:
    """The sidecar lock file of ``database`` (``agora.db`` -> ``agora.db.lock``).

    Symbolic links are resolved first, so two names of one file share one lock.
    """
    return Path(f"{os.path.realpath(database)}.lock")


@contextmanager
def database_lock(database: str | Path, *, shared: bool = False) -> Iterator[Path]:
    """Hold the lock of ``database`` for the duration of the block.

    The database file itself is not opened or created here; the lock file is created next to
    it if needed (its directory must exist).

    Args:
        database: The database file's path.
        shared: Take the shared lock of a guarded process (other shared openers may hold
            it too), rather than the exclusive one.

    Yields:
        The lock file's path.

    Raises:
        DatabaseInUse: another process (or another open in this one) holds the lock.
        StoreError: the lock file cannot be created or locked.
    """
    path = lock_path(database)
    fd, made = _locked(path, database, shared=shared)
    try:
        if not shared:  # shared holders are many: the record names an exclusive one only
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except OSError as exc:  # a full disk (ENOSPC), a quota (EDQUOT)
                if made:  # no empty lock file left by a start that failed (removed locked)
                    with contextlib.suppress(OSError):
                        path.unlink()
                raise StoreError(
                    f"cannot lock database {database}: cannot write its lock file {path}:"
                    f" {exc.strerror}"
                ) from exc
        yield path
    finally:
        os.close(fd)  # releases the lock


def _locked(path: Path, database: str | Path, *, shared: bool) -> tuple[int, bool]:
    """The lock file ``path`` opened and locked, and whether this call created it.

    A lock file is removed only by the opener that created it and then failed (still
    holding the lock): one that opened it in between would lock a file no longer named
    ``path``, which it sees here, and so it opens the path again.
    """
    while True:
        made = True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            made = False
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:  # removed since: open it again
                continue
            except OSError as exc:
                raise StoreError(
                    f"cannot lock database {database}: {exc.strerror}: {path}"
                ) from exc
        except OSError as exc:
            raise StoreError(f"cannot lock database {database}: {exc.strerror}: {path}") from exc
        try:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                if not shared and _held_shared(fd):
                    raise DatabaseInUse(str(database), None, shared=True) from None
                pid = _holder_pid(fd)
                raise DatabaseInUse(str(database), pid, _command_of(pid)) from None
            except OSError as exc:
                raise StoreError(f"cannot lock database {database}: {exc.strerror}") from exc
        except BaseException:
            os.close(fd)
            raise
        if _still_named(fd, path):
            return fd, made
        os.close(fd)


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _held_shared(fd: int) -> bool:
    """Whether the lock ``fd`` could not take exclusively is held shared (then taken
    shared here for an instant, and given back)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def _holder_pid(fd: int) -> int | None:
    try:
        record = os.pread(fd, _RECORD_BYTES, 0).decode("ascii").strip()
        return int(record) if record else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _command_of(pid: int | None) -> str:
    """The command line of ``pid`` as ``ps`` would show it, or "" where unavailable."""
    if pid is None:
        return ""
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
        if words:
            words[0] = os.path.basename(words[0])
            if len(words) > 1 and words[0].startswith("python"):
                words = words[1:]
                words[0] = os.path.basename(words[0])
            return " ".join(words)
    return ""
