"""A call to a tool this endpoint does not serve says where it is, or what was meant.

A tester pointed at ``/mcp/router`` called ``move_piece`` and read only ``unknown tool:
move_piece``; an agent on the wrong endpoint is now told which toolset has the tool and
where it is served, and a misspelt name gets the closest tool of the endpoint.
"""

from __future__ import annotations

import pytest
import trio

from agora.config import Config
from agora.mcp import jsonrpc as rpc
from agora.server.embed import open_server

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

from mcp.shared.exceptions import MCPError  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

GUARD = 20


@pytest.fixture
async def server():
    config = Config(host="127.0.0.1", port=0, db=":memory:", toolsets=["chess", "router"])
    async with open_server(config) as running:
        yield running


async def refusal(url: str, tool: str) -> str:
    """The JSON-RPC error message of calling ``tool`` at ``url`` with the official SDK."""
    with trio.fail_after(GUARD):
        async with mcp.Client(url, read_timeout_seconds=GUARD) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool(tool, {})
    assert refused.value.error.code == rpc.INVALID_PARAMS
    return refused.value.error.message


async def test_another_toolsets_tool_names_its_endpoint(server):
    message = await refusal(f"{server.url}/mcp/router", "move_piece")
    assert message == (
        "unknown tool: move_piece is a chess tool, not served on this endpoint;"
        " connect to /mcp/chess (or /mcp, which serves every toolset)"
    )


async def test_a_misspelt_tool_gets_the_closest_one(server):
    message = await refusal(f"{server.url}/mcp/chess", "get_bord")
    assert message == "unknown tool: get_bord; did you mean get_board?"


async def test_a_tool_no_toolset_has_is_just_unknown(server):
    assert await refusal(f"{server.url}/mcp", "no_such_tool") == "unknown tool: no_such_tool"


async def test_a_name_alike_only_in_its_first_word_gets_no_guess():
    # Every debate tool begins `debate_`: difflib rated `debate_nope` close to
    # `debate_bind_role` for that shared word alone, and the refusal guessed it.
    config = Config(host="127.0.0.1", port=0, db=":memory:", toolsets=["debate"])
    async with open_server(config) as running:
        url = f"{running.url}/mcp/debate"
        assert await refusal(url, "debate_nope") == "unknown tool: debate_nope"
        assert await refusal(url, "debate_bind_rol") == (
            "unknown tool: debate_bind_rol; did you mean debate_bind_role?"
        )
