"""A call always gets a reply, even one whose reply cannot be sent as it was built.

The transports encode a message as they send it, so a reply built fine may still hold a value
no JSON can hold (a `ToolError` body given with a text of its own, which is never encoded
before). Over real sockets, on both paths a call takes (a POST's call runs in the POST's
task; a WebSocket's in a call worker), the client gets JSON-RPC -32603 with a correlation id
that names the one log line with the traceback, not a dropped connection or no answer at all.
"""

from __future__ import annotations

import logging
from typing import Any

import trio
from _ws_peer import WsPeer
from http_support import RawHttp, call, open_session

from agora.config import Config
from agora.errors import ToolError
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

TIMEOUT = 15


class Opaque:
    """A value no JSON encoder knows."""


async def refuse(call: ToolCall) -> dict[str, Any]:
    raise ToolError({"ok": False, "why": Opaque()}, text="refused")


async def fine(call: ToolCall) -> dict[str, Any]:
    return {"ok": True}


def toolset() -> Toolset:
    tools = [
        {"name": name, "description": name, "inputSchema": {"type": "object"}}
        for name in ("refuse", "fine")
    ]
    return Toolset("probe", {"refuse": refuse, "fine": fine}, contract=None, tools=tools)


def check(reply: dict[str, Any], caplog: Any) -> None:
    assert reply["error"]["code"] == rpc.INTERNAL_ERROR
    correlation = reply["error"]["data"]["correlation_id"]
    (logged,) = [r for r in caplog.records if correlation in r.getMessage()]
    assert logged.levelname == "ERROR"
    assert logged.exc_info is not None
    assert "tool refuse" in logged.getMessage()


async def test_an_unsendable_reply_over_http_is_answered_32603(caplog):
    caplog.set_level(logging.WARNING)
    config = Config(host="127.0.0.1", port=0, db=":memory:")
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[toolset()]) as server,
            RawHttp.open(server.port) as client,
        ):
            session = await open_session(client)
            reply = await client.request("POST", "/mcp/probe", call("refuse"), session)
            assert reply.status == 200
            check(reply.json(), caplog)
            after = await client.request("POST", "/mcp/probe", call("fine", 2), session)
            assert after.json()["result"]["structuredContent"] == {"ok": True}


async def test_an_unsendable_reply_over_websocket_is_answered_32603(caplog):
    caplog.set_level(logging.WARNING)
    config = Config(db=":memory:", port=0, ping_interval=0)
    with trio.fail_after(TIMEOUT):
        async with (
            open_server(config, toolsets=[toolset()]) as server,
            WsPeer.open(server.port, "/mcp/probe") as peer,
        ):
            init = {"protocolVersion": "2025-11-25", "capabilities": {}}
            await peer.send_json(rpc.request(0, "initialize", init))
            assert (await peer.recv_json())["id"] == 0
            await peer.send_json(call("refuse"))
            check(await peer.recv_json(), caplog)
            await peer.send_json(call("fine", 2))
            assert (await peer.recv_json())["result"]["structuredContent"] == {"ok": True}
