"""An agent token refused on one table's endpoint is looked up among the other tables' by an
index (chess migration 6), on both engines, not by reading every table's row.

`agent_token_table` runs on every call that brings a wrong agent token, and anyone can send
one: without the index each such call read the whole ``chess_tables`` table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio

from agora.store.db import open_store
from agora.toolsets.chess.sql import MIGRATIONS, agent_token_table
from query_plans import Spy, plan_of

if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 30
INDEX = "chess_tables_agent_token"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A real SQLite file, or a PostgreSQL schema of its own (`pg_url`)."""
    if request.param == "sqlite":
        return str(tmp_path / "chess.db")
    return str(request.getfixturevalue("pg_url"))


def _table(i: int) -> tuple[str, tuple[Any, ...]]:
    return (
        "INSERT INTO chess_tables (name, token, created_at, game_no, version, agent_token)"
        " VALUES (?, ?, '2026-12-04T00:00:00Z', 1, 1, ?)",
        (f"t-{i:03d}", f"human-{i}", f"agent-{i}"),
    )


def _lookup_and_plan(token: str) -> Any:
    def read(conn: Any) -> tuple[str | None, str]:
        spy = Spy(conn)
        found = agent_token_table(spy, token)
        ((sql, params),) = spy.statements
        return found, plan_of(conn, sql, params)

    return read


async def test_a_token_is_looked_up_by_its_index(database: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_store(database, MIGRATIONS) as store:
            await store.write([_table(i) for i in range(40)])
            found, plan = await store.read(_lookup_and_plan("agent-17"))
            missing, _ = await store.read(_lookup_and_plan("agent-none"))
    assert (found, missing) == ("t-017", None)
    assert INDEX in plan, plan
    assert "SCAN chess_tables" not in plan, plan  # SQLite reading every row
    assert "Seq Scan" not in plan, plan
