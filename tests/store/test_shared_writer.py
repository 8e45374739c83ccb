"""The guarded writer and the change feed of a shared SQLite file, at the store's level.

Two stores opened shared on one file stand for two processes: a write guarded at a version
another one moved is refused with `Conflict` and writes nothing; a failing job bumps no
version; the change feed reports what the other store committed (entities and URIs), not
what its own writer did, and nothing when nothing changed.
"""

from __future__ import annotations

import pytest
from _items import ITEMS, ids, insert

from agora.store.db import open_store
from agora.store.neutral import Conflict, Guard
from agora.store.sqlite_connect import connect
from agora.store.sqlite_feed import ChangeFeed

pytestmark = pytest.mark.sqlite_only("the shared SQLite file's own writer and feed")


async def test_a_write_guarded_at_a_moved_version_writes_nothing(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS], shared=True) as a, open_store(db, [ITEMS], shared=True) as b:
        await a.write([insert(1)], [Guard("item", "x", 0)])
        assert await a.probe([("item", "x")]) == {("item", "x"): 1}
        with pytest.raises(Conflict) as refused:
            await b.write([insert(2)], [Guard("item", "x", 0)])  # b loaded it before a wrote
        assert refused.value.stale == [("item", "x")]
        assert await b.read(ids) == [1]
        await b.write([insert(2)], [Guard("item", "x", 1)])
        assert await a.probe([("item", "x"), ("item", "never")]) == {
            ("item", "x"): 2,
            ("item", "never"): 0,
        }
        assert b.counters()["conflicts"] == 1


async def test_a_failing_guarded_job_bumps_no_version(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS], shared=True) as store:
        await store.write([insert(1)], [Guard("item", "x", 0)])
        with pytest.raises(Exception, match="UNIQUE"):
            await store.write([insert(1)], [Guard("item", "x", 1)])  # the id is taken
        assert await store.probe([("item", "x")]) == {("item", "x"): 1}


async def test_the_feed_reports_the_other_stores_changes_not_its_own(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS], shared=True) as a, open_store(db, [ITEMS], shared=True) as b:
        own = a._guarded_writer.own  # what a's feed skips: a's own commits
        feed = ChangeFeed(connect(str(db), synchronous="NORMAL"), own, lambda *_: None, 1.0)
        try:
            assert feed.check() is None  # nothing happened yet
            await a.write([insert(1)], [Guard("item", "mine", 0)], ["items://mine"])
            assert feed.check() is None  # a's own commit
            await b.write([insert(2)], [Guard("item", "theirs", 0)], ["items://theirs"])
            assert feed.check() == ([("item", "theirs", 1)], ["items://theirs"])
            assert feed.check() is None  # told once
            await b.write([insert(3)])  # guards nothing, names no URI: nothing to follow
            assert feed.check() is None
            assert feed.polls == 3
        finally:
            feed.stop()
            feed._conn.close()
