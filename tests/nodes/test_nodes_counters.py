"""Each node's ``/healthz`` counts what the shared store cost it: conflicts, batches, NOTIFYs.

Two chamber nodes on one PostgreSQL; two agents send the same ``expected_action_index`` on one
attempt, one through each node, round after round, until a node's version guard has rejected
a command (both nodes held the attempt at the same version and both wrote). The counters must
then tell the same story from every side: every rejected command was rerun (the store's
``conflicts`` equal the actor's ``retried``), every win is a committed command, every
commit is in both histograms, and each node heard the other's NOTIFYs.
"""

from __future__ import annotations

from typing import Any

import trio
from chess_page_http import http_json
from nodes_support import stopped_cleanly
from test_nodes_chamber import enter, look

from agora.client import connect

TIMEOUT = 60
ROUNDS = 200


async def counters(url: str) -> dict[str, Any]:
    status, health = await http_json("GET", f"{url}/healthz")
    assert status == 200, health
    return dict(health["store"])


async def test_a_conflict_through_two_nodes_shows_in_their_counters(cluster):
    nodes = cluster(2, "--toolsets", "chamber")
    with stopped_cleanly(nodes), trio.fail_after(TIMEOUT):
        before = [await counters(n.url) for n in nodes]
        assert [b["conflicts"] for b in before] == [0, 0]
        handle = await enter(nodes[0].url)
        won, expected = [0, 0], 0
        async with (
            connect(f"{nodes[0].url.replace('http', 'ws')}/mcp/chamber") as a,
            connect(f"{nodes[1].url.replace('http', 'ws')}/mcp/chamber") as b,
        ):
            for _ in range(ROUNDS):
                got: list[dict[str, Any]] = [{}, {}]

                async def act(i: int, c: Any, at: int, got: list[dict[str, Any]] = got) -> None:
                    got[i] = await look(c, handle, at)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(act, 0, a, expected)
                    nursery.start_soon(act, 1, b, expected)
                assert sum(bool(g.get("ok")) for g in got) == 1, got  # the CAS stays exact
                won[0 if got[0].get("ok") else 1] += 1
                expected += 1
                after = [await counters(n.url) for n in nodes]
                if sum(x["conflicts"] for x in after) > 0 and min(won) > 0:
                    break
    assert sum(x["conflicts"] for x in after) > 0, f"no conflict in {ROUNDS} rounds"
    for node in after:
        assert node["engine"] == "postgresql"
        assert node["retried"] == node["conflicts"]  # each rejected command ran again
        assert node["busy"] == 0  # two writers never need a fourth try
        assert node["listener_connects"] == 1
        assert sum(node["batch_size"]["counts"]) == node["commits"]
        assert sum(node["commit_ms"]["counts"]) == node["commits"]
        assert node["batch_size"]["sum"] == node["commands"]
        assert node["notes_received"] >= 1  # the other node's commits reached this one
        assert node["notes_sent"] >= 1
    # every win is one committed command on its node; node 0 entered the attempt too
    assert after[0]["commands"] >= won[0] + 1
    assert after[1]["commands"] >= won[1]
