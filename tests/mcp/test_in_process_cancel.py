"""Cancelling an in-process call cancels it at the server, as an MCP client's
``notifications/cancelled`` does (embedder's finding).

A host that gave up on ``await client.call_tool(...)`` (its own timeout) left the handler
running in the client block's nursery: it kept its ``max_in_flight`` slot (past that many
timeouts every call was refused -32010) and its late reply was filed in
``client.notifications``. A ``notifications/cancelled`` sent by hand cancelled the handler
but left ``call_tool`` waiting for ever. And a tool's request to the client (elicitation)
could be neither enabled nor answered: `initialize` declared no capability, and nothing answered
the request filed in ``notifications``.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server
from agora.server.inprocess import CallCancelled, CallError
from agora.toolsets.base import ToolCall, Toolset

TOOL = {"name": "slow", "description": "Takes its time.", "inputSchema": {"type": "object"}}


class Slow:
    """A tool that sleeps ``seconds`` (an argument; 30 by default), noting each call's fate."""

    def __init__(self) -> None:
        self.began = 0
        self.cancelled = 0
        self.finished = 0

    async def __call__(self, call: ToolCall) -> dict[str, Any]:
        self.began += 1
        try:
            await trio.sleep(call.args.get("seconds", 30))
        except trio.Cancelled:
            self.cancelled += 1
            raise
        self.finished += 1
        return {"slept": True}


def _toolset(tool: Slow) -> Toolset:
    return Toolset("slowpoke", {"slow": tool}, contract=None, tools=[TOOL])


async def test_the_hosts_timeout_cancels_the_call_and_frees_its_slot():
    tool = Slow()
    config = Config(db=":memory:", max_in_flight=2)
    with trio.fail_after(20):
        async with (
            open_server(config, toolsets=[_toolset(tool)], listen=False) as server,
            server.client("/mcp/slowpoke") as client,
        ):
            await client.initialize()
            for _ in range(5):  # more timeouts than the cap of calls in flight
                with trio.move_on_after(0.05) as scope:
                    await client.call_tool("slow", {"seconds": 0.3})
                assert scope.cancelled_caught
            result = await client.call_tool("slow", {"seconds": 0})  # not refused -32010
            await trio.sleep(0.5)  # past the time a handler left running would answer
            notifications = list(client.notifications)
    assert result["structuredContent"] == {"slept": True}
    assert (tool.began, tool.cancelled, tool.finished) == (6, 5, 1)
    assert notifications == []  # no late reply filed as a notification


async def test_a_cancelled_notification_ends_the_wait_with_call_cancelled():
    tool = Slow()
    caught: list[BaseException] = []
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=[_toolset(tool)], listen=False) as server,
            server.client("/mcp/slowpoke") as client,
        ):
            await client.initialize()

            async def call() -> None:
                with pytest.raises(CallCancelled) as info:
                    await client.call_tool("slow")
                caught.append(info.value)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                while not tool.began:  # noqa: ASYNC110 - the handler's own record
                    await trio.sleep(0.01)
                await client.notify("notifications/cancelled", {"requestId": 2, "reason": "x"})
            notifications = list(client.notifications)
    [error] = caught
    assert isinstance(error, CallError)
    assert (error.code, error.data) == (rpc.REQUEST_CANCELLED, {"requestId": 2})
    assert tool.cancelled == 1
    assert notifications == []


async def test_a_call_cancelled_by_the_request_id_its_caller_chose():
    """A tester's finding: README's recipe, ``client.notify("notifications/cancelled",
    {"requestId": id})``, needed the id of a call in flight, which nothing exposed (a private
    counter's). The caller now chooses it, ``call_tool(..., request_id=...)``; the client's
    own ids go on around it, and an id of a call still waiting is refused."""
    tool = Slow()
    caught: list[CallCancelled] = []
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=[_toolset(tool)], listen=False) as server,
            server.client("/mcp/slowpoke") as client,
        ):
            await client.initialize()  # id 1
            first = await client.call_tool("slow", {"seconds": 0})  # id 2

            async def call(rid: str | int) -> None:
                with pytest.raises(CallCancelled) as info:
                    await client.call_tool("slow", request_id=rid)
                caught.append(info.value)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "slow-1")
                nursery.start_soon(call, 3)  # the id the client's counter would give next
                while tool.began < 3:  # noqa: ASYNC110 - the handler's own record
                    await trio.sleep(0.01)
                with pytest.raises(ValueError, match="'slow-1' is that of a call still waiting"):
                    await client.call_tool("slow", request_id="slow-1")
                done = await client.call_tool("slow", {"seconds": 0})  # its own id: 4, not 3
                await client.notify("notifications/cancelled", {"requestId": "slow-1"})
                await client.notify("notifications/cancelled", {"requestId": 3})
            notifications = list(client.notifications)
    assert first["structuredContent"] == done["structuredContent"] == {"slept": True}
    assert sorted((e.code, str(e.data["requestId"])) for e in caught) == [
        (rpc.REQUEST_CANCELLED, "3"),
        (rpc.REQUEST_CANCELLED, "slow-1"),
    ]
    assert (tool.began, tool.cancelled, tool.finished) == (4, 2, 2)
    assert notifications == []


ASK = {
    "message": "Delete the list?",
    "requestedSchema": {"type": "object", "properties": {"yes": {"type": "boolean"}}},
}


async def confirm(call: ToolCall) -> dict[str, Any]:
    if call.client.missing("elicitation/create", ASK):
        return {"asked": False}
    return {"asked": True, "answer": await call.client.request("elicitation/create", ASK)}


async def test_the_host_answers_a_tools_request_to_the_client_with_respond():
    """Embedder's finding: the in-process client could neither declare a capability in
    `initialize` nor answer the server's request, which waited in ``notifications``."""
    tool = {"name": "confirm", "description": "Asks.", "inputSchema": {"type": "object"}}
    sets = [Toolset("el", {"confirm": confirm}, contract=None, tools=[tool])]
    results: list[dict[str, Any]] = []
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server,
            server.client("/mcp/el") as plain,
            server.client("/mcp/el") as client,
        ):
            await plain.initialize()
            unasked = await plain.call_tool("confirm")
            await client.initialize(capabilities={"elicitation": {}})

            async def call() -> None:
                results.append(await client.call_tool("confirm"))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                while not client.notifications:  # noqa: ASYNC110 - the client's own list
                    await trio.sleep(0.01)
                [asked] = client.notifications
                assert asked["method"] == "elicitation/create"
                await client.respond(asked["id"], {"action": "accept", "content": {"yes": True}})
    assert unasked["structuredContent"] == {"asked": False}  # no capability declared
    answer = {"action": "accept", "content": {"yes": True}}
    assert [r["structuredContent"] for r in results] == [{"asked": True, "answer": answer}]
