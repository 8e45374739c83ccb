"""What a model reads before its first chess call: the endpoint's instructions and the tools.

A tester found that ``/mcp/chess`` and ``/mcp/chess/<table>`` sent no ``instructions`` on
initialize (chamber, router and debate do), and that two tools claimed to come first:
``wait_for_turn`` ("START HERE") and ``join_game`` ("Discover the collaboration contract and
announce agent presence"). Read here with the official SDK over loopback, as a host would.
"""

from __future__ import annotations

import re

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.toolsets.chess.guide import CONTRACT

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)

GUARD = 20
TOOLS = {"join_game", "get_board", "move_piece", "wait_for_turn"}


@pytest.fixture
async def server():
    config = Config(host="127.0.0.1", port=0, db=":memory:", toolsets=["chess", "router"])
    async with open_server(config) as running:
        yield running


async def told(url: str, mode: str = "auto") -> tuple[str | None, dict[str, str]]:
    """The instructions and the tool descriptions ``url`` gives the official SDK."""
    with trio.fail_after(GUARD):
        async with mcp.Client(url, read_timeout_seconds=GUARD, mode=mode) as client:
            listed = await client.list_tools()
            return client.instructions, {t.name: t.description or "" for t in listed.tools}


@pytest.mark.parametrize("path", ["/mcp/chess", "/mcp/chess/default"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_chess_endpoint_tells_the_first_call_the_loop_the_token_and_the_end(
    server, path, mode
):
    instructions, _ = await told(f"{server.url}{path}", mode)
    assert instructions is not None
    assert "Call wait_for_turn first" in instructions
    for step in ("move_piece", "wait_for_human true", "AGENT_TURN", "nextAction"):
        assert step in instructions
    assert "agent token" in instructions
    assert "without it you can only watch" in instructions
    assert "GAME_OVER" in instructions
    named = set(re.findall(r"\b[a-z]+_[a-z_]+\b", instructions)) - {"wait_for_human"}
    assert named <= TOOLS, named - TOOLS  # every tool it names is served


async def test_the_whole_server_gives_the_chess_instructions_under_its_name(server):
    own, _ = await told(f"{server.url}/mcp/chess")
    everything, _ = await told(f"{server.url}/mcp")
    assert everything is not None
    assert f"chess: {own}" in everything


async def test_one_tool_says_it_comes_first_and_join_game_says_it_does_not(server):
    _, tools = await told(f"{server.url}/mcp/chess")
    assert set(tools) == TOOLS
    assert [name for name, text in tools.items() if "START HERE" in text] == ["wait_for_turn"]
    assert "Discover" not in tools["join_game"]
    assert tools["join_game"].startswith("Optional, and not the first call")
    assert "start with wait_for_turn" in tools["join_game"]
    assert CONTRACT.turn_loop[0].startswith("Call wait_for_turn (START HERE)")
