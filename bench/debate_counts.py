"""What a debate post cycle costs in counts, not time: figures a busy machine cannot skew.

The closed loop of `debate_writer.py` (each agent posts an addressed STATUS to the next role,
then ``debate_signal_wait`` + ``debate_signal_advance``) runs in process on the toolset's
handlers over a real SQLite file (``synchronous=OFF``: the disk is not what is counted),
``--topics`` topics x ``--roles`` agents, ``--cycles`` posts each after a warm-up, under
``cProfile``. Printed:

- Python calls per post (each with its wait and advance), in all and by module (``~``:
  built-in functions and methods). cProfile counts each resumption of a coroutine as a call,
  so a task that parks and wakes once more counts once more.
- The collector's young generations per post: ``gc.get_count`` is a net count of tracked
  objects, so this is a floor of what a post leaves for the collector to scan.
- Tracked objects per parked wait: ``--topics`` waits parked at once on empty inboxes (no
  timeout before the census), every tracked object alive then and not before, by type. The
  collector scans these for as long as the wait stays young (`agora.server.heap`).

Compare two trees with ``PYTHONPATH=OTHER/src`` (the bench imports ``agora`` from there).
Usage: ``.venv/bin/python bench/debate_counts.py [--topics 40] [--roles 5] [--cycles 10]
[--top 25]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import pstats
import tempfile
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import debate_agent
import trio
import trio.testing
from cli_args import positive_int
from debate_writer import call

from agora.runtime.clock import Clock
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate.sql import MIGRATIONS

if TYPE_CHECKING:
    from debate_agent import Call, Seat


async def agent(call: Call, seat: Seat, to: str, cycles: int, posts: list[int]) -> None:
    for _ in range(cycles):
        await debate_agent.post(call, seat, to, "x" * 40)
        posts[0] += 1
        inbox = await debate_agent.wait(call, seat, 1000)
        if inbox["pending"]:
            await debate_agent.advance(call, seat, inbox)


async def loop(call: Call, seats: list[list[Seat]], cycles: int, posts: list[int]) -> None:
    async with trio.open_nursery() as agents:
        for roster in seats:
            for i, seat in enumerate(roster):
                to = roster[(i + 1) % len(roster)][1]
                agents.start_soon(agent, call, seat, to, cycles, posts)


def module(path: str) -> str:
    """A short name for the file of a profiled function."""
    if "/src/agora/" in path:
        return path.split("/src/agora/")[-1]
    if "site-packages/" in path:
        return path.split("site-packages/")[-1].split("/")[0]
    return path.rsplit("/", 1)[-1]


def census() -> collections.Counter[str]:
    gc.collect()
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


async def run(args: argparse.Namespace, directory: Path) -> None:
    store_at = directory / "counts.db"
    async with (
        open_store(store_at, MIGRATIONS, synchronous="OFF") as store,
        trio.open_nursery() as nursery,
    ):
        runtime = Runtime(store, nursery, clock=Clock())
        on_runtime = partial(call, runtime)
        seats = [
            await debate_agent.setup_topic(on_runtime, args.roles, "counts")
            for _ in range(args.topics)
        ]
        await loop(on_runtime, seats, 3, [0])  # warm-up: actors loaded, caches filled
        await calls(on_runtime, seats, args)
        await parked(on_runtime, seats, args)
        runtime.begin_shutdown()
        nursery.cancel_scope.cancel()


async def calls(call: Call, seats: list[list[Seat]], args: argparse.Namespace) -> None:
    posts = [0]
    young = gc.get_stats()[0]["collections"]
    profile = cProfile.Profile()
    profile.enable()
    await loop(call, seats, args.cycles, posts)
    profile.disable()
    young = gc.get_stats()[0]["collections"] - young
    count = posts[0]
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    by_module: collections.Counter[str] = collections.Counter()
    for (path, _, _), (_, ncalls, *_) in stats.items():
        by_module[module(path)] += ncalls
    total = sum(by_module.values())
    print(f"counts: {count} posts; Python calls per post {total / count:.1f}")
    print(f"counts: young collections per post {young / count:.4f} (threshold 700)")
    for name, n in by_module.most_common(args.top):
        print(f"counts:   {n / count:7.1f} {name}")


async def parked(call: Call, seats: list[list[Seat]], args: argparse.Namespace) -> None:
    for roster in seats:  # empty every first role's inbox: its wait will park
        inbox = await debate_agent.wait(call, roster[0], 0)
        if inbox["pending"]:
            await debate_agent.advance(call, roster[0], inbox)
    before = census()
    async with trio.open_nursery() as waits:
        for roster in seats:
            waits.start_soon(debate_agent.wait, call, roster[0], 600_000)
        await trio.testing.wait_all_tasks_blocked()
        after = census()
        waits.cancel_scope.cancel()
    grown = after - before
    count = len(seats)
    print(f"counts: tracked objects per parked wait {sum(grown.values()) / count:.1f}")
    for name, n in grown.most_common(args.top):
        if n >= count / 2:
            print(f"counts:   {n / count:5.2f} {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=positive_int, default=40)
    parser.add_argument("--roles", type=positive_int, default=5)
    parser.add_argument("--cycles", type=positive_int, default=10)
    parser.add_argument("--top", type=positive_int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="debate-counts-") as tmp:
        trio.run(run, args, Path(tmp))


if __name__ == "__main__":
    main()
