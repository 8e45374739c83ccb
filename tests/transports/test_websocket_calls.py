"""A WebSocket's calls run in the server's nursery, not one per connection.

So the connection must not let go of its socket while a cancelled call of its own is still
ending: it could write after the close, or into the socket that reuses the descriptor.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from _ws_peer import WsPeer
from wsproto.events import CloseConnection

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

TIMEOUT = 15
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
}


def call(rid: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name}}


class Slow:
    """A tool that parks, and when cancelled takes until `release` to clean up."""

    def __init__(self) -> None:
        self.parked = trio.Event()
        self.cancelled = trio.Event()
        self.release = trio.Event()

    async def park(self, call: ToolCall) -> dict[str, Any]:
        try:
            self.parked.set()
            await trio.sleep_forever()
        finally:
            self.cancelled.set()
            with trio.CancelScope(shield=True):
                await self.release.wait()
        raise AssertionError("unreachable")


def toolset(slow: Slow) -> Toolset:
    tools = [{"name": "park", "description": "park", "inputSchema": {"type": "object"}}]
    handlers = {"park": slow.park}
    return Toolset(name="calls", contract=None, tools=tools, handlers=handlers)


async def test_the_close_answer_waits_until_the_connections_calls_have_ended():
    slow = Slow()
    config = Config(db=":memory:", port=0, ping_interval=0)
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[toolset(slow)]) as server,
            WsPeer.open(server.port, "/mcp/calls") as peer,
        ):
            await peer.send_json(INITIALIZE)
            assert (await peer.recv_json())["id"] == 0
            await peer.send_json(call(1, "park"))
            await slow.parked.wait()
            await peer.stream.send_all(peer.ws.send(CloseConnection(code=1000)))
            await slow.cancelled.wait()
            await trio.testing.wait_all_tasks_blocked()
            # The call is still cleaning up: the server has not answered the close yet.
            try:
                with trio.move_on_after(0.2) as early:
                    await peer.next_event()
                assert early.cancelled_caught
            finally:
                slow.release.set()
            event = await peer.next_event()
            assert isinstance(event, CloseConnection)
            assert event.code == 1000
