"""What opening a SQLite file shared costs: CPU per command with and without the version guard.

One process first: a runtime over a file store, ``--tasks`` tasks each adding to its own
counter (a durable commit per command, group-committed), then as many cached reads; once on
an unshared file (the default path), once on a file opened shared (guard checks and bumps
in every batch, a version probe per cached read). Printed per mode: commands/s, process CPU
per write and per read (every thread: the writer's included), batch size.

Then two processes on one shared file: a child runtime (this script with ``--child``) and
this one. Contention: both add to the same ``--keys`` counters at once for ``--seconds``;
printed: each side's commands/s, CPU per command, conflicts (rejected and rerun) and busy
answers, and that no update was lost (the final values are the sum of the acknowledged
adds). Wake: a waiter parked here, the child commits, ``--wakes`` times; printed: the
latency from the child's acknowledged commit to this side's answer, p50/p99 (bounded by
the ``PRAGMA data_version`` poll, 10 ms).

Usage: ``.venv/bin/python bench/shared_file.py [--commands 4000] [--tasks 16] [--seconds 5]
[--keys 4] [--wakes 100] [--unshared-only]``. Not run by CI; wall-clock figures on a busy
machine are noise, CPU per command is the figure to compare.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from cli_args import non_negative_int, positive_float, positive_int

from agora.runtime.clock import Clock
from agora.runtime.entity import Effects
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.store.migrations import Migration
from agora.store.neutral import Busy

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

MIGRATIONS = [
    Migration(
        "bench",
        1,
        sql={"sqlite": ["CREATE TABLE bench_counters (key TEXT PRIMARY KEY, value BIGINT)"]},
    )
]


@dataclass(frozen=True)
class Add:
    delta: int = 1


@dataclass(frozen=True)
class Get:
    pass


@dataclass
class Counter:
    key: str
    value: int = 0

    def handle(self, command: Any, now: Any) -> Effects:
        if isinstance(command, Get):
            return Effects(reply=self.value)
        self.value += command.delta
        write = (
            "INSERT INTO bench_counters (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (self.key, self.value),
        )
        return Effects(reply=self.value, writes=[write], changed=True)


class CounterKind:
    kind = "bench"

    def load(self, conn: Any, key: str, now: Any) -> Counter:
        row = conn.execute("SELECT value FROM bench_counters WHERE key = ?", (key,)).fetchone()
        return Counter(key, 0 if row is None else int(row[0]))


KIND = CounterKind()


@asynccontextmanager
async def runtime(db: Path, *, shared: bool) -> AsyncIterator[Runtime]:
    extra = {"shared": True} if shared else {}  # unshared: also runs on an agora without it
    async with open_store(db, MIGRATIONS, **extra) as store, trio.open_nursery() as n:
        rt = Runtime(store, n, clock=Clock(), idle_seconds=600)
        try:
            yield rt
        finally:
            rt.begin_shutdown()
            n.cancel_scope.cancel()


async def one_process(db: Path, *, shared: bool, commands: int, tasks: int) -> None:
    async with runtime(db, shared=shared) as rt:
        per = commands // tasks

        async def drive(i: int, command: Any) -> None:
            for _ in range(per):
                await rt.call(KIND, f"k{i}", command)

        for label, command in (("write", Add()), ("read", Get())):
            cpu, wall = time.process_time(), time.perf_counter()
            async with trio.open_nursery() as nursery:
                for i in range(tasks):
                    nursery.start_soon(drive, i, command)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            n = per * tasks
            print(
                f"  {'shared' if shared else 'unshared':<9} {label:<6} {n / wall:8.0f} cmd/s  "
                f"{cpu / n * 1e6:7.1f} us CPU/cmd"
            )
        counters = rt.store.counters()
        print(f"  {'':<9} batch size {counters['commands'] / max(counters['commits'], 1):.1f}")


async def child(db: Path) -> None:
    """Serve commands from stdin (``add KEY`` / ``drive KEYS SECONDS``) on a shared runtime."""
    async with runtime(db, shared=True) as rt:
        stdin = trio.wrap_file(sys.stdin)
        print("ready", flush=True)
        async for line in stdin:
            words = line.split()
            if words[0] == "add":
                await rt.call(KIND, words[1], Add())
                print(f"{time.time():.6f}", flush=True)
            elif words[0] == "drive":
                acked, busy, cpu = await contend(rt, int(words[1]), float(words[2]))
                print(f"{acked} {busy} {cpu:.6f} {rt.store.counters()['conflicts']}", flush=True)


async def contend(rt: Runtime, keys: int, seconds: float) -> tuple[int, int, float]:
    acked = busy = 0
    cpu = time.process_time()
    end = trio.current_time() + seconds
    while trio.current_time() < end:  # no cancellation: each call's outcome is known
        try:
            await rt.call(KIND, f"c{acked % keys}", Add())
            acked += 1
        except Busy:
            busy += 1
    return acked, busy, time.process_time() - cpu


async def two_processes(db: Path, keys: int, seconds: float, wakes: int) -> None:
    proc = await trio.lowlevel.open_process(
        [sys.executable, __file__, "--child", str(db)], stdin=-1, stdout=-1
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    lines = _Lines(proc.stdout)
    try:
        assert await lines.next() == "ready"
        async with runtime(db, shared=True) as rt:
            await proc.stdin.send_all(f"drive {keys} {seconds}\n".encode())
            acked, busy, cpu = await contend(rt, keys, seconds)
            theirs = (await lines.next()).split()
            t_acked, t_busy, t_cpu = int(theirs[0]), int(theirs[1]), float(theirs[2])
            total = sum([await rt.call(KIND, f"c{k}", Get()) for k in range(keys)])
            print(f"  contention on {keys} keys for {seconds:g} s, two processes:")
            for side, a, b, c, conflicts in (
                ("this", acked, busy, cpu, rt.store.counters()["conflicts"]),
                ("child", t_acked, t_busy, t_cpu, int(theirs[3])),
            ):
                print(
                    f"    {side:<6} {a / seconds:7.0f} cmd/s  {c / max(a, 1) * 1e6:7.1f} us CPU/cmd"
                    f"  conflicts {conflicts}  busy {b}"
                )
            print(f"    lost updates: {acked + t_acked - total} (must be 0)")
            latencies = []
            for i in range(wakes):
                woke: list[float] = []

                async def wait(at: int = i, woke: list[float] = woke) -> None:
                    await rt.poll(KIND, "w", Get(), ready=lambda v, at=at: v > at, timeout=30)
                    woke.append(time.time())

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(wait)
                    while not (a := rt.registry.named("bench", "w")) or not a.waiters:  # noqa: ASYNC110
                        await trio.sleep(0.001)
                    await proc.stdin.send_all(b"add w\n")
                    committed = float(await lines.next())
                latencies.append((woke[0] - committed) * 1e3)
            if latencies:
                q = statistics.quantiles(latencies, n=100)
                print(f"  cross-process wake: p50 {q[49]:.1f} ms  p99 {q[98]:.1f} ms")
    finally:
        await proc.stdin.aclose()
        with trio.move_on_after(10):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()


class _Lines:
    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._buffer = b""

    async def next(self) -> str:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some(4096)
            if not chunk:
                raise EOFError("the child exited")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=positive_int, default=4000)
    parser.add_argument("--tasks", type=positive_int, default=16)
    parser.add_argument("--seconds", type=positive_float, default=5.0)
    parser.add_argument("--keys", type=positive_int, default=4)
    parser.add_argument(
        "--wakes", type=non_negative_int, default=100, help="0: none; else at least 2 (a p99)"
    )
    parser.add_argument(
        "--unshared-only",
        action="store_true",
        help="only the unshared phase (to compare with an agora that has no shared files)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.commands < args.tasks:  # each task sends commands // tasks
        parser.error("--commands must be at least --tasks")
    if args.wakes == 1:  # statistics.quantiles needs two
        parser.error("--wakes must be 0 (none) or at least 2, for a p99")
    if args.child:
        await child(Path(args.child))
        return
    with tempfile.TemporaryDirectory() as tmp:
        print(f"one process, {args.tasks} tasks, {args.commands} commands per phase:")
        for shared in (False, True)[: 1 if args.unshared_only else 2]:
            await one_process(
                Path(tmp) / f"{shared}.db", shared=shared, commands=args.commands, tasks=args.tasks
            )
        if not args.unshared_only:
            await two_processes(Path(tmp) / "two.db", args.keys, args.seconds, args.wakes)


if __name__ == "__main__":
    trio.run(main)
