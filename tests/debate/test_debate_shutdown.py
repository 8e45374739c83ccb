"""A debate_signal_wait parked over a real WebSocket when the server shuts down gracefully.

The README promises that shutdown answers parked long-polls (an ordinary result, as chess
`wait_for_turn` answers WAIT_TIMEOUT) before calls in flight get their grace period. The
debate's wait then answers its empty inbox at once, marked ``shutting_down: true``, so the
agent can tell the server going away from a real timeout.
"""

from __future__ import annotations

import json
from typing import Any

import trio

from agora.client import connect
from agora.config import Config
from agora.server.embed import open_server

LANE = json.dumps({"priority_lane": "P2", "priority_reason": "shutdown"})


async def _agent(url: str, parked: trio.Event, got: dict[str, Any]) -> None:
    async with connect(url) as client:
        opened = await client.call_tool("debate_session_open", {})
        session = opened["structuredContent"]["session_id"]
        roster = json.dumps([{"role": "CONDUCTOR", "session_id": session}])
        init = await client.call_tool(
            "debate_init",
            {
                "title": "t",
                "created_by_role": "CONDUCTOR",
                "roles_json": roster,
                "metadata_json": LANE,
            },
        )
        topic = init["structuredContent"]["topic_id"]
        parked.set()
        args = {"topic_id": topic, "role": "CONDUCTOR", "session_id": session}
        got["result"] = await client.call_tool("debate_signal_wait", {**args, "timeout_ms": 30_000})
        got["at"] = trio.current_time()


async def _until_parked(registry: Any) -> None:
    """Until the agent's wait is parked on its topic."""
    while registry.parked() == 0:  # noqa: ASYNC110 (nothing to wait on: the count is polled)
        await trio.sleep(0.01)


async def test_a_parked_wait_is_answered_at_shutdown_and_says_so():
    got: dict[str, Any] = {}
    parked = trio.Event()
    with trio.fail_after(20):
        async with (
            trio.open_nursery() as nursery,
            open_server(Config(port=0, db=":memory:")) as server,
        ):
            nursery.start_soon(_agent, server.url + "/mcp/debate", parked, got)
            await parked.wait()
            await _until_parked(server.runtime.registry)
            start = trio.current_time()
    result = got["result"]
    assert not result.get("isError"), result
    body = result["structuredContent"]
    assert (body["count"], body["shutting_down"]) == (0, True)
    assert json.loads(result["content"][0]["text"])["shutting_down"] is True
    assert got["at"] - start < 5  # answered as shutdown began, not at its 30 s timeout
