"""``/healthz`` counts the live actors and the long-polls parked on them.

A real loopback server (a ``:memory:`` store) and a mock clock that runs at the real rate and
is jumped by hand: the actor's idle period passes in one jump, and a long-poll's timeout never
passes by itself while the probe reads the counts.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from http_support import RawHttp, serve

IDLE = 10.0  # seconds before an idle actor is evicted (checked every eighth of it)
TIMEOUT = 60  # clock seconds: bounds every wait below


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(rate=1.0)


async def healthz(port: int) -> dict[str, Any]:
    async with RawHttp.open(port) as client:
        reply = await client.request("GET", "/healthz")
        assert reply.status == 200, reply
        return reply.json()  # type: ignore[no-any-return]


async def counts(port: int) -> tuple[int, int]:
    health = await healthz(port)
    return health["actors"], health["parked"]


async def test_healthz_counts_live_actors_and_parked_long_polls_until_eviction(clock):
    async with serve(actor_idle_seconds=IDLE) as server:
        with trio.fail_after(TIMEOUT):
            assert await counts(server.port) == (1, 0)  # chess made its default table at start
            clock.jump(IDLE * 1.25)
            await trio.testing.wait_all_tasks_blocked()
            assert await counts(server.port) == (0, 0)  # evicted once idle past its period
            async with server.client("/mcp/chess") as client, trio.open_nursery() as nursery:
                await client.initialize()
                board = await client.call_tool("get_board")
                assert board["structuredContent"]["table"] == "default"
                assert await counts(server.port) == (1, 0)  # the table's actor is live again

                async def wait() -> None:
                    await client.call_tool("wait_for_turn", {"timeout_ms": 55000})

                nursery.start_soon(wait)
                await trio.testing.wait_all_tasks_blocked()
                assert await counts(server.port) == (1, 1)  # one long-poll parked on it
                nursery.cancel_scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert await counts(server.port) == (1, 0)  # the long-poll left; the actor stays
            clock.jump(IDLE * 1.25)
            await trio.testing.wait_all_tasks_blocked()
            assert await counts(server.port) == (0, 0)  # evicted once idle past its period


async def test_healthz_carries_the_resident_memory():
    """An operator watching a node's memory reads it here, not from /proc by hand."""
    async with serve() as server:
        health = await healthz(server.port)
    assert isinstance(health["rss_bytes"], int)
    assert health["rss_bytes"] > 10 * 2**20  # a Python server with its toolsets loaded
