"""Workload (b) of bench/chess_tables.py: agents parked in ``wait_for_turn``, one per table.

`workload_b` measures the server's memory per parked agent, then single-table wakes one at a
time while the others stay parked. This module must not parse the command line (see
chess_tables).
"""

from __future__ import annotations

import bisect
import random
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
    in_parallel,
    pick,
)
from chess_tables_wakes import CONNECT_AT_ONCE, Wake, played_at, ply_of, report_latency, tool
from measure import percentile, vm_rss
from serve import agora_serve
from trio_websocket import HandshakeError

from agora.client import connect

if TYPE_CHECKING:
    import argparse
    from pathlib import Path


@dataclass
class Parked:
    """Workload (b): who connected, and each table's latest wake."""

    total: int
    connected: set[str] = field(default_factory=set)
    failed: int = 0
    first_error: str = ""
    settled: trio.Event = field(default_factory=trio.Event)
    wakes: dict[str, Wake] = field(default_factory=dict)
    moved: dict[str, trio.Event] = field(default_factory=dict)

    def count(self) -> None:
        if len(self.connected) + self.failed == self.total:
            self.settled.set()


async def parked_agent(url: str, table: Table, state: Parked, limiter: trio.CapacityLimiter):
    """Connect, then wait_for_turn; when woken, move and park again."""
    try:
        async with AsyncExitStack() as stack:
            async with limiter:
                client = await stack.enter_async_context(connect(url + table.mcp_path()))
            state.connected.add(table.name)
            state.count()
            while True:
                sent = time.time()
                reply = await tool(client, "wait_for_turn", {"timeout_ms": 55000})
                if reply["statusCode"] == "AGENT_TURN":
                    ply = ply_of(reply)
                    wake = Wake(table.name, reply["gameNumber"], ply, sent, time.time())
                    state.wakes[table.name] = wake
                    await tool(client, "move_piece", pick(table.rng, reply["legalMoves"]))
                    state.moved[table.name].set()
    except (OSError, HandshakeError) as exc:
        state.failed += 1
        state.first_error = state.first_error or repr(exc)
        state.count()


async def until_in_flight(http: Http, count: int) -> int:
    """Ask /healthz every 10 ms (the caller bounds it) until ``count`` calls are in flight."""
    while True:
        status, health = await http.request("GET", "/healthz")
        assert status == 200, health
        if health["in_flight"] >= count:
            return int(health["in_flight"])
        await trio.sleep(0.01)


async def workload_b(args: argparse.Namespace, workdir: Path, bare: dict[str, float]) -> None:
    print(f"\n(b) {args.waiters} agents parked in wait_for_turn, one table each")
    async with agora_serve(
        workdir / "b.db", "chess", synchronous=args.synchronous, trace_commits="true"
    ) as server:
        rss_empty = vm_rss(server.pid)
        t0 = time.time()
        tables = await create_tables(server.port, args.waiters, "b")

        async def human_first(http: Http, table: Table) -> None:
            await human_action(http, table, "side", {"agentColor": "black"})

        await in_parallel(server.port, tables, human_first)  # the human is to move
        print(f"  {len(tables)} tables created, sides chosen, in {time.time() - t0:.1f} s")
        for table in tables[:20]:  # pay one-time costs of the wait path before measuring
            async with connect(server.url + table.mcp_path()) as client:
                await tool(client, "wait_for_turn", {"timeout_ms": 1000})
        rss_tables = vm_rss(server.pid)

        state = Parked(len(tables), moved={t.name: trio.Event() for t in tables})
        http = Http(server.port)
        async with trio.open_nursery() as nursery:
            t0 = time.time()
            limiter = trio.CapacityLimiter(CONNECT_AT_ONCE)
            for table in tables:
                nursery.start_soon(parked_agent, server.url, table, state, limiter)
            with trio.fail_after(args.connect_timeout):
                while not state.settled.is_set():
                    with trio.move_on_after(10):
                        await state.settled.wait()
                    print(
                        f"    {time.time() - t0:5.0f} s: {len(state.connected)} connected,"
                        f" {state.failed} failed",
                        flush=True,
                    )
            n = len(state.connected)
            with trio.fail_after(120):
                parked = await until_in_flight(http, n)
            rss_parked = vm_rss(server.pid)
            print(f"  {n} agents connected and {parked} parked after {time.time() - t0:.1f} s")
            if state.failed:
                print(f"  {state.failed} could not connect; first error: {state.first_error}")
            per_table = (rss_tables - rss_empty) / len(tables)
            per_agent = (rss_parked - rss_tables) / n
            print(
                f"  server VmRSS: {rss_empty / 2**20:.0f} MiB at start, {rss_tables / 2**20:.0f}"
                f" MiB with the tables, {rss_parked / 2**20:.0f} MiB with the agents parked"
            )
            print(f"  per table (actor, game, sides chosen): {per_table / 1024:.1f} KiB")
            print(f"  per parked agent (WebSocket, session, wait): {per_agent / 1024:.1f} KiB")
            for name, cost in bare.items():
                print(
                    f"    = {per_agent / cost:.1f}x a {name} ({cost / 1024:.2f} KiB);"
                    f" {(per_agent + per_table) / cost:.1f}x with its table"
                )

            rng = random.Random(7)
            live = [t for t in tables if t.name in state.connected]
            woken: list[tuple[Wake, float]] = []
            with trio.fail_after(max(60.0, args.wakes * 0.5)):
                for _ in range(args.wakes):
                    table = rng.choice(live)
                    path = f"/play/{table.name}/state?token={table.token}"
                    _, board = await http.request("GET", path)
                    move = pick(table.rng, board["legalMoves"])
                    state.moved[table.name] = trio.Event()
                    sent = time.time()
                    await human_action(http, table, "move", move)
                    await state.moved[table.name].wait()  # woken, and it has moved
                    woken.append((state.wakes[table.name], sent))
                    await until_in_flight(http, n)  # parked again: all n waiting
            nursery.cancel_scope.cancel()
        await http.aclose()
    stamped = played_at(server.db)
    from_stamp = [w.received - stamped[(w.table, w.game, w.ply)] for w, _ in woken]
    from_post = [w.received - sent for w, sent in woken]
    commits = sorted(server.commits)
    # One wake at a time: the first commit after the POST is the human's move.
    from_commit = [w.received - commits[bisect.bisect_right(commits, sent)] for w, sent in woken]
    print(f"  {len(woken)} single-table wakes, one at a time, with the other {n - 1} parked:")
    report_latency("wake, move committed (durable) -> agent reply", from_commit)
    report_latency("  upper bound: move stamped (pre-commit) -> agent reply", from_stamp)
    report_latency("  upper bound: human POST sent -> agent reply", from_post)
    if from_commit:
        met = percentile(from_commit, 0.99) < 0.010
        print(f"  goal p99 < 10 ms (committed -> reply): {'met' if met else 'NOT met'}")
