"""One chamber attempt driven through several nodes on one PostgreSQL: the CAS stays exact.

The attempt's ``expected_action_index`` check runs on whichever node holds a fresh copy: the
same index sent through three nodes at once has exactly one winner, and agents acting on one
attempt through different nodes lose no action (the indexes they were given are exactly
1..N, each once).
"""

from __future__ import annotations

from typing import Any

import trio
from nodes_support import stopped_cleanly

from agora.client import connect

TIMEOUT = 60
ENTRY = {
    "provider_claim": "acme-labs",
    "model_claim": "acme large 2",
    "product": "gpt-5.6-sol",
    "host": "cursor",
}


async def enter(url: str) -> str:
    async with connect(f"{url.replace('http', 'ws')}/mcp/chamber") as c:
        got = await c.call_tool("enter_open_challenge", ENTRY)
    body = got["structuredContent"]
    assert body.get("ok"), body
    return str(body["attempt_handle"])


async def look(c: Any, handle: str, expected: int) -> dict[str, Any]:
    got = await c.call_tool(
        "chamber_action",
        {"challenge_handle": handle, "op": "look", "expected_action_index": expected},
    )
    return dict(got["structuredContent"])


async def test_the_same_action_index_through_three_nodes_has_exactly_one_winner(cluster):
    nodes = cluster(3, "--toolsets", "chamber")
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        handle = await enter(nodes[0].url)
        outcomes: list[dict[str, Any]] = []
        ready, connected = trio.Event(), []

        async def client(i: int) -> None:
            async with connect(f"{nodes[i].url.replace('http', 'ws')}/mcp/chamber") as c:
                connected.append(i)
                if len(connected) == 3:
                    ready.set()
                await ready.wait()
                outcomes.append(await look(c, handle, 0))

        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(client, i)
    wins = [o for o in outcomes if o.get("ok")]
    stale = [o for o in outcomes if o.get("code") == "stale_action_index"]
    assert len(wins) == 1, outcomes
    assert len(stale) == 2, outcomes
    assert wins[0]["action_index"] == 1
    assert all(o["current_action_index"] == 1 for o in stale)


async def test_agents_acting_on_one_attempt_through_three_nodes_lose_no_action(cluster):
    nodes = cluster(3, "--toolsets", "chamber")
    given: list[int] = []
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        handle = await enter(nodes[0].url)

        async def agent(url: str) -> None:
            expected = 0
            async with connect(f"{url.replace('http', 'ws')}/mcp/chamber") as c:
                for _ in range(6):
                    while True:
                        body = await look(c, handle, expected)
                        if body.get("ok"):
                            given.append(body["action_index"])
                            expected = body["action_index"]
                            break
                        assert body.get("retryable"), body
                        expected = body.get("current_action_index", expected)

        async with trio.open_nursery() as nursery:
            for node in nodes:
                nursery.start_soon(agent, node.url)
    assert sorted(given) == list(range(1, 19))
