"""At shutdown, a WebSocket call whose write still waits for its commit gets its answer.

An embedding developer's finding (``grace_seconds = 0`` under load): the log said the calls
whose writes wait for their commit "answer once it comes", but the WebSocket connections
were closed (1001) first, so a client whose write was then saved never heard so. The
connections now stay open until those writes have their outcome (`App.settle_commits`).
"""

from __future__ import annotations

import sqlite3

import pytest
import trio
from e2e_mcp import INITIALIZE, INITIALIZED
from e2e_websocket import RawWebSocket
from http_support import serve

TIMEOUT = 30
ENTRY = {
    "provider_claim": "acme-labs",
    "model_claim": "acme large 2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_a_websocket_call_whose_write_commits_after_the_grace_gets_its_result(tmp_path):
    path = tmp_path / "agora.db"
    replies: list[dict] = []

    async def enter(port: int) -> None:
        async with RawWebSocket.open(port, "/mcp/chamber") as ws:
            await ws.send_json(INITIALIZE)
            await ws.recv_json()
            await ws.send_json(INITIALIZED)
            params = {"name": "enter_open_challenge", "arguments": ENTRY}
            await ws.send_json(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            )
            replies.append(await ws.recv_json())

    async def release(after: float) -> None:
        await trio.sleep(after)
        other.execute("ROLLBACK")

    config = {"db": str(path), "grace_seconds": 0, "commit_timeout": 5.0}
    config["writer_process"] = False  # a child would outlive the test by its stuck BEGIN
    other = sqlite3.connect(path, isolation_level=None)
    try:
        with trio.fail_after(TIMEOUT):
            async with (
                trio.open_nursery() as nursery,
                serve(toolsets=["chamber"], **config) as server,
            ):
                other.execute("BEGIN EXCLUSIVE")  # another process writes: the entry waits
                nursery.start_soon(enter, server.port)
                while server.app.in_flight == 0:  # noqa: ASYNC110 - counted, as a call is
                    await trio.sleep(0.01)
                await trio.sleep(0.1)  # on to its commit, which waits for the lock
                nursery.start_soon(release, 1.0)  # past the grace, within commit_timeout
    finally:
        other.close()
    assert len(replies) == 1, "the call got no answer"
    assert replies[0]["result"]["structuredContent"]["ok"] is True, replies[0]
    stored = sqlite3.connect(path).execute("SELECT count(*) FROM chamber_attempts").fetchone()
    assert stored == (1,), stored
