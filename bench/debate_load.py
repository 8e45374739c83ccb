"""Debate under load: durable addressed posts, push delivery, search and read at scale.

Runs against ``agora serve --toolsets debate`` started here on a free 127.0.0.1 port with a
fresh SQLite file (``synchronous=FULL``: every acknowledged post is fsync'd before its reply)
and one configured principal; every agent connects over WebSocket with its bearer token
(`wsload.LeanClient`: raw frames, so the load generator costs less CPU than the server it
shares the machine with).

(load) ``--topics`` topics x ``--roles`` role sessions. Each role has one agent on its own
    connection looping for ``--seconds``: post one addressed message to the next role
    (``debate_post_with_recipients``), then ``debate_signal_wait`` on its inbox (1 s at most)
    and ``debate_signal_advance`` past what it got. Reported: acknowledged (durable) posts/s;
    post round trip p50/p99; delivery latency p50/p99, measured only for waits that were
    already parked when the message was posted, from the poster sending the post to the
    recipient's wait returning (an upper bound on "post committed -> wait returns": it also
    counts the post's own trip and commit); the server's CPU.
(search, read) A store of ``--store-messages`` messages is written straight into a fresh
    database with the toolset's own statements (so the FTS trigram index is built as the
    server builds it): one topic of ``--search-messages`` messages, the rest over
    ``--topics`` filler topics. Then over MCP: ``--queries`` ``debate_search`` calls on the
    big topic (rare: a unique 10-hex-digit identifier; medium: a two-word phrase; short: two
    characters, the literal scan) and ``--pages`` ``debate_read`` pages (limit 200) from
    random cursors of random topics; p50/p99 of the client's round trip for each.

Usage: ``.venv/bin/python bench/debate_load.py [--topics 200] [--roles 5] [--seconds 15]
[--search-messages 100000] [--store-messages 1000000] [--queries 300] [--pages 300]
[--only load|search] [--synchronous FULL|NORMAL]``. Not run by CI.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import random
import sqlite3
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio
from measure import cpu_seconds, percentile, raise_fd_limit
from serve import agora_serve
from wsload import LeanClient, lean_connect

from agora.store.migrations import apply_migrations
from agora.toolsets.debate import sql
from agora.toolsets.debate.model import Binding, MsgMeta, TopicRow

TOKEN = "debate-bench-token"
PRINCIPAL = "bench"
LANE = '{"priority_lane": "P3", "priority_reason": "bench"}'
WORDS = [
    "musl",
    "glibc",
    "resolver",
    "packaging",
    "release",
    "static",
    "binary",
    "image",
    "layer",
    "cache",
    "tls",
    "dns",
    "fallback",
    "kernel",
    "socket",
    "latency",
    "budget",
    "review",
    "verdict",
    "claim",
    "evidence",
    "rebut",
    "concede",
    "ship",
    "hold",
    "block",
]


def write_config(directory: Path) -> Path:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    path = directory / "agora.toml"
    path.write_text(
        f'[[principals]]\nname = "{PRINCIPAL}"\ntoken_sha256 = "{digest}"\nprojects = ["bench"]\n'
    )
    return path


async def tool(client: LeanClient, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    if result.get("isError"):
        raise RuntimeError(f"{name}: {result['structuredContent']}")
    out: dict[str, Any] = result["structuredContent"]
    return out


def summary(label: str, samples: list[float]) -> str:
    if not samples:
        return f"{label}: no samples"
    ms = [s * 1000 for s in samples]
    return (
        f"{label}: n={len(ms)} p50 {percentile(ms, 0.5):.2f} ms, p99 {percentile(ms, 0.99):.2f} ms,"
        f" max {max(ms):.2f} ms"
    )


# -- (load) ------------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.posts = 0
        self.post_rtt: list[float] = []
        self.delivery: list[float] = []
        self.wait_rtt: list[float] = []
        self.advance_rtt: list[float] = []
        self.waits = 0
        self.empty_waits = 0
        self.counting = False


async def setup_topic(url: str, roles: int) -> list[tuple[str, str, str]]:
    """One topic; returns (topic_id, role, session_id) per role."""
    async with lean_connect(url, TOKEN) as client:
        sessions = [(await tool(client, "debate_session_open"))["session_id"] for _ in range(roles)]
        names = [f"ROLE_{i}" for i in range(roles)]
        roster = [{"role": r, "session_id": s} for r, s in zip(names, sessions, strict=True)]
        out = await tool(
            client,
            "debate_init",
            title="load",
            created_by_role=names[0],
            roles_json=json.dumps(roster),
            metadata_json=LANE,
        )
        await tool(
            client, "debate_state", topic_id=out["topic_id"], role=names[0], new_state="ACTIVE"
        )
        return [(out["topic_id"], r, s) for r, s in zip(names, sessions, strict=True)]


async def agent(
    url: str,
    topic: str,
    role: str,
    session: str,
    to: str,
    stats: Stats,
    deadline: float,
    ready: trio.Event,
) -> None:
    async with lean_connect(url, TOKEN) as client:
        await ready.wait()
        while time.perf_counter() < deadline:
            sent = time.perf_counter()
            await tool(
                client,
                "debate_post_with_recipients",
                topic_id=topic,
                role=role,
                priority="M",
                kind="STATUS",
                body=f"{sent:.9f}",
                addressed_to_csv=to,
            )
            acked = time.perf_counter()
            if stats.counting:
                stats.posts += 1
                stats.post_rtt.append(acked - sent)
            parked = time.perf_counter()
            inbox = await tool(
                client,
                "debate_signal_wait",
                topic_id=topic,
                role=role,
                session_id=session,
                timeout_ms=1000,
                limit=100,
            )
            back = time.perf_counter()
            if stats.counting:
                stats.wait_rtt.append(back - parked)
                stats.waits += 1
                stats.empty_waits += not inbox["pending"]
            for m in inbox["pending"]:
                posted = float(m["body"])
                if posted > parked and stats.counting:
                    stats.delivery.append(back - posted)
            if inbox["pending"]:
                t_adv = time.perf_counter()
                await tool(
                    client,
                    "debate_signal_advance",
                    topic_id=topic,
                    role=role,
                    session_id=session,
                    last_processed_msg_id=inbox["pending"][-1]["msg_id"],
                )
                if stats.counting:
                    stats.advance_rtt.append(time.perf_counter() - t_adv)


async def run_load(args: argparse.Namespace, directory: Path) -> None:
    config = write_config(directory)
    async with agora_serve(
        directory / "load.db", "debate", config=config, synchronous=args.synchronous
    ) as server:
        url = f"ws://127.0.0.1:{server.port}/mcp/debate"
        topics: list[list[tuple[str, str, str]]] = []
        limiter = trio.CapacityLimiter(50)

        async def one() -> None:
            async with limiter:
                topics.append(await setup_topic(url, args.roles))

        async with trio.open_nursery() as nursery:
            for _ in range(args.topics):
                nursery.start_soon(one)
        print(f"load: {args.topics} topics x {args.roles} roles set up", flush=True)
        stats, ready = Stats(), trio.Event()
        warmup = 2.0
        deadline = time.perf_counter() + warmup + args.seconds + 1
        async with trio.open_nursery() as nursery:
            for roster in topics:
                for i, (topic, role, session) in enumerate(roster):
                    to = roster[(i + 1) % len(roster)][1]
                    nursery.start_soon(agent, url, topic, role, session, to, stats, deadline, ready)
            await trio.sleep(1)  # connections open
            ready.set()
            await trio.sleep(warmup)
            cpu0, t0, own0 = cpu_seconds(server.pid), time.perf_counter(), time.process_time()
            stats.counting = True
            await trio.sleep(args.seconds)
            stats.counting = False
            cpu1, t1, own1 = cpu_seconds(server.pid), time.perf_counter(), time.process_time()
        span = t1 - t0
        print(
            f"load: {stats.posts / span:,.0f} acknowledged (durable) posts/s over {span:.1f} s"
            f"; server CPU {100 * (cpu1 - cpu0) / span:.0f}%, load generator CPU "
            f"{100 * (own1 - own0) / span:.0f}%"
        )
        print(f"load: {stats.waits} waits, {stats.empty_waits} of them timed out empty")
        print(summary("load: post round trip", stats.post_rtt))
        print(summary("load: signal_wait round trip", stats.wait_rtt))
        print(summary("load: signal_advance round trip", stats.advance_rtt))
        print(summary("load: delivery (post sent -> parked wait returned)", stats.delivery))


# -- (search, read) ----------------------------------------------------------------------------


def build_store(path: Path, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    """Write the big store offline with the toolset's statements; returns what to query."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    apply_migrations(conn, sql.MIGRATIONS)
    at = "2026-11-30T00:00:00.000000Z"
    session = "5e551011-0000-4000-8000-000000000000"
    conn.execute(*sql.insert_session(session, PRINCIPAL, "bench", None, at))
    topics = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(args.topics + 1)]
    sizes = [args.search_messages] + [
        (args.store_messages - args.search_messages) // args.topics
    ] * args.topics
    samples: dict[str, list[str]] = {}
    unique: list[str] = []
    for topic_id, size in zip(topics, sizes, strict=True):
        row = TopicRow(
            topic_id,
            "bench",
            "bench",
            "ACTIVE",
            at,
            "ROLE_0",
            None,
            None,
            {"conductor_priority": {"lane": "P3", "rank": 3, "reason": "b"}},
            ["ROLE_0"],
            {},
            "{}",
            at,
        )
        binding = Binding(
            topic_id, "ROLE_0", 1, session, PRINCIPAL, None, "active", None, None, None, at, at
        )
        conn.execute("BEGIN")
        conn.execute(*sql.insert_topic(row))
        conn.execute(*sql.upsert_binding(binding))
        ids = samples.setdefault(topic_id, [])
        for n in range(size):
            msg_id = f"{n:08x}-{int(topic_id[:8], 16):04x}-4000-8000-000000000000"
            ts = (
                f"2026-11-30T{n // 3600000 % 24:02d}:{n // 60000 % 60:02d}:"
                f"{n // 1000 % 60:02d}.{n % 1000:03d}000Z"
            )
            token = f"{rng.getrandbits(40):010x}"  # an identifier: unique, random trigrams
            body = " ".join(rng.choice(WORDS) for _ in range(6)) + f" {token}"
            meta = MsgMeta(msg_id, ts, "ROLE_0", "STATUS", "M", None, (), None, False)
            conn.execute(*sql.insert_message(topic_id, meta, body, None, "analysis", {}))
            if n % 997 == 0:
                ids.append(msg_id)
                if topic_id == topics[0]:
                    unique.append(token)
        conn.execute("COMMIT")
    conn.close()
    return {"big": topics[0], "topics": topics, "ids": samples, "unique": unique}


async def run_search(args: argparse.Namespace, directory: Path) -> None:
    rng = random.Random(7)
    db = directory / "search.db"
    started = time.perf_counter()
    store = await trio.to_thread.run_sync(build_store, db, args, rng)
    print(
        f"search: wrote {args.store_messages:,} messages ({args.search_messages:,} in one "
        f"topic) in {time.perf_counter() - started:.0f} s; database "
        f"{db.stat().st_size / 2**20:,.0f} MiB",
        flush=True,
    )
    config = write_config(directory)
    async with agora_serve(db, "debate", config=config) as server:
        url = f"ws://127.0.0.1:{server.port}/mcp/debate"
        async with lean_connect(url, TOKEN) as client:
            big = store["big"]
            kinds = {
                "rare (a unique 10-hex-digit id)": lambda: rng.choice(store["unique"]),
                "medium (two-word phrase)": lambda: " ".join(rng.sample(WORDS, 2)),
                "short (2 chars, literal scan)": lambda: rng.choice(WORDS)[:2],
            }
            await tool(client, "debate_search", topic_id=big, query="warm up")
            for label, make in kinds.items():
                times = []
                for _ in range(args.queries):
                    query = make()
                    t0 = time.perf_counter()
                    await tool(client, "debate_search", topic_id=big, query=query, limit=20)
                    times.append(time.perf_counter() - t0)
                print(summary(f"search {label}", times), flush=True)
            times = []
            for _ in range(args.pages):
                topic = rng.choice(store["topics"])
                since = rng.choice(store["ids"][topic])
                t0 = time.perf_counter()
                page = await tool(
                    client,
                    "debate_read",
                    topic_id=topic,
                    role="ROLE_0",
                    since_msg_id=since,
                    limit=200,
                )
                times.append(time.perf_counter() - t0)
                assert page["count"] > 0
            print(summary(f"read page (limit 200, {args.store_messages:,} messages stored)", times))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--roles", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--search-messages", type=int, default=100_000)
    parser.add_argument("--store-messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--only", choices=("load", "search"))
    parser.add_argument("--synchronous", default="FULL", choices=("FULL", "NORMAL"))
    args = parser.parse_args()
    raise_fd_limit()
    gc.disable()
    with tempfile.TemporaryDirectory(prefix="debate-bench-") as tmp:
        async with AsyncExitStack():
            if args.only in (None, "load"):
                await run_load(args, Path(tmp))
            if args.only in (None, "search"):
                await run_search(args, Path(tmp))


if __name__ == "__main__":
    trio.run(main)
