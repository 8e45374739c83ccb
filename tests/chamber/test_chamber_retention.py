"""Retention on a long-running server: the purge is background work, not a start-up step."""

from __future__ import annotations

import trio
from chamber_agent import ENTRY, START

from agora.config import Config
from agora.runtime.clock import Clock, FakeWall
from agora.server.embed import open_server
from agora.toolsets.chamber import PURGE_EVERY, listings, toolset

#: No room pool: these servers need no rooms built ahead (and tests stay cheap).
NO_POOL = {"chamber": {"room_pool_size": 0}}


def _count(conn) -> int:
    return conn.execute("SELECT count(*) FROM chamber_attempts").fetchone()[0]


async def test_a_running_server_purges_sessions_past_retention(mock_clock):
    # Rooms are built in a worker thread: jump only after 0.1 s of real idleness.
    mock_clock.autojump_threshold = 0.1
    wall = FakeWall(START)
    config = Config(db=":memory:", toolsets=["chamber"], options=NO_POOL)
    with trio.fail_after(PURGE_EVERY * 4):
        async with (
            open_server(config, clock=Clock(wall), toolsets=[toolset()], listen=False) as server,
            server.client("/mcp/chamber") as client,
        ):
            await client.initialize()
            entered = await client.call_tool("enter_open_challenge", {**ENTRY, "seed": "keep"})
            handle = entered["structuredContent"]["attempt_handle"]
            await client.call_tool("seal_attempt", {"challenge_handle": handle})
            runtime = server.runtime
            await trio.sleep(PURGE_EVERY)  # a pass ran: the sealed session is still young
            assert await runtime.read(_count) == 1

            wall.advance(86_401)  # the contract's retention is 86,400 s
            await trio.sleep(PURGE_EVERY)
            assert await runtime.read(_count) == 0
            cards = await runtime.read(lambda c: listings.list_cards(c, START.date().isoformat()))
            assert len(cards) == 1  # cards stay forever
