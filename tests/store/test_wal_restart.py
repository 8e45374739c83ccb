"""Under a steady read load the writer restarts the WAL once it is long: SQLite's own
checkpoints never wait for readers, so with a reader on the WAL whenever a write begins the
WAL grows without end (3.2 GiB in a 30-minute mixed soak)."""

from __future__ import annotations

import sqlite3
import threading

import pytest
import trio
from _items import ITEMS, insert

from agora.store import checkpoint as checkpoint_module
from agora.store import wal as wal_module
from agora.store import writer as writer_module
from agora.store.db import open_store

pytestmark = pytest.mark.sqlite_only("the SQLite writer's WAL and its readers")


def _read_steadily(path: str, stop: threading.Event) -> None:
    # Back to back short read transactions, as the store's read pool serves them.
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        while not stop.is_set():
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM items").fetchall()
            conn.execute("COMMIT")
    finally:
        conn.close()


@pytest.mark.parametrize(("checkpoint_pages", "commits"), [(None, 800), (1, 400)])
async def test_the_writer_restarts_a_wal_that_readers_kept_growing(
    tmp_path, monkeypatch: pytest.MonkeyPatch, checkpoint_pages: int | None, commits: int
):
    # None: the checkpointer never has its turn; 1: it checkpoints after every commit, beside the
    # readers and the writer's restarts (only one checkpoint runs at a time: a busy one waits
    # for its next turn).
    monkeypatch.setattr(writer_module, "WAL_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(wal_module, "RESTART_FRAMES", 100)
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", checkpoint_pages or 10**9)
    path = tmp_path / "wal.db"
    wal = tmp_path / "wal.db-wal"
    async with open_store(path, [ITEMS]) as store:
        stop = threading.Event()
        readers = [
            threading.Thread(target=_read_steadily, args=(str(path), stop)) for _ in range(2)
        ]
        for reader in readers:
            reader.start()
        try:
            with trio.fail_after(60):
                for i in range(commits):
                    await store.write([insert(i, f"{i:06d}" + "x" * 2000)])
        finally:
            stop.set()
            for reader in readers:
                reader.join()
        largest = wal.stat().st_size
        counters = store.counters()
        checkpoints = counters["checkpoints"] + counters["checkpoints_busy"]  # busy: a restart
    # 800 commits of a 2 KB row each: 7-9 MiB of WAL if it never restarts (before: it did not);
    # 400: 3.5-4.5 MiB.
    assert largest < 2 * 2**20
    assert (checkpoints > 0) == bool(checkpoint_pages)
