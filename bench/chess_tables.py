"""Chess tables under load: move throughput, wake latency, and the memory of parked agents.

Both workloads run against ``agora serve --toolsets chess``, started here as a subprocess on
a free 127.0.0.1 port with a fresh SQLite file (``--synchronous FULL`` by default: every move
is fsync'd before its reply). All traffic stays on loopback; every phase is bounded.

(a) ``--tables T`` tables made with ``POST /play/tables``. Each has one agent on its own
    WebSocket (`agora.client.connect` to ``ws://.../mcp/chess/<table>?token=<agent token>``)
    looping on
    ``wait_for_turn`` / ``move_piece`` (a random entry of ``legalMoves``), and one scripted
    human that follows the page's SSE stream and answers each of its turns at once with
    ``POST /play/<table>/move`` (it also chooses sides and starts a new game after each
    ending). For ``--seconds`` it counts committed moves and times every wake: a human move
    that an agent was already waiting for.
(b) ``--waiters W`` agents, one per table, parked in ``wait_for_turn`` while the human is to
    move. Server VmRSS is read before the agents connect and once all W calls are in flight
    (``/healthz``); the difference over W is one parked agent with its WebSocket, MCP session
    and waiter. Then ``--wakes`` single-table wakes, one at a time, while the others stay
    parked: the human moves, the agent's reply is timed, the agent moves and parks again.

Wake latency, "human move committed -> agent's reply received", is measured from the moment
the move's transaction became durable: the server runs with ``trace_commits`` on and logs
the wall time of each commit (same machine, same clock); in (b), where wakes run one at a
time, a wake's commit is the first one after the human's POST was sent. Two upper bounds
are printed too, which also count the table's work and the fsync: from the move's
``played_at`` (stamped by the table just before its commit, read back from the DB) and from
when the human's POST was sent; (a) has only these, its commits being shared by many
tables. The cost of one fsync'd commit on this disk is printed next to them. A bare Trio task
and a bare parked waiter (``trio.Event().wait()``) are measured the same way (VmRSS over N)
in small subprocesses, and the per-agent figure is printed as a multiple of each.

RLIMIT_NOFILE is raised to its hard limit here, before the server starts (which inherits it);
if fewer than W agents can connect, the number that did is reported and used. The load
generator runs with its cyclic garbage collector off, so its own pauses are not measured as
the server's; the server runs as shipped.

Usage: ``.venv/bin/python bench/chess_tables.py [--tables 1000] [--seconds 15]
[--waiters 10000] [--wakes 500] [--synchronous FULL|NORMAL] [--only a|b]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import gc
import json
import os
import random
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import trio
import trio.testing
from chess_page import (
    Http,
    Table,
    create_tables,
    human_action,
    in_parallel,
    open_sse,
    pick,
)
from measure import commit_cost, cpu_seconds, own_cpu_seconds, percentile, raise_fd_limit, vm_rss
from serve import agora_serve
from trio_websocket import HandshakeError

from agora.client import WsClient, connect

CONNECT_AT_ONCE = 200


# -- processes and measurements --------------------------------------------------------------


def report_latency(label: str, samples: list[float]) -> None:
    if not samples:
        print(f"  {label}: no samples")
        return
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    print(
        f"  {label}: n={len(samples)}  p50 {p50 * 1e3:.2f} ms  p99 {p99 * 1e3:.2f} ms"
        f"  max {max(samples) * 1e3:.2f} ms"
    )


# -- tables and players ----------------------------------------------------------------------


@dataclass
class Wake:
    """An agent's wait answered by a human move (table, game, ply), with client times."""

    table: str
    game: int
    ply: int
    wait_sent: float
    received: float


async def tool(client: WsClient, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    body: dict[str, Any] = result["structuredContent"]
    if result.get("isError"):
        raise RuntimeError(f"{name} refused: {body}")
    return body


def played_at(db: Path) -> dict[tuple[str, int, int], float]:
    """When each human move was stamped by its table (just before its commit)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT table_name, game_no, ply, played_at FROM chess_moves WHERE by = 'human'"
        ).fetchall()
    return {(t, g, p): dt.datetime.fromisoformat(at).timestamp() for t, g, p, at in rows}


# -- (a) busy tables -------------------------------------------------------------------------


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


def ply_of(reply: dict[str, Any]) -> int:
    """The plies played in the reply's game (from its FEN; games start at the opening)."""
    return chess.Board(reply["fen"]).ply()


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


# -- (b) parked agents -----------------------------------------------------------------------


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


# -- bare Trio costs -------------------------------------------------------------------------


def probe(kind: str, n: int) -> None:
    """Print the VmRSS cost of ``n`` bare tasks or parked waiters, in this fresh process."""

    async def main() -> None:
        before = vm_rss()
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(trio.sleep_forever if kind == "task" else trio.Event().wait)
            await trio.testing.wait_all_tasks_blocked()
            after = vm_rss()
            nursery.cancel_scope.cancel()
        print(json.dumps({"kind": kind, "bytes": (after - before) / n}))

    trio.run(main)


def bare_costs(n: int) -> dict[str, float]:
    costs = {}
    for kind, label in (("task", "bare Trio task"), ("waiter", "bare parked Trio waiter")):
        out = subprocess.run(
            [sys.executable, __file__, "--probe", kind, "--probe-n", str(n)],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        costs[label] = json.loads(out.stdout)["bytes"]
    return costs


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000, help="busy tables in (a)")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured time of (a)")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured start of (a)")
    parser.add_argument("--waiters", type=int, default=10_000, help="parked agents in (b)")
    parser.add_argument("--wakes", type=int, default=500, help="single-table wakes in (b)")
    parser.add_argument(
        "--connect-timeout", type=float, default=900.0, help="bound on connecting (b)'s agents"
    )
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--only", choices=["a", "b"], help="run one workload")
    parser.add_argument("--probe", choices=["task", "waiter"], help=argparse.SUPPRESS)
    parser.add_argument("--probe-n", type=int, default=100_000, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


async def amain(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="agora-bench-") as tmp:
        workdir = Path(tmp)
        cost = commit_cost(workdir, args.synchronous)
        print(f"  one single-row SQLite commit (WAL, {args.synchronous}): {cost * 1e3:.2f} ms")
        if args.only in (None, "a"):
            await workload_a(args, workdir)
        if args.only in (None, "b"):
            await workload_b(args, workdir, bare_costs(args.probe_n))


def main() -> None:
    args = parse_args()
    if args.probe:
        probe(args.probe, args.probe_n)
        return
    limit = raise_fd_limit()
    # The load generator holds as many connections as the server: its own cyclic-GC passes
    # (seconds long at 10,000 connections) would show up as server latency. Reference
    # counting still frees almost everything during these bounded runs.
    gc.disable()
    print(f"agora chess bench: {shlex.join([os.path.relpath(sys.executable), *sys.argv])}")
    print(
        f"  python {sys.version.split()[0]}, trio {trio.__version__}, {os.cpu_count()} CPUs,"
        f" RLIMIT_NOFILE {limit}, load average {os.getloadavg()[0]:.2f}"
    )
    trio.run(amain, args)
    print(f"  load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
