"""A SQLite database path checked before anything is opened, each problem said in words.

SQLite's own errors and the OS's (``[Errno 17] File exists`` for a path through a regular
file, "unable to open database file") do not tell an operator what to fix, and SQLite
opens a file it may not write read-only without a word. Checked before the lock, the WAL
or the file itself is touched, so a refused path leaves the disk as it was.

A missing directory is refused, not created: a misspelt one (``/var/lib/agroa/agora.db``)
would otherwise start the server on a new, empty database, the operator's data seemingly
gone, and a directory made by ``sudo agora serve`` would belong to root. The default,
``./agora.db``, is in the working directory, which exists.

A failure once SQLite opens the file is said by `open_problem`: SQLite's words, except for a
full disk, which SQLite may report only as "disk I/O error" (restarting an existing database
on a full disk: it cannot grow the ``-shm``, ``SQLITE_IOERR_SHMSIZE``). After an I/O error it
writes a probe file beside the database (`agora.store.diskfault.DiskDoctor.probe`) and reads
the free space of its file system: ``ENOSPC`` or less than `LOW_SPACE` left is named a full
disk, with the path, the space left and what to do.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agora.errors import STORE_CAUSES, StoreError
from agora.store.diskfault import DiskDoctor, sqlite_cause

#: Why a file the server may not write is refused at open (the words its callers would get).
READ_ONLY = STORE_CAUSES["read_only"]
#: Free bytes on the database's file system under which an I/O error at open is a full disk:
#: SQLite grows the ``-shm`` 32 KiB at a time, the ``-wal`` a page at a time.
LOW_SPACE = 1 << 20


def open_problem(path: str, exc: BaseException) -> str:
    """Why opening or migrating ``path`` failed with ``exc``, in words: SQLite's, or for a
    full disk (``SQLITE_FULL``, or an I/O error where the disk takes no probe file or has
    less than `LOW_SPACE` free) the file system, its space left and what to do."""
    cause = sqlite_cause(exc)
    free = _free(path)
    if cause == "io_error":
        low = free is not None and free < LOW_SPACE
        if not low and DiskDoctor(path).probe() != "disk_full":
            return str(exc)
        why = f"ENOSPC, no space left on device; SQLite said only: {exc}"
    elif cause == "disk_full":
        why = f"SQLITE_FULL: {exc}"
    else:
        return str(exc)
    left = "" if free is None else f", {free // 1024} KiB free"
    return (
        f"its disk is full ({why}): the file system at {_mount(path)}{left}. Free space "
        f"there (or move the database to a disk with room), then start again"
    )


def _free(path: str) -> int | None:
    """Bytes an unprivileged user may still write on ``path``'s file system (None: unknown)."""
    try:
        got = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    return got.f_bavail * got.f_frsize


def _mount(path: str) -> str:
    """The mount point of the file system ``path`` is on."""
    at = os.path.dirname(os.path.abspath(path))
    while not os.path.ismount(at):
        at = os.path.dirname(at)
    return at


def check_database_path(path: str) -> None:
    """Refuse a database file path that cannot be opened for reading and writing.

    Raises:
        StoreError: ``cannot open database PATH: why``, one line: the path is a directory
            or no regular file (a device such as /dev/null), passes through a file, is in
            a directory that does not exist, or is a file that cannot be read or written.
    """
    try:
        problem = _problem(Path(path))
    except PermissionError:  # stat() of the file or a directory: one on the way is shut
        problem = "a directory on the way to it cannot be searched by the user agora runs as"
    except OSError as exc:  # a loop of symbolic links, a name too long, an I/O error
        problem = exc.strerror or str(exc)
    if problem is not None:
        raise StoreError(f"cannot open database {path}: {problem}")


def _problem(file: Path) -> str | None:
    kind = _kind(file)
    if kind == "directory":
        return "it is a directory"
    if kind == "special":  # /dev/null would take a -journal and a .lock beside it in /dev
        return "it is not a regular file (a device, a pipe or a socket): give a file's path"
    if kind is None:  # the file is to be made: its directory must be there
        return _missing_directory(file)
    # access() says no to an immutable file even for root, and on a read-only file system.
    if not os.access(file, os.R_OK):  # before writing: a chmod 000 file is not read-only
        return "it cannot be read (permission denied to the user agora runs as)"
    if not os.access(file, os.W_OK):
        return READ_ONLY
    return _unwritable_directory(file)


def _unwritable_directory(file: Path) -> str | None:
    """Why agora may not make files in ``file``'s directory, or None: beside the database
    go its ``-wal``, ``-shm`` and ``.lock`` files, which SQLite would fail to make with
    "unable to open database file"."""
    if os.access(file.parent, os.W_OK | os.X_OK):
        return None
    return (
        f"its directory {file.parent} cannot be written (agora makes its -wal, -shm and"
        " .lock files beside the database)"
    )


def _missing_directory(file: Path) -> str | None:
    """Why ``file``, which does not exist, cannot be created, or None if it can be."""
    for ancestor in file.parents:  # nearest first: the first one there decides
        kind = _kind(ancestor)
        if kind is None:
            continue
        if kind != "directory":
            return f"{ancestor} is a file, not a directory"
        if ancestor == file.parent:
            return _unwritable_directory(file)
        break
    return f"its directory {file.parent} does not exist (create it first: mkdir -p {file.parent})"


def _kind(path: Path) -> str | None:
    """ "directory", "file" (a regular one), "special" (anything else that is there: a
    device, a pipe, a socket), or None when nothing is there."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # NotADirectory: a file further up
        return None
    if stat.S_ISDIR(mode):
        return "directory"
    return "file" if stat.S_ISREG(mode) else "special"
