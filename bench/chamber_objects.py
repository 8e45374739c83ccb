"""Tracked objects per chamber entry: those alive while a burst waits for its commit, and those
left behind once it is answered. Counts, not times: a busy machine cannot skew them.

The cyclic collector's share of a burst of entries (`agora.server.heap`: a young collection once
the net allocations of tracked objects since the last tick pass `YOUNG`, scanning what is young
and alive) grows with the tracked objects each entry makes and keeps alive meanwhile. This
counts them, in process: an `agora.server.embed.open_server` with the chamber on a loopback
port, ``--agents`` (300) lean WebSocket clients (`wsload`) on the same Trio loop, a warm-up
burst (every agent enters once), then the counted burst: the collector is frozen and off, the
store's writer thread is held before its commit, and once every entry has submitted its write
the young generation is counted (in flight: parked in the commit wait, all at once), then again
after the writer is let go and every entry answered (left behind: the new actors and attempts,
and the waits the readers and call workers went back to). The client's objects are in both
counts, the same for any server code. Per entry, with the commonest types.

Compare two trees with ``PYTHONPATH=OTHER/src .venv/bin/python bench/chamber_objects.py``
against ``.venv/bin/python bench/chamber_objects.py``. Bench-only; not run by CI.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import threading
import urllib.request
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio
from chamber_agents import ENTRY
from cli_args import positive_float, positive_int
from wsload import lean_connect

from agora.config import load_config
from agora.server.embed import open_server
from agora.store.writer import Writer

SUITE = "chambre-chrono-v0"


class HeldWriter:
    """Holds the store's writer thread before each commit while `held` (bench-only patch)."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.go.set()
        self.submitted = 0
        self.wanted = 0
        self.all_in = trio.Event()  # set once `wanted` writes were submitted
        commit, submit = Writer.commit_batch, Writer.submit

        def commit_batch(writer: Writer, batch: Any) -> None:
            self.go.wait()
            commit(writer, batch)

        def counted_submit(writer: Writer, job: Any) -> None:
            self.submitted += 1  # (submit runs on the event loop's thread)
            if self.submitted == self.wanted:
                self.all_in.set()
            submit(writer, job)

        Writer.commit_batch = commit_batch  # type: ignore[method-assign]
        Writer.submit = counted_submit  # type: ignore[method-assign]


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def young(n: int) -> tuple[float, Counter[str]]:
    """The young generation's tracked objects per entry, and by type."""
    objects = gc.get_objects(0)
    kinds = Counter(type(o).__qualname__ for o in objects)
    return len(objects) / n, kinds


def per_entry(kinds: Counter[str], n: int, top: int) -> str:
    return ", ".join(f"{k} {v / n:.2f}" for k, v in kinds.most_common(top) if v / n >= 0.05)


async def main(args: argparse.Namespace) -> None:
    held = HeldWriter()
    n = args.agents
    options = {"room_pool_size": 2 * n, "anonymous_enter_per_minute": 0}
    db = Path(tempfile.mkdtemp(prefix="agora-chamber-objects-")) / "agora.db"
    config = load_config(
        None, db=str(db), port=0, toolsets=["chamber"], options={"chamber": options}
    )
    async with open_server(config) as server:
        while True:  # a room in the pool for every entry of both bursts
            body = await trio.to_thread.run_sync(_get_json, f"{server.url}/chamber/pool")
            state = body["suites"][SUITE]
            if state["ready"] >= state["size"]:
                break
            await trio.sleep(0.2)
        url = server.url.replace("http://", "ws://") + "/mcp/chamber"
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(lean_connect(url)) for _ in range(n)]

            async def one(client: Any) -> None:
                result = await client.call_tool("enter_open_challenge", {**ENTRY, "suite": SUITE})
                assert not result.get("isError"), result

            async with trio.open_nursery() as nursery:  # warm-up: workers, buckets, caches
                for client in clients:
                    nursery.start_soon(one, client)
            gc.collect()
            gc.disable()
            gc.freeze()  # from here, the young generation is what the counted burst made
            held.go.clear()
            held.submitted, held.wanted = 0, n
            with trio.fail_after(args.timeout):
                async with trio.open_nursery() as nursery:
                    for client in clients:
                        nursery.start_soon(one, client)
                    await held.all_in.wait()  # every entry is parked in its commit wait
                    await trio.sleep(0.05)  # and every reader back in its wait
                    flight, flying = young(n)
                    held.go.set()
            left, kept = young(n)
            gc.unfreeze()
            gc.enable()
    flying.subtract(kept)
    print(f"chamber_objects: {n} agents entering at once (tracked objects per entry)")
    print(f"  in flight (all waiting for their commit): {flight:.1f}")
    print(f"    more than left behind: {per_entry(flying, n, args.top)}")
    print(f"  left behind once answered: {left:.1f}")
    print(f"    {per_entry(kept, n, args.top)}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=positive_int, default=300, help="agents (default 300)")
    parser.add_argument("--top", type=positive_int, default=20, help="types shown (default 20)")
    parser.add_argument("--timeout", type=positive_float, default=120.0, help="seconds, at most")
    return parser.parse_args()


if __name__ == "__main__":
    trio.run(main, parse_args())
