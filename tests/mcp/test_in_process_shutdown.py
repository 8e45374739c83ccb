"""An embedded server's shutdown ends an in-process client's calls as it ends a network one's.

`Server.client` runs its calls in the client's own block, not the server's: leaving the
server's block must still give them ``grace_seconds``, then cancel them and answer each with
JSON-RPC -32603 before the database closes, never let a handler run on past the server.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp.jsonrpc import INTERNAL_ERROR
from agora.server.embed import open_server, serve
from agora.server.inprocess import CallError
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
    assert "the server shut down before this call answered" in reply["error"]["message"]


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


async def test_a_cancellation_with_a_call_in_flight_leaves_the_client_block_as_itself():
    """Embedder's finding: the README says a cancellation reaches the caller's scope as the
    `Cancelled` it is, but with a call in flight the client block raised it inside an
    ExceptionGroup (the call's own Cancelled from the block's nursery), which
    ``except trio.Cancelled`` misses."""
    began = trio.Event()

    async def slow(call: ToolCall) -> dict[str, Any]:
        began.set()
        await trio.sleep(30)
        return {}

    sets = [Toolset("slowpoke", {"slow": slow}, contract=None, tools=[TOOL])]
    caught: list[BaseException] = []
    config = Config(db=":memory:")
    with trio.fail_after(20):
        async with (
            open_server(config, toolsets=sets, listen=False) as server,
            trio.open_nursery() as host,
        ):
            with trio.CancelScope() as scope:

                async def cancel_once_parked() -> None:  # the host's own deadline, say
                    await began.wait()
                    scope.cancel()

                host.start_soon(cancel_once_parked)
                try:
                    async with server.client() as client:
                        await client.initialize()
                        await client.request("tools/call", {"name": "slow"})
                except trio.Cancelled as exc:
                    caught.append(exc)
                    raise
    assert scope.cancelled_caught
    assert [type(exc) for exc in caught] == [trio.Cancelled]


async def test_serve_started_in_a_nursery_serves_the_programs_own_toolsets():
    """Embedder's finding: `agora.serve`, the README's way to run agora under a cancel scope,
    took no toolsets: a program's own toolset could only be served by `open_server`."""

    async def ping(call: ToolCall) -> dict[str, Any]:
        return {"pong": True}

    tool = {"name": "ping_me", "description": "Answers.", "inputSchema": {"type": "object"}}
    sets = [Toolset("mine", {"ping_me": ping}, contract=None, tools=[tool])]
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(
                functools.partial(serve, Config(db=":memory:", port=0), toolsets=sets)
            )
            async with server.client("/mcp/mine") as client:
                await client.initialize()
                result = await client.call_tool("ping_me")
            nursery.cancel_scope.cancel()
    assert result["structuredContent"] == {"pong": True}


async def test_an_in_process_call_tool_error_keeps_its_code_and_data():
    """Embedder's finding: call_tool raised a bare RuntimeError("-32603: internal error"),
    dropping the error's data and with it the correlation_id of the server's log line."""

    async def broken(call: ToolCall) -> dict[str, Any]:
        raise ZeroDivisionError("a bug")

    tool = {"name": "broken", "description": "Fails.", "inputSchema": {"type": "object"}}
    sets = [Toolset("mine", {"broken": broken}, contract=None, tools=[tool])]
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server,
            server.client("/mcp/mine") as client,
        ):
            await client.initialize()
            with pytest.raises(CallError) as info:
                await client.call_tool("broken")
    assert isinstance(info.value, RuntimeError)  # what call_tool raised before
    assert info.value.code == INTERNAL_ERROR
    assert info.value.data["correlation_id"].startswith("corr-")
    assert info.value.data["correlation_id"] in str(info.value)


async def test_every_tool_of_the_aggregate_endpoint_is_on_its_first_page():
    """Embedder's finding: /mcp served 59 built-in tools in pages of 50, and the official SDK
    client, which lists only the first page to check a result against its outputSchema,
    could not check the last nine (nor a program's own toolset, listed after them)."""
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), listen=False) as server,
            server.client("/mcp") as client,
        ):
            await client.initialize()
            listed = (await client.request("tools/list"))["result"]
    assert "nextCursor" not in listed
    assert len(listed["tools"]) == len({t["name"] for t in listed["tools"]}) > 50
