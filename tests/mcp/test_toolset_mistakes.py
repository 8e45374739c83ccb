"""A toolset author's mistakes are refused at start-up, by name, before the store opens.

An embedding program hands `open_server` its own toolsets; a mistake in one (a tool without
a handler, an inputSchema that cannot be compiled or is missing) must fail the ``async
with`` at once with one plain `ValueError` that names the toolset and the tool, not an
exception group raised from inside the server's nurseries after the database was created
and migrated. A name served twice (a tool one toolset lists twice, two toolsets with one
name) is refused the same way: tools/list would list the tool twice, and ``/mcp/<name>``
would serve only one of the two toolsets. A handler that returns something other than a
dict gets an internal error that names what it returned, never a result whose
structuredContent is not an object.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.base import ToolCall, Toolset

if TYPE_CHECKING:
    from pathlib import Path


async def ok(call: ToolCall) -> dict[str, Any]:
    return {"ok": True}


def spec(name: str, schema: Any = None) -> dict[str, Any]:
    """A tools/list entry; ``schema`` None leaves the inputSchema out."""
    entry: dict[str, Any] = {"name": name, "description": "a tool"}
    if schema is not None:
        entry["inputSchema"] = schema
    return entry


OBJECT = {"type": "object"}


@pytest.mark.parametrize(
    ("toolset", "message"),
    [
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT), spec("b", OBJECT)]),
            "toolset mine has no handler for tool 'b'",
            id="missing-handler",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", {"type": "objekt"})]),
            "toolset mine: tool 'a' has an inputSchema that cannot be compiled",
            id="uncompilable-schema",
        ),
        pytest.param(
            Toolset("mine", {"a": ok}, contract=None, tools=[spec("a")]),
            "toolset mine: tool 'a' has no inputSchema",
            id="missing-schema",
        ),
    ],
)
async def test_a_broken_toolset_is_refused_by_name_before_the_store_opens(
    tmp_path: Path, toolset: Toolset, message: str
) -> None:
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError, match=message):
        async with open_server(Config(db=str(db)), toolsets=[toolset], listen=False):
            pytest.fail("the server started with a broken toolset")
    assert not db.exists()


@pytest.mark.parametrize(
    ("toolsets", "message"),
    [
        pytest.param(
            [Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT)] * 2)],
            "toolset mine lists tool 'a' twice",
            id="one-tool-twice",
        ),
        pytest.param(
            [
                Toolset("mine", {"a": ok}, contract=None, tools=[spec("a", OBJECT)]),
                Toolset("mine", {"b": ok}, contract=None, tools=[spec("b", OBJECT)]),
            ],
            "two toolsets are named 'mine'",
            id="one-name-twice",
        ),
    ],
)
async def test_a_name_served_twice_is_refused(
    tmp_path: Path, toolsets: list[Toolset], message: str
) -> None:
    db = tmp_path / "embedded.db"
    with pytest.raises(ValueError, match=message):
        async with open_server(Config(db=str(db)), toolsets=toolsets, listen=False):
            pytest.fail("the server started serving a name twice")
    assert not db.exists()


@pytest.mark.filterwarnings("ignore:Async generator .* was garbage collected:ResourceWarning")
@pytest.mark.parametrize(
    "returned", [pytest.param([1, 2], id="list"), pytest.param(None, id="none")]
)
async def test_a_handler_that_returns_no_dict_fails_naming_what_it_returned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, returned: Any
) -> None:
    mcp = pytest.importorskip(
        "mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')"
    )

    async def wrong(call: ToolCall) -> Any:
        return returned

    mine = Toolset("mine", {"wrong": wrong}, contract=None, tools=[spec("wrong", OBJECT)])
    config = Config(port=0, db=str(tmp_path / "embedded.db"))
    with trio.fail_after(30):
        async with (
            open_server(config, toolsets=[mine]) as server,
            mcp.Client(f"{server.url}/mcp/mine", read_timeout_seconds=30) as client,
        ):
            with pytest.raises(mcp.MCPError, match="internal error"):
                await client.call_tool("wrong", {})
    failed = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert f"not {type(returned).__name__}" in str(failed[0].exc_info[1])
