"""One row of bench/nodes.py: a workload measured on running nodes, and the line it prints.

`measure` runs a workload from nodes_load for ``--seconds`` and samples CPU (nodes, their
threads, PostgreSQL, the load generator), cgroup throttling and the nodes' ``/healthz`` store
counters around it; `Row.line` formats the result. This module must not start or stop nodes
(see nodes_cluster).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from measure import cpu_seconds, own_cpu_seconds, percentile
from nodes_cluster import Node, PgCpu, thread_cpu
from nodes_load import TOOLSETS, WORKLOADS, Gate, Tally
from serve import pool_full

from agora.store.stats import merged, quantile, window

if TYPE_CHECKING:
    import argparse

    import cgroups


def store_counters(url: str) -> dict[str, Any]:
    return dict(get_json(f"{url}/healthz")["store"])


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
