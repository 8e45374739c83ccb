"""The PostgreSQL pass's switch: SQLite paths opened as PostgreSQL schemas, pooled when closed.

Each test sets the switch itself (``AGORA_TEST_BACKEND=postgresql``), so these run on both
passes; they need a PostgreSQL server (AGORA_TEST_PG). Each uses a component of its own, so
the pool it sees holds only its own schemas.
"""

from __future__ import annotations

import secrets

import pytest
import trio

from agora.store.db import open_store
from agora.store.migrations import Migration
from agora.store.neutral import POSTGRESQL
from agora.store.pg import PgStore

CREATE = "CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL)"
IMMUTABLE = [
    "CREATE FUNCTION notes_frozen() RETURNS trigger LANGUAGE plpgsql"
    " AS $$ BEGIN RAISE EXCEPTION 'notes are immutable'; END $$",
    "CREATE TRIGGER notes_frozen BEFORE DELETE ON notes"
    " FOR EACH ROW EXECUTE FUNCTION notes_frozen()",
]


@pytest.fixture
def redirected(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> list[Migration]:
    """The switch on; the migrations of a component no other test uses."""
    monkeypatch.setenv("AGORA_TEST_BACKEND", "postgresql")
    component = f"notes_{secrets.token_hex(4)}"
    return [Migration(component, 1, sql={POSTGRESQL: [CREATE, *IMMUTABLE]})]


async def _notes(store: PgStore) -> list[str]:
    return await store.read(lambda c: [r[0] for r in c.execute("SELECT id FROM notes")])


async def test_memory_stores_reuse_an_emptied_schema_and_see_no_old_rows(redirected):
    with trio.fail_after(30):
        async with open_store(":memory:", redirected) as first:
            assert isinstance(first, PgStore)
            assert first.inline  # runs on the Trio thread, like SQLite's :memory:
            await first.write([("INSERT INTO notes (id, body) VALUES (?, ?)", ("a", "x"))])
            assert await _notes(first) == ["a"]
        async with open_store(":memory:", redirected) as second:
            assert second.schema == first.schema  # pooled: no migration ran again
            assert await _notes(second) == []  # emptied, immutable rows included
            async with open_store(":memory:", redirected) as third:
                assert third.schema != second.schema  # in use: a schema of its own


async def test_a_schema_whose_tables_a_test_changed_is_dropped_not_pooled(redirected):
    with trio.fail_after(30):
        async with open_store(":memory:", redirected) as first:
            await first.write([("ALTER TABLE notes ADD COLUMN extra TEXT", ())])
        async with open_store(":memory:", redirected) as second:
            assert second.schema != first.schema
            columns = await second.read(
                lambda c: c.execute(
                    "SELECT count(*) FROM information_schema.columns"
                    " WHERE table_schema = current_schema() AND table_name = 'notes'"
                ).fetchone()[0]
            )
            assert columns == 2


async def test_a_file_path_is_one_schema_that_keeps_its_rows(redirected, tmp_path):
    db = tmp_path / "agora.db"
    with trio.fail_after(30):
        async with open_store(db, redirected) as first:
            assert not first.inline  # a file store: writer thread and read pool
            await first.write([("INSERT INTO notes (id, body) VALUES (?, ?)", ("a", "x"))])
        async with open_store(db, redirected) as again:
            assert again.schema == first.schema
            assert await _notes(again) == ["a"]
        assert not db.exists()  # no SQLite file was made
