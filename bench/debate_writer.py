"""The debate toolset and its store alone: what a post cycle costs the writer, without MCP.

`debate_load.py` measures the whole server over WebSocket; here the same closed loop runs in
one process on the toolset's handlers (``agora.toolsets.debate.tools.HANDLERS``) over a real
SQLite file (``synchronous=FULL``, the server's store: `agora.store.db.open_store`), so the
figures leave out the transport and the load generator: ``--topics`` topics x ``--roles``
agents, each posting an addressed STATUS to the next role (``debate_post_with_recipients``),
then ``debate_signal_wait`` + ``debate_signal_advance`` past what the wait returned, for
``--seconds`` after a warm-up. The agents are Trio tasks sharing the one thread with the
toolset, as connections share the server's.

Reported per post (each with its wait and advance): the writer thread's CPU and its wall
time in statements and in COMMIT (the store's counters, ``/healthz`` "store"), the bytes
written to storage (``/proc/self/io``, WAL and checkpoints), the pages of each table and
index the committed transactions wrote (``--pages``: the WAL's frames, read back with the
``dbstat`` table, checkpoints off while measuring), and the Trio thread's CPU.

Usage: ``.venv/bin/python bench/debate_writer.py [--topics 200] [--roles 5] [--seconds 10]
[--pages]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import collections
import struct
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import debate_agent
import trio
from cli_args import positive_float, positive_int
from debate_agent import writer_split
from measure import disk_bytes

from agora.identity import Principal
from agora.runtime.clock import Clock
from agora.runtime.registry import Runtime
from agora.store import wal
from agora.store.db import open_store
from agora.toolsets.base import ToolCall
from agora.toolsets.debate.sql import MIGRATIONS
from agora.toolsets.debate.tools import HANDLERS

if TYPE_CHECKING:
    from debate_agent import Call, Seat

    from agora.store.sqlite import Store
    from agora.store.wal_index import WalIndex

WARMUP = 2.0
AGENT = Principal("bench", projects=frozenset({"bench"}))


async def call(runtime: Runtime, tool: str, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = await HANDLERS[tool](
        ToolCall(tool=tool, args=args, principal=AGENT, runtime=runtime)
    )
    return result


async def agent(call: Call, seat: Seat, to: str, posts: list[int], deadline: float) -> None:
    while time.perf_counter() < deadline:
        await debate_agent.post(call, seat, to, f"{time.time():.9f}")
        posts[0] += 1
        inbox = await debate_agent.wait(call, seat, 1000)
        if inbox["pending"]:
            await debate_agent.advance(call, seat, inbox)


def wal_pages(db: Path, since: int) -> collections.Counter[str]:
    """Frames of the WAL from frame ``since`` on, by the table or index of their page."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    finally:
        conn.close()
    data = (db.parent / (db.name + "-wal")).read_bytes()
    size = struct.unpack(">I", data[8:12])[0]
    counts: collections.Counter[str] = collections.Counter()
    for offset in range(32 + since * (24 + size), len(data) - size - 23, 24 + size):
        counts[owner.get(struct.unpack(">I", data[offset : offset + 4])[0], "?")] += 1
    return counts


def frames(index: WalIndex) -> int:
    """The WAL's last valid frame (the wal-index header's mxFrame), read through a hold on
    the index: opening and closing the -shm here would drop SQLite's locks on it."""
    read = index.frames()
    return 0 if read is None else read[0]


async def run(args: argparse.Namespace, directory: Path) -> None:
    db = directory / "writer.db"
    async with open_store(db, MIGRATIONS, synchronous="FULL") as store, trio.open_nursery() as n:
        runtime = Runtime(store, n, clock=Clock())
        on_runtime = partial(call, runtime)
        seats = [
            await debate_agent.setup_topic(on_runtime, args.roles, "writer")
            for _ in range(args.topics)
        ]
        if args.pages:  # the WAL keeps every frame of the run, read back at the end:
            wal.RESTART_FRAMES = 1 << 40  # neither the writer's restart of a long WAL
            if store.checkpointer is not None:
                store.checkpointer.stop()  # nor any checkpoint
        posts = [0]
        deadline = time.perf_counter() + WARMUP + args.seconds
        async with trio.open_nursery() as agents:
            for roster in seats:
                for i, seat in enumerate(roster):
                    to = roster[(i + 1) % len(roster)][1]
                    agents.start_soon(agent, on_runtime, seat, to, posts, deadline)
            await trio.sleep(WARMUP)
            await measure(store, db, posts, args)
        runtime.begin_shutdown()
        n.cancel_scope.cancel()  # the actors' reaper and tasks run until cancelled


async def measure(store: Store, db: Path, posts: list[int], args: argparse.Namespace) -> None:
    before, disk0, main0, posted0 = store.counters(), disk_bytes(), time.thread_time(), posts[0]
    index = store.checkpointer.index if store.checkpointer is not None else None
    frame0 = frames(index) if args.pages and index is not None else 0
    await trio.sleep(args.seconds)
    after, disk1, main1, count = store.counters(), disk_bytes(), time.thread_time(), posts[0]
    count -= posted0
    cpu, statements, busy = writer_split(before, after)
    commits = after["commits"] - before["commits"]
    jobs = after["commands"] - before["commands"]
    print(f"writer: {count / args.seconds:,.0f} posts/s in process; {commits} transactions of")
    print(f"writer: {jobs / max(commits, 1):.1f} commands; per post (with its wait and advance):")
    print(f"writer:   writer thread CPU {1e3 * cpu / count:,.0f} us")
    print(f"writer:   statements {1e3 * statements / count:,.0f} us wall")
    print(f"writer:   COMMIT {1e3 * (busy - statements) / count:,.0f} us wall (fsync, checkpoints)")
    print(f"writer:   written to storage {(disk1 - disk0) / count / 1024:,.1f} KiB")
    print(f"writer:   Trio thread CPU {1e6 * (main1 - main0) / count:,.0f} us (toolset + runtime)")
    if args.pages:
        pages = wal_pages(db, frame0)
        total = sum(pages.values())
        print(f"writer: WAL pages per post {total / count:.2f}, by table or index:")
        for name, n in pages.most_common(12):
            print(f"writer:   {n / count:5.2f} {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=positive_int, default=200)
    parser.add_argument("--roles", type=positive_int, default=5)
    parser.add_argument("--seconds", type=positive_float, default=10)
    parser.add_argument("--pages", action="store_true", help="WAL pages per table and index")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="debate-writer-") as tmp:
        trio.run(run, args, Path(tmp))


if __name__ == "__main__":
    main()
