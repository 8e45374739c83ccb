"""Measuring helpers shared by the benchmarks: process CPU and memory, percentiles, fsync cost.

Linux-only (reads /proc). Imported by the bench scripts as a sibling module; never by agora.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import time
from pathlib import Path
from typing import Any


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


def commit_split(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Where a commit's latency went between two ``/healthz`` "store" snapshots (SQLite):
    per transaction, its oldest job's queue wait, BEGIN, the statements (wall and CPU: the
    gap is waiting for the GIL or a core), the COMMIT (wall and CPU: the rest is the WAL
    write, the fsync and getting the GIL back) and the hand-off back to the event loop; the
    queue, reply and whole-latency p50/p99 are bucket upper bounds."""
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
        return f"mean {mean:.2f} p50 <= {_bound(seen, 0.5)} p99 <= {_bound(seen, 0.99)}"

    statements, end = per("statements_ms"), per("end_ms")
    return (
        f"commit split per transaction ({commits:,}): queue {spread('queue_ms')} ms; BEGIN "
        f"{per('begin_ms'):.2f} ms; statements {statements:.2f} ms (CPU "
        f"{per('statements_cpu_ms'):.2f}); COMMIT {end:.2f} ms (CPU {per('end_cpu_ms'):.2f}); "
        f"reply {spread('reply_ms')} ms; enqueue to reply {spread('latency_ms')} ms"
    )


def _window(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    counts = [a - b for a, b in zip(after["counts"], before["counts"], strict=True)]
    return {"le": after["le"], "counts": counts, "sum": after["sum"] - before["sum"]}


def _bound(histogram: dict[str, Any], q: float) -> str:
    counts, le = histogram["counts"], histogram["le"]
    rank, seen = q * sum(counts), 0
    for n, count in enumerate(counts):
        seen += count
        if seen >= rank:
            return str(le[n]) if n < len(le) else f"> {le[-1]}"
    return "?"
