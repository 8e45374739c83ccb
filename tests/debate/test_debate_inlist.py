"""Reads over lists of ids (sessions, messages, topics) use a few statement texts whatever
the list's length, so a reader connection's statement cache stays small and its memory flat;
the padded lists answer exactly what the plain ones did."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from agora.store.migrations import apply_migrations
from agora.toolsets.debate import sql
from agora.toolsets.debate.sql import MIGRATIONS
from agora.toolsets.debate.sql.inlist import in_list

pytestmark = pytest.mark.sqlite_only("a statement count on one SQLite connection")

NOW = "2026-12-01T00:00:00.000000Z"


def _store() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    apply_migrations(conn, MIGRATIONS)
    for i in range(0, 300, 3):  # every third id exists
        conn.execute(
            "INSERT INTO debate_sessions (session_id, principal, runtime, label, created_at) "
            "VALUES (?, ?, 'r', '', ?)",
            (f"s{i:03d}", f"p{i}", NOW),
        )
    return conn


class _Texts:
    """A read connection that keeps the text of every statement run through it (one
    prepared statement, and one entry of sqlite3's statement cache, per text)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.texts: set[str] = set()

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        self.texts.add(statement)
        return self.conn.execute(statement, params)


@pytest.mark.parametrize(
    "read",
    [
        sql.session_owners,
        sql.bindings_of_sessions,
        sql.messages_by_id,
        sql.open_questions,
        sql.active_claims,
        sql.open_priorities,
        sql.bindings_of_topics,
    ],
)
def test_a_read_over_any_length_of_list_runs_one_of_a_few_statements(read: Any) -> None:
    conn = _Texts(_store())
    for n in range(1, 301):
        read(conn, [f"s{i:03d}" for i in range(n)])
    texts = conn.texts
    # Before: one statement text per length (300); now one per power of two up to 512.
    assert len(texts) <= 10, len(texts)


def test_the_padded_list_matches_the_same_rows() -> None:
    conn = _store()
    for n in (1, 2, 3, 5, 64, 65, 299):
        ids = [f"s{i:03d}" for i in range(n)]
        owners = sql.session_owners(conn, ids)
        assert owners == {f"s{i:03d}": f"p{i}" for i in range(0, n, 3)}
        marks, params = in_list(ids)
        assert len(params) == marks.count("?") >= n
        assert len(params) < 2 * n or n == 1
        assert set(params) == set(ids)
