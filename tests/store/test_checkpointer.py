"""A file store's checkpoints run on the checkpointer's thread, never inside the writer's COMMIT.

SQLite's automatic checkpoint copies the WAL into the database file and fsyncs it inside the
COMMIT that takes the WAL past 1000 pages, and the whole batch's replies wait for it. The
store's writer connection turns it off and `agora.store.checkpoint.Checkpointer` copies the
pages on its own connection once the database is `CHECKPOINT_PAGES` frames behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING

import pytest
import trio
from _items import ITEMS, checkpoints_run, ids, insert

from agora.store import checkpoint as checkpoint_module
from agora.store.checkpoint import Checkpointer
from agora.store.db import open_store

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("the SQLite store's WAL checkpoints")

ROW = "x" * 3500  # about a page per row


async def _write_pages(store, batches: int, first: int = 0) -> None:
    # ``batches`` commits of 10 rows each: about 10 WAL frames per commit.
    with trio.fail_after(60):
        for b in range(batches):
            await store.write(
                [insert(first + b * 10 + i, f"{first + b * 10 + i:06d}{ROW}") for i in range(10)]
            )


async def test_no_commit_of_the_writer_carries_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", 10**9)  # never its turn
    path = tmp_path / "ckpt.db"
    async with open_store(path, [ITEMS]) as store:
        (autocheckpoint,) = store._writer.conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        assert autocheckpoint == 0  # before: SQLite's 1000
        size = path.stat().st_size
        await _write_pages(store, 130)  # about 1300 frames, past SQLite's 1000
        assert store.checkpointer is not None
        frames = store.checkpointer.index.behind()
        assert frames is not None
        assert frames > 1000
        # Only a checkpoint writes the database file in WAL mode: no COMMIT ran one.
        assert path.stat().st_size == size
        assert store.counters()["checkpoints"] == 0
    assert len(_count(path)) == 1300  # all of it there after the final checkpoint


def _count(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return ids(conn)
    finally:
        conn.close()


async def test_the_checkpointer_copies_the_wal_once_the_database_is_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", 200)
    ran = checkpoints_run(monkeypatch)
    path = tmp_path / "ckpt.db"
    async with open_store(path, [ITEMS]) as store:
        size = path.stat().st_size
        ran.clear()  # its first look, at start, may find the migration's frames
        await _write_pages(store, 30)  # about 300 frames
        with trio.fail_after(30):
            await trio.to_thread.run_sync(ran.wait)
        counters = store.counters()
        assert counters["checkpoints"] >= 1
        assert sum(counters["checkpoint_ms"]["counts"]) == counters["checkpoints"]
        assert path.stat().st_size > size + 200 * 4096  # the pages are in the database file


async def test_a_commit_wakes_the_checkpointer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", 0)  # every look checkpoints
    # It looks once at start, then waits for the writer: only a commit wakes it again.
    ran = checkpoints_run(monkeypatch)
    async with open_store(tmp_path / "idle.db", [ITEMS]) as store:
        with trio.fail_after(30):
            await trio.to_thread.run_sync(ran.wait)  # the look at start
        ran.clear()
        await store.write([insert(1)])
        with trio.fail_after(30):
            await trio.to_thread.run_sync(ran.wait)  # woken by the commit


async def test_the_checkpointer_ends_with_the_store(tmp_path: Path) -> None:
    async with open_store(tmp_path / "end.db", [ITEMS]) as store:
        await store.write([insert(1)])
        checkpointer = store.checkpointer
        assert checkpointer is not None
        assert checkpointer.running
    assert not checkpointer.running
    assert not [t for t in threading.enumerate() if t.name == "agora-checkpointer"]


async def test_an_in_memory_store_has_no_checkpointer() -> None:
    async with open_store(":memory:", [ITEMS]) as store:
        await store.write([insert(1)])
        assert store.checkpointer is None
        assert "checkpoints" not in store.counters()


async def test_a_shared_store_writes_without_automatic_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with open_store(path, [ITEMS], shared=True) as one:
        async with open_store(path, [ITEMS], shared=True) as two:
            for store in (one, two):
                conn = store._writer.conn
                assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
                assert store.checkpointer is not None
                assert store.checkpointer.running
            await one.write([insert(1)])
            await two.write([insert(2)])
        assert not two.checkpointer.running
    assert _count(path) == [1, 2]


def test_a_failed_checkpoint_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "gone" / "x.db"  # its directory does not exist: it cannot open
    checkpointer = Checkpointer(
        str(path), lambda: sqlite3.connect(f"file:{path}?mode=rw", uri=True)
    )
    with caplog.at_level(logging.DEBUG, logger="agora.store.checkpoint"):
        assert checkpointer._connected(None) is None
        closed = sqlite3.connect(":memory:")
        closed.close()
        assert checkpointer.checkpoint(closed) is False
    assert checkpointer.failures == 2
    assert checkpointer.runs == 0
    told = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in told] == ["WARNING", "DEBUG"], told  # one episode
    assert "cannot open" in told[0][1]
    assert "checkpoint of" in told[1][1]
    checkpointer.start()  # its thread outlives failures and ends when told
    checkpointer.wake()
    assert checkpointer.stop(10)
    checkpointer.close()
