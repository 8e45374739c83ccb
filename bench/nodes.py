"""agora on 1, 2 and 3 nodes sharing one PostgreSQL, next to one node on SQLite.

Workload: router workflow runs (``record_work_event`` with the state version of the previous
reply: each call is a durable, guarded, CAS-checked commit). ``--clients C`` lean WebSocket
agents are spread round-robin over the nodes, each for ``--seconds``:

- disjoint: every agent works its own run (throughput, no conflicts by design);
- shared: all agents work ``--shared`` runs (contention: the router's CAS answers
  ``state-version-conflict`` and the agent retries with the version it was told; counted as
  conflicts/s; a retryable busy answer is counted too).

Printed per configuration: acknowledged calls/s, client-side call latency p50/p99 (a call's
reply is released only after its commit: an upper bound of commit latency), agora CPU per
call (all nodes), PostgreSQL CPU per call (all its processes), conflicts/s.

Then cross-node wake latency, in-process: two runtimes (two "nodes", each with its own
store, listener and actors) on one database; a waiter parked on node A in ``Runtime.poll``,
node B commits a change, and the time from B's acknowledged commit to A's answer is taken
``--wakes`` times (NOTIFY, listener, stale copy dropped, reload, re-run).

Without cgroup v2 (not mounted on this machine), nodes are not CPU-capped: PostgreSQL, the
nodes and this load generator share the machine's cores, so added nodes cannot add capacity
here; what this measures is the cost per call and the absence of contention collapse.

PostgreSQL: ``--pg URL``, or a throwaway cluster started with ``scripts/pg.sh`` (Debian's
postgresql). Usage: ``.venv/bin/python bench/nodes.py [--seconds 8] [--clients 24]
[--nodes 1,2,3] [--wakes 200]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from measure import cpu_seconds, percentile
from wsload import lean_connect

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

ROOT = Path(__file__).resolve().parents[1]
AGORA = str(Path(sys.executable).with_name("agora"))
CONTEXT = {"actor": "bench", "runtime_policy_snapshot_id": "p"}


class Node:
    """One ``agora serve`` subprocess; its stderr is read on a thread for the URL line."""

    def __init__(self, db: str, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGORA_")}
        self.proc = subprocess.Popen(
            [AGORA, "serve", "--port", "0", "--db", db, "--toolsets", "router", *args],
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


def postgres_cpu() -> float:
    """CPU seconds of every process named postgres on this machine."""
    total = 0.0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "postgres":
                    total += cpu_seconds(int(pid))
            except OSError:
                continue
    return total


@dataclass
class Result:
    label: str
    calls: int
    conflicts: int
    seconds: float
    latencies: list[float]
    agora_cpu: float
    pg_cpu: float

    def line(self) -> str:
        per = max(self.calls, 1)
        return (
            f"{self.label:<22} {self.calls / self.seconds:8.0f} calls/s  "
            f"p50 {percentile(self.latencies, 0.5) * 1e3:6.1f} ms  "
            f"p99 {percentile(self.latencies, 0.99) * 1e3:6.1f} ms  "
            f"agora {self.agora_cpu / per * 1e3:5.2f} ms CPU/call  "
            f"postgres {self.pg_cpu / per * 1e3:5.2f} ms CPU/call  "
            f"conflicts {self.conflicts / self.seconds:6.0f}/s"
        )


async def agent(url: str, session: str, run_of: dict[str, str], seconds: float,
                out: list[float], counts: dict[str, int]) -> None:  # fmt: skip
    """Record events on run ``run_of[session]`` until ``seconds`` pass."""
    ws = url.replace("http://", "ws://") + "/mcp/router"
    context = {**CONTEXT, "session_id": session}
    async with lean_connect(ws) as c:
        run = run_of.get(session)
        if run is None:
            planned = await c.call_tool("plan_work", {
                "context": context, "expected_state_version": 0, "idempotency_key": "plan",
                "correlation_id": "p", "objective": "1. design\n2. build",
                "goal_binding_id": None, "requested_work_mode": None,
                "explicit_skill_ids": [], "explicit_semantics": None,
            })  # fmt: skip
            run = run_of[session] = planned["structuredContent"]["workflow_run_id"]
        version, n = 1, 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            n += 1
            start = time.perf_counter()
            got = (await c.call_tool("record_work_event", {
                "context": context, "workflow_run_id": run, "phase_id": "plan",
                "observation": {"n": n}, "activation_receipt_ref": None,
                "expected_state_version": version, "idempotency_key": f"{session}-{n}",
                "correlation_id": "c",
            }))["structuredContent"]  # fmt: skip
            if "event_ids" in got:
                out.append(time.perf_counter() - start)
                version = got["resulting_state_version"]
                counts["calls"] += 1
            elif got.get("code") == "state-version-conflict":
                version = got["current_state_version"]
                counts["conflicts"] += 1
            else:
                counts["conflicts"] += 1  # busy (retryable): same call again


async def measure(label: str, urls: list[str], pids: list[int], args: argparse.Namespace,
                  shared: int | None) -> Result:  # fmt: skip
    tag = secrets.token_hex(3)
    sessions = [f"{tag}-{i}" for i in range(args.clients)]
    run_of: dict[str, str] = {}
    if shared:
        owners = sessions[:shared]
        async with trio.open_nursery() as nursery:  # plan the shared runs first
            for s in owners:
                nursery.start_soon(agent, urls[0], s, run_of, 0.0, [], {"calls": 0})
        for i, s in enumerate(sessions):
            run_of[s] = run_of[owners[i % shared]]
    latencies: list[float] = []
    counts = {"calls": 0, "conflicts": 0}
    cpu0 = sum(cpu_seconds(p) for p in pids)
    pg0 = postgres_cpu()
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for i, s in enumerate(sessions):
            nursery.start_soon(agent, urls[i % len(urls)], s, run_of, args.seconds,
                               latencies, counts)  # fmt: skip
    elapsed = time.perf_counter() - start
    return Result(label, counts["calls"], counts["conflicts"], elapsed, latencies,
                  sum(cpu_seconds(p) for p in pids) - cpu0, postgres_cpu() - pg0)  # fmt: skip


@asynccontextmanager
async def cluster(db: str, n: int) -> AsyncIterator[list[Node]]:
    nodes = [Node(db) for _ in range(n)]
    try:
        for node in nodes:
            await trio.to_thread.run_sync(node.wait_ready)
        yield nodes
    finally:
        for node in nodes:
            node.stop()


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


async def main(args: argparse.Namespace) -> None:
    server = args.pg
    pgdir = None
    if not server:
        pgdir = tempfile.mkdtemp(prefix="agora-bench-pg-")
        started = await trio.run_process(
            ["bash", str(ROOT / "scripts" / "pg.sh"), "start", pgdir, str(args.pg_port)],
            capture_stdout=True,
        )
        server = started.stdout.decode().strip()
    try:
        print(f"cores: {os.cpu_count()}, clients: {args.clients}, {args.seconds:g} s per row; "
              "no cgroup CPU caps (cgroup v2 not mounted)")  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            async with cluster(str(Path(tmp) / "bench.db"), 1) as nodes:
                urls, pids = [n.url for n in nodes], [n.proc.pid for n in nodes]
                print((await measure("sqlite, 1 node", urls, pids, args, None)).line())
                print((await measure("sqlite, 1 node, shared", urls, pids, args,
                                     args.shared)).line())  # fmt: skip
        for n in args.nodes:
            async with cluster(fresh_schema(server), n) as nodes:
                urls, pids = [x.url for x in nodes], [x.proc.pid for x in nodes]
                print((await measure(f"postgresql, {n} node(s)", urls, pids, args, None)).line())
                print((await measure(f"postgresql, {n}, shared", urls, pids, args,
                                     args.shared)).line())  # fmt: skip
        lat = await wakes(server, args.wakes)
        print(
            f"cross-node wake (B's commit acknowledged -> A's poll answers), {len(lat)} wakes: "
            f"p50 {percentile(lat, 0.5) * 1e3:.2f} ms, p99 {percentile(lat, 0.99) * 1e3:.2f} ms"
        )
    finally:
        if pgdir:
            with trio.CancelScope(shield=True):
                await trio.run_process(
                    ["bash", str(ROOT / "scripts" / "pg.sh"), "stop", pgdir], check=False
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--shared", type=int, default=2, help="runs shared by all agents")
    parser.add_argument("--nodes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 2, 3])  # fmt: skip
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--pg", default="", help="a PostgreSQL server URL (else one is started)")
    parser.add_argument("--pg-port", type=int, default=55470)
    trio.run(main, parser.parse_args())
