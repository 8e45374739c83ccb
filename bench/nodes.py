"""agora on 1, 2 and 3 CPU-capped nodes sharing one PostgreSQL, next to one node on SQLite.

For each workload of ``--workloads`` (default ``chamber,chess,chess-cross``; ``router`` too,
see ``bench/nodes_load.py``), one row on SQLite (one node), then one row per entry of
``--nodes`` on PostgreSQL (a fresh schema each). Each node is an ``agora serve`` subprocess
capped at ``--cap`` cores (default 0.25) with a cgroup v1 CPU quota (``bench/cgroups.py``),
so added nodes add capacity even on a 2-core machine (three nodes take 0.75 core, leaving the
rest to PostgreSQL and the load generator); PostgreSQL is uncapped unless ``--pg-cap`` says
otherwise, and this load generator is never capped. The clients (``--clients``: agents, or
chess tables) spread round-robin over the nodes, all connect, then work for ``--seconds``.

Printed per row: acknowledged commands/s (each a durable commit) and their client-side
latency p50/p99; server CPU per command (agora's nodes; PostgreSQL's postmaster and every
backend, counted by a cpuacct group; both added up, and that total as a multiple of the
SQLite row's), agora's split into main thread, writer thread and other threads (reads,
room building); conflicts/s (commands the version guard rejected and reran), busy answers;
batch size (commands per commit) and commit p99 (BEGIN to COMMIT's return, from the nodes'
``/healthz`` histograms, so "<= bucket bound"); for chess, the wake p99: the human's move
acknowledged -> the agent's ``wait_for_turn`` answered (by another node in chess-cross); on
PostgreSQL, what the shared store cost per command (``/healthz``): reads (entity loads,
listings), version probes, other nodes' notifications heard, cached copies they
made stale (counted per notification line that names a live actor), stale reads; how often
the cap throttled the nodes; the load generator's CPU per command. Then, per workload,
throughput on N nodes over one node.

Then the wake under light load: chess-cross with ``--light-tables`` tables (default 1) on
two uncapped nodes, far from saturated (under full load a wake waits in the queue of a
saturated node like any other call, and each chess-cross wake reloads the table, replaying
its game). Its path: B commits the human's move (NOTIFY in the transaction), A's listener
(waiting on its socket in Trio, no polling) drops A's copy and wakes the parked
``wait_for_turn``, which reloads the table in a worker thread (3 round trips and the replay)
and renders its reply; meanwhile B renders the page's reply to the human. So on this
2-core machine each wake has four processes wanting a core at once (both nodes, PostgreSQL,
the load generator): its tail is mostly scheduling, which a quiet machine shortens. The
nodes are uncapped here, so no cgroup quota period shapes it (capped, the 10 ms period of
`cgroups.PERIOD_US` bounds a throttled node's stall at 7.5 ms at 0.25 core; the default 100
ms would allow 75). Last, cross-node wake latency in-process (no load, no caps): two
runtimes on one database, a waiter parked on A, B commits, from B's acknowledged commit to
A's answer, ``--wakes`` times.

Not a model of any deployment: one load generator process drives every client, on the same
2 cores as the nodes and PostgreSQL (its CPU per command is printed), so past 2 nodes the
machine, not agora, bounds throughput. What each chess workload stands for is in
``bench/nodes_load.py``.

PostgreSQL: ``--pg URL`` (its CPU is then every process named postgres on this machine), or
a throwaway cluster started with ``scripts/pg.sh`` (Debian's postgresql, ``fsync=on``,
``synchronous_commit=on``). Needs root for the cgroups (else the nodes run uncapped, as
printed). Usage: ``.venv/bin/python bench/nodes.py [--workloads chamber,chess,chess-cross]
[--nodes 1,2,3] [--seconds 10] [--clients 48] [--cap 0.25 | --no-cap] [--pg-cap CORES]
[--wakes 200] [--py-spy DIR]``; ``--workloads ''`` runs only the two wake rows.
Not run by CI.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import cgroups
import trio
from cli_args import int_range, names, non_negative_int, positive_float, positive_int, positive_ints
from measure import percentile, raise_fd_limit
from nodes_cluster import PgCpu, cluster, fresh_schema
from nodes_load import TOOLSETS
from nodes_row import Row, measure

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """[options.chamber]
room_pool_size = 32
enter_per_minute = 0
anonymous_enter_per_minute = 0
connection_enter_per_minute = 0
"""


async def wakes(server: str, count: int) -> list[float]:
    """Cross-node wake latencies (seconds): B's acknowledged commit -> A's poll answer."""
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from _counter import MIGRATIONS, Add, CounterKind, Get

    from agora.runtime.clock import Clock
    from agora.runtime.registry import Runtime
    from agora.store.db import open_store

    url = fresh_schema(server)
    kind = CounterKind()
    out: list[float] = []
    async with AsyncExitStack() as stack:
        runtimes = []
        for _ in range(2):
            store = await stack.enter_async_context(open_store(url, MIGRATIONS))
            nursery = await stack.enter_async_context(trio.open_nursery())
            rt = Runtime(store, nursery, clock=Clock(), idle_seconds=600)
            stack.callback(nursery.cancel_scope.cancel)
            runtimes.append(rt)
        a, b = runtimes
        assert a.follower is not None
        while a.follower.connections == 0:  # noqa: ASYNC110 - the listener's state, polled
            await trio.sleep(0.01)
        for i in range(count):
            answered = trio.Event()
            at: list[float] = []

            async def wait(target: int, answered: trio.Event = answered,
                           at: list[float] = at) -> None:  # fmt: skip
                await a.poll(kind, "k", Get(), ready=lambda v: v >= target, timeout=30)
                at.append(time.perf_counter())
                answered.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait, i + 1)
                while not (actor := a.registry.named("counter", "k")) or not actor.waiters:  # noqa: ASYNC110
                    await trio.sleep(0.001)
                await b.call(kind, "k", Add(1))
                acked = time.perf_counter()
                await answered.wait()
            out.append(at[0] - acked)
    return out


async def run_workload(workload: str, server: str, pg: PgCpu | None, config: Path,
                       args: argparse.Namespace, tmp: Path) -> list[Row]:  # fmt: skip
    rows: list[Row] = []
    toolsets = TOOLSETS[workload]
    async with cluster(str(tmp / f"{workload}.db"), 1, toolsets, config, args.cap) as (nodes, g):
        rows.append(await measure(workload, "sqlite, 1 node", nodes, g, None, args))
        print(rows[-1].line(rows[0]), flush=True)
    for n in args.nodes:
        async with cluster(fresh_schema(server), n, toolsets, config, args.cap) as (nodes, g):
            rows.append(await measure(workload, f"pg, {n} node{'s' * (n > 1)}", nodes, g, pg, args))
            print(rows[-1].line(rows[0]), flush=True)
    pg_rows = {row.nodes: row for row in rows[1:]}
    if 1 in pg_rows:
        one = pg_rows[1].rate
        print(f"{workload:<8} scaling (model-free, measured): " + ", ".join(
            f"{n} nodes {row.rate / one:.2f}x" for n, row in pg_rows.items() if n > 1
        ) or "-", flush=True)  # fmt: skip
    return rows


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now (for the throwaway PostgreSQL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def main(args: argparse.Namespace) -> None:
    raise_fd_limit()
    why = cgroups.available()
    if why is not None and args.cap is not None:
        print(f"no CPU caps: {why}")
        args.cap = None
    server, pgdir = args.pg, None
    pg: PgCpu | None = None
    try:
        if not server:
            pgdir = tempfile.mkdtemp(prefix="agora-bench-pg-")
            port = args.pg_port or free_port()
            started = await trio.run_process(
                ["bash", str(ROOT / "scripts" / "pg.sh"), "start", pgdir, str(port)],
                capture_stdout=True,
            )
            server = started.stdout.decode().strip()
        pg = PgCpu(pgdir, args.pg_cap)
        load = os.getloadavg()[0]
        print(f"cores: {os.cpu_count()}, load average {load:.1f}; {args.clients} clients, "
              f"{args.seconds:g} s per row; nodes capped at "
              f"{args.cap if args.cap is not None else 'no'} cores each, PostgreSQL at "
              f"{args.pg_cap or 'no'} cap, load generator uncapped", flush=True)  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "agora.toml"
            config.write_text(CONFIG)
            for workload in args.workloads:
                await run_workload(workload, server, pg, config, args, Path(tmp))
            if args.light_tables:  # cross-node wakes when the capped nodes are not saturated
                light = argparse.Namespace(**{**vars(args), "clients": args.light_tables})
                async with cluster(fresh_schema(server), 2, "chess", config, None) as (ns, g):
                    row = await measure("chess-cross", "pg, 2, light", ns, g, pg, light)
                    print(row.line(None), flush=True)
        lat = await wakes(server, args.wakes) if args.wakes else []
        if lat:
            print(
                f"cross-node wake in-process (B's commit acknowledged -> A's poll answers), "
                f"{len(lat)} wakes: p50 {percentile(lat, 0.5) * 1e3:.2f} ms, "
                f"p99 {percentile(lat, 0.99) * 1e3:.2f} ms"
            )
    finally:
        if pgdir:  # stopped first: no backend is born while its group is removed
            with trio.CancelScope(shield=True):
                await trio.run_process(
                    ["bash", str(ROOT / "scripts" / "pg.sh"), "stop", pgdir], check=False
                )
            shutil.rmtree(pgdir, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{pgdir}.initdb.log")
        if pg is not None and pg.group is not None:
            pg.group.remove()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", type=names(TOOLSETS, none_ok=True),
                        default=["chamber", "chess", "chess-cross"])  # fmt: skip
    parser.add_argument("--seconds", type=positive_float, default=10.0)
    parser.add_argument("--clients", type=positive_int, default=48, help="agents, or chess tables")
    parser.add_argument("--nodes", type=positive_ints,
                        default=[1, 2, 3])  # fmt: skip
    parser.add_argument(
        "--cap", type=positive_float, default=0.25, help="cores per node (cgroup quota)"
    )
    parser.add_argument("--no-cap", dest="cap", action="store_const", const=None)
    parser.add_argument("--pg-cap", type=positive_float, default=None, help="cores for PostgreSQL")
    parser.add_argument("--wakes", type=non_negative_int, default=200)
    parser.add_argument("--light-tables", type=non_negative_int, default=1,
                        help="chess-cross tables of the light-load wake row (0: none)")  # fmt: skip
    parser.add_argument("--pg", default="", help="a PostgreSQL server URL (else one is started)")
    parser.add_argument("--pg-port", type=int_range(0, 65535), default=0, help="0: a free port")
    parser.add_argument("--py-spy", default="", help="a directory: profile each node per row")
    trio.run(main, parser.parse_args())
