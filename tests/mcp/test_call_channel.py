"""A tool call's way back to its client (`agora.server.channel.ChannelCall`).

Through the real session driver (`Connection`) with an in-process client: the call's
``progress``, ``log``, ``close_stream`` and ``resource_updated`` reach the client on the
call's stream, and a call holds neither its channel nor any of them as bound methods until
a handler asks (a burst of parked calls keeps that many objects fewer for the cyclic
collector to scan).
"""

from __future__ import annotations

import gc
import types
from typing import Any

import trio

from agora.config import Config
from agora.server.channel import ClientChannel
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

TOOL = {"name": "chatty", "description": "Talks back.", "inputSchema": {"type": "object"}}


async def test_a_call_reaches_its_client_through_its_channel_and_holds_no_bound_methods():
    seen: dict[str, Any] = {}

    async def chatty(call: ToolCall) -> dict[str, Any]:
        held = gc.get_referents(call)
        seen["bound"] = [r for r in held if isinstance(r, (types.MethodType, ClientChannel))]
        seen["names"] = [
            n for n in ("progress", "log", "close_stream") if callable(getattr(call, n))
        ]
        await call.progress(1, 2, "half way")
        await call.log("error", "loud enough for any level")
        call.close_stream()  # no resumable stream here: a no-op
        await call.resource_updated("chatty://nothing")  # nobody subscribed: nothing sent
        seen["one channel"] = call.client is call.client and "tools" not in call.client.capabilities
        try:
            call.no_such_field  # noqa: B018 - only the four channel fields come from it
        except AttributeError:
            seen["refused"] = True
        return {"ok": True}

    sets = [Toolset("talk", {"chatty": chatty}, contract=None, tools=[TOOL])]
    with trio.fail_after(20):
        async with (
            open_server(Config(db=":memory:"), toolsets=sets, listen=False) as server,
            server.client() as client,
        ):
            await client.initialize()
            params = {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "t"}}
            reply = await client.request("tools/call", params)
    assert reply["result"]["structuredContent"] == {"ok": True}
    names = ["progress", "log", "close_stream"]
    assert seen == {"bound": [], "names": names, "one channel": True, "refused": True}
    methods = [n["method"] for n in client.notifications]
    assert methods == ["notifications/progress", "notifications/message"]
    progress = client.notifications[0]["params"]
    assert progress == {"progressToken": "t", "progress": 1, "total": 2, "message": "half way"}
