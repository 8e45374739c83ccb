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
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cgroups
import trio
from measure import cpu_seconds, own_cpu_seconds, percentile, raise_fd_limit
from nodes_load import TOOLSETS, WORKLOADS, Gate, Tally

from agora.store.stats import merged, quantile, window

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

ROOT = Path(__file__).resolve().parents[1]
AGORA = str(Path(sys.executable).with_name("agora"))
CONFIG = """[options.chamber]
room_pool_size = 32
enter_per_minute = 0
anonymous_enter_per_minute = 0
connection_enter_per_minute = 0
"""


class Node:
    """One ``agora serve`` subprocess; its stderr is read on a thread for the URL line."""

    def __init__(self, db: str, toolsets: str, config: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGORA_")}
        self.proc = subprocess.Popen(
            [AGORA, "serve", "--port", "0", "--db", db, "--toolsets", toolsets,
             "--config", str(config)],
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        self.url = ""
        self.log: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            if " serving " in line and " on http://" in line:
                self.url = line.rsplit(" on ", 1)[1].strip()
                self._ready.set()
        self._ready.set()

    def wait_ready(self) -> None:
        if not self._ready.wait(60) or not self.url:
            raise RuntimeError("agora did not start:\n" + "".join(self.log))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class PgCpu:
    """PostgreSQL's CPU: a cpuacct group holding its postmaster (whose backends inherit it),
    or, without one, every process named postgres."""

    def __init__(self, pgdir: str | None, cores: float | None) -> None:
        self.group: cgroups.CpuGroup | None = None
        if pgdir and cgroups.available() is None:
            postmaster = int(Path(pgdir, "postmaster.pid").read_text().split()[0])
            self.group = cgroups.CpuGroup(f"agora-bench-pg-{os.getpid()}", cores)
            self.group.add(postmaster)  # its later backends are born in the group
            for pid in cgroups.children(postmaster):
                with contextlib.suppress(ProcessLookupError):  # one that exited meanwhile
                    self.group.add(pid)

    def seconds(self) -> float:
        if self.group is not None:
            return self.group.usage()
        total = 0.0
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() == "postgres":
                        total += cpu_seconds(int(pid), children=False)  # each one once
                except OSError:
                    continue
        return total


@asynccontextmanager
async def cluster(
    db: str, n: int, toolsets: str, config: Path, cap: float | None
) -> AsyncIterator[tuple[list[Node], list[cgroups.CpuGroup]]]:
    nodes: list[Node] = []
    groups: list[cgroups.CpuGroup] = []
    try:
        for i in range(n):
            node = Node(db, toolsets, config)
            nodes.append(node)
            if cap is not None:
                group = cgroups.CpuGroup(f"agora-bench-node{i}-{os.getpid()}", cap)
                groups.append(group)
                group.add(node.proc.pid)
        for node in nodes:
            await trio.to_thread.run_sync(node.wait_ready)
        yield nodes, groups
    finally:
        for node in nodes:
            node.stop()
        for group in groups:
            group.remove()


def thread_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of the process's main thread and of its writer thread (schedstat, ns).

    Trio names its worker threads ("Trio thread N"); the one other thread is the writer.
    """
    main = writer = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            ns = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except OSError:
            continue
        if int(tid) == pid:
            main += ns / 1e9
        elif not comm.startswith("Trio"):  # Python names no OS thread: not Trio's is ours
            writer += ns / 1e9
    return main, writer


def store_counters(url: str) -> dict[str, Any]:
    return dict(get_json(f"{url}/healthz")["store"])


async def pool_full(url: str) -> None:
    """Until the node's chamber room pools are full (their start-up building is over)."""
    with trio.fail_after(300):
        while True:
            body = await trio.to_thread.run_sync(get_json, f"{url}/chamber/pool")
            if all(0 < s["size"] <= s["ready"] for s in body["suites"].values()):
                return
            await trio.sleep(0.2)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def counters_delta(after: list[dict[str, Any]], before: list[dict[str, Any]]) -> dict[str, Any]:
    """The nodes' counters over the window, added up (histograms merged)."""
    out: dict[str, Any] = {}
    for key, value in after[0].items():
        if isinstance(value, dict):
            out[key] = merged([window(a[key], b[key]) for a, b in zip(after, before, strict=True)])
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = sum(a[key] - b[key] for a, b in zip(after, before, strict=True))
    return out


@dataclass
class Row:
    workload: str
    label: str
    nodes: int
    seconds: float
    tally: Tally
    agora_cpu: float
    pg_cpu: float
    store: dict[str, Any]
    throttled: float
    main_cpu: float
    writer_cpu: float
    client_cpu: float

    @property
    def rate(self) -> float:
        return self.tally.commands / self.seconds

    def cpu_per_command(self) -> float:
        return (self.agora_cpu + self.pg_cpu) / max(self.tally.commands, 1)

    def line(self, sqlite: Row | None) -> str:
        per = 1e3 / max(self.tally.commands, 1)
        lat = self.tally.latencies or [0.0]
        text = (
            f"{self.workload:<8} {self.label:<15} {self.rate:7.0f} cmd/s  "
            f"p50 {percentile(lat, 0.5) * 1e3:5.1f} p99 {percentile(lat, 0.99) * 1e3:6.1f} ms | "
            f"CPU/cmd agora {self.agora_cpu * per:.3f} + pg {self.pg_cpu * per:.3f} "
            f"= {self.cpu_per_command() * 1e3:.3f} ms"
        )
        if sqlite is not None and sqlite is not self:
            text += f" ({self.cpu_per_command() / sqlite.cpu_per_command():.2f}x sqlite)"
        text += (
            f" [main {self.main_cpu * per:.3f}, writer {self.writer_cpu * per:.3f}, other "
            f"{(self.agora_cpu - self.main_cpu - self.writer_cpu) * per:.3f}]"
        )
        s = self.store
        commit_p99 = quantile(s["commit_ms"], 0.99) if s.get("commit_ms") else None
        text += (
            f" | conflicts {s.get('conflicts', 0) / self.seconds:5.1f}/s busy {s.get('busy', 0)}"
            f" | batch {s['commands'] / max(s['commits'], 1):4.2f} cmd/commit"
            f" commit p99 <= {commit_p99 if commit_p99 is not None else '-'} ms"
        )
        if "reads" in s:  # a shared store: what the guard and the follower cost per command
            n = max(self.tally.commands, 1)
            text += (
                f" | per cmd: reads {s['reads'] / n:.2f} probes {s.get('probes', 0) / n:.2f}"
                f" notes in {s.get('notes_received', 0) / n:.2f}"
                f" stale copies {s.get('copies_dropped', 0) / n:.2f}"
                f" stale reads {s.get('stale_reads', 0) / n:.2f}"
            )
        if self.tally.wakes:
            wakes = self.tally.wakes
            text += (
                f" | wake p50 {percentile(wakes, 0.5) * 1e3:.1f} "
                f"p99 {percentile(wakes, 0.99) * 1e3:.1f} ms"
            )
        text += f" | throttled {self.throttled:.0%} | load generator {self.client_cpu * per:.3f} ms"
        if self.tally.refusals:
            text += f" | refused {dict(self.tally.refusals)}"
        return text


async def measure(workload: str, label: str, nodes: list[Node], groups: list[cgroups.CpuGroup],
                  pg: PgCpu | None, args: argparse.Namespace) -> Row:  # fmt: skip
    urls = [node.url for node in nodes]
    tally = Tally()
    gate = Gate(args.clients)
    run = WORKLOADS[workload]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, urls, args.clients, tally, gate)
        with trio.fail_after(120):
            await gate.all_in.wait()
        if TOOLSETS[workload] == "chamber":  # start once the nodes' room pools are full
            for url in urls:
                await pool_full(url)
        before = [await trio.to_thread.run_sync(store_counters, u) for u in urls]
        cpu0 = sum(cpu_seconds(node.proc.pid) for node in nodes)
        threads0 = [thread_cpu(node.proc.pid) for node in nodes]
        pg0 = pg.seconds() if pg else 0.0
        throttle0 = [g.throttled() for g in groups]
        client0 = own_cpu_seconds()
        start = time.perf_counter()
        tally.end = start + args.seconds
        gate.go.set()
        if args.py_spy:
            for i, node in enumerate(nodes):
                out = Path(args.py_spy) / f"{workload}-{label.replace(', ', '-')}-{i}.txt"
                nursery.start_soon(spy, node.proc.pid, out, args.seconds)
    elapsed = time.perf_counter() - start
    client = own_cpu_seconds() - client0
    cpu = sum(cpu_seconds(node.proc.pid) for node in nodes) - cpu0
    threads = [thread_cpu(node.proc.pid) for node in nodes]
    main = sum(t[0] - t0[0] for t, t0 in zip(threads, threads0, strict=True))
    writer = sum(t[1] - t0[1] for t, t0 in zip(threads, threads0, strict=True))
    pg_cpu = (pg.seconds() - pg0) if pg else 0.0
    after = [await trio.to_thread.run_sync(store_counters, u) for u in urls]
    periods = sum(g.throttled()[0] - t[0] for g, t in zip(groups, throttle0, strict=True))
    hit = sum(g.throttled()[1] - t[1] for g, t in zip(groups, throttle0, strict=True))
    return Row(workload, label, len(nodes), elapsed, tally, cpu, pg_cpu,
               counters_delta(after, before), hit / periods if periods else 0.0,
               main, writer, client)  # fmt: skip


async def spy(pid: int, out: Path, seconds: float) -> None:
    """``py-spy record`` of process ``pid`` for ``seconds`` (collapsed stacks, to ``out``)."""
    command = [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pid),
               "--duration", str(max(1, int(seconds))), "--rate", "200", "--format", "raw",
               "--nonblocking", "--gil", "-o", str(out)]  # fmt: skip
    await trio.run_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def fresh_schema(server: str) -> str:
    import psycopg

    name = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in server else "?"
    return f"{server}{sep}options=-csearch_path%3D{name}%2Cpublic"


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
    parser.add_argument("--workloads", type=lambda s: [w for w in s.split(",") if w],
                        default=["chamber", "chess", "chess-cross"])  # fmt: skip
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=48, help="agents, or chess tables")
    parser.add_argument("--nodes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 2, 3])  # fmt: skip
    parser.add_argument("--cap", type=float, default=0.25, help="cores per node (cgroup quota)")
    parser.add_argument("--no-cap", dest="cap", action="store_const", const=None)
    parser.add_argument("--pg-cap", type=float, default=None, help="cores for PostgreSQL")
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--light-tables", type=int, default=1,
                        help="chess-cross tables of the light-load wake row (0: none)")  # fmt: skip
    parser.add_argument("--pg", default="", help="a PostgreSQL server URL (else one is started)")
    parser.add_argument("--pg-port", type=int, default=0, help="0: a free port")
    parser.add_argument("--py-spy", default="", help="a directory: profile each node per row")
    trio.run(main, parser.parse_args())
