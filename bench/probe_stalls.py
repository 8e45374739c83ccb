"""What held a `probed_serve` server, on a timeline: its main thread and its writer thread.

With ``BENCH_STALLS_MS`` set, `install` records, on ``time.perf_counter`` (CLOCK_MONOTONIC,
the same clock in the bench process), everything that took at least that many ms:

- on the main thread (a Trio instrument and a ``gc.callbacks`` entry): every task step (with
  its task's name), every run of the scheduler between two I/O waits (how many steps, the 3
  costliest tasks, and the thread's CPU time: a run far longer than its CPU was preempted),
  and every collection of the cyclic collector (with its CPU time);
- on the store's writer thread (`agora.store.writer.Writer.commit_batch` wrapped): every
  transaction, BEGIN to the jobs' hand-back, with its job count, the wall time of its
  statements and of its COMMIT, its CPU time, and whether the database file changed under it
  (in WAL mode only a checkpoint writes the database file: SQLite's automatic checkpoint runs
  inside the COMMIT that takes the WAL past ``wal_autocheckpoint`` pages, and fsyncs the file;
  not told apart under ``BENCH_CHECKPOINTER``, whose thread writes the file at any time).

With ``BENCH_CHECKPOINTER`` also set (an A/B), the writer's connection gets
``wal_autocheckpoint=0`` and a thread of its own, on its own connection, runs a PASSIVE
checkpoint every `CHECKPOINT_POLL` seconds, so no COMMIT carries one. ``BENCH_AUTOCHECKPOINT=N``
(another A/B) sets the writer's ``wal_autocheckpoint`` to N pages instead (SQLite's default:
1000): fewer, longer checkpoints, each page rewritten meanwhile copied once.
Kept in memory and dumped with each probe (`Timeline.dump`); read by ``bench/stalls.py``.
Bench-only; agora never imports it.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections import Counter
from typing import Any

import trio

from agora.store import writer as _writer

#: Seconds between two checkpoints of the A/B's checkpoint thread.
CHECKPOINT_POLL = 0.1


class Timeline(trio.abc.Instrument):
    """The stalls of at least ``threshold_ms``, kept until the next `dump`."""

    def __init__(self, threshold_ms: float) -> None:
        self.threshold = threshold_ms / 1000
        self.steps: list[tuple[float, float, str]] = []
        self.batches: list[tuple[float, float, int, list[tuple[str, float]], float]] = []
        self.collections: list[tuple[float, float, int, float]] = []
        #: (start, wall, jobs, statements wall, COMMIT wall, CPU, checkpointed)
        self.commits: list[tuple[float, float, int, float, float, float, bool]] = []
        self.checkpoints = {"count": 0, "seconds": 0.0}  # the A/B thread's
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
            "checkpoints": dict(self.checkpoints),
        }
        self.steps, self.batches, self.collections, self.commits = [], [], [], []
        self.checkpoints.update(count=0, seconds=0.0)
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


def _checkpointer(path: str, timeline: Timeline) -> None:
    """The A/B's checkpoint thread: a PASSIVE checkpoint every `CHECKPOINT_POLL` seconds
    (one with nothing new to copy returns at once)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    while True:
        time.sleep(CHECKPOINT_POLL)
        began = time.perf_counter()
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            continue
        timeline.checkpoints["count"] += 1
        timeline.checkpoints["seconds"] += time.perf_counter() - began


def _watch_writer(timeline: Timeline, checkpointer: bool) -> None:
    commit_batch = _writer.Writer.commit_batch
    files: dict[int, str] = {}

    def timed(self: _writer.Writer, batch: list[Any]) -> None:
        key = id(self)
        if key not in files:
            files[key] = _database(self.conn)
            if pages := os.environ.get("BENCH_AUTOCHECKPOINT"):
                self.conn.execute(f"PRAGMA wal_autocheckpoint={int(pages)}")
            if checkpointer and files[key]:
                self.conn.execute("PRAGMA wal_autocheckpoint=0")
                threading.Thread(
                    target=_checkpointer, args=(files[key], timeline), daemon=True,
                    name="bench-checkpointer",
                ).start()  # fmt: skip
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
                    not checkpointer and _mtime(path) != mtime,
                ))  # fmt: skip

    _writer.Writer.commit_batch = timed  # type: ignore[method-assign]


def install(threshold_ms: float, *, checkpointer: bool = False) -> Timeline:
    """Record the stalls of at least ``threshold_ms`` from now on (`trio.run` gets the
    instrument); with ``checkpointer``, checkpoints leave the writer's COMMITs."""
    timeline = Timeline(threshold_ms)
    run = trio.run

    def instrumented_run(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), timeline]
        return run(*args, **kwargs)

    trio.run = instrumented_run
    gc.callbacks.append(timeline.collected)
    _watch_writer(timeline, checkpointer)
    return timeline
