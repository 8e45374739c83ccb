"""Write load for test_kill.py: run as ``python _writer_proc.py DB FIRST TASKS SECONDS``.

Opens a file store with ``synchronous=FULL`` and runs TASKS concurrent writers, each
inserting ids FIRST, FIRST + TASKS, ... and printing an id (flushed) only after
`Store.write` returned for it: every printed id is an acknowledged write. Prints ``ready``
first and stops by itself after SECONDS, so a lost test cannot leave it running. Not a test.
"""

from __future__ import annotations

import sys

import trio

from agora.store.db import open_store
from agora.toolsets.base import Migration

MIGRATIONS = [
    Migration(
        "kill",
        1,
        lambda db: db.execute(
            "CREATE TABLE kill_acks (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)"
        ),
    )
]


def ack(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def writer(store, first: int, step: int) -> None:
    for item in range(first, first + 10_000_000, step):
        await store.write([("INSERT INTO kill_acks (id, payload) VALUES (?, ?)", (item, "x" * 64))])
        ack(str(item))


async def main(path: str, first: int, tasks: int, seconds: float) -> None:
    async with open_store(path, MIGRATIONS, synchronous="FULL") as store:
        ack("ready")
        with trio.move_on_after(seconds):
            async with trio.open_nursery() as nursery:
                for t in range(tasks):
                    nursery.start_soon(writer, store, first + t, tasks)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
