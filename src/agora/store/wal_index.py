"""Reading a SQLite file's WAL index (``-shm``) without taking SQLite's locks from this process.

SQLite locks a WAL database with POSIX advisory locks (``fcntl``) on its ``-shm`` file, and
POSIX gives those to the process, not to a descriptor: closing *any* descriptor of the file
drops every lock the process holds on it, SQLite's included
(https://sqlite.org/howtocorrupt.html, "POSIX advisory locks canceled by a separate thread
doing close()"). The checkpointer once opened and closed the ``-shm`` at each look. That
silently dropped the shared lock on the byte that tells a newcomer the index is in use
(``UNIX_SHM_DMS``), so the next process to open the file (``agora stdio --db --shared``, the
``sqlite3`` shell) took itself for the only one, truncated the ``-shm`` to 3 bytes and
rebuilt it, and this process, which maps that file, died of SIGBUS at its next touch of
the index: ``agora serve --shared`` vanished between two calls, with no word in its log.
The read locks of its readers went the same way, so another process could also have
checkpointed and restarted the WAL under them.

So a process opens a file's ``-shm`` once, and keeps that descriptor while anything of it may
still use the database: `hold` counts the holders (a store, a change feed's thread), and the
last `WalIndex.release`, which each holder calls only once every SQLite connection it opened
on the file is closed, closes it. A holder whose connection was left open (a stuck thread)
does not release: the descriptor stays with it. The same descriptor answers whether the file
is immutable (`WalIndex.immutable`: see `agora.store.shm_guard`). Must not import trio.
"""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import threading
from dataclasses import dataclass

__all__ = ["WalIndex", "hold"]

#: The WAL index header's ``mxFrame`` (bytes 16-19) and the checkpoint info's ``nBackfill``
#: (bytes 96-99): 32-bit counts in the machine's byte order (https://sqlite.org/walformat.html).
_U32, _INDEX_HEAD = struct.Struct("=I"), 100
#: Linux's ``FS_IOC_GETFLAGS`` (``_IOR('f', 1, long)``) and its ``FS_IMMUTABLE_FL`` bit.
_GETFLAGS = 0x80086601 if sys.maxsize > 2**32 else 0x80046601
_IMMUTABLE = 0x10


@dataclass(slots=True)
class _Shm:
    """One ``-shm`` file of this process: its descriptor once opened, and its holders."""

    path: str
    fd: int | None = None
    holders: int = 0


_lock = threading.Lock()  # guards _files and every _Shm
_files: dict[str, _Shm] = {}


def hold(database: str) -> WalIndex:
    """A hold on the WAL index of ``database`` (a file path); `WalIndex.release` ends it.

    Opens nothing yet: the ``-shm`` file appears with the first connection in WAL mode.
    """
    path = f"{os.path.realpath(database)}-shm"  # symbolic links resolved, as SQLite does
    with _lock:
        shm = _files.get(path)
        if shm is None:
            shm = _files[path] = _Shm(path)
        shm.holders += 1
    return WalIndex(shm)


class WalIndex:
    """One holder's hold on a database's WAL index (see the module docstring)."""

    def __init__(self, shm: _Shm) -> None:
        self._shm: _Shm | None = shm

    @property
    def opened(self) -> bool:
        """Whether the process holds the ``-shm`` file open (for tests)."""
        with _lock:
            return self._shm is not None and self._shm.fd is not None

    def behind(self) -> int | None:
        """Frames of the WAL not yet copied into the database (None: no index to read yet,
        say before the first write, or this hold was released)."""
        read = self.frames()
        return None if read is None else max(read[0] - read[1], 0)

    def frames(self) -> tuple[int, int] | None:
        """The WAL's last valid frame and the frames already copied into the database (None:
        no index to read yet, or this hold was released)."""
        with _lock:  # a few microseconds: release never closes the descriptor under a read
            fd = self._descriptor()
            if fd is None:
                return None
            try:
                head = os.pread(fd, _INDEX_HEAD, 0)
            except OSError:
                return None
        if len(head) < _INDEX_HEAD:
            return None
        return int(_U32.unpack_from(head, 16)[0]), int(_U32.unpack_from(head, 96)[0])

    def immutable(self) -> bool:
        """Whether the ``-shm`` file is immutable (``chattr +i``; False when there is none
        yet, or its file system keeps no such flag)."""
        with _lock:
            fd = self._descriptor()
            if fd is None:
                return False
            try:
                flags = fcntl.ioctl(fd, _GETFLAGS, bytes(8))
            except OSError:  # a file system without inode flags (ENOTTY, EOPNOTSUPP)
                return False
        return bool(int.from_bytes(flags[:4], sys.byteorder) & _IMMUTABLE)

    def _descriptor(self) -> int | None:
        """The process's descriptor of the ``-shm`` file, opened at the first need and kept
        (None: released, or no such file yet). Under ``_lock``."""
        shm = self._shm
        if shm is None:
            return None
        if shm.fd is None:
            try:
                shm.fd = os.open(shm.path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
        return shm.fd

    def release(self) -> None:
        """End this hold; the last one closes the ``-shm`` file. Only once the holder's own
        connections to the database are closed: closing it drops the locks of any still open.
        Later calls do nothing."""
        with _lock:
            shm, self._shm = self._shm, None
            if shm is None:
                return
            shm.holders -= 1
            if shm.holders:
                return
            del _files[shm.path]
            if shm.fd is not None:
                os.close(shm.fd)
