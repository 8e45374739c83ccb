"""The toolsets' schemas and queries on both engines: same migrations, same search results.

Every toolset's migrations apply on PostgreSQL (a step without a PostgreSQL twin would be
refused by name), and the debate's literal-substring search, which SQLite serves with an
FTS5 trigram index and PostgreSQL with a pg_trgm one, returns the same rows on both,
including needles with LIKE's own characters and needles shorter than a trigram.
"""

from __future__ import annotations

import pytest
import trio

from agora.server.app import load_toolsets
from agora.store.db import open_store
from agora.toolsets.debate.rules import fts_phrase, like_pattern
from agora.toolsets.debate.sql import reads
from agora.toolsets.debate.sql.schema import MIGRATIONS as DEBATE

TIMEOUT = 30
BODIES = [
    "Plain text about caching",
    "100% sure: the cache_key is wrong",
    "A backslash \\ and a quote ' and %_ together",
    "ÉCOLE, Straße and İstanbul",
    "short",
    "the CACHE again, in capitals",
]


def insert(i: int, body: str) -> tuple[str, tuple[object, ...]]:
    return (
        "INSERT INTO debate_messages (msg_id, topic_id, ts, role, priority, kind, body,"
        " body_folded, vehicle, recipients) VALUES (?, 't', ?, 'r', 'normal', 'M', ?, ?,"
        " 'post', '[]')",
        (f"m{i}", f"2026-11-30T00:00:{i:02d}.000000Z", body, body.casefold()),
    )


async def test_every_toolsets_migrations_apply_on_postgresql(pg_url):
    migrations = [m for t in load_toolsets(["chess", "chamber", "router", "debate"])
                  for m in t.migrations]  # fmt: skip
    with trio.fail_after(TIMEOUT):
        async with open_store(pg_url, migrations) as store:
            assert set(store.versions) >= {"chess", "chamber", "router", "debate"}


@pytest.mark.parametrize(
    "query", ["cache", "CACHE", "100%", "_key", "\\", "'", "%_", "straße", "é", "ab", "nothing"]
)
async def test_debate_search_finds_the_same_rows_on_both_engines(tmp_path, pg_url, query):
    folded = query.casefold()
    phrase = fts_phrase(folded) if len(folded) >= 3 else None
    found = []
    with trio.fail_after(TIMEOUT):
        for db in (str(tmp_path / "a.db"), pg_url):
            async with open_store(db, DEBATE) as store:
                await store.write([insert(i, body) for i, body in enumerate(BODIES)])
                rows = await store.read(
                    lambda c: reads.search(c, "t", phrase, like_pattern(folded), 50)
                )
                found.append([row[0] for row in rows])
    assert found[0] == found[1]
    expected = [f"m{i}" for i, b in reversed(list(enumerate(BODIES))) if folded in b.casefold()]
    assert found[0] == expected


async def test_a_topics_messages_after_one_are_the_same_on_both_engines(tmp_path, pg_url):
    # A reload reads only the messages after the last its copy had (`TopicKind.reload`):
    # after a message, and after a message whose ts a later one shares.
    stamps = ["00", "01", "01", "02"]
    rows = [(f"m{i}", f"2026-11-30T00:00:{s}.000000Z") for i, s in enumerate(stamps)]
    found = []
    with trio.fail_after(TIMEOUT):
        for db in (str(tmp_path / "a.db"), pg_url):
            async with open_store(db, DEBATE) as store:
                await store.write([
                    (insert(0, "x")[0], (msg_id, ts, "x", "x")) for msg_id, ts in rows
                ])  # fmt: skip
                for after in (None, rows[0], rows[1], rows[3]):
                    since = None if after is None else (after[1], after[0])  # (ts, msg_id)
                    metas = await store.read(lambda c, a=since: reads.message_metas(c, "t", a))
                    found.append([m.msg_id for m in metas])
    assert found[:4] == [["m0", "m1", "m2", "m3"], ["m1", "m2", "m3"], ["m2", "m3"], []]
    assert found[4:] == found[:4]
