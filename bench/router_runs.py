"""Router workflow runs under load: durable mutations/s, mutation latency, idempotent replays/s.

``--runs R`` agents (default 1000), each on its own WebSocket to
``ws://127.0.0.1:PORT/mcp/router``, each working one workflow run: ``plan_work`` on a phased
objective (3 phases), then for every phase ``get_next_work`` -> ``record_work_event`` ->
``evaluate_gate`` with the passing check, each mutation sent with the state version the
previous reply returned. Every mutation is acknowledged only after its commit
(``AGORA_SYNCHRONOUS=FULL``: fsync'd). All agents connect first, then the phases run one
after the other with all agents at once, so each figure is measured alone:

- plans/s, and durable mutations/s over the work phase (events and gates), with the p50/p99
  latency of each mutation as the client sees it (next-work reads are timed apart);
- idempotent replays/s: every agent resends its last ``evaluate_gate`` (same key, same
  request) ``--replays`` times; each must answer ``replayed: true`` with the same state
  version, and the server's database must not grow (a replay never reaches the writer).

The closed-loop phases give the maximum throughput; with every agent waiting for its
reply before the next call, latency there is just ``runs / throughput``. ``--rate N`` adds an
open-loop phase (`router_open`): ``N`` mutations/s offered in total on a fixed schedule, each
agent working ``--rounds`` fresh workflow runs, latency measured from each mutation's
*scheduled* send (no coordinated omission), service time and the client's own send lag
beside it. ``--no-closed`` runs only the open-loop phase. The agents' calls and the figures
of a phase are in `router_flow`.

Server CPU seconds per phase are printed (all threads, and the main thread alone: the event
loop that parses, handles and replies), the client's too, and the writer's group commit over the
phase (from ``/healthz``: commands per commit, largest batch, BEGIN-to-COMMIT time).
Afterwards the database is checked: one event and one gate row per acknowledged call, every
run completed. The agents use the lean sequential client of ``wsload.py`` (the load
generator shares this machine's two cores); once connected, the client runs the server's
collector policy (`agora.server.heap`), so its own collections do not pause the replies it
waits for (``--client-gc default`` keeps Python's).

``--stalls MS`` explains the open loop's tail: the server runs under ``probed_serve.py``,
which records every scheduler run, task step and collection of the main thread of at least
MS ms (with its CPU time), and ``stalls.py`` names, for each mutation at or over the p99,
the stall that covered most of its latency: a server collection, a client collection, a long
scheduler run (a burst of work or a preempted server), a long transaction of the writer
(with or without a checkpoint in its COMMIT), or none of them (queueing).

Usage: ``.venv/bin/python bench/router_runs.py [--runs 1000] [--replays 10] [--rate 2000]
[--rounds 3] [--no-closed] [--synchronous FULL] [--timeout 300] [--stalls 5]
[--client-gc server|default] [--py-spy PATH [--py-spy-rate 250]]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import trio
from cli_args import SYNCHRONOUS, non_negative_float, positive_float, positive_int
from measure import latency_text, pace_text, raise_fd_limit
from profilers import py_spy
from router_flow import Agent, Phase, closed, plan, replay, timed, work
from router_open import OpenLoop, open_loop
from serve import agora_serve
from stalls import ClientCollections, garbage_line
from wsload import lean_connect

from agora.server.heap import HeapKeeper


def db_counts(db: Path) -> tuple[int, int, int, int]:
    conn = sqlite3.connect(db)
    try:
        return tuple(  # type: ignore[return-value]
            conn.execute(sql).fetchone()[0]
            for sql in (
                "SELECT COUNT(*) FROM router_events", "SELECT COUNT(*) FROM router_gates",
                "SELECT COUNT(*) FROM router_runs WHERE status = 'completed'",
                "SELECT COUNT(*) FROM router_ledger",
            )
        )  # fmt: skip
    finally:
        conn.close()


async def main(args: argparse.Namespace) -> None:
    raise_fd_limit()
    pace = pace_text()  # before the load: the machine's, not the bench's
    stalls = ""
    keeper = HeapKeeper()
    mine = ClientCollections(args.stalls)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "router.db"
        probe = None
        if args.stalls:
            os.environ["BENCH_STALLS_MS"] = str(args.stalls)
            probe = Path(tmp) / "probe"
            probe.mkdir()
        async with agora_serve(db, "router", synchronous=args.synchronous, probe=probe) as server:
            url = server.url.replace("http://", "ws://") + "/mcp/router"
            async with trio.open_nursery() as nursery:
                agents: list[Agent] = []

                async def connect(n: int) -> None:
                    client = await nursery.start(_hold, url)
                    agents.append(Agent(n, client))

                with trio.fail_after(args.timeout):
                    async with trio.open_nursery() as starting:
                        for n in range(args.runs):
                            starting.start_soon(connect, n)
                    agents.sort(key=lambda a: a.n)
                    if args.client_gc == "server":
                        keeper.install()  # after connecting: the agents' state is frozen
                        nursery.start_soon(keeper.run)
                    plans, mutations, replays = Phase("plan_work"), Phase("work"), Phase("replay")
                    opened = Phase("open loop")
                    loop = OpenLoop(args.rate, args.runs / args.rate if args.rate else 0.0,
                                    args.rounds, stalls=bool(args.stalls))  # fmt: skip
                    reads: list[float] = []
                    if args.closed:
                        await timed(plans, server, agents,
                                    lambda a: plan(a, closed(a, plans), plans.latencies,
                                                   "plan", "p"))  # fmt: skip
                        await timed(mutations, server, agents,
                                    lambda a: work(a, closed(a, mutations), mutations.latencies,
                                                   reads, ""))  # fmt: skip
                    if args.rate:
                        stalls = await open_loop(server, agents, opened, loop, mine, probe)
                    before = db_counts(db)
                    async with py_spy(server.pid, args.py_spy, args.py_spy_rate, gil=True):
                        await timed(replays, server, agents,
                                    lambda a: replay(a, replays, args.replays))  # fmt: skip
                    after = db_counts(db)
                    if probe is not None:  # what the run left in reference cycles
                        stalls += "\n" + garbage_line((await server.probe(collect=True))[0])
                nursery.cancel_scope.cancel()
    keeper.remove()
    print(f"router_runs: {args.runs} runs, synchronous={args.synchronous}; {pace}")
    if args.closed:
        print(plans.report("plans (durable)"))
        print(plans.group_commit())
        print(mutations.report("durable mutations (events + gates)"))
        print(mutations.group_commit())
        total = plans.calls + mutations.calls
        print(f"all durable mutations: {total} in {plans.seconds + mutations.seconds:.2f} s = "
              f"{total / (plans.seconds + mutations.seconds):,.0f}/s")  # fmt: skip
        print(f"get_next_work reads: {latency_text(reads)}")
    if args.rate:
        print(loop.report(opened))
        print(opened.group_commit())
        if stalls:
            print(stalls)
    print(replays.report("idempotent replays"))
    print(replays.group_commit())
    events, gates, completed, ledger = after
    workflows = args.runs * (int(args.closed) + (args.rounds if args.rate else 0))
    assert (events, gates) == (3 * workflows, 3 * workflows), after
    assert completed == workflows, after
    assert before == after, (before, after)  # replays wrote nothing
    print(json.dumps({"events": events, "gates": gates, "completed": completed,
                      "ledger_rows": ledger}))  # fmt: skip


async def _hold(url: str, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    async with lean_connect(url) as client:
        task_status.started(client)
        await trio.sleep_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=positive_int, default=1000)
    parser.add_argument("--replays", type=positive_int, default=10)
    parser.add_argument(
        "--rate",
        type=non_negative_float,
        default=0.0,
        help="open-loop mutations/s offered in total (0: no open-loop phase)",
    )
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=3,
        help="workflow runs per agent in the open-loop phase",
    )
    parser.add_argument(
        "--closed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the closed-loop plan and work phases",
    )
    parser.add_argument("--synchronous", type=str.upper, choices=SYNCHRONOUS, default="FULL")
    parser.add_argument(
        "--client-gc",
        choices=["server", "default"],
        default="server",
        help="the load generator's collector: the server's policy (agora.server.heap, "
        "installed once the agents are connected) or Python's default, whose full "
        "collections of the client's heap (60-70 ms of CPU) delay every reply in flight",
    )
    parser.add_argument(
        "--stalls",
        type=non_negative_float,
        default=0.0,
        help="run the server under probed_serve and match the open loop's slowest "
        "mutations with its main-thread stalls of at least this many ms (bench/stalls.py)",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        help="record the server's thread holding the GIL with py-spy during the replay "
        "phase (raw stacks to PATH; py-spy must be installed: a measuring aid)",
    )
    parser.add_argument("--py-spy-rate", type=positive_int, default=250)
    parser.add_argument("--timeout", type=positive_float, default=300)
    trio.run(main, parser.parse_args())
