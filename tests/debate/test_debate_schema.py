"""The debate schema's partial indexes (migration 4): the queries use them (SQLite's plans), and
a database of migration 3 opens with its data and answers as before (both engines)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

import pytest
from debate_support import ALICE, BOB, Desk, seeding_columns

from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.store.migrations import apply_migrations
from agora.store.neutral import SQLITE, dialect_of
from agora.toolsets.debate import sql
from agora.toolsets.debate.sql import MIGRATIONS

if TYPE_CHECKING:
    from pathlib import Path


OODA = "OBSERVE a ORIENT b DECIDE c ACT d"


async def _seed(desk: Desk) -> dict[str, str]:
    """A topic with a Q and its A, an open Q, a compaction, and deliveries in every state."""
    a, b = await desk.session(ALICE), await desk.session(BOB)
    topic = await desk.topic(ALICE, {"CONDUCTOR": a, "EXECUTOR_1": (BOB, b)})
    q1 = await desk.post(ALICE, topic, "CONDUCTOR", "first?", to="EXECUTOR_1", kind="Q")
    await desk.post(BOB, topic, "EXECUTOR_1", "yes", kind="A", reply_to=q1["msg_id"])
    await desk.post(ALICE, topic, "CONDUCTOR", "second?", to="EXECUTOR_1", kind="Q")
    await desk.call(ALICE, "debate_compact", topic_id=topic, role="CONDUCTOR", body=OODA)
    await desk.check(BOB, topic, "EXECUTOR_1", b)  # both Qs delivered
    await desk.advance(BOB, topic, "EXECUTOR_1", b, q1["msg_id"])  # the first done
    await desk.post(ALICE, topic, "CONDUCTOR", "later", to="EXECUTOR_1")  # pending
    return {"topic": topic, "exec": b}


async def _answers(desk: Desk, room: dict[str, str]) -> dict[str, Any]:
    """What the reads that use the changed indexes answer (the check moves no cursor)."""
    topic = room["topic"]
    queue = await desk.call(ALICE, "debate_work_queue")
    read = await desk.call(
        ALICE, "debate_read", topic_id=topic, role="CONDUCTOR", since_latest_compaction=True
    )
    inbox = await desk.call(
        BOB,
        "debate_signal_check",
        topic_id=topic,
        role="EXECUTOR_1",
        session_id=room["exec"],
    )
    sessions = await desk.call(BOB, "debate_session_list")
    return {
        "queue": queue["items"],
        "read": [m["msg_id"] for m in read["messages"]],
        "inbox": [m["msg_id"] for m in inbox["pending"]],
        "sessions": sessions,
    }


async def test_a_migration_3_database_opens_with_its_data_and_answers_as_before(
    tmp_path: Path, nursery: Any
) -> None:
    path = tmp_path / "debate.db"
    wall = FakeWall()
    async with open_store(path, MIGRATIONS[:3]) as store:
        rt = Runtime(store, nursery, clock=Clock(wall))
        desk = Desk(rt, wall)
        await seeding_columns(rt, add=True)
        room = await _seed(desk)
        before = await _answers(desk, room)
        await seeding_columns(rt, add=False)
        rt.begin_shutdown()
    async with open_store(path, MIGRATIONS) as store:
        assert store.versions["debate"] == len(MIGRATIONS)
        rt = Runtime(store, nursery, clock=Clock(wall))
        desk = Desk(rt, wall)
        assert await _answers(desk, room) == before
        # The migrated store keeps working: a new post lands in the inbox.
        later = await desk.post(ALICE, room["topic"], "CONDUCTOR", "after", to="EXECUTOR_1")
        inbox = await desk.check(BOB, room["topic"], "EXECUTOR_1", room["exec"])
        assert inbox["pending"][-1]["msg_id"] == later["msg_id"]
        indexes = await store.read(_index_definitions)
        open_rows = await store.read(_open_deliveries)
        rt.begin_shutdown()
    assert "WHERE (state <> 'done'" in indexes["debate_deliveries_open"].replace("::text", "")
    assert "WHERE (reply_to IS NOT NULL" in indexes["debate_messages_reply"]
    kinds = indexes["debate_messages_kind"].replace("::text", "").replace("(", "").replace(")", "")
    assert "WHERE kind = 'Q' OR kind = 'COMPACTION'" in kinds
    assert open_rows == 3  # the second Q and both later posts


def _index_definitions(conn: Any) -> dict[str, str]:
    """Each debate index's definition (SQLite: its CREATE statement; PostgreSQL: indexdef),
    with the WHERE clause parenthesized as PostgreSQL prints it."""
    if dialect_of(conn) == SQLITE:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'").fetchall()
        return {r[0]: str(r[1]).replace(" WHERE ", " WHERE (") for r in rows if r[1]}
    rows = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
    ).fetchall()
    return {r[0]: str(r[1]) for r in rows}


def _open_deliveries(conn: Any) -> int:
    return int(
        conn.execute("SELECT COUNT(*) FROM debate_deliveries WHERE state <> 'done'").fetchone()[0]
    )


def _plan(conn: sqlite3.Connection, statement: str, params: tuple[Any, ...]) -> str:
    rows = conn.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
    return " | ".join(str(r[3]) for r in rows)


class _Spy:
    """A read connection that records the statements run through it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        self.statements.append((statement, tuple(params)))
        return self.conn.execute(statement, params)


@pytest.mark.parametrize(
    ("read", "index"),
    [
        (lambda c: sql.open_deliveries(c, "t"), "debate_deliveries_open"),
        (lambda c: sql.open_inbox(c, "t", ("role:R", "session:s")), "debate_deliveries_open"),
        (lambda c: sql.open_priorities(c, ["t", "u"]), "debate_deliveries_open"),
        (lambda c: sql.open_questions(c, ["t", "u"]), "debate_messages_kind"),
        (lambda c: sql.open_questions(c, ["t", "u"]), "debate_messages_reply"),
        (lambda c: sql.latest_compaction(c, "t"), "debate_messages_kind"),
    ],
)
@pytest.mark.sqlite_only("SQLite's query plans")
def test_the_reads_of_open_deliveries_replies_and_kinds_use_the_partial_indexes(
    read: Any, index: str
) -> None:
    conn = sqlite3.connect(":memory:")
    apply_migrations(conn, MIGRATIONS)
    spy = _Spy(conn)
    read(spy)
    plans = [_plan(conn, s, p) for s, p in spy.statements]
    assert any(index in plan for plan in plans), plans
