"""``agora serve`` on a full disk: SIGTERM still exits 0, and no committed write is lost.

The database lives on a small tmpfs mounted for the test, filled to the last byte while the
server runs, so the final WAL checkpoint at shutdown fails for real (SQLITE_FULL). Mounting
needs root: elsewhere the test skips with one "needs:" line (and fails under CI=true).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
from typing import TYPE_CHECKING

import pytest
import trio
from e2e_support import AgoraProcess

from agora.client import connect

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

TIMEOUT = 30


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs: root, to mount a small tmpfs")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"needs: a tmpfs mount ({done.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> None:
    """Write a file until the filesystem is full."""
    chunk = b"\0" * 65536
    with (directory / "filler").open("wb", buffering=0) as out:
        while True:
            try:
                out.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        with contextlib.suppress(OSError):  # the last few bytes, if a page is half used
            while out.write(b"\0"):
                pass


@pytest.mark.sqlite_only("a SQLite file on a full tmpfs")
async def test_sigterm_on_a_full_disk_logs_the_failed_checkpoint_and_exits_0(small_disk):
    db = small_disk / "agora.db"
    server = AgoraProcess("--db", str(db), "--toolsets", "chess")
    server.start()
    try:
        with trio.fail_after(TIMEOUT):
            async with connect(f"{server.url}/mcp/chess") as client:  # a committed write
                joined = await client.call_tool("join_game")
                assert not joined.get("isError"), joined
            fill(small_disk)
            server.signal()
            status = await server.wait_exit()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    server.assert_clean_exit(status)
    assert "final checkpoint" in server.log, server.log
    (small_disk / "filler").unlink()
    with contextlib.closing(sqlite3.connect(db)) as conn:  # replays the WAL
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
