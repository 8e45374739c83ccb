"""Workload (a) of bench/chess_tables.py: busy tables, an agent and a human on each.

Each agent loops on ``wait_for_turn`` / ``move_piece`` over WebSocket, each human answers its
page's SSE stream at once over HTTP; `workload_a` counts moves and times wakes for
``--seconds``. This module must not parse the command line (see chess_tables).
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio
from chess_page import (
    Http,
    Table,
    create_tables,
    human_action,
    open_sse,
    pick,
)
from chess_tables_wakes import CONNECT_AT_ONCE, Wake, played_at, ply_of, report_latency, tool
from measure import cpu_seconds, own_cpu_seconds
from serve import agora_serve

from agora.client import connect

if TYPE_CHECKING:
    import argparse
    from pathlib import Path


@dataclass
class Run:
    """Workload (a): the players' gate, the counters and the samples."""

    players: int
    limiter: trio.CapacityLimiter = field(
        default_factory=lambda: trio.CapacityLimiter(CONNECT_AT_ONCE)
    )
    connected: int = 0
    all_in: trio.Event = field(default_factory=trio.Event)
    go: trio.Event = field(default_factory=trio.Event)
    start: float = float("inf")
    end: float = float("inf")
    agent_moves: int = 0
    human_moves: int = 0
    games: int = 0
    human_sent: dict[tuple[str, int, int], float] = field(default_factory=dict)
    wakes: list[Wake] = field(default_factory=list)

    async def ready(self) -> None:
        """Count one connected player, then hold it until every player is connected."""
        self.connected += 1
        if self.connected == self.players:
            self.all_in.set()
        await self.go.wait()

    def counting(self) -> bool:
        return self.start <= time.time() < self.end


async def busy_agent(url: str, table: Table, run: Run) -> None:
    """Wait for the turn, play a random legal move, repeat."""
    async with AsyncExitStack() as stack:
        async with run.limiter:
            client = await stack.enter_async_context(connect(url + table.mcp_path()))
        await run.ready()
        reply = await tool(client, "join_game", {})
        while True:
            if reply["statusCode"] == "AGENT_TURN":
                reply = await tool(client, "move_piece", pick(table.rng, reply["legalMoves"]))
                run.agent_moves += run.counting()
                continue
            sent = time.time()
            reply = await tool(client, "wait_for_turn", reply["nextAction"]["arguments"])
            last = reply["lastMove"]
            if (
                run.counting()
                and reply["statusCode"] == "AGENT_TURN"
                and last
                and last["by"] == "human"
            ):
                run.wakes.append(
                    Wake(table.name, reply["gameNumber"], ply_of(reply), sent, time.time())
                )


async def busy_human(port: int, table: Table, run: Run) -> None:
    """Act on every state the page's SSE stream brings, at once."""
    http = Http(port)
    seen = -1
    async with AsyncExitStack() as stack:
        stack.push_async_callback(http.aclose)
        async with run.limiter:
            target = f"/play/{table.name}/events?token={table.token}"
            states = await stack.enter_async_context(open_sse(port, target))
        await run.ready()
        async for state in states:
            if state["version"] < seen:
                continue  # sent before our own last action was answered
            if state["phase"] == "side_choice":
                color = "white" if table.rng.random() < 0.5 else "black"
                reply = await human_action(http, table, "side", {"agentColor": color})
            elif state["phase"] == "human_turn":
                key = (table.name, state["gameNumber"], len(state["history"]) + 1)
                run.human_sent[key] = time.time()
                reply = await human_action(
                    http, table, "move", pick(table.rng, state["legalMoves"])
                )
                run.human_moves += run.counting()
            elif state["phase"] == "over":
                run.games += run.counting()
                reply = await human_action(http, table, "new-game", {})
            else:
                continue
            seen = reply["version"]


async def workload_a(args: argparse.Namespace, workdir: Path) -> None:
    print(f"\n(a) {args.tables} busy tables: agent over WebSocket, human over HTTP + SSE")
    async with agora_serve(workdir / "a.db", "chess", synchronous=args.synchronous) as server:
        tables = await create_tables(server.port, args.tables, "a")
        run = Run(players=2 * len(tables))
        async with trio.open_nursery() as nursery:
            for table in tables:
                nursery.start_soon(busy_agent, server.url, table, run)
                nursery.start_soon(busy_human, server.port, table, run)
            with trio.fail_after(300):
                await run.all_in.wait()
            run.go.set()
            await trio.sleep(args.warmup)  # sides chosen, games under way
            run.start, cpu0, own0 = time.time(), cpu_seconds(server.pid), own_cpu_seconds()
            run.end = run.start + args.seconds
            await trio.sleep(args.seconds)
            cpu1, own1 = cpu_seconds(server.pid), own_cpu_seconds()
            nursery.cancel_scope.cancel()
    stamped = played_at(server.db)
    from_commit, from_post, immediate = [], [], 0
    for w in run.wakes:
        key = (w.table, w.game, w.ply)
        if w.wait_sent > stamped[key]:
            immediate += 1  # the wait began after the move: answered at once, not a wake
            continue
        from_commit.append(w.received - stamped[key])
        from_post.append(w.received - run.human_sent[key])
    moves = run.agent_moves + run.human_moves
    print(
        f"  {moves} moves committed in {args.seconds:g} s = {moves / args.seconds:,.0f} moves/s"
        f" (agent {run.agent_moves}, human {run.human_moves}; {run.games} games finished)"
    )
    report_latency("wake, move stamped (pre-commit) -> agent reply", from_commit)
    report_latency("wake, human POST sent -> agent reply", from_post)
    print(f"  waits that began after the human had already moved (not wakes): {immediate}")
    print(
        f"  CPU: server {100 * (cpu1 - cpu0) / args.seconds:.0f}%,"
        f" load generator {100 * (own1 - own0) / args.seconds:.0f}% (100% = one core)"
    )
