"""What other processes see of a SQLite file's WAL index locks, asked from other processes.

SQLite's unix VFS holds a shared ``fcntl`` lock on byte `DMS` of the ``-shm`` file for as
long as a process has the database open; a process that opens the file and finds no lock
there takes itself for the only one and truncates the ``-shm`` (which kills, by SIGBUS, any
process still mapping it). These helpers ask from a fresh process, since ``F_GETLK`` never
reports the asker's own locks, and opening the file here and closing it would drop ours.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

#: ``UNIX_SHM_DMS`` of SQLite's os_unix.c: (22 + SQLITE_SHM_NLOCK) * 4 + SQLITE_SHM_NLOCK.
DMS = 128

_HOLDER = """
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
asked = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, int(sys.argv[2]), 1, 0)
kind, _, _, _, pid = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, asked))
print(0 if kind == fcntl.F_UNLCK else pid)
"""

_OPENERS = """
import os, sqlite3, sys
for _ in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:
        conn = sqlite3.connect(sys.argv[1], timeout=30)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.close()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
"""


def dms_holder(db: Path | str) -> int | None:
    """The pid of a process holding the ``-shm`` of ``db`` open for SQLite, as another
    process sees it (None: nobody, and the next opener would truncate it)."""
    done = subprocess.run(
        [sys.executable, "-c", _HOLDER, f"{db}-shm", str(DMS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout) or None


def open_from_other_processes(db: Path | str, count: int) -> None:
    """Open ``db`` and read it from ``count`` new processes, one after the other (forked
    from one fresh interpreter: a few milliseconds each)."""
    subprocess.run([sys.executable, "-c", _OPENERS, str(db), str(count)], check=True, timeout=120)
