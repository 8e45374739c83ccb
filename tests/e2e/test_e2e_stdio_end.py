"""The end of ``agora stdio --db``'s input ends the process promptly, even mid long-poll;
SIGTERM ends the input the same way, the calls in flight answered first. ``agora stdio
--connect`` at the end of its input answers every call in flight too: with the server's reply,
or, past its grace, with an error saying the bridge is closing.

A host that dies (``kill -9``) closes both pipes of the stdio server it started. A long-poll
in flight (``wait_for_turn`` waits up to 55 s) must not keep the process, and the lock it
holds on its database, alive until it times out: a host restarted at once would be refused
the database. End of input wakes the long-poll as a shutdown does, and the process exits.
"""

from __future__ import annotations

import json
import re
import signal
import sqlite3
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
from e2e_mcp import jsonl
from e2e_process import AgoraProcess, read_to_end, stdio_process
from locked_writes import ENTRY

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

#: Well under the 55 s the long-poll below asks for.
TIMEOUT = 30

WAIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "wait_for_turn", "arguments": {"wait_for_human": True, "timeout_ms": 55000}},
}


#: A call that answers at once, sent after `WAIT`.
BOARD = {**WAIT, "id": 2, "params": {"name": "get_board", "arguments": {}}}


@pytest.mark.parametrize(
    "client",
    [
        pytest.param("closes-stdin", id="client-closes-stdin-and-reads-on"),
        pytest.param("dies", id="client-dies"),
    ],
)
async def test_end_of_input_ends_a_parked_long_poll_at_once(tmp_path, client):
    args = ["stdio", "--toolset", "chess", "--db", str(tmp_path / "a.db")]
    with trio.fail_after(TIMEOUT):
        async with stdio_process(args) as process:
            await process.stdin.send_all(jsonl(WAIT))
            if client == "dies":
                await process.stdout.aclose()
            await process.stdin.aclose()
            out = b"" if client == "dies" else await read_to_end(process.stdout)
            status = await process.wait()
            stderr = await read_to_end(process.stderr)
    assert status == 0, stderr
    assert b"Traceback" not in stderr
    if client != "dies":
        (reply,) = [json.loads(line) for line in out.splitlines()]
        assert reply["id"] == 1
        assert not reply["result"].get("isError"), reply


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_sigterm_answers_the_calls_in_flight_before_the_process_ends(tmp_path, signum):
    """SIGTERM used to cancel the session: a parked wait got no reply at all (the host saw
    the process end mid-call). Now the wait answers, marked shutting down, and the process
    ends with stdin still open. SIGHUP (a closed terminal) ended it at once: now the same."""
    args = ["stdio", "--toolset", "chess", "--db", str(tmp_path / "a.db")]
    with trio.fail_after(TIMEOUT):
        async with stdio_process(args) as process:
            await process.stdin.send_all(jsonl(WAIT, BOARD))
            assert b'"id":2' in await process.stdout.receive_some(65536)
            await trio.sleep(0.5)  # the wait parks (it began before get_board answered)
            process.send_signal(signum)
            out = await read_to_end(process.stdout)
            status = await process.wait()
            stderr = await read_to_end(process.stderr)
    assert status == 0, stderr
    assert f" INFO agora.cli: received {signum.name}: shutting down".encode() in stderr
    assert b"Traceback" not in stderr
    (reply,) = [json.loads(line) for line in out.splitlines()]
    assert reply["id"] == 1
    body = reply["result"]["structuredContent"]
    assert (body["statusCode"], body["shuttingDown"]) == ("WAIT_TIMEOUT", True)


@asynccontextmanager
async def bridge_to_seat(tmp_path: Path) -> AsyncIterator[tuple[trio.Process, str]]:
    """``agora stdio --connect`` to the agent seat of a chess server of its own (checked for
    a clean exit afterwards), `WAIT` and `BOARD` sent; the bridge and the seat's token."""
    server = AgoraProcess("--db", str(tmp_path / "a.db"), "--toolsets", "chess")
    server.start()
    try:
        seat = await server.wait_for_log(r"chess: agent endpoint: \S+\?token=")
        token = re.search(r"\?token=(\S+)", seat).group(1)  # type: ignore[union-attr]
        url = f"ws://127.0.0.1:{server.port}/mcp/chess/default?token={token}"
        async with stdio_process(["stdio", "--connect", url]) as process:
            await process.stdin.send_all(jsonl(WAIT, BOARD))
            yield process, token
    finally:
        server.assert_clean_exit(server.stop())


async def _ended(process: trio.Process) -> tuple[list[dict[str, Any]], int, bytes]:
    """The bridge's answers (its stdout to its end), exit status and stderr."""
    out = await read_to_end(process.stdout)
    status = await process.wait()
    stderr = await read_to_end(process.stderr)
    assert b"Traceback" not in stderr
    return [json.loads(line) for line in out.splitlines()], status, stderr


async def test_the_bridge_answers_every_call_in_flight_at_the_end_of_its_input(tmp_path):
    """The bridge used to wait 5 s at the end of its input and exit leaving a parked call
    unanswered: its host saw the process end mid-call, with no answer to act on. Now a call
    answered within the grace gets the server's reply, and one still parked after it gets a
    JSON-RPC error saying the bridge is closing and that the call may or may not have taken
    effect."""
    with trio.fail_after(TIMEOUT):
        async with bridge_to_seat(tmp_path) as (process, token):
            await process.stdin.aclose()
            answers, status, stderr = await _ended(process)
    assert status == 0, stderr
    replies = {r["id"]: r for r in answers}
    assert sorted(replies) == [1, 2], answers  # one answer each, none twice
    assert not replies[2]["result"].get("isError"), replies[2]
    error = replies[1]["error"]
    assert error["code"] == -32000
    assert "bridge is closing" in error["message"]
    assert "may or may not have taken effect" in error["message"]
    assert token not in error["message"]


async def test_sigterm_to_the_bridge_answers_every_call_in_flight(tmp_path):
    """SIGTERM used to cancel ``agora stdio --connect`` at once: a call in flight got no
    answer (its host saw the process end mid-call). Now it ends the input as end of input
    does: the call is answered (here, parked past the grace: an error saying the bridge is
    closing) and the process exits 0 with stdin still open."""
    with trio.fail_after(TIMEOUT):
        async with bridge_to_seat(tmp_path) as (process, _):
            assert b'"id":2' in await process.stdout.receive_some(65536)
            process.send_signal(signal.SIGTERM)
            answers, status, stderr = await _ended(process)
    assert status == 0, stderr
    assert b" INFO agora.cli: received SIGTERM: shutting down" in stderr
    (reply,) = answers
    assert reply["id"] == 1
    assert reply["error"]["code"] == -32000
    assert "bridge is closing" in reply["error"]["message"]


ENTER = {
    "jsonrpc": "2.0",
    "id": 5,
    "method": "tools/call",
    "params": {"name": "enter_open_challenge", "arguments": ENTRY},
}


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_a_write_saved_after_the_grace_is_answered_at_the_end_of_input(tmp_path):
    """A tester's finding: with another process holding the write lock past the grace, a
    call whose write then committed got no reply at all (its nursery was cancelled at the
    grace's end): the client saw the connection close and would repeat a saved write."""
    db = tmp_path / "a.db"
    config = tmp_path / "agora.toml"
    # The grace must end while the entry's write waits for the lock, and be long enough for
    # the entry to reach its write on a busy machine (at 0.3 s, under CI's load, the call
    # was sometimes cut off before it began, and so unanswered as documented).
    config.write_text("grace_seconds = 1\ncommit_timeout = 8\nwriter_process = false\n")
    args = ["stdio", "--toolset", "chamber", "--db", str(db), "--config", str(config)]
    with trio.fail_after(TIMEOUT):
        async with stdio_process(args) as process:
            other = sqlite3.connect(db, isolation_level=None)
            other.execute("BEGIN EXCLUSIVE")  # another process writes: the entry waits
            try:
                await process.stdin.send_all(jsonl(ENTER))
                await trio.sleep(0.3)  # on to its commit
                await process.stdin.aclose()  # the end of input, then the grace passes
                await trio.sleep(3.0)
            finally:
                other.execute("ROLLBACK")
                other.close()
            out = await read_to_end(process.stdout)
            status = await process.wait()
    (reply,) = [json.loads(line) for line in out.splitlines()]
    assert reply["id"] == 5, reply
    assert reply["result"]["structuredContent"]["ok"] is True, reply
    assert status == 0
    stored = sqlite3.connect(db).execute("SELECT count(*) FROM chamber_attempts").fetchone()
    assert stored == (1,)
