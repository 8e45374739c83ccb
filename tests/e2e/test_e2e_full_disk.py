"""``agora serve`` on a full disk: SIGTERM still exits 0, and no committed write is lost.

The database lives on a small tmpfs mounted for the test, filled to the last byte while the
server runs, so the final WAL checkpoint at shutdown fails for real (SQLITE_FULL). Mounting
needs root: elsewhere the test skips with one "needs:" line (and fails under CI=true).
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest
import trio
from e2e_process import AgoraProcess

from agora.client import connect
from disks import fill

TIMEOUT = 30


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
