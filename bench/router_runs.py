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
open-loop phase: ``N`` mutations/s offered in total, spread evenly over the runs (agent ``n``
starts at ``n / N`` s, then sends one mutation every ``runs / N`` s), each agent working
``--rounds`` fresh workflow runs (plan -> next -> event -> gate per phase). Each mutation's
latency is measured from its *scheduled* send time, so a late reply that delays the agent's
next send counts against that send too (no coordinated omission); the service time (from
the actual send) is printed beside it, and so is the client's own send lag (how late an agent
woke for a send it was ready for: when that grows the load generator, not the server, is
the bottleneck). ``--no-closed`` runs only the open-loop phase.

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
scheduler run (a burst of work or a preempted server), or none of them (queueing, the writer).

Usage: ``.venv/bin/python bench/router_runs.py [--runs 1000] [--replays 10] [--rate 2000]
[--rounds 3] [--no-closed] [--synchronous FULL] [--timeout 300] [--stalls 5]
[--client-gc server|default]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
from measure import (
    Cpu,
    bound,
    commit_split,
    cpu_window,
    healthz,
    latency_text,
    percentile,
    raise_fd_limit,
    rate_text,
)
from serve import agora_serve
from stalls import ClientCollections, attribute, garbage_line
from wsload import LeanClient, lean_connect

from agora.server.heap import HeapKeeper
from agora.store.stats import window
from agora.toolsets.router.progress import evidence_digest

OBJECTIVE = "1. design the cache\n2. implement it\n3. test it"
CHECKS = {"plan": "plan-ready", "implement": "implementation-done", "verify": "verification-passed"}


@dataclass
class Agent:
    """One agent's run and what it last sent."""

    n: int
    client: LeanClient
    run_id: str = ""
    version: int = 0
    last_gate: dict[str, Any] = field(default_factory=dict)

    @property
    def context(self) -> dict[str, str]:
        return {
            "session_id": f"bench-{self.n}",
            "actor": "bench",
            "runtime_policy_snapshot_id": "p",
        }

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        samples: list[float],
        due: float | None = None,
        service: list[float] | None = None,
    ) -> dict[str, Any]:
        """Call ``tool``; its latency goes to ``samples``, from ``due`` (a `trio.current_time`
        schedule) when given, the time from the actual send to ``service``."""
        start = trio.current_time()
        result = await self.client.call_tool(tool, {"context": self.context, **args})
        end = trio.current_time()
        samples.append(end - (start if due is None else due))
        if service is not None:
            service.append(end - start)
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result.get('structuredContent')}")
        body: dict[str, Any] = result["structuredContent"]
        return body


@dataclass
class Phase:
    """Wall time, calls and CPU of one phase."""

    name: str
    seconds: float = 0.0
    calls: int = 0
    cpu: Cpu = field(default_factory=Cpu)
    latencies: list[float] = field(default_factory=list)
    #: The writer's ``batch_size`` and ``commit_ms`` histograms over the phase (``/healthz``).
    batches: dict[str, Any] = field(default_factory=dict)
    commits: dict[str, Any] = field(default_factory=dict)
    #: Where each commit's latency went over the phase (`measure.commit_split`).
    split: str = ""
    #: The database's write-ahead log and main file at the phase's end (bytes).
    wal: int = 0
    size: int = 0

    def group_commit(self) -> str:
        """Commits, commands and batch sizes of the writer during the phase."""
        counts, le = self.batches.get("counts", []), self.batches.get("le", [])
        commits = sum(counts)
        if not commits:
            return f"{self.name}: no commits"
        commands = self.batches["sum"]
        reached = [i for i, c in enumerate(counts) if c]
        top = reached[-1]
        largest = f"<= {le[top]}" if top < len(le) else f"> {le[-1]}"
        return (
            f"{self.name} group commit: {commands:,.0f} commands in {commits:,} commits "
            f"(mean {commands / commits:.1f} per commit, largest batch {largest}); "
            f"BEGIN to COMMIT mean {self.commits['sum'] / commits:.1f} ms, "
            f"p99 <= {bound(self.commits, 0.99)} ms; at its end the WAL holds "
            f"{self.wal / 2**20:.1f} MiB, the database {self.size / 2**20:.1f} MiB"
            f"\n  {self.name} {self.split}"
        )

    def report(self, unit: str) -> str:
        lat = f"; latency {latency_text(self.latencies)}" if self.latencies else ""
        return f"{self.name}: {rate_text(self.calls, self.seconds, unit)}{lat}; " + self.cpu.per(
            self.calls
        )


async def timed(phase: Phase, server: Any, agents: list[Agent], step: Any) -> None:
    before = await writer_stats(server.port)
    t0 = time.perf_counter()
    with cpu_window(server.pid) as phase.cpu:
        async with trio.open_nursery() as nursery:
            for agent in agents:
                nursery.start_soon(step, agent)
    phase.seconds = time.perf_counter() - t0
    after = await writer_stats(server.port)
    phase.batches = window(after["batch_size"], before["batch_size"])
    phase.commits = window(after["commit_ms"], before["commit_ms"])
    phase.split = commit_split(before, after)
    phase.wal, phase.size = _sizes(server.db)


def _sizes(db: Path) -> tuple[int, int]:
    """The bytes of ``db``'s write-ahead log and of its main file."""
    wal = db.with_name(db.name + "-wal")
    return (wal.stat().st_size if wal.exists() else 0), db.stat().st_size


async def writer_stats(port: int) -> dict[str, Any]:
    """The writer's histograms so far (``batch_size``, ``commit_ms``), from ``/healthz``."""
    store: dict[str, Any] = (await healthz(port))["store"]
    return store


#: Sends one mutation (tool, arguments, where its latency goes) and returns its reply body.
Send = Callable[[str, dict[str, Any], list[float]], Awaitable[dict[str, Any]]]


def closed(agent: Agent, phase: Phase) -> Send:
    """Send each mutation as soon as the previous reply is in (the closed loop)."""

    async def send(tool: str, args: dict[str, Any], samples: list[float]) -> dict[str, Any]:
        body = await agent.call(tool, args, samples)
        phase.calls += 1
        return body

    return send


async def plan(
    agent: Agent, send: Send, samples: list[float], key: str, tag: str
) -> dict[str, str]:
    """Plan a fresh workflow run (idempotency key ``key``); return its ``workflow_run_id``."""
    body = await send("plan_work", {
        "expected_state_version": 0, "idempotency_key": key, "correlation_id": f"{tag}{agent.n}",
        "objective": OBJECTIVE, "goal_binding_id": None, "requested_work_mode": None,
        "explicit_skill_ids": [], "explicit_semantics": None,
    }, samples)  # fmt: skip
    agent.run_id, agent.version = body["workflow_run_id"], 1
    return {"workflow_run_id": agent.run_id}


async def work(
    agent: Agent, send: Send, samples: list[float], reads: list[float], tag: str
) -> None:
    """Work the agent's planned run to its last gate: get_next_work (timed into ``reads``),
    then record_work_event and evaluate_gate (sent by ``send``) for every phase."""
    run = {"workflow_run_id": agent.run_id}
    while (nxt := await agent.call("get_next_work", run, reads))["work_item"]:
        p = nxt["work_item"]["phase_id"]
        event = await send("record_work_event", {
            **run, "phase_id": p, "observation": {"check_id": CHECKS[p], "outcome": "passed"},
            "activation_receipt_ref": None, "expected_state_version": agent.version,
            "idempotency_key": f"event-{p}", "correlation_id": f"{tag}e{agent.n}",
        }, samples)  # fmt: skip
        refs = event["event_ids"]
        agent.last_gate = {
            **run, "phase_id": p, "evidence_refs": refs,
            "expected_evidence_digest": evidence_digest(refs), "expected_plan_revision": 1,
            "expected_state_version": event["resulting_state_version"],
            "idempotency_key": f"gate-{p}", "correlation_id": f"{tag}g{agent.n}",
        }  # fmt: skip
        gate = await send("evaluate_gate", agent.last_gate, samples)
        assert gate["passed"], gate
        agent.version = gate["resulting_state_version"]


@dataclass
class OpenLoop:
    """The open-loop phase: a fixed schedule of sends, and what each kind of call took."""

    rate: float
    interval: float
    rounds: int
    plans: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    service: list[float] = field(default_factory=list)
    reads: list[float] = field(default_factory=list)
    #: How late the client woke for each send it was ready for (its own scheduling lag).
    lags: list[float] = field(default_factory=list)
    #: Each mutation's (scheduled send, reply) on ``time.perf_counter`` and its tool, with
    #: ``--stalls``: to match the slowest with the server's stalls.
    spans: list[tuple[float, float, str]] = field(default_factory=list)
    stalls: bool = False

    def report(self, phase: Phase) -> str:
        every = self.plans + self.steps
        ms = {
            name: " / ".join(f"{percentile(xs, q) * 1000:.1f}" for q in (0.5, 0.99, 1.0))
            for name, xs in (
                ("all", every),
                ("plans", self.plans),
                ("steps", self.steps),
                ("service", self.service),
                ("reads", self.reads),
                ("lags", self.lags),
            )
        }
        return (
            f"open loop: {self.rate:,.0f} mutations/s offered ({self.interval * 1000:.0f} ms "
            f"between one run's mutations, {self.rounds} workflow runs per agent); "
            f"{phase.calls} mutations in {phase.seconds:.2f} s = "
            f"{phase.calls / phase.seconds:,.0f}/s achieved; latency from the scheduled send "
            f"p50 / p99 / max ms: all {ms['all']}, plans {ms['plans']}, events + gates "
            f"{ms['steps']}; service time (from the actual send) {ms['service']}; "
            f"get_next_work reads {ms['reads']}; client send lag {ms['lags']}\n"
            f"open loop: {phase.cpu.per(phase.calls, 'mutation, reads included')}"
        )


async def paced(agent: Agent, phase: Phase, loop: OpenLoop, start: float) -> None:
    """Work ``loop.rounds`` workflow runs, each mutation sent at its scheduled time."""
    schedule = (start + k * loop.interval for k in range(1 << 30))

    async def send(tool: str, args: dict[str, Any], samples: list[float]) -> dict[str, Any]:
        due = next(schedule)
        ready = trio.current_time()
        await trio.sleep_until(due)
        # The client's own lag: how late this task woke for a send it was ready for in time
        # (a late reply that delays the send is counted in the latency, not here).
        loop.lags.append(max(0.0, trio.current_time() - max(due, ready)))
        body = await agent.call(tool, args, samples, due, loop.service)
        if loop.stalls:
            end = time.perf_counter()
            loop.spans.append((end - samples[-1], end, tool))
        phase.calls += 1
        return body

    for r in range(loop.rounds):
        await plan(agent, send, loop.plans, f"open-plan-{r}", "op")
        await work(agent, send, loop.steps, loop.reads, "o")


async def open_loop(
    server: Any,
    agents: list[Agent],
    phase: Phase,
    loop: OpenLoop,
    mine: ClientCollections,
    probe: Path | None,
) -> str:
    """Run the open-loop phase; with ``probe`` (``--stalls``), return the report of the
    stalls its slowest mutations went through (`stalls.attribute`), else ''."""
    if probe is not None:
        await server.probe()  # only the open loop's stalls from here
        gc.callbacks.append(mine)
    t0 = trio.current_time() + 0.1
    await timed(phase, server, agents,
                lambda a: paced(a, phase, loop, t0 + a.n / loop.rate))  # fmt: skip
    if probe is None:
        return ""
    gc.callbacks.remove(mine)
    return attribute(loop.spans, (await server.probe())[0], mine)


async def replay(agent: Agent, phase: Phase, times: int) -> None:
    for _ in range(times):
        body = await agent.call("evaluate_gate", agent.last_gate, phase.latencies)
        assert body["replayed"] is True
        assert body["resulting_state_version"] == agent.version
        phase.calls += 1


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
                    await timed(replays, server, agents,
                                lambda a: replay(a, replays, args.replays))  # fmt: skip
                    after = db_counts(db)
                    if probe is not None:  # what the run left in reference cycles
                        stalls += "\n" + garbage_line((await server.probe(collect=True))[0])
                nursery.cancel_scope.cancel()
    keeper.remove()
    print(f"router_runs: {args.runs} runs, synchronous={args.synchronous}")
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
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--replays", type=int, default=10)
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="open-loop mutations/s offered in total (0: no open-loop phase)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="workflow runs per agent in the open-loop phase"
    )
    parser.add_argument(
        "--closed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the closed-loop plan and work phases",
    )
    parser.add_argument("--synchronous", default="FULL")
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
        type=float,
        default=0.0,
        help="run the server under probed_serve and match the open loop's slowest "
        "mutations with its main-thread stalls of at least this many ms (bench/stalls.py)",
    )
    parser.add_argument("--timeout", type=float, default=300)
    trio.run(main, parser.parse_args())
