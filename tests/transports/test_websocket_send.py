"""WebSocket sends against a real server and a real socket: frames are never interleaved.

A peer that stops reading fills the kernel's buffers, so the server's send of a large
message stops part-way through its frame. Cancelling that call then must not let the next
frame start inside the first one: the stream, read by wsproto, must parse.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from _ws_peer import WsPeer

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

TIMEOUT = 15
#: Larger than the server's send buffer and the client's receive buffer together.
LOUD = 8 * 1024 * 1024


def loud_toolset(started: trio.Event) -> Toolset:
    """One tool that logs a message of LOUD bytes, then waits to be cancelled."""

    async def shout(call: ToolCall) -> dict[str, Any]:
        started.set()
        await call.log("info", "x" * LOUD)
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    tool = {"name": "shout", "description": "log a lot", "inputSchema": {"type": "object"}}
    return Toolset(name="loud", contract=None, tools=[tool], handlers={"shout": shout})


async def test_a_send_cancelled_mid_frame_finishes_its_frame_before_the_next():
    started = trio.Event()
    config = Config(db=":memory:", port=0, ping_interval=0)
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[loud_toolset(started)]) as server,
            WsPeer.open(server.port, "/mcp/loud", receive_buffer=4096) as peer,
        ):
            await peer.send_json(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
                }
            )
            assert (await peer.recv_json())["id"] == 0
            call = {"name": "shout", "arguments": {}}
            request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            await peer.send_json(request)
            await started.wait()
            # Every task is parked: the call's send waits for room, its frame begun.
            await trio.testing.wait_all_tasks_blocked()
            cancel = {"requestId": 1, "reason": "enough"}
            await peer.send_json(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            await peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            await trio.testing.wait_all_tasks_blocked()
            logged = await peer.recv_json()
            assert logged["method"] == "notifications/message"
            assert len(logged["params"]["data"]) == LOUD
            assert await peer.recv_json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
