"""The store: group commit, per-job failure, reply after COMMIT, read connections, reopen.

File-store tests use the real clock (the writer is a thread) with `trio.fail_after` around
every wait, and a gate that parks the writer thread mid-transaction so batches are exact.
In-memory tests run inline on the autojump clock.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import Counter

import pytest
import trio
import trio.testing
from _items import GATE, ITEMS, ids, insert

from agora.errors import StoreError
from agora.store.db import READERS, open_store
from agora.store.stats import window

pytestmark = pytest.mark.sqlite_only(
    "the SQLite store itself: WAL readers, its writer thread, pragmas, file paths"
)


def count(conn) -> int:
    return int(conn.execute("SELECT count(*) FROM items").fetchone()[0])


async def test_concurrent_writes_are_folded_into_one_transaction(file_store, gate):
    store = file_store
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.write, [GATE])
            await gate.wait_entered()
            for i in range(100):
                nursery.start_soon(store.write, [insert(i)])
            await trio.testing.wait_all_tasks_blocked()  # all 100 queued behind the gate
            gate.open()
    assert store.stats == (2, 101)
    assert await store.read(ids) == list(range(100))


async def test_a_write_load_commits_in_fewer_transactions_than_jobs(tmp_path):
    async with open_store(tmp_path / "load.db", [ITEMS]) as store:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for i in range(300):
                    nursery.start_soon(store.write, [insert(i)])
        batches, jobs = store.stats
        assert jobs == 300
        assert batches < jobs
        assert await store.read(count) == 300


async def test_the_counters_split_the_writer_time_into_cpu_statements_and_commit(tmp_path):
    async with open_store(tmp_path / "split.db", [ITEMS]) as store:
        before = store.counters()
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for i in range(200):
                    nursery.start_soon(store.write, [insert(i)])
    after = store.counters()  # closed: the writer thread has added up its last batch too
    if after["engine"] != "sqlite":
        pytest.skip("statements_ms is measured by the SQLite writer")
    commit_ms = after["commit_ms"]["sum"] - before["commit_ms"]["sum"]
    statements_ms = after["statements_ms"] - before["statements_ms"]
    cpu_ms = after["writer_cpu_ms"] - before["writer_cpu_ms"]
    assert 0 < statements_ms <= commit_ms  # the statements are part of BEGIN..COMMIT
    assert cpu_ms > 0


async def test_the_counters_split_a_commits_latency_into_queue_statements_commit_and_reply(
    tmp_path,
):
    async with open_store(tmp_path / "latency.db", [ITEMS]) as store:
        before = store.counters()
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for i in range(200):
                    nursery.start_soon(store.write, [insert(i)])
        after = store.counters()
    if after["engine"] != "sqlite":
        pytest.skip("the latency split is measured by the SQLite writer")
    commits = after["commits"] - before["commits"]
    parts = {}
    for name in ("queue_ms", "reply_ms", "latency_ms"):
        seen = window(after[name], before[name])
        assert sum(seen["counts"]) == commits  # one observation per transaction
        parts[name] = seen["sum"]
    commit_ms = after["commit_ms"]["sum"] - before["commit_ms"]["sum"]
    # The whole is its parts: queued, then BEGIN..COMMIT, then handed back to Trio.
    assert parts["latency_ms"] + 0.01 >= parts["queue_ms"] + parts["reply_ms"]
    assert parts["latency_ms"] + 0.01 >= commit_ms
    begin, end = (after[k] - before[k] for k in ("begin_ms", "end_ms"))
    statements = after["statements_ms"] - before["statements_ms"]
    assert 0 < begin + statements + end <= commit_ms + 0.01  # counters rounded to 1 us
    assert 0 < after["statements_cpu_ms"] - before["statements_cpu_ms"] <= statements + 0.01
    assert 0 < after["end_cpu_ms"] - before["end_cpu_ms"] <= end + 0.01


async def test_without_group_commit_each_write_is_its_own_transaction(tmp_path):
    async with open_store(tmp_path / "single.db", [ITEMS], group_commit=False) as store:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(store.write, [insert(i)])
        assert store.stats == (20, 20)


async def test_a_failing_job_fails_alone_and_the_rest_of_its_batch_commits(file_store, gate):
    store = file_store
    await store.write([insert(1, "taken")])
    outcomes: dict[str, str] = {}

    async def job(name: str, writes: list) -> None:
        try:
            await store.write(writes)
            outcomes[name] = "committed"
        except StoreError:
            outcomes[name] = "failed"

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.write, [GATE])
            await gate.wait_entered()
            nursery.start_soon(job, "first", [insert(10)])
            # Its first row is fine, its second breaks UNIQUE: the job fails as a whole.
            nursery.start_soon(job, "duplicate", [insert(11), insert(12, "taken")])
            nursery.start_soon(job, "bad sql", [("INSERT INTO nowhere VALUES (1)", ())])
            nursery.start_soon(job, "malformed", [("INSERT INTO items (id) VALUES (14)",)])
            nursery.start_soon(job, "last", [insert(13)])
            await trio.testing.wait_all_tasks_blocked()
            gate.open()
    assert outcomes == {
        "first": "committed",
        "duplicate": "failed",
        "bad sql": "failed",
        "malformed": "failed",
        "last": "committed",
    }
    assert await store.read(ids) == [1, 10, 13]
    assert store.stats == (3, 4)  # the failed jobs shared a committed transaction


async def test_a_write_returns_only_after_its_commit(file_store, gate):
    store = file_store
    returned: list[bool] = []

    async def writer() -> None:
        # The row is inserted first, then the gate holds the transaction open.
        await store.write([insert(1), GATE])
        returned.append(True)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            await gate.wait_entered()
            await trio.testing.wait_all_tasks_blocked()
            assert returned == []
            # A read connection sees committed rows only, and the open write does not block it.
            assert await store.read(count) == 0
            gate.open()
    assert returned == [True]
    assert await store.read(ids) == [1]


async def test_a_write_leaves_no_reference_cycle_for_the_collector(tmp_path):
    # Regression: the waiter held its Job and the Job the waiter's bound method, so every
    # write left a cycle that only the cyclic collector frees; under agora serve's collector
    # policy (what survives a collection is frozen) about one write in four stayed until the
    # 10-minute thaw.
    async with open_store(tmp_path / "cycles.db", [ITEMS]) as store:
        with trio.fail_after(10):
            await store.write([insert(0)])  # warm: connection, statement cache
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                for i in range(1, 21):
                    await store.write([insert(i)])
                gc.collect()
                left = Counter(type(o).__name__ for o in gc.garbage)
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
    assert (left["Job"], left["_Waiter"]) == (0, 0), left


async def test_a_cancelled_writer_still_waits_for_its_commit(file_store, gate):
    store = file_store
    returned: list[bool] = []
    scope = trio.CancelScope()

    async def writer() -> None:
        with scope:
            await store.write([insert(1)])
            returned.append(True)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.write, [GATE])
            await gate.wait_entered()
            nursery.start_soon(writer)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert returned == []  # cancelled, yet still waiting for its outcome
            gate.open()
    assert returned == [True]
    assert await store.read(ids) == [1]


@pytest.mark.parametrize("where", [pytest.param(":memory:", id="memory"), "file"])
async def test_a_writer_cancelled_on_entry_commits_nothing(tmp_path, where):
    path = where if where == ":memory:" else tmp_path / "agora.db"
    async with open_store(path, [ITEMS]) as store:
        with trio.CancelScope() as scope:
            scope.cancel()
            await store.write([insert(1)])
        assert scope.cancelled_caught
        assert await store.read(count) == 0
        assert store.stats == (0, 0)


async def test_concurrent_reads_share_a_bounded_pool_of_read_connections(file_store):
    store = file_store
    await store.write([insert(i) for i in range(5)])
    results: list[int] = []

    async def reader() -> None:
        results.append(await store.read(count))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for _ in range(READERS * 5):
                nursery.start_soon(reader)
    assert results == [5] * (READERS * 5)
    assert len(store._readers) <= READERS


async def test_a_read_sees_every_write_that_returned(file_store):
    store = file_store
    with trio.fail_after(10):
        for i in range(20):
            await store.write([insert(i)])
            assert await store.read(count) == i + 1


@pytest.mark.parametrize("where", [pytest.param(":memory:", id="memory"), "file"])
async def test_a_failing_read_raises_store_error(tmp_path, where):
    path = where if where == ":memory:" else tmp_path / "agora.db"
    async with open_store(path, [ITEMS]) as store:
        with pytest.raises(StoreError, match="no such table"):
            await store.read(lambda conn: conn.execute("SELECT * FROM nowhere").fetchall())
        with pytest.raises(StoreError, match="attempt to write a readonly database"):
            await store.read(lambda conn: conn.execute("DELETE FROM items"))


async def test_a_file_store_survives_close_and_reopen(tmp_path):
    path = tmp_path / "agora.db"
    async with open_store(path, [ITEMS]) as store:
        await store.write([insert(1), insert(2)])
    async with open_store(path, [ITEMS]) as store:
        assert await store.read(ids) == [1, 2]
        assert store.versions == {"items": 1}
        mode = await store.read(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0])
        assert mode == "wal"


@pytest.mark.parametrize("where", [pytest.param(":memory:", id="memory"), "file"])
async def test_a_closed_store_refuses_reads_and_writes(tmp_path, where):
    path = where if where == ":memory:" else tmp_path / "agora.db"
    async with open_store(path, [ITEMS]) as store:
        await store.write([insert(1)])
    with trio.fail_after(5):
        with pytest.raises(StoreError, match="closed"):
            await store.write([insert(2)])
        with pytest.raises(StoreError, match="closed"):
            await store.read(count)


async def test_an_in_memory_store_runs_inline(autojump_clock):
    async with open_store(":memory:", [ITEMS]) as store:
        assert store.path == ":memory:"
        start = trio.current_time()
        await store.write([insert(1, "a")])
        with pytest.raises(StoreError, match="UNIQUE"):
            await store.write([insert(2, "b"), insert(3, "a")])
        assert await store.read(ids) == [1]  # the failed job left nothing behind
        assert store.stats == (1, 1)
        # No thread was involved, so the autojump clock had no reason to move.
        assert trio.current_time() == start
        assert "agora-writer" not in {t.name for t in threading.enumerate()}


async def test_an_empty_write_is_not_a_transaction(file_store):
    await file_store.write([])
    assert file_store.stats == (0, 0)


async def test_bad_settings_raise_store_error(tmp_path):
    with pytest.raises(StoreError, match="synchronous"):
        async with open_store(tmp_path / "a.db", synchronous="sometimes"):
            pass
    with pytest.raises(StoreError, match="cannot open"):
        async with open_store(tmp_path, [ITEMS]):  # a directory, not a file
            pass


async def test_traced_commits_log_when_they_became_durable(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="agora.store.writer")
    async with open_store(tmp_path / "t.db", [ITEMS], trace=True) as store:
        before = time.time()
        with trio.fail_after(10):
            await store.write([insert(1), insert(2)])
        after = time.time()
        await store.write([])  # nothing to commit: nothing logged
    [record] = [r for r in caplog.records if r.name == "agora.store.writer"]
    count_, _, _, at = record.getMessage().split()[1:]
    assert int(count_) == 1
    assert before <= float(at) <= after


async def test_commits_are_not_traced_unless_asked(file_store, caplog):
    caplog.set_level(logging.INFO, logger="agora.store.writer")
    await file_store.write([insert(1)])
    assert not [r for r in caplog.records if r.name == "agora.store.writer"]


async def test_a_write_that_returned_is_in_the_writer_cpu_counter(tmp_path):
    # The writer thread added a batch's CPU after its callers had been told: a reader of the
    # counters right after its write could miss the batch (a flaky zero in the test above).
    async with open_store(tmp_path / "cpu.db", [ITEMS]) as store:
        if store.counters()["engine"] != "sqlite":
            pytest.skip("writer_cpu_ms is measured by the SQLite writer")
        seen = store.counters()["writer_cpu_ms"]
        for i in range(100):
            await store.write([insert(i)])
            now = store.counters()["writer_cpu_ms"]
            assert now > seen, f"write {i} is not counted yet"
            seen = now
