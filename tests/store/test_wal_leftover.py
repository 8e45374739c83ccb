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
    assert f"cannot open database {path}: it is malformed once the write-ahead log" in said
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
    assert "passed quick_check" in caplog.text
