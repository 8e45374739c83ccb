"""Slips in a toolset defined in code are refused at start, saying what to do.

A handler keyed by a name none of the toolset's tools has (a misspelt tool name) was
accepted in silence: it was never called, and its tool either had another handler or was
refused as having none, with no word of the misspelt key. Forgetting ``contract=None`` said
only that no contract named after the toolset is packaged. Both now name the toolset, and
the first the key and the closest tool name, the second the ``contract=None`` it lacks;
neither creates the database. So is a name no endpoint path can carry (``my/notes`` was
served at no path, ``""`` at ``/mcp/``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import Toolset

if TYPE_CHECKING:
    from pathlib import Path


async def ok(call: Any) -> dict[str, Any]:
    return {}


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": "d", "inputSchema": {"type": "object"}}


async def refused(tmp_path: Path, toolset: Toolset) -> str:
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError) as caught:  # noqa: PT011 - the message is asserted below
        async with open_server(Config(db=str(db)), toolsets=[toolset], listen=False):
            pytest.fail("the server started with the slip")
    assert not db.exists()
    return str(caught.value)


async def test_a_handler_no_tool_is_named_after_is_refused_with_the_closest_name(tmp_path):
    toolset = Toolset(
        "mine",
        {"notes_add": ok, "notes_list": ok, "notes_lst": ok},
        contract=None,
        tools=[tool("notes_add"), tool("notes_list")],
    )
    message = await refused(tmp_path, toolset)
    assert message.startswith(
        "toolset mine has a handler keyed 'notes_lst', which none of its tools is named;"
        " did you mean 'notes_list'?"
    )


async def test_a_misspelt_key_is_named_rather_than_the_tool_it_leaves_without_a_handler(
    tmp_path,
):
    toolset = Toolset("mine", {"typo_t": ok}, contract=None, tools=[tool("t")])
    message = await refused(tmp_path, toolset)
    assert "handler keyed 'typo_t'" in message
    assert "did you mean 't'?" in message


async def test_a_toolset_in_code_without_contract_none_is_told_to_set_it(tmp_path):
    toolset = Toolset("mine", {"t": ok}, tools=[tool("t")])  # contract defaults to its name
    message = await refused(tmp_path, toolset)
    assert message.startswith("toolset mine: no contract named 'mine' is packaged; ")
    assert "`contract=None`" in message


@pytest.mark.parametrize(
    "name", ["my/notes", "Notes X", "", "n" * 65], ids=lambda n: n[:8] or "empty"
)
async def test_a_name_no_endpoint_path_can_carry_is_refused(tmp_path: Path, name: str) -> None:
    toolset = Toolset(name, {"a": ok}, contract=None, tools=[tool("a")])
    message = await refused(tmp_path, toolset)
    assert message.startswith(f"toolset name {name!r} cannot be its endpoint's path segment")


@pytest.mark.parametrize(
    "name",
    ["", "my tool", "notes/add", "n" * 129, "nötes"],
    ids=["empty", "space", "slash", "too-long", "non-ascii"],
)
async def test_a_tool_name_mcp_does_not_allow_is_refused(tmp_path: Path, name: str) -> None:
    """A tool named "" or "my tool" was served and listed; MCP allows 1-128 of
    [A-Za-z0-9_.-], and clients may refuse the rest."""
    toolset = Toolset("mine", {name: ok}, contract=None, tools=[tool(name)])
    message = await refused(tmp_path, toolset)
    assert message.startswith(f"toolset mine: tool name {name!r} is not one MCP allows")


async def test_the_longest_tool_name_mcp_allows_is_served(tmp_path: Path) -> None:
    name = "a.b-C_9" + "n" * 121
    toolset = Toolset("mine", {name: ok}, contract=None, tools=[tool(name)])
    async with (
        open_server(Config(db=str(tmp_path / "e.db")), toolsets=[toolset], listen=False) as s,
        s.client("/mcp/mine") as client,
    ):
        await client.initialize()
        assert "isError" not in await client.call_tool(name)


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        pytest.param(
            {"a": tool("a")},
            "toolset mine: tools must be a list of tools/list entries (dicts with name,"
            " description and inputSchema), not dict; list the dict's values",
            id="dict",
        ),
        pytest.param(
            ["a"],
            "toolset mine: tools[0] must be a tools/list entry (a dict with name, description"
            " and inputSchema), not str",
            id="names",
        ),
        pytest.param(
            [{"description": "d", "inputSchema": {"type": "object"}}],
            "toolset mine: tools[0] has no name (a str)",
            id="unnamed",
        ),
    ],
)
async def test_tools_that_are_no_list_of_named_entries_are_refused_saying_so(
    tmp_path: Path, tools: Any, said: str
) -> None:
    """``tools={"a": {...}}`` failed with "string indices must be integers"."""
    toolset = Toolset("mine", {"a": ok}, contract=None, tools=tools)
    assert await refused(tmp_path, toolset) == said
