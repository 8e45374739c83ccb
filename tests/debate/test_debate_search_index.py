"""The SQLite search index kept in batches (`sql.fts`, migration 5): a message is found from
its commit on, before the index holds it and after, once; a backlog is indexed in batches;
a store of migration 4 keeps what its trigger indexed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from debate_support import ALICE, BOB, Desk, seeding_columns

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.toolsets.debate import sql
from agora.toolsets.debate.handlers.reads import index_step
from agora.toolsets.debate.rules import fts_phrase, like_pattern
from agora.toolsets.debate.sql import MIGRATIONS, fts

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("the FTS5 index is SQLite's (PostgreSQL: pg_trgm)")


async def _topic(desk: Desk) -> str:
    a, b = await desk.session(ALICE), await desk.session(BOB)
    return await desk.topic(ALICE, {"CONDUCTOR": a, "EXECUTOR_1": (BOB, b)})


async def _post(desk: Desk, topic: str, body: str) -> str:
    out = await desk.post(ALICE, topic, "CONDUCTOR", body, to="EXECUTOR_1")
    return str(out["msg_id"])


def _indexed(conn: Any, word: str) -> int:
    """How many rows the FTS index itself holds for ``word``."""
    query = "SELECT COUNT(*) FROM debate_messages_fts WHERE debate_messages_fts MATCH ?"
    return int(conn.execute(query, (fts_phrase(word),)).fetchone()[0])


def _found(desk: Desk, topic: str, word: str) -> Any:
    """The msg_ids the index-driven search path returns for ``word``, newest first."""

    def read(conn: Any) -> list[str]:
        return [r[0] for r in sql.search(conn, topic, fts_phrase(word), like_pattern(word), 50)]

    return desk.runtime.read(read)


async def test_a_message_is_found_before_the_index_holds_it_and_after_once(desk):
    topic = await _topic(desk)
    first = [await _post(desk, topic, f"needle {i}") for i in range(3)]
    await _post(desk, topic, "hay")
    # Posting indexed nothing (no trigger): the search reads the tail past the watermark.
    assert await desk.runtime.read(lambda c: _indexed(c, "needle")) == 0
    assert await desk.runtime.read(sql.backlog) > 0
    assert await _found(desk, topic, "needle") == first[::-1]
    await index_step(desk.runtime)
    assert await desk.runtime.read(sql.backlog) == 0
    assert await desk.runtime.read(lambda c: _indexed(c, "needle")) == 3
    assert await _found(desk, topic, "needle") == first[::-1]  # from the index, once each
    later = await _post(desk, topic, "needle again")  # one indexed, one not
    assert await _found(desk, topic, "needle") == [later, *first[::-1]]
    hits = await desk.call(BOB, "debate_search", topic_id=topic, query="NEEDLE")
    assert [m["msg_id"] for m in hits["messages"]] == [later, *first[::-1]]


async def test_a_backlog_is_indexed_in_batches_in_one_step(desk, monkeypatch):
    monkeypatch.setattr(fts, "BATCH", 2)
    topic = await _topic(desk)
    ids = [await _post(desk, topic, f"batch {i}") for i in range(5)]
    writes: list[int] = []
    write = desk.runtime.write

    async def counted(statements: Any) -> Any:
        writes.append(len(statements))
        return await write(statements)

    monkeypatch.setattr(desk.runtime, "write", counted)
    await index_step(desk.runtime)
    assert await desk.runtime.read(sql.backlog) == 0
    assert await desk.runtime.read(lambda c: _indexed(c, "batch")) == 5
    assert len(writes) >= 3  # the topic's set-up rows too: at least ceil(5 / 2) batches
    assert await _found(desk, topic, "batch") == ids[::-1]
    writes.clear()
    await index_step(desk.runtime)  # nothing left: no transaction at all
    assert writes == []


async def test_a_migration_4_store_keeps_what_its_trigger_indexed(tmp_path: Path, nursery):
    path, wall = tmp_path / "debate.db", FakeWall()
    async with open_store(path, MIGRATIONS[:4]) as store:
        rt = Runtime(store, nursery, clock=Clock(wall))
        desk = Desk(rt, wall)
        await seeding_columns(rt, add=True)
        topic = await _topic(desk)
        old = await _post(desk, topic, "legacy words")
        assert await rt.read(lambda c: _indexed(c, "legacy")) == 1  # by the trigger
        await seeding_columns(rt, add=False)
        rt.begin_shutdown()
    async with open_store(path, MIGRATIONS) as store:
        rt = Runtime(store, nursery, clock=Clock(wall))
        desk = Desk(rt, wall)
        assert await rt.read(sql.backlog) == 0  # the watermark starts past every old row
        triggers = await rt.read(
            lambda c: c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
        )
        assert triggers == []
        new = await _post(desk, topic, "legacy again")
        assert await rt.read(lambda c: _indexed(c, "legacy")) == 1  # not indexed yet
        assert await _found(desk, topic, "legacy") == [new, old]
        await index_step(rt)
        assert await rt.read(lambda c: _indexed(c, "legacy")) == 2
        assert await _found(desk, topic, "legacy") == [new, old]
        rt.begin_shutdown()
