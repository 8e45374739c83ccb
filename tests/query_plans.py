"""What the database engine plans for a statement a read ran: the plan tests' tools (a query
that must read an index, not the whole table, on SQLite and PostgreSQL alike)."""

from __future__ import annotations

from typing import Any

from agora.store.neutral import SQLITE, dialect_of


class Spy:
    """A read connection that keeps the statements run through it."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, params: Any = ()) -> Any:
        self.statements.append((sql, tuple(params)))
        return self.conn.execute(sql, params)


def plan_of(conn: Any, sql: str, params: tuple[Any, ...]) -> str:
    """The engine's plan of one statement, a line: SQLite's ``EXPLAIN QUERY PLAN``, or
    PostgreSQL's ``EXPLAIN`` with sequential scans off (a test's tables are tiny, and a
    sequential scan of one would hide whether the index can serve the query)."""
    if dialect_of(conn) == SQLITE:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        return " | ".join(str(r[3]) for r in plan)
    conn.execute("SET LOCAL enable_seqscan = off")
    plan = conn.execute(f"EXPLAIN {sql}", params).fetchall()
    return " | ".join(str(r[0]).strip() for r in plan)
