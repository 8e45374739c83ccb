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
import gc
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import trio
import trio.testing
from chess_tables_busy import workload_a
from chess_tables_parked import workload_b
from cli_args import non_negative_float, non_negative_int, positive_float, positive_int
from measure import commit_cost, raise_fd_limit, vm_rss

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
    parser.add_argument("--tables", type=positive_int, default=1000, help="busy tables in (a)")
    parser.add_argument("--seconds", type=positive_float, default=15.0, help="measured time of (a)")
    parser.add_argument(
        "--warmup", type=non_negative_float, default=3.0, help="unmeasured start of (a)"
    )
    parser.add_argument("--waiters", type=positive_int, default=10_000, help="parked agents in (b)")
    parser.add_argument(
        "--wakes", type=non_negative_int, default=500, help="single-table wakes in (b)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=positive_float,
        default=900.0,
        help="bound on connecting (b)'s agents",
    )
    parser.add_argument("--synchronous", type=str.upper, choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--only", choices=["a", "b"], help="run one workload")
    parser.add_argument("--probe", choices=["task", "waiter"], help=argparse.SUPPRESS)
    parser.add_argument("--probe-n", type=positive_int, default=100_000, help=argparse.SUPPRESS)
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
