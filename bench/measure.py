"""Measuring helpers shared by the benchmarks: process CPU and memory, percentiles, fsync cost,
a server's ``/healthz``, the machine's pace, and the summary lines the benches print
(throughput, latency percentiles, server and client CPU per operation).

Linux-only (reads /proc). Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from collections.abc import Iterator


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def vm_rss(pid: int | str = "self") -> int:
    """Resident set size of ``pid`` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc status")


def disk_bytes(pid: int | str = "self") -> int:
    """Bytes ``pid`` has caused to be written to storage so far (``/proc/PID/io``
    write_bytes: a database's WAL, checkpoints)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int, thread: int | None = None, *, children: bool = True) -> float:
    """User + system CPU time of ``pid`` and (``children``) its live child processes (the
    server's writer process), or of its thread ``thread`` alone (the main one: ``pid``).

    A thread's time comes from its schedstat, in nanoseconds (the stat file counts clock
    ticks of 10 ms, a 20 us error on a 500-call phase); a process's from its stat file,
    which still counts threads that have exited.
    """
    if thread is not None:
        schedstat = Path(f"/proc/{pid}/task/{thread}/schedstat")
        if schedstat.exists():
            return int(schedstat.read_text().split()[0]) / 1e9
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    if thread is not None or not children:
        return own
    return own + sum(cpu_seconds(child) for child in child_processes(pid))


def minor_faults(pid: int) -> int:
    """The minor page faults of ``pid``'s main thread so far (memory it touched first)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7])


def child_processes(pid: int) -> list[int]:
    """The live child processes of ``pid`` (gone ones are skipped)."""
    found = []
    for listed in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(c) for c in listed.read_text().split()]
        except OSError:  # its thread ended meanwhile
            continue
    return found


def own_cpu_seconds() -> float:
    """User + system CPU time of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pace_text(steps: int = 2_000_000) -> str:
    """How fast this machine runs Python right now: the wall time of a fixed loop of
    ``steps`` additions, per step. The machine's speed swings (a shared host) by as much as
    the code changes a bench measures; a figure is comparable only with its pace beside it."""
    began = time.perf_counter()
    total = 0
    for i in range(steps):
        total += i
    per = (time.perf_counter() - began) / steps
    return f"Python pace {per * 1e9:.0f} ns per loop step (lower is faster)"


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples``, nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def rate_text(count: int, seconds: float, unit: str = "") -> str:
    """``N unit in S s = R/s``: a count over a wall time and its rate."""
    rate = count / seconds if seconds else 0.0
    return f"{count:,}{' ' + unit if unit else ''} in {seconds:.2f} s = {rate:,.0f}/s"


def latency_text(samples: list[float], digits: int = 1, *, with_max: bool = False) -> str:
    """``p50 X ms, p99 Y ms`` (and ``, max Z ms``) of ``samples`` given in seconds."""
    if not samples:
        return "no samples"
    ms = [s * 1000 for s in samples]
    text = f"p50 {percentile(ms, 0.5):.{digits}f} ms, p99 {percentile(ms, 0.99):.{digits}f} ms"
    return text + (f", max {max(ms):.{digits}f} ms" if with_max else "")


def summary(label: str, samples: list[float]) -> str:
    """``label: n=N p50 .. ms, p99 .. ms, max .. ms`` of ``samples`` given in seconds."""
    if not samples:
        return f"{label}: no samples"
    return f"{label}: n={len(samples)} {latency_text(samples, 2, with_max=True)}"


@dataclass
class Cpu:
    """CPU seconds spent over a window: by the server (every thread, and its writer process),
    by its main thread alone (the event loop: parsing, handlers, replies) and by this load
    generator."""

    server: float = 0.0
    main: float = 0.0
    client: float = 0.0
    faults: int = 0

    def per(self, count: int, unit: str = "call") -> str:
        """Each side's CPU in all and per ``unit`` (``count`` of them), in microseconds."""
        n = count or 1

        def each(name: str, seconds: float) -> str:
            return f"{name} {seconds:.2f} s ({1e6 * seconds / n:,.0f} us per {unit})"

        server, main = each("server CPU", self.server), each("main thread", self.main)
        return f"{server}, {main}; {each('client CPU', self.client)}"

    def shares(self, seconds: float) -> str:
        """Each side's CPU as a share of one core over ``seconds`` of wall time."""
        span = seconds or 1.0
        return (
            f"server CPU {100 * self.server / span:.0f}% (main thread"
            f" {100 * self.main / span:.0f}%), load generator CPU {100 * self.client / span:.0f}%"
        )


@contextmanager
def cpu_window(pid: int) -> Iterator[Cpu]:
    """The CPU spent while the ``with`` block runs by ``pid`` (every thread, and its main
    thread) and by this process; the yielded `Cpu` is filled when the block ends."""
    cpu = Cpu()
    server, main, client = cpu_seconds(pid), cpu_seconds(pid, pid), own_cpu_seconds()
    faults = minor_faults(pid)
    try:
        yield cpu
    finally:
        cpu.server = cpu_seconds(pid) - server
        cpu.main = cpu_seconds(pid, pid) - main
        cpu.client = own_cpu_seconds() - client
        cpu.faults = minor_faults(pid) - faults


async def healthz(port: int) -> dict[str, Any]:
    """The ``/healthz`` JSON of the server on loopback ``port`` (one HTTP/1.1 request)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(
            f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    out: dict[str, Any] = json.loads(data.partition(b"\r\n\r\n")[2])
    return out


def commit_cost(directory: Path, synchronous: str, n: int = 200) -> float:
    """Seconds per single-row WAL commit with ``synchronous`` on this disk."""
    conn = sqlite3.connect(directory / "probe.db", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("CREATE TABLE t (v INTEGER)")
        start = time.perf_counter()
        for i in range(n):
            conn.execute("BEGIN")
            conn.execute("INSERT INTO t VALUES (?)", (i,))
            conn.execute("COMMIT")
        return (time.perf_counter() - start) / n
    finally:
        conn.close()


def commit_split(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Where a commit's latency went between two ``/healthz`` "store" snapshots: per
    transaction, its oldest job's queue wait, BEGIN, the statements (wall and CPU: the gap
    is waiting for the GIL or a core), the COMMIT (wall and CPU: the rest is the WAL write,
    the fsync and getting the GIL back) and the hand-off back to the event loop; on
    PostgreSQL the first round trip (BEGIN, the guarded rows' locks) and the second (the
    writes with their COMMIT) instead of BEGIN, statements and COMMIT. The queue, reply and
    whole-latency p50/p99 are bucket upper bounds."""
    if "latency_ms" not in after:
        return "commit split: not reported by this server"
    commits = after["commits"] - before["commits"]
    if not commits:
        return "commit split: no commits"

    def per(name: str) -> float:
        return float(after[name] - before[name]) / commits

    def spread(name: str) -> str:
        seen = _window(after[name], before[name])
        mean = seen["sum"] / max(sum(seen["counts"]), 1)
        return f"mean {mean:.2f} p50 <= {bound(seen, 0.5)} p99 <= {bound(seen, 0.99)}"

    end = f"{per('end_ms'):.2f} ms (CPU {per('end_cpu_ms'):.2f})"
    if "statements_ms" in after:  # SQLite
        middle = (
            f"BEGIN {per('begin_ms'):.2f} ms; statements {per('statements_ms'):.2f} ms (CPU "
            f"{per('statements_cpu_ms'):.2f}); COMMIT {end}"
        )
    else:  # PostgreSQL: the statements travel with their COMMIT
        middle = f"BEGIN and row locks {per('begin_ms'):.2f} ms; writes and COMMIT {end}"
    return (
        f"commit split per transaction ({commits:,}): queue {spread('queue_ms')} ms; {middle}; "
        f"reply {spread('reply_ms')} ms; enqueue to reply {spread('latency_ms')} ms"
    )


def _window(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    counts = [a - b for a, b in zip(after["counts"], before["counts"], strict=True)]
    return {"le": after["le"], "counts": counts, "sum": after["sum"] - before["sum"]}


def bound(histogram: dict[str, Any], q: float) -> str:
    """The upper bound of the bucket holding the ``q`` quantile of ``histogram``."""
    counts, le = histogram["counts"], histogram["le"]
    rank, seen = q * sum(counts), 0
    for n, count in enumerate(counts):
        seen += count
        if seen >= rank:
            return str(le[n]) if n < len(le) else f"> {le[-1]}"
    return "?"


def collector_text(figures: dict[str, Any], calls: int, unit: str = "call") -> str:
    """The collections a `probed_serve` probe counted, and their CPU (per ``unit`` too)."""
    cpu_ms = figures["total_pause_cpu_ms"]
    per = f" = {cpu_ms * 1e3 / calls:.1f} us per {unit}" if calls else ""
    young, middle, old = figures["collections"]
    return (
        f"collector: {young}/{middle}/{old} collections (young/middle/old), CPU {cpu_ms:.1f} ms"
        f"{per}, longest {max(figures['longest_pause_cpu_ms']):.1f} ms"
    )
