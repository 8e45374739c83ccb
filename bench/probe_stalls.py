"""What held a `probed_serve` server, on a timeline: its main thread and its writer thread.

With ``BENCH_STALLS_MS`` set, `install` records, on ``time.perf_counter`` (CLOCK_MONOTONIC,
the same clock in the bench process), everything that took at least that many ms:

- on the main thread (a Trio instrument and a ``gc.callbacks`` entry): every task step (with
  its task's name), every run of the scheduler between two I/O waits (how many steps, the 3
  costliest tasks, and the thread's CPU time: a run far longer than its CPU was preempted),
  and every collection of the cyclic collector (with its CPU time);
- on the store's writer thread (`agora.store.writer.Writer.commit_batch` wrapped): every
  transaction, BEGIN to the jobs' hand-back, with its job count, the wall time of its
  statements and of its COMMIT, its CPU time, and whether its COMMIT checkpointed (the
  database file changed under it: in WAL mode only a checkpoint writes it), which it can only
  under ``BENCH_AUTOCHECKPOINT``;
- the store's checkpointer (`agora.store.checkpoint.Checkpointer.checkpoint` wrapped): every
  checkpoint it ran, whatever its length, on its own thread beside the writer;
- the writer's WAL restarts (`agora.store.wal.restart_if_long` wrapped, between two of its
  transactions): every RESTART checkpoint (the WAL was long), and any look that took 1 ms.

``BENCH_AUTOCHECKPOINT=N`` (an A/B: the "before" of the checkpointer) gives the writer's
connection SQLite's automatic checkpoint back, at ``wal_autocheckpoint`` N pages (SQLite's
default: 1000), and idles the store's checkpointer: each checkpoint then runs inside the
COMMIT that takes the WAL past N pages, as before `agora.store.checkpoint`.
Kept in memory and dumped with each probe (`Timeline.dump`); read by ``bench/stalls.py``.
Bench-only; agora never imports it.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import time
from collections import Counter
from typing import Any

import trio

from agora.store import checkpoint as _checkpoint
from agora.store import wal as _wal
from agora.store import writer as _writer


class Timeline(trio.abc.Instrument):
    """The stalls of at least ``threshold_ms``, kept until the next `dump`."""

    def __init__(self, threshold_ms: float) -> None:
        self.threshold = threshold_ms / 1000
        self.steps: list[tuple[float, float, str]] = []
        self.batches: list[tuple[float, float, int, list[tuple[str, float]], float]] = []
        self.collections: list[tuple[float, float, int, float]] = []
        #: (start, wall, jobs, statements wall, COMMIT wall, CPU, checkpointed)
        self.commits: list[tuple[float, float, int, float, float, float, bool]] = []
        #: (start, wall): every checkpoint of the store's checkpointer
        self.checkpoints: list[tuple[float, float]] = []
        #: (start, wall): the writer's RESTART checkpoints (`agora.store.wal`), and any look
        #: at the WAL's length that took a millisecond or more
        self.restarts: list[tuple[float, float]] = []
        self._step = self._batch = self._gc = self._batch_cpu = self._gc_cpu = 0.0
        self._count = 0
        self._costs: Counter[str] = Counter()

    def after_io_wait(self, timeout: float) -> None:
        self._batch = time.perf_counter()
        self._batch_cpu = time.thread_time()
        self._count = 0
        self._costs.clear()

    def before_io_wait(self, timeout: float) -> None:
        took = time.perf_counter() - self._batch
        if took >= self.threshold:
            top = [(name, round(t * 1000, 2)) for name, t in self._costs.most_common(3)]
            cpu = time.thread_time() - self._batch_cpu
            self.batches.append((self._batch, took, self._count, top, cpu))

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._step = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        took = time.perf_counter() - self._step
        self._count += 1
        self._costs[task.name] += took
        if took >= self.threshold:
            self.steps.append((self._step, took, task.name))

    def collected(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc = time.perf_counter()
            self._gc_cpu = time.thread_time()
        elif (took := time.perf_counter() - self._gc) >= self.threshold:
            cpu = time.thread_time() - self._gc_cpu
            self.collections.append((self._gc, took, info["generation"], cpu))

    def dump(self) -> dict[str, Any]:
        out = {
            "steps": self.steps,
            "batches": self.batches,
            "collections": self.collections,
            "commits": self.commits,
            "checkpoints": self.checkpoints,
            "restarts": self.restarts,
        }
        self.steps, self.batches, self.collections, self.commits = [], [], [], []
        self.checkpoints, self.restarts = [], []
        return out


def _database(conn: Any) -> str:
    """The main database file of a writer's connection ('' in memory or not SQLite)."""
    if type(conn) is not sqlite3.Connection:
        return ""
    return next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns if path else 0
    except FileNotFoundError:
        return 0


def _watch_checkpointer(timeline: Timeline) -> None:
    checkpoint = _checkpoint.Checkpointer.checkpoint

    def timed(self: _checkpoint.Checkpointer, conn: sqlite3.Connection) -> bool:
        began = time.perf_counter()
        try:
            return checkpoint(self, conn)
        finally:
            timeline.checkpoints.append((began, time.perf_counter() - began))

    _checkpoint.Checkpointer.checkpoint = timed  # type: ignore[method-assign]
    restart_if_long = _wal.restart_if_long

    def restart_timed(conn: sqlite3.Connection) -> bool:
        began = time.perf_counter()
        restarted = restart_if_long(conn)
        took = time.perf_counter() - began
        # A look that found the WAL short takes microseconds: kept only past a millisecond.
        if restarted or took >= 0.001:
            timeline.restarts.append((began, took))
        return restarted

    _wal.restart_if_long = restart_timed


def _watch_writer(timeline: Timeline) -> None:
    commit_batch = _writer.Writer.commit_batch
    files: dict[int, str] = {}
    pages = os.environ.get("BENCH_AUTOCHECKPOINT")
    if pages:
        _checkpoint.CHECKPOINT_PAGES = 2**62  # idle: the COMMITs checkpoint, as before

    def timed(self: _writer.Writer, batch: list[Any]) -> None:
        key = id(self)
        if key not in files:
            files[key] = _database(self.conn)
            if pages:
                self.conn.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
        path = files[key]
        mtime, statements, end = _mtime(path), self.statements_s, self.end_s
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            commit_batch(self, batch)
        finally:
            took = time.perf_counter() - began
            if took >= timeline.threshold:
                timeline.commits.append((
                    began, took, len(batch), self.statements_s - statements,
                    self.end_s - end, time.thread_time() - cpu,
                    bool(pages) and _mtime(path) != mtime,
                ))  # fmt: skip

    _writer.Writer.commit_batch = timed  # type: ignore[method-assign]


def install(threshold_ms: float) -> Timeline:
    """Record the stalls of at least ``threshold_ms`` from now on (`trio.run` gets the
    instrument), and the store's checkpoints."""
    timeline = Timeline(threshold_ms)
    run = trio.run

    def instrumented_run(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), timeline]
        return run(*args, **kwargs)

    trio.run = instrumented_run
    gc.callbacks.append(timeline.collected)
    _watch_writer(timeline)
    _watch_checkpointer(timeline)
    return timeline
