"""End to end: the agent hears whether the human's page is at the table.

``agora serve`` runs in a subprocess; the human's page is its live stream (SSE over a real
loopback socket, with the human token) and the agent the official ``mcp`` SDK. While the
stream is open, get_board says ``human: connected``; once the page hangs up, the server reads
the end of its connection and says ``away``. It used to notice only when a keep-alive write
failed (the second after the hang-up: the first still fits the socket's buffer), about 40 s
later: the test's bound, well below that, fails on a server that waits for the write.
"""

from __future__ import annotations

import pytest
import trio
from chess_page_http import new_table, open_events
from chess_players import SdkAgent
from chess_server import agora_serve

mcp = pytest.importorskip("mcp", reason="needs: the official MCP SDK (pip install -e '.[test]')")

pytestmark = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)


async def _human(agent: SdkAgent) -> str:
    human: str = (await agent.ok("get_board"))["human"]
    return human


async def test_the_agent_sees_the_human_page_come_and_go(tmp_path):
    with trio.fail_after(25):
        async with agora_serve(tmp_path / "agora.db") as server:
            table = await new_table(server.url, "presence")
            events = server.play_url("presence", f"events?token={table['token']}")
            async with mcp.Client(table["agent"]["mcpHttp"], read_timeout_seconds=30) as client:
                agent = SdkAgent(client)
                await agent.list_tools()
                assert await _human(agent) == "absent"
                async with open_events(events) as page:
                    await page.next_state()
                    assert await _human(agent) == "connected"
                seen = await _human(agent)
                while seen == "connected":  # the server notices the hang-up on its own time
                    await trio.sleep(0.2)
                    seen = await _human(agent)
                assert seen == "away"
