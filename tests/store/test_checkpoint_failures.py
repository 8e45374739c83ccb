"""A failing checkpoint is told once per episode, as a full disk's refused writes are.

An operator's finding: on a full disk the checkpointer failed at every look (every 50 ms while
clients tried to write) and logged a WARNING each time, ~19 lines a second onto the disk that
was full, while the writer's refusals said the episode once. Now the first failure is one
WARNING, the ones after it are counted, and the next checkpoint that runs is one INFO line.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

import pytest
import trio
from _items import ITEMS, insert

from agora.errors import StoreError
from agora.store import checkpoint as checkpoint_module
from agora.store.checkpoint import Checkpointer
from agora.store.db import open_store
from disks import fill

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("the SQLite store's WAL checkpoints")


class _Full:
    """A connection whose checkpoint a full disk refuses."""

    def execute(self, sql: str) -> sqlite3.Cursor:
        raise sqlite3.OperationalError("database or disk is full")


def _told(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (r.levelname, r.getMessage())
        for r in caplog.records
        if r.name == "agora.store.checkpoint" and r.levelno >= logging.INFO
    ]


def test_failed_checkpoints_are_one_warning_and_their_end_one_info(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agora.store")
    path = tmp_path / "ckpt.db"
    sqlite3.connect(path).close()
    opens = iter([OSError("no space"), None])

    def open_conn() -> sqlite3.Connection:
        if (refusal := next(opens)) is not None:
            raise refusal
        return sqlite3.connect(path)

    checkpointer = Checkpointer(str(path), open_conn)
    try:
        assert checkpointer._connected(None) is None  # cannot even open: the same episode
        for _ in range(5):
            assert not checkpointer.checkpoint(_Full())  # type: ignore[arg-type]
        conn = checkpointer._connected(None)
        assert conn is not None
        assert checkpointer.checkpoint(conn)
        assert checkpointer.checkpoint(conn)
        conn.close()
        assert not checkpointer.checkpoint(_Full())  # type: ignore[arg-type]
    finally:
        checkpointer.close()
    told = _told(caplog)
    assert [level for level, _ in told] == ["WARNING", "INFO", "WARNING"], told
    assert told[0][1].startswith(f"cannot open {path} to checkpoint it: no space; further ")
    assert "after" in told[1][1]
    assert told[1][1].endswith(": 6 failures"), told[1][1]
    assert "database or disk is full" in told[2][1]
    assert checkpointer.failures == 7


async def test_a_full_disk_fails_checkpoints_with_one_warning(
    small_disk: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's case: a WAL the database must grow to take, a full disk, and clients
    that keep trying to write (each refused batch wakes the checkpointer)."""
    caplog.set_level(logging.INFO, logger="agora.store")
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", 10**9)  # not yet
    async with open_store(small_disk / "agora.db", [ITEMS]) as store:
        checkpointer = store.checkpointer
        assert checkpointer is not None
        with trio.fail_after(60):
            for i in range(100):  # 300 KB in the WAL: the checkpoint must grow the file
                await store.write([insert(i, f"{i:04d}" + "x" * 3000)])
            fill(small_disk)
            checkpointer.pages = 0  # every look checkpoints now
            while checkpointer.failures < 5:
                with pytest.raises(StoreError):
                    await store.write([insert(1000 + checkpointer.failures, "y" * 3000)])
                await trio.sleep(0.06)  # the checkpointer looks every 50 ms at most
            (small_disk / "filler").unlink()
            runs = checkpointer.runs
            await store.write([insert(2000)])
            for _ in range(1000):  # its next look, 50 ms later at most, runs one
                if checkpointer.runs > runs:
                    break
                await trio.sleep(0.02)
        told = _told(caplog)
        assert store.counters()["checkpoint_failures"] == checkpointer.failures >= 5
    assert [level for level, _ in told] == ["WARNING", "INFO"], told
    assert "database or disk is full" in told[0][1]
    assert "checkpoints of" in told[1][1]
    assert "run again" in told[1][1]
