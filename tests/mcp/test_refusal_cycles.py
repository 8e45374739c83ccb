"""A tool's refusal (`ToolError`) leaves no reference cycle behind once answered. `agora
serve` freezes whatever survives a collection (`agora.server.heap`), so a cycle per refusal
in flight at a collection stayed in memory until the next thaw, minutes later."""

from __future__ import annotations

import gc
from typing import Any

import trio

from agora.config import Config
from agora.errors import ToolError
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset


async def refuse(call: ToolCall) -> dict[str, Any]:
    raise ToolError({"ok": False, "code": "refused"}, text="refused")


def _toolset() -> Toolset:
    tool = {"name": "no_refuse", "description": "Refuses.", "inputSchema": {"type": "object"}}
    return Toolset("no", {"no_refuse": refuse}, contract=None, tools=[tool])


async def test_an_answered_refusal_leaves_no_cycle_for_the_collector():
    config = Config(db=":memory:")
    with trio.fail_after(20):
        async with (
            open_server(config, toolsets=[_toolset()], listen=False) as server,
            server.client() as client,
        ):
            await client.initialize()
            await client.request("tools/call", {"name": "no_refuse", "arguments": {}})
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                for _ in range(10):
                    reply = await client.request(
                        "tools/call", {"name": "no_refuse", "arguments": {}}
                    )
                    assert reply["result"]["isError"] is True
                gc.collect()
                left = {type(o).__qualname__ for o in gc.garbage}
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
    assert not left & {"ToolError", "traceback"}
