"""The file lock of shared openers: any number together, an unshared one never beside them.

A process that opens a SQLite file shared (under the version guard) takes the sidecar lock
shared; one that opens it unshared takes it exclusively. Each kind is refused beside the
other at once, with a message that says what to do; the lock goes with its holders.
"""

from __future__ import annotations

import os

import pytest
from _items import ITEMS

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.lock import DatabaseInUse, database_lock
from agora.store.sqlite_shared import SharedStore

pytestmark = pytest.mark.sqlite_only("the SQLite file lock; PostgreSQL is shared by design")


async def test_shared_openers_run_together_and_an_unshared_one_is_refused(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS], shared=True) as a, open_store(db, [ITEMS], shared=True) as b:
        assert isinstance(a, SharedStore)
        assert a.guarded
        assert b.shared
        with pytest.raises(DatabaseInUse) as refused:
            async with open_store(db, [ITEMS]):
                pass
        assert refused.value.shared
        assert "shared by other agora processes" in str(refused.value)
        assert "--shared" in str(refused.value)
    async with open_store(db, [ITEMS]) as alone:  # every shared holder gone: free again
        assert not alone.guarded
        assert not alone.shared


async def test_an_unshared_file_gets_no_guard_tables_and_no_turns_file(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS]) as store:
        names = await store.read(
            lambda c: [r[0] for r in c.execute("SELECT name FROM sqlite_master")]
        )
    assert "agora_entities" not in names
    assert sorted(p.name for p in tmp_path.iterdir() if ".lock" in p.name) == ["agora.db.lock"]
    async with open_store(db, [ITEMS], shared=True) as store:
        names = await store.read(
            lambda c: [r[0] for r in c.execute("SELECT name FROM sqlite_master")]
        )
    assert "agora_entities" in names
    assert (tmp_path / "agora.db.lock.write").exists()


async def test_a_shared_opener_is_refused_beside_an_unshared_one(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS]):
        with pytest.raises(DatabaseInUse) as refused:
            async with open_store(db, [ITEMS], shared=True):
                pass
        assert not refused.value.shared
        assert refused.value.pid == os.getpid()


def test_a_shared_lock_writes_no_pid_over_an_old_record(tmp_path):
    db = tmp_path / "agora.db"
    with database_lock(db) as path:
        pass
    record = path.read_text()
    with database_lock(db, shared=True), database_lock(db, shared=True):
        assert path.read_text() == record


async def test_memory_cannot_be_shared():
    with pytest.raises(StoreError, match="only a database file can be shared"):
        async with open_store(":memory:", [ITEMS], shared=True):
            pass
