"""The processes of bench/nodes.py: capped ``agora serve`` nodes and PostgreSQL's CPU.

`Node` is one ``agora serve`` subprocess, `cluster` starts N of them (each in its own cgroup
CPU quota when capped) on one database, `PgCpu` measures PostgreSQL's CPU, `thread_cpu` a
node's main and writer threads, `fresh_schema` a new PostgreSQL schema per row. This module
must not drive load or print results (see nodes_load, nodes_row and nodes).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import cgroups
import trio
from measure import cpu_seconds
from serve import pool_full

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


AGORA = str(Path(sys.executable).with_name("agora"))


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
        for node in nodes:  # their chambers' room pools are built after they start listening
            await pool_full(node.url)
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


def fresh_schema(server: str) -> str:
    import psycopg

    name = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in server else "?"
    return f"{server}{sep}options=-csearch_path%3D{name}%2Cpublic"
