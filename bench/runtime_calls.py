"""The runtime's CPU per call for a burst of fresh entities, in process: no transport, no toolset.

What a chamber entry costs in `agora.runtime` and the store's submit path, measured alone:
``--calls`` (500) tasks at once each call `Runtime.call` on an entity of their own that the
kind's ``create`` hook makes in memory (so each call makes a new actor, runs inline, and
commits one ``INSERT`` through the writer thread of a real SQLite file, ``synchronous=FULL``).
A round is one such burst; the main (Trio) thread's CPU per call (``time.thread_time``) is
printed for the median and the best of ``--rounds`` (21) rounds, the first left out (warm-up).
``--no-store`` replaces the commit with a no-op, and the calls run one after another: the
runtime's own share alone.

To compare two versions, run it alternately with each on ``PYTHONPATH``, e.g. after
``git archive main src | tar -x -C /tmp/old``:
``PYTHONPATH=/tmp/old/src .venv/bin/python bench/runtime_calls.py`` then
``PYTHONPATH=src .venv/bin/python bench/runtime_calls.py``. Not run by CI.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from cli_args import positive_int

from agora.runtime.clock import Clock, Now
from agora.runtime.entity import Effects
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.base import Migration

INSERT = "INSERT INTO bench_calls (key, n) VALUES (?, ?) ON CONFLICT DO NOTHING"


def _create(db: Any) -> None:
    db.execute("CREATE TABLE bench_calls (key TEXT PRIMARY KEY, n INTEGER NOT NULL)")


MIGRATIONS = [Migration("bench_calls", 1, _create)]


class Fresh:
    """An entity whose one command writes one row and wakes its waiters (as an entry does)."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def handle(self, command: Any, now: Now) -> Effects:
        return Effects(reply=self.key, writes=[(INSERT, (self.key, 1))], changed=True)


class FreshKind:
    """Every key is new: ``create`` makes it without a load."""

    kind = "bench_calls"

    def create(self, key: str, now: Now) -> Fresh:
        return Fresh(key)

    def load(self, conn: Any, key: str, now: Now) -> Fresh:
        return Fresh(key)


async def _no_write(writes: Any, *rest: Any) -> None:
    return None


async def run(calls: int, rounds: int, store_on: bool) -> list[float]:
    """Main-thread CPU per call (microseconds) of each round after the first."""
    per_call: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with open_store(Path(tmp) / "calls.db", MIGRATIONS) as store:
            if not store_on:
                store.write = _no_write  # type: ignore[method-assign]
            async with trio.open_nursery() as nursery:
                runtime = Runtime(store, nursery, clock=Clock())
                kind = FreshKind()
                for r in range(rounds + 1):
                    start = time.thread_time()
                    if store_on:
                        async with trio.open_nursery() as burst:
                            for i in range(calls):
                                burst.start_soon(runtime.call, kind, f"{r}-{i}", None)
                    else:
                        for i in range(calls):
                            await runtime.call(kind, f"{r}-{i}", None)
                    if r:
                        per_call.append((time.thread_time() - start) / calls * 1e6)
                runtime.begin_shutdown()
                nursery.cancel_scope.cancel()
    return per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=positive_int, default=500, help="calls per round (default 500)"
    )
    parser.add_argument(
        "--rounds", type=positive_int, default=21, help="rounds measured (default 21)"
    )
    parser.add_argument("--no-store", action="store_true", help="no commit; calls in sequence")
    args = parser.parse_args()
    per_call = trio.run(run, args.calls, args.rounds, not args.no_store)
    what = "sequential, no commit" if args.no_store else f"{args.calls} at once, SQLite FULL"
    print(
        f"runtime calls ({what}): main-thread CPU per call "
        f"median {statistics.median(per_call):.1f} us, best {min(per_call):.1f} us "
        f"({args.rounds} rounds)"
    )


if __name__ == "__main__":
    main()
