"""Schema migrations: a version table, steps applied once and in order, upgrades, refusals."""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

import pytest

from agora.errors import StoreError
from agora.store.db import open_store
from agora.toolsets.base import Migration

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only(
    "the SQLite migration runner (sqlite-utils steps); PostgreSQL's: test_pg_store.py"
)


class Steps:
    """Builds migration steps that record when they run."""

    def __init__(self) -> None:
        self.applied: list[tuple[str, int]] = []

    def step(self, component: str, version: int, *sql: str) -> Migration:
        def apply(db) -> None:
            self.applied.append((component, version))
            for statement in sql:
                db.execute(statement)

        return Migration(component, version, apply)


def schema(path: Path) -> dict[str, int]:
    """The version table of a closed database file."""
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT component, version FROM agora_schema").fetchall())
    finally:
        conn.close()


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


async def test_steps_apply_in_version_order_and_are_recorded(tmp_path):
    path = tmp_path / "agora.db"
    s = Steps()
    given = [
        s.step("notes", 3, "ALTER TABLE notes ADD COLUMN tag TEXT"),
        s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)"),
        s.step("notes", 2, "ALTER TABLE notes ADD COLUMN body TEXT"),
    ]
    async with open_store(path, given) as store:
        assert store.versions == {"notes": 3}
    assert s.applied == [("notes", 1), ("notes", 2), ("notes", 3)]
    assert schema(path) == {"notes": 3}
    assert {"agora_schema", "notes"} <= tables(path)


async def test_steps_apply_once(tmp_path):
    path = tmp_path / "agora.db"
    s = Steps()
    steps = [s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)")]
    for _ in range(3):
        async with open_store(path, steps) as store:
            assert store.versions == {"notes": 1}
    assert s.applied == [("notes", 1)]


async def test_an_older_file_is_upgraded_and_keeps_its_rows(tmp_path):
    path = tmp_path / "agora.db"
    s = Steps()
    v1 = s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    async with open_store(path, [v1]) as store:
        await store.write([("INSERT INTO notes (id, body) VALUES (1, 'kept')", ())])

    def add_tag(db) -> None:
        s.applied.append(("notes", 2))
        db["notes"].add_column("tag", str, not_null_default="none")

    def rename_body(db) -> None:
        s.applied.append(("notes", 3))
        db["notes"].transform(rename={"body": "text"})

    upgraded = [v1, Migration("notes", 2, add_tag), Migration("notes", 3, rename_body)]
    async with open_store(path, upgraded) as store:
        assert store.versions == {"notes": 3}
        rows = await store.read(lambda c: [tuple(r) for r in c.execute("SELECT * FROM notes")])
        assert rows == [(1, "kept", "none")]
        columns = await store.read(
            lambda c: [r[1] for r in c.execute("PRAGMA table_info(notes)").fetchall()]
        )
        assert columns == ["id", "text", "tag"]
    assert s.applied == [("notes", 1), ("notes", 2), ("notes", 3)]


async def test_a_newer_schema_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "agora.db"
    s = Steps()
    v1 = s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    v2 = s.step("notes", 2, "ALTER TABLE notes ADD COLUMN body TEXT")
    async with open_store(path, [v1, v2]):
        pass
    # (It said "newer than this agora's v1": the version is the toolset's steps'.)
    newer = "notes schema v2, newer than v1, the newest step of notes here: a newer version"
    with pytest.raises(StoreError, match=newer):
        async with open_store(path, [v1]):
            pass
    assert schema(path) == {"notes": 2}
    async with open_store(path, [v1, v2]) as store:  # still opens with the newer code
        assert store.versions == {"notes": 2}


async def test_a_failing_step_rolls_back_alone_and_a_fixed_one_applies_later(tmp_path):
    path = tmp_path / "agora.db"
    s = Steps()
    v1 = s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)")

    def broken(db) -> None:
        db.execute("CREATE TABLE notes_extra (id INTEGER)")
        raise RuntimeError("half way")

    with pytest.raises(StoreError, match="migration notes v2 failed: RuntimeError: half way"):
        async with open_store(path, [v1, Migration("notes", 2, broken)]):
            pass
    assert schema(path) == {"notes": 1}
    assert "notes_extra" not in tables(path)
    fixed = s.step("notes", 2, "CREATE TABLE notes_extra (id INTEGER)")
    async with open_store(path, [v1, fixed]) as store:
        assert store.versions == {"notes": 2}
    assert "notes_extra" in tables(path)


async def test_a_failing_step_is_named_with_its_exception_type(tmp_path):
    """A step that raised ``KeyError('missing_key')`` was reported as "failed: 'missing_key'"."""

    def broken(db) -> None:
        _ = {}["missing_key"]

    steps = [Migration("notes", 1, broken)]
    with pytest.raises(StoreError, match=r"^migration notes v1 failed: KeyError: 'missing_key'$"):
        async with open_store(tmp_path / "agora.db", steps):
            pass


async def test_each_component_s_steps_applied_are_logged_in_one_line(tmp_path, caplog):
    """An upgrade changed the schema with no line in the log, even at INFO; a new database
    says one line a component, not one a step."""
    caplog.set_level(logging.INFO, logger="agora.store.migrations")
    path = tmp_path / "agora.db"
    s = Steps()
    v1 = s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    v2 = s.step("notes", 2, "ALTER TABLE notes ADD COLUMN body TEXT")
    v3 = s.step("notes", 3, "ALTER TABLE notes ADD COLUMN tag TEXT")
    async with open_store(path, [v1]):
        pass
    async with open_store(path, [v1, v2, v3]):
        pass
    async with open_store(path, [v1, v2, v3]):  # nothing to apply: nothing said
        pass
    async with open_store(tmp_path / "new.db", [v1, v2, v3]):  # a new file: one line too
        pass
    said = [r.getMessage() for r in caplog.records if r.name == "agora.store.migrations"]
    assert said == [
        "created the notes schema at v1",
        "migrated the notes schema from v1 to v3",
        "created the notes schema at v3",
    ]


async def test_two_steps_with_one_component_and_version_are_refused(tmp_path):
    # An embedding program's toolset that reused another's component name: one of the two
    # v1 steps used to be skipped in silence, and its tables never made.
    path = tmp_path / "agora.db"
    s = Steps()
    mine = s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    theirs = s.step("notes", 1, "CREATE TABLE notes_extra (id INTEGER)")
    with pytest.raises(StoreError, match="two migration steps are notes v1"):
        async with open_store(path, [mine, theirs]):
            pass
    assert s.applied == []


async def test_components_keep_their_own_versions(tmp_path):
    path = tmp_path / "agora.db"
    s = Steps()
    a = [
        s.step("a", 1, "CREATE TABLE a_items (id INTEGER)"),
        s.step("a", 2, "ALTER TABLE a_items ADD COLUMN x"),
    ]
    b1 = s.step("b", 1, "CREATE TABLE b_items (id INTEGER)")
    async with open_store(path, [*a, b1]) as store:
        assert store.versions == {"a": 2, "b": 1}
    s.applied.clear()
    b2 = s.step("b", 2, "ALTER TABLE b_items ADD COLUMN y")
    async with open_store(path, [b2, *a, b1]) as store:
        assert store.versions == {"a": 2, "b": 2}
    assert s.applied == [("b", 2)]


async def test_an_in_memory_store_is_migrated_too():
    s = Steps()
    steps = [s.step("notes", 1, "CREATE TABLE notes (id INTEGER PRIMARY KEY)")]
    async with open_store(":memory:", steps) as store:
        assert store.versions == {"notes": 1}
        await store.write([("INSERT INTO notes (id) VALUES (1)", ())])
        assert await store.read(lambda c: c.execute("SELECT id FROM notes").fetchall()[0][0]) == 1


NOTES_TABLE = "CREATE TABLE notes (id INTEGER PRIMARY KEY)"


@pytest.mark.parametrize(
    ("step", "refusal"),
    [
        # A misspelt dialect key, and a PostgreSQL-only step: on SQLite both were recorded
        # as applied with nothing run, their tables never made.
        (
            Migration("notes", 1, sql={"sqllite": [NOTES_TABLE]}),
            "notes v1 names dialect 'sqllite' in sql; did you mean 'sqlite'?",
        ),
        (
            Migration("notes", 1, sql={"postgresql": [NOTES_TABLE]}),
            r"notes v1 has no SQLite schema \(neither apply= nor sql\['sqlite'\]\)",
        ),
        # Version 0 was skipped as already applied; -1 was refused as a "newer" schema.
        (Migration("notes", 0, sql={"sqlite": [NOTES_TABLE]}), "notes v0 has version 0"),
        (Migration("notes", -1, sql={"sqlite": [NOTES_TABLE]}), "notes v-1 has version -1"),
        # A string was run character by character: `near "C": syntax error`.
        (
            Migration("notes", 1, sql={"sqlite": NOTES_TABLE}),
            r"notes v1 has sql\['sqlite'\] of type str: it must be a list of statements",
        ),
    ],
    ids=["dialect-typo", "postgresql-only", "version-0", "version-minus-1", "sql-string"],
)
async def test_a_step_that_cannot_run_on_sqlite_is_refused_before_any_is_applied(
    tmp_path, step, refusal
):
    path = tmp_path / "agora.db"
    s = Steps()
    # A sound step of a component that sorts first: it would be applied first, were the
    # steps checked only as each comes up.
    sound = s.step("agenda", 1, "CREATE TABLE agenda_items (id INTEGER)")
    with pytest.raises(StoreError, match=f"migration step {refusal}"):
        async with open_store(path, [sound, step]):
            pass
    assert s.applied == []
    assert schema(path) == {}
    assert tables(path) == {"agora_schema"}
    async with open_store(path, [sound]) as store:  # nothing was marked: it still applies
        assert store.versions == {"agenda": 1}


def test_the_built_in_steps_can_run_on_both_dialects():
    from agora.server.app import load_toolsets
    from agora.store.migrations import plan

    steps = [m for t in load_toolsets([], conformance=True) for m in t.migrations]
    for dialect in ("sqlite", "postgresql"):
        planned = dict(plan({}, steps, dialect))
        assert {"chamber", "chess", "debate", "router"} <= set(planned)
