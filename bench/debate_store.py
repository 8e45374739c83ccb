"""Debate at scale, the (search, read) part of ``debate_load.py``; and what both parts share.

A store of ``--store-messages`` messages is written straight into a fresh database with the
toolset's own statements (so the FTS trigram index is built as the server builds it): one
topic of ``--search-messages`` messages, the rest over ``--topics`` filler topics. Then over
MCP: ``--queries`` ``debate_search`` calls on the big topic (rare: a unique 10-hex-digit
identifier; medium: a two-word phrase; short: two characters, the literal scan) and
``--pages`` ``debate_read`` pages (limit 200) from random cursors of random topics; p50/p99
of the client's round trip for each. With ``--keep-store PATH`` the store is written there
(with its query list in ``PATH.json``) and reused by later runs instead of rebuilt.

Imported by ``debate_load.py`` (run that); never by agora.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from typing import TYPE_CHECKING, Any

import trio
from measure import summary
from serve import agora_serve, principal_config
from wsload import LeanClient, lean_connect

from agora.store.migrations import apply_migrations
from agora.toolsets.debate import sql
from agora.toolsets.debate.model import Binding, MsgMeta, TopicRow

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

TOKEN = "debate-bench-token"
PRINCIPAL = "bench"
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
    return principal_config(directory, TOKEN, PRINCIPAL)


async def tool(client: LeanClient, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    if result.get("isError"):
        raise RuntimeError(f"{name}: {result['structuredContent']}")
    out: dict[str, Any] = result["structuredContent"]
    return out


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
    # The search index is kept in batches (the server's background task, `sql.fts`):
    # index the whole store before the server opens it, as that task would.
    while sql.backlog(conn) > 0:
        conn.execute("BEGIN")
        for statement in sql.catch_up():
            conn.execute(*statement)
        conn.execute("COMMIT")
    conn.close()
    return {"big": topics[0], "topics": topics, "ids": samples, "unique": unique}


async def run_search(args: argparse.Namespace, directory: Path) -> None:
    rng = random.Random(7)
    db = args.keep_store or directory / "search.db"
    index = db.with_name(db.name + ".json")
    if index.exists():  # built by an earlier run with --keep-store: the server reopens it
        store = json.loads(index.read_text())
        print(f"search: reusing {db} ({db.stat().st_size / 2**20:,.0f} MiB)", flush=True)
    else:
        started = time.perf_counter()
        store = await trio.to_thread.run_sync(build_store, db, args, rng)
        index.write_text(json.dumps(store))
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
