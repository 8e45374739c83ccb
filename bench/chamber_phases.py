"""The phases of ``bench/chamber_attempts.py``: what each measures, and how one is run.

A `Phase` holds one phase's wall time, call latencies and CPU, and the lines that say where
its time went (the commits' split from ``/healthz``, the cyclic collector's part, the main
thread's Python calls); a `Run` holds a server's phases and refusals. `run_phase` runs one
job for every agent at once and fills its `Phase`; `pool_ready` waits for the server's room
pool. Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from measure import Cpu, collector_text, commit_split, cpu_window, latency_text, rate_text

if TYPE_CHECKING:
    from serve import Server


@dataclass
class Phase:
    """One phase's wall time, call latencies and the CPU both sides spent."""

    name: str
    calls: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu: Cpu = field(default_factory=Cpu)
    split: str = ""  # where the phase's commits spent their time (`measure.commit_split`)
    collector: str = ""  # the cyclic collector's part (`collector_text`, with ``--gc``)
    python_calls: str = ""  # the main thread's Python calls per call (with ``--calls``)

    @property
    def rate(self) -> float:
        """Calls per second."""
        return self.calls / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        """A one-line report."""
        text = f"{self.name:<8} {rate_text(self.calls, self.seconds)}"
        if self.latencies:
            text += f"   {latency_text(self.latencies, 2)}"
        if self.calls:
            text += f"   {self.cpu.per(self.calls)}"
        for more in (self.split, self.collector, self.python_calls):
            if more:
                text += "\n           " + more
        return text


@dataclass
class Run:
    """Every phase of one run, and what went wrong."""

    label: str
    phases: dict[str, Phase] = field(default_factory=dict)
    refusals: Counter[str] = field(default_factory=Counter)
    rows: tuple[int, int] = (0, 0)

    def phase(self, name: str) -> Phase:
        """The phase called ``name`` (made on first use)."""
        return self.phases.setdefault(name, Phase(name))


def report(run: Run) -> None:
    """Print ``run``'s phases, its committed rows and its refusals."""
    print(f"{run.label}:")
    for phase in run.phases.values():
        print("  " + phase.line())
    actions, cards = run.rows
    print(f"  committed rows: {actions} transcript records, {cards} cards", end="")
    print(f"; refusals: {dict(run.refusals)}" if run.refusals else "; no refusals")


async def run_phase(
    run: Run, name: str, server: Server, agents: list[Any], job: Any, *args: Any
) -> None:
    """Run ``job(agent, run, *args)`` for every agent at once; time it, count CPU, and say
    where its commits spent their time (the server's ``/healthz`` store counters) and, for a
    probed server (``--gc``), what the cyclic collector cost meanwhile."""
    phase = run.phase(name)
    before = await trio.to_thread.run_sync(get_json, f"{server.url}/healthz")
    if server.probe_dir is not None:
        await server.probe()  # the collections so far are not this phase's
    start = time.perf_counter()
    with cpu_window(server.pid) as phase.cpu:
        async with trio.open_nursery() as nursery:
            for agent in agents:
                nursery.start_soon(job, agent, run, *args)
    phase.seconds = time.perf_counter() - start
    if server.probe_dir is not None:
        figures, _ = await server.probe()
        phase.collector = collector_text(figures, phase.calls)
    after = await trio.to_thread.run_sync(get_json, f"{server.url}/healthz")
    phase.split = commit_split(before["store"], after["store"])


async def pool_ready(url: str, suite: str, wanted: int) -> None:
    """Wait until the server's room pool for ``suite`` holds ``wanted`` rooms (or is full)."""
    while True:
        body = await trio.to_thread.run_sync(get_json, f"{url}/chamber/pool")
        state = body["suites"][suite]
        if state["ready"] >= min(wanted, state["size"]) and state["size"]:
            print(f"room pool of {suite}: {state['ready']} ready", file=sys.stderr)
            return
        await trio.sleep(0.2)


def get_json(url: str) -> Any:
    """GET ``url`` and decode its JSON body."""
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())
