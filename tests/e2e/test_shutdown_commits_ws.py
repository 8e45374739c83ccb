"""At shutdown, a WebSocket call whose write still waits for its commit gets its answer.

An embedding developer's finding (``grace_seconds = 0`` under load): the log said the calls
whose writes wait for their commit "answer once it comes", but the WebSocket connections
were closed (1001) first, so a client whose write was then saved never heard so. The
connections now stay open until those writes have their outcome (`App.settle_commits`).
"""

from __future__ import annotations

import pytest
from e2e_mcp import INITIALIZE, INITIALIZED
from e2e_websocket import RawWebSocket
from locked_writes import ENTRY, entries_stored, shut_down_while_locked


@pytest.mark.sqlite_only("a second SQLite connection holding BEGIN EXCLUSIVE is another process")
async def test_a_websocket_call_whose_write_commits_after_the_grace_gets_its_result(tmp_path):
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

    db = tmp_path / "agora.db"
    await shut_down_while_locked(db, enter, commit_timeout=5.0, release_after=1.0, grace=0)
    assert len(replies) == 1, "the call got no answer"
    assert replies[0]["result"]["structuredContent"]["ok"] is True, replies[0]
    assert entries_stored(db) == 1
