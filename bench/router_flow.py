"""A workflow run's calls for `router_runs`, and the figures of one phase (bench-only).

An `Agent` holds one WebSocket client and the run it works: `plan` plans a fresh phased
run, `work` takes it to its last gate (``get_next_work`` -> ``record_work_event`` ->
``evaluate_gate`` per phase, each mutation with the state version the previous reply
returned) and `replay` resends its last gate. How a mutation is sent is the caller's
(`Send`): `closed` sends as soon as the previous reply is in; the open loop
(`router_open`) sends on a fixed schedule. A `Phase` is what `timed` measures over a block
of calls: wall time, server and client CPU (`measure.cpu_window`) and the writer's group
commit from ``/healthz``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from measure import Cpu, bound, commit_split, cpu_window, healthz, latency_text, rate_text

from agora.store.stats import window
from agora.toolsets.router.progress import evidence_digest

if TYPE_CHECKING:
    from pathlib import Path

    from wsload import LeanClient

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


async def replay(agent: Agent, phase: Phase, times: int) -> None:
    for _ in range(times):
        body = await agent.call("evaluate_gate", agent.last_gate, phase.latencies)
        assert body["replayed"] is True
        assert body["resulting_state_version"] == agent.version
        phase.calls += 1
