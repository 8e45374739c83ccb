"""A file store reads its WAL index without dropping its process's SQLite locks on it.

The checkpointer reads the ``-shm`` header after commits. It used to open and close the file
at each look, and closing any descriptor of a file drops every ``fcntl`` lock the process
holds on it: SQLite's shared lock that tells other processes the index is in use went with
it, so the next process to open the database truncated the ``-shm`` under the store, which
dies of SIGBUS when it next touches its mapping (`agora.store.wal_index`). Other processes
are asked what they see (`_wal_lock`).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import pytest
import trio
from _items import ITEMS, checkpoints_run, ids, insert
from _wal_lock import dms_holder, open_from_other_processes

from agora.store import checkpoint as checkpoint_module
from agora.store.db import open_store

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.sqlite_only("the SQLite store's WAL index")


def _looked(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """An event set after each look of the checkpointer (every look checkpoints)."""
    monkeypatch.setattr(checkpoint_module, "CHECKPOINT_PAGES", 0)
    return checkpoints_run(monkeypatch)


async def _holder(db: Path) -> int | None:
    return await trio.to_thread.run_sync(dms_holder, db)


def _shm_descriptors(db: Path) -> list[str]:
    """This process's descriptors of the ``-shm`` of ``db`` (SQLite's own included)."""
    shm = f"{os.path.realpath(db)}-shm"
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == shm:
                found.append(fd)
        except OSError:
            continue  # closed meanwhile
    return found


async def test_the_checkpointers_looks_leave_the_wal_index_locked_by_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked = _looked(monkeypatch)
    db = tmp_path / "agora.db"
    # The writer thread's own connection: no writer process beside this one to hold the lock.
    async with open_store(db, [ITEMS], writer_process=False) as store:
        for i in range(3):
            looked.clear()
            await store.write([insert(i)])
            with trio.fail_after(30):
                await trio.to_thread.run_sync(looked.wait)
            # Before: nobody (the look's close dropped the lock), from the first look on.
            assert await _holder(db) == os.getpid()
        # So another process opening the file leaves the index alone, and this one reads on.
        await trio.to_thread.run_sync(open_from_other_processes, db, 20)
        assert await store.read(ids) == [0, 1, 2]
        assert await _holder(db) == os.getpid()


async def test_the_index_stays_open_while_any_store_of_the_process_uses_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked = _looked(monkeypatch)
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS], shared=True) as one:
        async with open_store(db, [ITEMS], shared=True) as two:
            await two.write([insert(1)])
            with trio.fail_after(30):
                await trio.to_thread.run_sync(looked.wait)
            assert await _holder(db) == os.getpid()
            assert two.checkpointer is not None
            assert two.checkpointer.index.opened
        # Two let go of its hold; one's connections still need their locks.
        assert await _holder(db) == os.getpid()
        looked.clear()
        await one.write([insert(2)])
        with trio.fail_after(30):
            await trio.to_thread.run_sync(looked.wait)
        assert await _holder(db) == os.getpid()
    assert _shm_descriptors(db) == []  # the last hold closed it: nothing leaks


async def test_the_change_feed_holds_the_index_until_its_connection_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked = _looked(monkeypatch)
    db = tmp_path / "agora.db"
    others = set(threading.enumerate())  # a feed of an earlier test may still be ending
    async with trio.open_nursery() as nursery:
        async with open_store(db, [ITEMS], shared=True) as store:
            await nursery.start(store.watch, lambda changes, uris: None)
            await store.write([insert(1)])
            with trio.fail_after(30):
                await trio.to_thread.run_sync(looked.wait)  # the index is open
        # The store is closed, its feed still polls on its own connection: still locked.
        (feed,) = [t for t in set(threading.enumerate()) - others if t.name == "agora-change-feed"]
        assert await _holder(db) == os.getpid()
        nursery.cancel_scope.cancel()  # the feed stops; its thread ends on its own
    await trio.to_thread.run_sync(feed.join, 30)
    assert not feed.is_alive()
    assert _shm_descriptors(db) == []  # its thread let go last
