"""A backup restored beside a crashed server's ``-wal`` is refused at start, untouched.

An operator's finding: after a crash they put a backup in place of the file and left the
crashed server's ``-wal`` beside it; the server applied that log to the copy, said ready, and
acknowledged writes into a file that was malformed. Now a ``-wal`` left with frames in it is
checked first (`agora.store.wal_leftover`): a malformed result refuses the start with the
command that removes it, and the restored file stays as it was. A ``-wal`` that belongs to
the file (an ordinary crash) is applied as before: no acknowledged write is lost.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sqlite3
from typing import TYPE_CHECKING

import pytest
import trio
from _items import ITEMS, ids, insert

from agora.errors import StoreError
from agora.store import checkpoint as checkpoint_module
from agora.store.db import open_store

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("a SQLite file's write-ahead log")


async def _rows(store, first: int, count: int) -> None:
    for n in range(first, first + count):
        await store.write([insert(n, f"{n:06d}" + "x" * 3000)])  # about a page each


def _ids(path: Path) -> list[int]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return ids(conn)


async def _crash_after_backup(path: Path, aside: Path) -> Path:
    """Rows, a backup, more rows, the WAL started over, more rows; the files as a crash
    would leave them (the ``-wal`` and ``-shm`` copied into ``aside`` while the store is open);
    the backup's path."""
    backup = aside / "backup.db"
    async with open_store(path, [ITEMS]) as store:
        with trio.fail_after(30):
            await _rows(store, 1, 50)
            with (
                contextlib.closing(sqlite3.connect(path)) as src,
                contextlib.closing(sqlite3.connect(backup)) as dst,
            ):
                src.backup(dst)  # README's backup
            await _rows(store, 51, 50)
            with contextlib.closing(sqlite3.connect(path)) as conn:
                assert conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[0] == 0
            await _rows(store, 101, 30)  # at the WAL's start again
            for suffix in ("-wal", "-shm"):
                shutil.copy(f"{path}{suffix}", aside / suffix)
    return backup


def _leave(path: Path, aside: Path) -> None:
    for suffix in ("-wal", "-shm"):
        shutil.copy(aside / suffix, f"{path}{suffix}")


async def test_a_backup_restored_beside_a_crashed_servers_wal_is_refused_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", 10**9)  # only the RESTART
    path = tmp_path / "agora.db"
    aside = tmp_path / "aside"
    aside.mkdir()
    backup = await _crash_after_backup(path, aside)
    shutil.copy(backup, path)  # the restore, with the old -wal left in place
    _leave(path, aside)
    with pytest.raises(StoreError) as refused:
        async with open_store(path, [ITEMS]):
            pytest.fail("served a malformed database")
    said = str(refused.value)
    assert f"cannot open database {path}: it is damaged once the write-ahead log" in said
    assert f"rm -f {path}-wal {path}-shm" in said
    assert "\n" not in said
    assert path.read_bytes() == backup.read_bytes()  # untouched
    assert (tmp_path / "agora.db-wal").read_bytes() == (aside / "-wal").read_bytes()
    for suffix in ("-wal", "-shm"):  # as the refusal says
        (tmp_path / f"agora.db{suffix}").unlink()
    async with open_store(path, [ITEMS]) as store:
        await _rows(store, 1000, 1)
    assert _ids(path) == [*range(1, 51), 1000]
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_a_crashed_servers_own_wal_is_applied_after_its_check(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agora.store")
    path = tmp_path / "agora.db"
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    async with open_store(path, [ITEMS]) as store:
        with trio.fail_after(30):
            await _rows(store, 1, 40)
            for suffix in ("", "-wal", "-shm"):  # all three, as a kill -9 leaves them
                shutil.copy(f"{path}{suffix}", crashed / f"agora.db{suffix}")
    again = crashed / "agora.db"
    async with open_store(again, [ITEMS]):
        pass
    assert _ids(again) == list(range(1, 41))  # every acknowledged write
    assert "checking the database read through it" in caplog.text  # said before it runs
    assert "passed integrity_check" in caplog.text


async def test_a_wal_whose_pages_fit_but_whose_index_does_not_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tester's finding: a mix that passes quick_check (every page well formed) but leaves an
    index out of step with its table was served, and checkpointed into the file for good."""
    caplog.set_level(logging.INFO, logger="agora.store")
    path = tmp_path / "agora.db"
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    async with open_store(path, [ITEMS]):
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute("CREATE TABLE junk (a, b)")
            conn.execute("CREATE INDEX junk_a ON junk (a)")
            conn.executemany("INSERT INTO junk VALUES (?, ?)", [(n, -n) for n in range(1, 50)])
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("PRAGMA writable_schema = ON")  # the index's pages now disagree
            conn.execute("UPDATE sqlite_schema SET sql = 'CREATE INDEX junk_a ON junk (b)' "
                         "WHERE name = 'junk_a'")  # fmt: skip
        for suffix in ("", "-wal", "-shm"):  # as a kill -9 leaves them
            shutil.copy(f"{path}{suffix}", crashed / f"agora.db{suffix}")
    again = crashed / "agora.db"
    with contextlib.closing(sqlite3.connect(f"file:{again}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"  # what it once ran
    before = again.read_bytes()
    with pytest.raises(StoreError) as refused:
        async with open_store(again, [ITEMS]):
            pytest.fail("served a database whose index is out of step with its table")
    said = str(refused.value)
    assert "integrity_check: row 1 missing from index junk_a" in said
    assert "did not close, or whose last checkpoint failed" in said
    assert again.read_bytes() == before


class _Malformed:
    """A connection whose checkpoints fail as SQLite fails on a malformed file."""

    def execute(self, sql: str) -> None:
        exc = sqlite3.DatabaseError("database disk image is malformed")
        exc.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
        raise exc


def test_a_checkpoint_into_a_malformed_file_says_so_not_safe(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tester's finding: served --shared (not checked at start), a restored file's final
    checkpoint failed "database disk image is malformed" and was logged as "committed data is
    safe in its write-ahead log and is checkpointed at the next start"."""
    caplog.set_level(logging.INFO, logger="agora.store")
    path = str(tmp_path / "agora.db")
    checkpoint_module.final_checkpoint(path, _Malformed())  # type: ignore[arg-type]
    checkpointer = checkpoint_module.Checkpointer(path, lambda: sqlite3.connect(":memory:"))
    assert not checkpointer.checkpoint(_Malformed())  # type: ignore[arg-type]
    assert [r.levelname for r in caplog.records] == ["ERROR", "ERROR"]
    for record in caplog.records:
        said = record.getMessage()
        assert "the database file is damaged" in said
        assert "committed data is NOT safe" in said
        assert "remove that -wal and -shm and restore again" in said
    assert "database disk image is malformed" in caplog.records[0].getMessage()
    assert "is safe in" not in caplog.text
    checkpointer.close()


def test_a_final_checkpoint_on_a_full_disk_still_says_the_wal_keeps_the_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Full:
        def execute(self, sql: str) -> None:
            exc = sqlite3.OperationalError("database or disk is full")
            exc.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise exc

    checkpoint_module.final_checkpoint(str(tmp_path / "agora.db"), Full())  # type: ignore[arg-type]
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "committed data is safe in its write-ahead log" in caplog.text
