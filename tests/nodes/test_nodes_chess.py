"""A chess agent parked on one node wakes when the human moves through another node.

Two ``agora serve --toolsets chess`` nodes share one PostgreSQL database, so they share the
default table (both print its links; the tokens must be the same). The agent works through
node A's MCP endpoint, the human through node B's page API. A's waiter is woken by B's
commit (NOTIFY), and still is after A's change listener was killed (its reconnect re-checks
every waiter; a sweep bounds a lost note).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
import trio

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))

from chess_page_http import http_json
from nodes_support import stopped_cleanly

from agora.client import connect

if TYPE_CHECKING:
    from e2e_process import AgoraProcess

TIMEOUT = 60
HUMAN = re.compile(r"human player: \S+/play/default\?token=(\S+)")
AGENT = re.compile(r"agent endpoint: \S+/mcp/chess/default\?token=(\S+)")


def tokens(node: AgoraProcess) -> tuple[str, str]:
    human, agent = HUMAN.search(node.log), AGENT.search(node.log)
    assert human is not None, node.log
    assert agent is not None, node.log
    return human.group(1), agent.group(1)


@pytest.mark.parametrize("kill_listener", [False, True], ids=["notify", "listener-killed"])
async def test_an_agent_waiting_on_one_node_wakes_when_the_human_moves_on_another(
    cluster, pg_url, kill_listener
):
    a, b = cluster(2, "--toolsets", "chess")
    human, agent = tokens(a)
    assert tokens(b) == (human, agent)  # one table, one row, whichever node made it
    with stopped_cleanly([a, b]), trio.fail_after(TIMEOUT):
        async with connect(f"{a.url.replace('http', 'ws')}/mcp/chess/default?token={agent}") as c:
            await c.call_tool("join_game", {})
            status, body = await http_json(
                "POST", f"{b.url}/play/default/side", {"token": human, "agentColor": "black"}
            )
            assert status == 200, body
            woke: list[dict[str, Any]] = []

            async def wait() -> None:
                got = await c.call_tool("wait_for_turn", {"timeout_ms": 50000})
                woke.append(got["structuredContent"])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await _until_parked(a)
                if kill_listener:
                    with psycopg.connect(pg_url, autocommit=True) as admin:
                        admin.execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE query LIKE 'LISTEN %%'"
                        )
                status, body = await http_json(
                    "POST", f"{b.url}/play/default/move", {"token": human, "from": "e2", "to": "e4"}
                )
                assert status == 200, body
            board = await c.call_tool("get_board", {})
    assert [w["statusCode"] for w in woke] == ["AGENT_TURN"]
    after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert woke[0]["fen"] == board["structuredContent"]["fen"] == after_e4


async def _until_parked(node: AgoraProcess) -> None:
    """Until node's /healthz shows the agent's call in flight (its wait is parked)."""
    while True:
        status, health = await http_json("GET", f"{node.url}/healthz")
        assert status == 200
        if health["in_flight"] >= 1:
            return
        await trio.sleep(0.02)
