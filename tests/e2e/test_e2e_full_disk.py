"""``agora serve`` on a full disk: SIGTERM still exits 0, and no committed write is lost; the
log tells a full disk once, not once per refused call, and once more when writes resume.

The database lives on a small tmpfs mounted for the test, filled to the last byte while the
server runs, so the final WAL checkpoint at shutdown fails for real (SQLITE_FULL). Mounting
needs root: elsewhere the test skips with one "needs:" line (and fails under CI=true).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3

import pytest
import trio
from chess_page_http import http_json
from e2e_process import STAMP, AgoraProcess

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


@pytest.mark.sqlite_only("a SQLite file on a full tmpfs")
async def test_a_full_disk_is_logged_once_per_episode_and_its_end_once(small_disk):
    """Each refused call used to log two or three lines (the writer's, the entity's at ERROR,
    the call's own); a full disk under load buried the log. Now the episode's start is one
    WARNING and its end one INFO, and the refusals in between still reach their clients as
    before: a tool error and a 503 from the page, both naming the full disk."""
    mcp = pytest.importorskip("mcp")
    server = AgoraProcess("--db", str(small_disk / "agora.db"), "--toolsets", "debate,chess")
    server.start()
    try:
        with trio.fail_after(TIMEOUT):
            async with mcp.Client(f"{server.url}/mcp/debate", read_timeout_seconds=30) as client:
                assert not (await client.call_tool("debate_session_open", {})).is_error
                fill(small_disk)
                for n in range(3):  # through a tool, and through an entity (a page's table)
                    refused = await client.call_tool("debate_session_open", {})
                    assert refused.is_error
                    assert "disk is full" in refused.content[0].text
                    # structured as the other toolsets' (it was text only: an operator's note)
                    body = refused.structured_content
                    assert (body["ok"], body["error"], body["retryable"]) == (
                        False, "internal_error", True
                    ), body  # fmt: skip
                    assert "disk is full" in body["message"], body
                    assert body["message"].count("nothing was changed") == 1, body  # said once
                    assert body["message"].endswith(
                        "call again once the server's disk takes writes again"
                    ), body
                    assert body["correlation_id"].startswith("corr-"), body
                    status, body = await http_json(
                        "POST", f"{server.url}/play/tables", {"name": f"full{n}"}
                    )
                    assert (status, body["cause"], body["retryable"]) == (503, "disk_full", True)
                # What a monitor polls shows it (an operator's finding: nothing did)
                status, health = await http_json("GET", f"{server.url}/healthz")
                assert status == 200, health
                store = health["store"]
                assert store["writes_refused"] == 6, store
                last = store["last_write_error"]
                assert (last["cause"], last["reason"]) == (
                    "disk_full", "the database's disk is full"
                ), last  # fmt: skip
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", last["at"])
                status, ready = await http_json("GET", f"{server.url}/readyz")
                assert (status, ready) == (200, {"ok": True})  # reads only, as documented
                (small_disk / "filler").unlink()
                assert not (await client.call_tool("debate_session_open", {})).is_error
            status = server.stop()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    server.assert_clean_exit(status)
    told = [line for line in server.log.splitlines() if STAMP.match(line)]
    loud = [line for line in told if re.search(r" (WARNING|ERROR) ", line)]
    assert len(loud) == 1, "\n".join(told)
    assert "disk is full" in loud[0]
    back = [line for line in told if "succeed again" in line]
    assert len(back) == 1, "\n".join(told)
    assert " INFO " in back[0]
    assert "6 writes refused" in back[0]
