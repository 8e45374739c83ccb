"""An embedded server's shutdown ends an in-process client's calls as it ends a network one's.

`Server.client` runs its calls in the client's own block, not the server's: leaving the
server's block must still give them ``grace_seconds``, then cancel them and answer each with
JSON-RPC -32603 before the database closes, never let a handler run on past the server.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp.jsonrpc import INTERNAL_ERROR
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

TOOL = {"name": "slow", "description": "Takes its time.", "inputSchema": {"type": "object"}}


async def test_a_call_still_running_at_the_end_of_grace_is_cancelled_and_answered():
    seen: dict[str, Any] = {}

    async def slow(call: ToolCall) -> dict[str, Any]:
        seen["began"] = trio.current_time()
        try:
            await trio.sleep(30)
        except trio.Cancelled:
            seen["cancelled"] = trio.current_time()
            raise
        seen["ran on"] = True
        return {"ok": True}

    sets = [Toolset("slowpoke", {"slow": slow}, contract=None, tools=[TOOL])]
    config = Config(db=":memory:", grace_seconds=1, linger_seconds=0)
    replies: list[dict[str, Any]] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            async with open_server(config, toolsets=sets, listen=False) as server:

                async def agent() -> None:  # a task of the host program, not the server's
                    async with server.client() as client:
                        await client.initialize()
                        replies.append(await client.request("tools/call", {"name": "slow"}))

                nursery.start_soon(agent)
                while "began" not in seen:  # noqa: ASYNC110 - the handler's own record
                    await trio.sleep(0.01)
                began_closing = trio.current_time()
            left = trio.current_time()
    assert "ran on" not in seen
    # It had its grace, and was cut before the server's block was left.
    assert began_closing + 1 <= seen["cancelled"] <= left
    [reply] = replies
    assert reply["error"]["code"] == INTERNAL_ERROR, reply
    assert "shutting down" in reply["error"]["message"]


async def test_an_error_raised_in_the_block_leaves_it_as_itself_after_the_shutdown():
    async def slow(call: ToolCall) -> dict[str, Any]:
        return {}

    sets = [Toolset("slowpoke", {"slow": slow}, contract=None, tools=[TOOL])]
    seen: list[Any] = []

    async def host_program() -> None:
        async with open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server:
            seen.append(server.runtime)
            raise ValueError("the host's own")

    with trio.fail_after(20), pytest.raises(ValueError, match="the host's own") as info:
        await host_program()
    assert type(info.value) is ValueError  # not an ExceptionGroup around it
    assert seen[0].closing  # raised once the server had shut down
