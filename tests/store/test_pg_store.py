"""The PostgreSQL store: ``?`` translation, group commit under guards, NOTIFY, migrations.

Each test gets a fresh schema on the server named by AGORA_TEST_PG (`pg_url`); the pure
translation tests need no server. Real clock, every wait inside `trio.fail_after`.
"""

from __future__ import annotations

import logging

import pytest
import trio

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.migrations import Migration, with_statements
from agora.store.neutral import (
    Conflict,
    Guard,
    MissingTable,
    parse_payload,
    parse_uris,
    payload_lines,
)
from agora.store.stats import window

pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")

from agora.store.pg_sql import translate

ITEMS = Migration(
    "items",
    1,
    sql={"postgresql": ["CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL UNIQUE)"]},
)
WAIT = 20


def insert(i: int, name: str | None = None) -> tuple[str, tuple[object, ...]]:
    return ("INSERT INTO items (id, name) VALUES (?, ?)", (i, name or f"item-{i}"))


@pytest.mark.parametrize(
    ("sql", "named", "want"),
    [
        pytest.param("SELECT ? + ?", False, "SELECT %s + %s", id="positional"),
        pytest.param("SELECT '?', ?", False, "SELECT '?', %s", id="question-in-literal"),
        pytest.param("x LIKE '%' || ?", False, "x LIKE '%%' || %s", id="percent-in-literal"),
        pytest.param("SELECT 5 % 2", False, "SELECT 5 %% 2", id="modulo"),
        pytest.param(
            "WHERE a = :a AND b::text = :b",
            True,
            "WHERE a = %(a)s AND b::text = %(b)s",
            id="named-and-cast",
        ),
        pytest.param("SELECT 'it''s ?'", False, "SELECT 'it''s ?'", id="escaped-quote"),
    ],
)
def test_statements_are_translated_for_psycopg(sql, named, want):
    assert translate(sql, named) == want


def test_notify_payloads_stay_under_the_limit_and_parse_back():
    changes = [("chess", f"table-{i:04d}", i) for i in range(2000)]
    payloads = payload_lines(changes)
    assert len(payloads) > 1
    assert all(len(p.encode()) < 8000 for p in payloads)
    assert [c for p in payloads for c in parse_payload(p)] == changes
    with_uris = payload_lines(changes[:2], ["debate://topic/t1", "bad\nuri", "x" * 9000])
    assert [u for p in with_uris for u in parse_uris(p)] == ["debate://topic/t1"]
    assert [c for p in with_uris for c in parse_payload(p)] == changes[:2]


async def test_rows_read_by_position_and_by_name(pg_url):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            await store.write([insert(1, "a%b?")])
            row = await store.read(
                lambda c: c.execute(
                    "SELECT id, name AS Name FROM items WHERE name LIKE '%' || ?", ("b?",)
                ).fetchone()
            )
            assert (row[0], row[1], row["id"], row["NAME"]) == (1, "a%b?", 1, "a%b?")
            assert dict(row) == {"id": 1, "name": "a%b?"}


async def test_a_read_that_raises_gives_its_connection_back_to_the_pool(pg_url):
    # A loader's LookupError used to drop its reader connection without closing it: every
    # read of a missing entity leaked one server connection (a ResourceWarning at best).
    def missing(conn):
        conn.execute("SELECT 1").fetchone()
        raise LookupError("no such entity")

    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            for _ in range(3):
                with pytest.raises(LookupError):
                    await store.read(missing)
            assert len(store._pg_readers) == 1  # one connection, reused, still open
            assert await store.read(lambda c: c.execute("SELECT 2").fetchone()[0]) == 2
            assert len(store._pg_readers) == 1


async def test_concurrent_writes_fold_into_few_transactions(pg_url):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            async with trio.open_nursery() as nursery:
                for i in range(200):
                    nursery.start_soon(store.write, [insert(i)], [Guard("item", str(i), 0)])
            batches, jobs = store.stats
            assert jobs == 200
            assert batches < jobs
            n = await store.read(lambda c: c.execute("SELECT count(*) FROM items").fetchone()[0])
            assert n == 200
            assert await store.probe([("item", "7"), ("item", "none")]) == {
                ("item", "7"): 1,
                ("item", "none"): 0,
            }


async def test_the_counters_split_a_commits_latency_as_on_sqlite_where_it_maps(pg_url):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            before = store.counters()
            async with trio.open_nursery() as nursery:
                for i in range(200):
                    nursery.start_soon(store.write, [insert(i)], [Guard("item", str(i), 0)])
            await store.write([insert(1000)])  # unguarded: the same two round trips
            after = store.counters()
    commits = after["commits"] - before["commits"]
    assert commits > 0
    parts = {}
    for name in ("queue_ms", "reply_ms", "latency_ms"):
        seen = window(after[name], before[name])
        assert sum(seen["counts"]) == commits  # one observation per transaction
        parts[name] = seen["sum"]
    commit_ms = after["commit_ms"]["sum"] - before["commit_ms"]["sum"]
    # The whole is its parts: queued, then BEGIN..COMMIT, then handed back to Trio.
    assert parts["latency_ms"] + 0.01 >= parts["queue_ms"] + parts["reply_ms"]
    assert parts["latency_ms"] + 0.01 >= commit_ms
    # Two round trips: BEGIN and the locks, then the writes with their COMMIT.
    begin, end = (after[k] - before[k] for k in ("begin_ms", "end_ms"))
    assert begin > 0
    assert end > 0
    assert begin + end <= commit_ms + 0.01  # counters rounded to 1 us
    assert 0 < after["end_cpu_ms"] - before["end_cpu_ms"] <= end + 0.01
    assert after["writer_cpu_ms"] > before["writer_cpu_ms"]
    # Not timed apart from the COMMIT they travel with: not reported rather than 0.
    assert "statements_ms" not in after
    assert "statements_cpu_ms" not in after


async def test_a_stale_guard_is_rejected_before_its_writes_run(pg_url):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as a, open_store(pg_url, [ITEMS]) as b:
            await a.write([insert(1)], [Guard("item", "k", 0)])
            with pytest.raises(Conflict) as refused:
                await b.write([insert(2)], [Guard("item", "k", 0)])
            assert refused.value.stale == [("item", "k")]
            await b.write([insert(3)], [Guard("item", "k", 1)])
            ids = await a.read(lambda c: [r[0] for r in c.execute("SELECT id FROM items")])
            assert sorted(ids) == [1, 3]  # 2 never ran
            assert await a.probe([("item", "k")]) == {("item", "k"): 2}
            assert (a.conflicts, b.conflicts) == (0, 1)


@pytest.mark.parametrize("jobs", [10, 150], ids=["small-batch", "past-64-savepoints"])
async def test_a_bad_job_fails_alone_and_its_version_is_not_bumped(pg_url, jobs):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            await store.write([insert(1, "dup")])
            outcomes: dict[int, BaseException | None] = {}

            async def write(i: int, name: str) -> None:
                try:
                    await store.write([insert(i, name)], [Guard("item", str(i), 0)])
                    outcomes[i] = None
                except StoreError as exc:
                    outcomes[i] = exc

            async with trio.open_nursery() as nursery:
                for i in range(2, 2 + jobs):
                    nursery.start_soon(write, i, "dup" if i == 5 else f"n{i}")
            assert [i for i, o in outcomes.items() if o is not None] == [5]
            assert len(outcomes) == jobs
            versions = await store.probe([("item", "5"), ("item", "6")])
            assert versions == {("item", "5"): 0, ("item", "6"): 1}


async def test_a_commit_notifies_its_changes_in_the_same_transaction(pg_url):
    from agora.store.listen import listen

    notes: list[tuple[str, int]] = []
    got = trio.Event()

    def on_note(payload: str, pid: int) -> None:
        notes.append((payload, pid))
        got.set()

    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store, trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: listen(
                    store.url, store.channel, on_note, lambda pid: None, task_status=task_status
                )
            )
            with pytest.raises(StoreError):  # a failed commit notifies nothing
                await store.write([insert(1), insert(1)], [Guard("item", "x", 0)])
            await store.write([insert(2)], [Guard("item", "y", 0)])
            await got.wait()
            nursery.cancel_scope.cancel()
    assert notes == [("item\ty\t1", store.writer_pid)]


def _applied(url: str) -> tuple[list[tuple[str, int]], bool]:
    """The versions table of the database at ``url`` (empty if there is none: a start that
    failed leaves nothing), and whether its items table exists."""
    from agora.store.pg_sql import connect

    with connect(url) as conn:
        exists = conn.execute("SELECT to_regclass('agora_schema') IS NOT NULL").fetchone()
        rows = (
            conn.execute("SELECT component, version FROM agora_schema").fetchall()
            if exists == (True,)
            else []
        )
        items = conn.execute("SELECT to_regclass('items') IS NOT NULL").fetchone()
    return [(r[0], int(r[1])) for r in rows], bool(items and items[0])


@pytest.mark.parametrize(
    ("step", "refusal"),
    [
        (Migration("legacy", 1, lambda db: None), "legacy v1 has no PostgreSQL schema"),
        # Version 0 was skipped as already applied, on PostgreSQL as on SQLite.
        (Migration("legacy", 0, sql={"postgresql": []}), "legacy v0 has version 0"),
        (
            Migration("legacy", 1, sql={"postgresql": [], "sqllite": []}),
            "legacy v1 names dialect 'sqllite' in sql; did you mean 'sqlite'?",
        ),
    ],
    ids=["sqlite-only", "version-0", "dialect-typo"],
)
async def test_a_step_that_cannot_run_on_postgresql_is_refused_before_any_is_applied(
    pg_url, step, refusal
):
    # "items" sorts before "legacy": it used to be applied before the refusal came.
    with pytest.raises(StoreError, match=f"migration step {refusal}"):
        async with open_store(pg_url, [ITEMS, step]):
            pass
    assert _applied(pg_url) == ([], False)


async def test_nodes_starting_together_migrate_once(pg_url):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as a, open_store(pg_url, [ITEMS]) as b:
            assert a.versions["items"] == b.versions["items"] == 1


async def test_steps_applied_are_logged_once_committed(pg_url, caplog):
    """An upgrade changed the schema with no line in the log; on PostgreSQL a start's steps
    commit together, so they are told once the transaction has committed, and a failed start
    tells none."""
    caplog.set_level(logging.INFO, logger="agora.store.migrations")
    v2 = Migration("items", 2, sql={"postgresql": ["ALTER TABLE items ADD COLUMN tag TEXT"]})
    broken = Migration("items", 3, sql={"postgresql": ["ALTER TABLE nope ADD COLUMN x TEXT"]})
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]):
            pass
        with pytest.raises(StoreError, match="migration items v3 failed: UndefinedTable: "):
            async with open_store(pg_url, [ITEMS, v2, broken]):
                pass
        async with open_store(pg_url, [ITEMS, v2]):
            pass
    said = [r.getMessage() for r in caplog.records if r.name == "agora.store.migrations"]
    assert said == ["created the items schema at v1", "migrated the items schema from v1 to v2"]


def test_with_statements_adds_a_dialect_to_the_steps_it_names():
    steps = (Migration("x", 1, lambda db: None), Migration("x", 2, lambda db: None))
    both = with_statements(steps, "postgresql", {1: ["CREATE TABLE a (b TEXT)"], 2: []})
    assert [m.statements("postgresql") for m in both] == [["CREATE TABLE a (b TEXT)"], []]
    assert [m.apply for m in both] == [m.apply for m in steps]
    with pytest.raises(ValueError, match=r"version \[3\]"):
        with_statements(steps, "postgresql", {3: []})


async def test_sums_read_as_numbers_and_a_missing_table_is_named(pg_url):
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            await store.write([insert(1), insert(2)])
            total = await store.read(
                lambda c: c.execute("SELECT SUM(id), AVG(id) FROM items").fetchone()
            )
            assert (total[0], total[1]) == (3, 1.5)
            assert type(total[0]) is int

            def missing(conn: object) -> str:
                try:
                    conn.execute("SELECT 1 FROM no_such_table")  # type: ignore[attr-defined]
                except MissingTable:
                    return "missing"
                return "found"

            assert await store.read(missing) == "missing"
            assert await store.read(lambda c: c.execute("SELECT 1").fetchone()[0]) == 1


async def test_a_batch_holding_one_entitys_lock_does_not_hold_up_another_entity(pg_url):
    # Node a's commit stalls inside its transaction (as a paused node's would) holding
    # entity x's version row; node b still commits entity y at once, and x only after.
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as a, open_store(pg_url, [ITEMS]) as b:
            await a.write([insert(1)], [Guard("item", "x", 0)])
            done: list[str] = []

            async def stall() -> None:
                await a.write([("SELECT pg_sleep(1.5)", ()), insert(2)], [Guard("item", "x", 1)])
                done.append("a:x")

            async def other_key() -> None:
                await b.write([insert(3)], [Guard("item", "y", 0)])
                done.append("b:y")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(stall)
                while not await a.read(_sleeping):  # noqa: ASYNC110 - the server's state
                    await trio.sleep(0.01)
                await other_key()
                assert done == ["b:y"]  # a still holds x
                with pytest.raises(Conflict):  # x waits for a, then finds it moved
                    await b.write([insert(4)], [Guard("item", "x", 1)])
            assert done == ["b:y", "a:x"]


def _sleeping(conn: object) -> bool:
    row = conn.execute(  # type: ignore[attr-defined]
        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'"
    ).fetchone()
    return bool(row[0])


async def test_after_their_connections_are_killed_writer_and_readers_reconnect(pg_url):
    import psycopg

    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            await store.write([insert(1)])
            assert await store.probe([("item", "x")]) == {("item", "x"): 0}  # a pooled reader
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (store.writer_pid,))
                admin.execute(  # the readers go too
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                )
            # Its connection died before it was sent: run again on a new one, and saved.
            await store.write([insert(2)])
            await store.write([insert(3)])
            ids = await store.read(lambda c: [r[0] for r in c.execute("SELECT id FROM items")])
            assert sorted(ids) == [1, 2, 3]


async def test_probes_of_awkward_keys_gathered_and_after_their_connection_was_killed(pg_url):
    import psycopg

    keys = ["plain", 'a "quoted", key', "back\\slash", "{braces}", "é ü", "NULL", ""]
    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            for i, key in enumerate(keys):
                await store.write([insert(i)], [Guard("item", key, 0)])
            want = {("item", key): 1 for key in keys} | {("item", "absent"): 0}
            got: list[dict[tuple[str, str], int]] = []

            async def probe(key: str) -> None:
                got.append(await store.probe([("item", key)]))

            async with trio.open_nursery() as nursery:  # arriving together: few queries
                for key in [*keys, "absent"]:
                    nursery.start_soon(probe, key)
            assert sorted(got, key=str) == sorted(({k: v} for k, v in want.items()), key=str)
            assert store.counters()["probes"] < len(want)
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute(  # every connection of the store goes, the probe's too
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                )
            assert await store.probe(want) == want  # on a new connection


async def test_versioned_reads_leave_no_transaction_open_and_survive_a_killed_reader(pg_url):
    import psycopg

    def names(conn: object) -> list[str]:
        rows = conn.execute("SELECT name FROM items ORDER BY id")  # type: ignore[attr-defined]
        return [r[0] for r in rows]

    def nothing_yet(conn: object) -> str:  # as a loader of a toolset that never wrote
        try:
            conn.execute("SELECT * FROM never_made")  # type: ignore[attr-defined]
        except MissingTable:
            return "no table"
        raise AssertionError("the table exists")

    def open_transactions(admin: psycopg.Connection) -> int:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state LIKE 'idle in transaction%'"
        ).fetchone()
        return int(row[0]) if row else 0

    with trio.fail_after(WAIT):
        async with open_store(pg_url, [ITEMS]) as store:
            await store.write([insert(1)], [Guard("item", "k", 0)])
            await store.write([insert(2)], [Guard("item", "k", 1)])
            read = store.read_versioned  # type: ignore[attr-defined]
            assert await read("item", "k", names) == (["item-1", "item-2"], 2)
            assert await read("item", "k", lambda c: "no statement") == ("no statement", 2)
            assert await read("item", "absent", names) == (["item-1", "item-2"], 0)
            # Its first statement failed, and the version's query rode with it: still read.
            assert await read("item", "k", nothing_yet) == ("no table", 2)
            with psycopg.connect(pg_url, autocommit=True) as admin:
                # The snapshot's COMMIT went out unanswered; the server ended it all the same.
                while open_transactions(admin):  # noqa: ASYNC110 - the server's state, polled
                    await trio.sleep(0.01)
                admin.execute(  # the pooled reader, its COMMIT's answer unread, goes
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE pid <> pg_backend_pid() AND datname = current_database()"
                )
            await store.write([insert(3)], [Guard("item", "k", 2)])
            got = await read("item", "k", names)
            assert got == (["item-1", "item-2", "item-3"], 3)
