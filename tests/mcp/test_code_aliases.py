"""Aliases of a toolset defined in code: answered like their tool, never listed.

`Toolset.aliases` was read only for toolsets served from a contract file (which list their
own); a toolset whose tools are defined in code (``contract=None``) had its aliases refused
as unknown tools. The chamber serves its tools from code (with descriptions the contract
lacks) and must keep answering its contract's aliases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import Toolset

if TYPE_CHECKING:
    from pathlib import Path

    from agora.toolsets.base import ToolCall


async def echo(call: ToolCall) -> dict[str, Any]:
    return {"tool": call.tool}


TOOL = {"name": "notes_add", "description": "Add a note.", "inputSchema": {"type": "object"}}


async def test_an_alias_is_answered_by_its_tools_handler_and_not_listed(tmp_path: Path):
    toolset = Toolset(
        "mine",
        {"notes_add": echo, "add_note": echo},
        contract=None,
        tools=[TOOL],
        aliases={"add_note": "notes_add"},
    )
    with trio.fail_after(20):
        async with (
            open_server(Config(db=str(tmp_path / "a.db")), toolsets=[toolset], listen=False) as s,
            s.client("/mcp/mine") as client,
        ):
            await client.initialize()
            listed = await client.request("tools/list")
            assert [t["name"] for t in listed["result"]["tools"]] == ["notes_add"]
            answered = await client.call_tool("add_note")
            assert "isError" not in answered
            assert answered["structuredContent"] == {"tool": "add_note"}


async def test_an_alias_of_no_tool_is_refused_at_start(tmp_path: Path):
    toolset = Toolset(
        "mine",
        {"notes_add": echo, "add_note": echo},
        contract=None,
        tools=[TOOL],
        aliases={"add_note": "notes_ad"},
    )
    db = tmp_path / "b.db"
    with pytest.raises(ValueError, match="alias 'add_note' names 'notes_ad'"):
        async with open_server(Config(db=str(db)), toolsets=[toolset], listen=False):
            pytest.fail("the server started with the alias")
    assert not db.exists()
