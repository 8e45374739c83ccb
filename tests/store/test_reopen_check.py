"""What a writer's reopen takes for the database it opened (`agora.store.sqlite_open`), and
what it logs when it cannot.

After a read-only or failing file system the writer reopens the database at its path (a file
system mounted again there). The file found must be the database this store opened: one with
agora's schema and the id the store read at open, every component at least at the version the
store opened it with. Anything
else is refused with words an operator can act on, and the read that decides never leaves a
WAL checkpointed or deleted (a read-only connection). A failed reopen is logged at WARNING
the first time, and again whenever its reason changes.
"""

from __future__ import annotations

import logging
import sqlite3

import pytest

from agora.errors import StoreError
from agora.store.migrations import Migration
from agora.store.sqlite_open import foreign_schema, migrated, refuse_foreign
from agora.store.writer import Writer

pytestmark = pytest.mark.sqlite_only("a SQLite file's schema, read by path")

STEPS = [
    Migration("notes", 1, sql={"sqlite": ["CREATE TABLE notes (body TEXT)"]}),
    Migration("notes", 2, sql={"sqlite": ["ALTER TABLE notes ADD COLUMN at TEXT"]}),
    Migration("tags", 1, sql={"sqlite": ["CREATE TABLE tags (name TEXT)"]}),
]


def _database(path, steps=STEPS) -> dict[str, int]:
    return _opened(path, steps)[0]


def _opened(path, steps=STEPS) -> tuple[dict[str, int], str]:
    """Each component's version and the database's id, as a store opening ``path`` has them."""
    conn, versions, identity = migrated(str(path), steps, "FULL", False)
    conn.close()
    return versions, identity


def test_the_database_opened_is_taken(tmp_path):
    versions = _database(tmp_path / "a.db")
    assert versions == {"notes": 2, "tags": 1}
    assert foreign_schema(str(tmp_path / "a.db"), versions, None) is None
    refuse_foreign(str(tmp_path / "a.db"), versions, None)  # does not raise


def test_another_sqlite_file_is_refused(tmp_path):
    versions = _database(tmp_path / "a.db")
    other = sqlite3.connect(tmp_path / "b.db")
    other.execute("CREATE TABLE notes (body TEXT)")
    other.close()
    reason = foreign_schema(str(tmp_path / "b.db"), versions, None)
    assert reason == "it has no agora_schema table"
    said = r"b\.db is not the database this server opened \(it has no agora_schema table\): was"
    with pytest.raises(StoreError, match=said):
        refuse_foreign(str(tmp_path / "b.db"), versions, None)


def test_a_database_missing_a_component_or_behind_one_is_refused(tmp_path):
    versions = _database(tmp_path / "a.db")
    _database(tmp_path / "older.db", STEPS[:1])
    assert foreign_schema(str(tmp_path / "older.db"), versions, None) == "it lacks the tags schema"
    _database(tmp_path / "behind.db", [*STEPS[:1], STEPS[2]])
    assert foreign_schema(str(tmp_path / "behind.db"), versions, None) == (
        "its notes schema is at version 1, not 2"
    )
    newer = {"notes": 1, "tags": 1}  # a later version of ours: taken (another process's upgrade)
    assert foreign_schema(str(tmp_path / "a.db"), newer, None) is None


def test_no_file_at_the_path_is_refused_and_none_is_made(tmp_path):
    path = tmp_path / "away" / "a.db"
    path.parent.mkdir()
    reason = foreign_schema(str(path), {"notes": 2}, None)
    assert reason is not None
    assert reason.startswith("it cannot be read: unable to open database file"), reason
    with pytest.raises(StoreError, match=r"cannot open .* again \(it cannot be read: .*\): is"):
        refuse_foreign(str(path), {"notes": 2}, None)
    assert list(path.parent.iterdir()) == []


def test_the_check_leaves_the_wal_as_it_found_it(tmp_path):
    versions = _database(tmp_path / "a.db")
    writer = sqlite3.connect(tmp_path / "a.db", isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO notes (body) VALUES ('kept in the WAL')")
    wal = (tmp_path / "a.db-wal").read_bytes()
    main = (tmp_path / "a.db").read_bytes()
    assert foreign_schema(str(tmp_path / "a.db"), versions, None) is None
    assert (tmp_path / "a.db-wal").read_bytes() == wal  # not checkpointed, not deleted
    assert (tmp_path / "a.db").read_bytes() == main
    writer.close()


def test_a_failed_reopen_is_told_again_when_its_reason_changes(tmp_path, caplog):
    reasons = iter(["cannot open x again", "cannot open x again", "x is not the database"])

    def reopen():
        raise StoreError(next(reasons))

    conn = sqlite3.connect(tmp_path / "a.db", isolation_level=None, check_same_thread=False)
    writer = Writer(conn, reopen=reopen)
    caplog.set_level(logging.DEBUG, logger="agora.store.writer")
    for _ in range(3):  # none the first since a commit: each would be DEBUG by its level
        assert not writer._swap("after a disk error", logging.DEBUG)
    levels = [(r.levelname, r.getMessage().rpartition(": ")[2]) for r in caplog.records]
    assert levels == [
        ("WARNING", "cannot open x again"),
        ("DEBUG", "cannot open x again"),
        ("WARNING", "x is not the database"),
    ]
    conn.close()


def test_another_agora_database_with_the_same_schema_is_refused(tmp_path):
    """Reviewer finding: another agora database at the path, with every component at the
    versions opened (the wrong disk, a server's files restored to the wrong place), was taken
    for the one opened: its writes went there."""
    versions, identity = _opened(tmp_path / "a.db")
    other_versions, other = _opened(tmp_path / "b.db")
    assert other_versions == versions
    assert len(identity) == 32
    assert other != identity
    assert foreign_schema(str(tmp_path / "a.db"), versions, identity) is None
    assert foreign_schema(str(tmp_path / "b.db"), versions, identity) == (
        f"it is another agora database (id {other}, not {identity})"
    )
    with pytest.raises(StoreError, match=r"b\.db is not the database this server opened"):
        refuse_foreign(str(tmp_path / "b.db"), versions, identity)


def test_the_id_is_drawn_once_and_kept(tmp_path):
    """A file from before ids gets one at its next open; every later open reads it back."""
    legacy = sqlite3.connect(tmp_path / "a.db")
    legacy.execute("CREATE TABLE agora_schema (component TEXT PRIMARY KEY, version INTEGER)")
    legacy.execute("INSERT INTO agora_schema VALUES ('notes', 2), ('tags', 1)")
    legacy.commit()
    legacy.close()
    assert foreign_schema(str(tmp_path / "a.db"), {"notes": 2}, "0" * 32) == (
        "it has no database id (a database from before ids, or its id was lost with its WAL)"
    )
    versions, identity = _opened(tmp_path / "a.db")
    assert _opened(tmp_path / "a.db") == (versions, identity)
    assert foreign_schema(str(tmp_path / "a.db"), versions, identity) is None


async def test_a_store_s_reopen_and_checkpointer_refuse_another_agora_database(tmp_path):
    """The store passes the id it read at open to both: its writer's reopen after a disk
    error and its checkpointer's reconnection refuse another agora database at the path."""
    import trio

    from agora.store.db import open_store

    path = tmp_path / "a.db"
    files = ("", "-wal", "-shm")
    with trio.fail_after(30):
        async with open_store(str(path), STEPS) as store:
            await store.write([("INSERT INTO notes (body, at) VALUES ('kept', 'now')", ())])
            _opened(tmp_path / "b.db")
            for end in files:  # the database aside, the other one at its path
                if (tmp_path / f"a.db{end}").exists():
                    (tmp_path / f"a.db{end}").rename(tmp_path / f"kept.db{end}")
                if (tmp_path / f"b.db{end}").exists():
                    (tmp_path / f"b.db{end}").rename(tmp_path / f"a.db{end}")
            try:
                with pytest.raises(StoreError, match=r"\(it is another agora database \(id "):
                    store._writer._reopen()
                with pytest.raises(StoreError, match=r"\(it is another agora database \(id "):
                    store.checkpointer._open()
            finally:
                for end in files:  # and back
                    if (tmp_path / f"a.db{end}").exists():
                        (tmp_path / f"a.db{end}").rename(tmp_path / f"b.db{end}")
                    if (tmp_path / f"kept.db{end}").exists():
                        (tmp_path / f"kept.db{end}").rename(tmp_path / f"a.db{end}")
            rows = await store.read(lambda c: c.execute("SELECT body FROM notes").fetchall())
    assert [tuple(r) for r in rows] == [("kept",)]
