"""``/readyz`` answers what a balancer needs: is the database there, is the server serving?

An operator's load test (300 sessions of the mixed bench) got 503 "the database did not
answer within 2 s" from 2-3 of 50 probes while every call was answered: the probe's read
waited behind the tool reads for one of the store's 4 reader slots. And while the server
drained after SIGTERM, the probe kept answering 200 although new calls were refused.
"""

from __future__ import annotations

import threading

import trio
from http_support import RawHttp, serve

from agora.store.db import READERS

TIMEOUT = 30


async def test_readyz_does_not_wait_behind_the_tool_reads(tmp_path):
    release = threading.Event()

    def held(conn):  # a tool read that takes long (a big query, a slow disk)
        release.wait(TIMEOUT)
        return conn.execute("SELECT 1").fetchone()

    async with serve(db=str(tmp_path / "agora.db")) as server, trio.open_nursery() as nursery:
        with trio.fail_after(TIMEOUT):
            for _ in range(READERS + 2):  # every reader slot taken, and a queue behind them
                nursery.start_soon(server.runtime.read, held)
            await trio.testing.wait_all_tasks_blocked()
            async with RawHttp.open(server.port) as client:
                reply = await client.request("GET", "/readyz")
            release.set()
        assert (reply.status, reply.json()) == (200, {"ok": True}), reply


async def test_readyz_says_not_ready_once_shutdown_began():
    stopping = trio.Event()
    replies = []

    async def run(task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with serve(linger_seconds=TIMEOUT) as server:
            task_status.started(server)
            await stopping.wait()

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(run)
            async with (
                RawHttp.open(server.port) as client,
                server.client("/mcp/chess") as agent,
                trio.open_nursery() as calls,
            ):
                replies.append(await client.request("GET", "/readyz"))
                await agent.initialize()
                # A parked call: shutdown answers it, then lingers while clients stay.
                calls.start_soon(agent.call_tool, "wait_for_turn", {"timeout_ms": 55000})
                await trio.testing.wait_all_tasks_blocked()
                stopping.set()
                await trio.testing.wait_all_tasks_blocked()  # the drain lingers for us
                assert server.app.draining
                replies.append(await client.request("GET", "/readyz"))
    assert [(r.status, r.json()) for r in replies] == [
        (200, {"ok": True}),
        (503, {"ok": False, "reason": "the server is shutting down"}),
    ]
