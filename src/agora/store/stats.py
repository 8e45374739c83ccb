"""Counters an operator reads from ``/healthz``: cumulative histograms of the writer's batches.

A `Histogram` counts observations into fixed buckets (Prometheus style: ``le`` upper bounds,
the last one unbounded). Counts only grow, so a reader takes two snapshots and subtracts
them to get the distribution over any window (`window`, `quantile`); nothing is ever reset.
Each histogram has one thread that records it (the writer thread, or the Trio thread for
the hand-off back); readers copy the list (one atomic step under the GIL), so no lock is
needed. Pure Python: no I/O, no Trio.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agora.store.writer import Writer

#: Upper bounds (milliseconds) of the commit-duration buckets.
COMMIT_MS = (0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 200, 500, 1000, 5000)
#: Upper bounds of the batch-size buckets (commands committed in one transaction).
BATCH_SIZE = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256, 512)


class Histogram:
    """Observations counted into buckets with upper bounds ``le`` (and one past the last)."""

    def __init__(self, le: tuple[float, ...]) -> None:
        self.le = le
        self.counts = [0] * (len(le) + 1)
        self.total = 0.0

    def add(self, value: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(self.le, value)] += 1
        self.total += value

    def snapshot(self) -> dict[str, Any]:
        """The JSON form: ``{"le": [...], "counts": [...], "sum": s}`` (counts has one more)."""
        return {"le": list(self.le), "counts": list(self.counts), "sum": round(self.total, 3)}


def window(after: dict[str, Any], before: dict[str, Any] | None) -> dict[str, Any]:
    """The observations made between two snapshots of one histogram (``before`` may be None)."""
    if before is None:
        return after
    counts = [a - b for a, b in zip(after["counts"], before["counts"], strict=True)]
    return {"le": after["le"], "counts": counts, "sum": after["sum"] - before["sum"]}


def merged(snapshots: list[dict[str, Any]]) -> dict[str, Any]:
    """Several nodes' snapshots of one histogram, added up."""
    counts = [sum(c) for c in zip(*(s["counts"] for s in snapshots), strict=True)]
    return {"le": snapshots[0]["le"], "counts": counts, "sum": sum(s["sum"] for s in snapshots)}


def quantile(snapshot: dict[str, Any], q: float) -> float | None:
    """The upper bound of the bucket holding quantile ``q`` (inf past the last bound);
    None when nothing was observed."""
    total = sum(snapshot["counts"])
    if not total:
        return None
    rank = q * total
    seen = 0
    for i, count in enumerate(snapshot["counts"]):
        seen += count
        if seen >= rank:
            return float(snapshot["le"][i]) if i < len(snapshot["le"]) else float("inf")
    return float("inf")


def mean(snapshot: dict[str, Any]) -> float | None:
    """The mean observation, or None when nothing was observed."""
    total = sum(snapshot["counts"])
    return snapshot["sum"] / total if total else None


def writer_counters(writer: Writer, dialect: str) -> dict[str, Any]:
    """What a store's ``writer`` did since open, for ``/healthz`` (PostgreSQL's maps its round
    trips onto these, `agora.store.pg.PgStore.counters`): ``engine``
    (``dialect``), ``commits`` (transactions), ``commands`` (jobs committed in them), and the
    histograms ``batch_size`` (commands per commit) and ``commit_ms`` (BEGIN to COMMIT's
    return), and the writer thread's totals ``writer_cpu_ms`` (its CPU) and ``statements_ms``
    (wall time in the statements: the rest of ``commit_ms`` is the COMMIT).

    Also where a commit's latency goes, per transaction, from its oldest job: histograms
    ``queue_ms`` (submitted to BEGIN), ``reply_ms`` (COMMIT's return to the Trio thread
    running the callbacks) and ``latency_ms`` (submitted to callbacks); and totals
    ``begin_ms`` (BEGIN: the write lock), ``statements_cpu_ms`` (the statements' CPU:
    ``statements_ms`` minus it is waiting for the GIL or a core), ``end_ms`` and
    ``end_cpu_ms`` (the COMMIT's wall and CPU: the rest is the WAL write, the fsync and
    getting the GIL back); ``writer_pid``, the writer's child process (None when the writer
    thread writes itself, and while no child runs: one that died is replaced by the next
    write), with ``writer_restarts``, the children started in place of one that died
    (`agora.store.writer_process`), and ``reopens``, the times the writer reopened the
    database after a disk error (at most one a second while the disk keeps refusing)."""
    child = writer.conn
    writer_pid = child.pid if getattr(child, "alive", False) else None
    return {
        "engine": dialect,
        "commits": writer.batches,
        "commands": writer.jobs,
        "batch_size": writer.batch_sizes.snapshot(),
        "commit_ms": writer.commit_ms.snapshot(),
        "writer_cpu_ms": round(writer.cpu_s * 1e3, 3),
        "statements_ms": round(writer.statements_s * 1e3, 3),
        "queue_ms": writer.queue_ms.snapshot(),
        "reply_ms": writer.reply_ms.snapshot(),
        "latency_ms": writer.latency_ms.snapshot(),
        "begin_ms": round(writer.begin_s * 1e3, 3),
        "statements_cpu_ms": round(writer.statements_cpu_s * 1e3, 3),
        "end_ms": round(writer.end_s * 1e3, 3),
        "end_cpu_ms": round(writer.end_cpu_s * 1e3, 3),
        "writer_pid": writer_pid,
        "writer_restarts": getattr(writer, "restarts", 0),
        "reopens": writer.reopening.count,
    }
