"""Measuring helpers shared by the benchmarks: process CPU and memory, percentiles, fsync cost.

Linux-only (reads /proc). Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import time
from pathlib import Path


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


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU time of ``pid``, or of its thread ``thread`` (the main one: ``pid``).

    A thread's time comes from its schedstat, in nanoseconds (the stat file counts clock
    ticks of 10 ms, a 20 us error on a 500-call phase); the process's from its stat file,
    which still counts threads that have exited.
    """
    if thread is not None:
        schedstat = Path(f"/proc/{pid}/task/{thread}/schedstat")
        if schedstat.exists():
            return int(schedstat.read_text().split()[0]) / 1e9
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """User + system CPU time of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples``, nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


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
