"""Transient or permanent: which store failures a retry can cure (`agora.store.failures`).

Every case is a real error from a real engine: SQLite on a file (a constraint, a syntax
error, a missing table, a database locked by another connection) and PostgreSQL on the
test cluster (SQLSTATE classes 22, 23, 42 against 57, 25006, 55P03, and a server that
refuses connections). Then the store's own answer: a bad statement fails its write with a
`StoreError` marked permanent, naming the statement (through the writer's child process
too), while the disk's and the deadline's failures stay retryable.
"""

from __future__ import annotations

import contextlib
import socket
import sqlite3
from typing import TYPE_CHECKING

import pytest
import trio
from _items import ITEMS, insert

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.failures import is_permanent, store_error
from agora.store.migrations import with_statements
from agora.store.neutral import Guard

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def sqlite_error(path: Path, fail: Callable[[sqlite3.Connection], object]) -> sqlite3.Error:
    """What ``fail`` raised on a fresh connection to a file with one table."""
    with contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        conn.execute("INSERT OR IGNORE INTO t VALUES (1, 1)")
        try:
            fail(conn)
        except sqlite3.Error as exc:
            return exc
    raise AssertionError("it did not fail")


def _locked(conn: sqlite3.Connection) -> object:
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    with contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # holds the write lock
        try:
            return conn.execute("INSERT INTO t VALUES (2, 2)")
        finally:
            other.execute("ROLLBACK")


SQLITE_CASES = [
    pytest.param(lambda c: c.execute("INSERT INTO t VALUES (1, 1)"), True, id="unique"),
    pytest.param(lambda c: c.execute("INSERT INTO t VALUES (3, NULL)"), True, id="not-null"),
    pytest.param(lambda c: c.execute("INSERT INTO t VALUS (3, 3)"), True, id="syntax"),
    pytest.param(lambda c: c.execute("INSERT INTO gone VALUES (3)"), True, id="no-table"),
    pytest.param(lambda c: c.execute("SELECT nope FROM t"), True, id="no-column"),
    pytest.param(lambda c: c.execute("SELECT ?", (1, 2)), True, id="bindings"),
    pytest.param(_locked, False, id="locked"),
]


@pytest.mark.parametrize(("fail", "permanent"), SQLITE_CASES)
def test_sqlite_errors_are_classified_by_their_result_code(tmp_path, fail, permanent):
    exc = sqlite_error(tmp_path / "t.db", fail)
    assert is_permanent(exc) is permanent, (type(exc), exc, getattr(exc, "sqlite_errorname", ""))
    error = store_error("write failed", exc)
    assert error.permanent is permanent
    assert error.__cause__ is exc


def test_failures_the_store_makes_itself_stay_retryable_unless_said():
    assert not is_permanent(StoreError("write failed: the store is closed"))
    assert not is_permanent(sqlite3.OperationalError("the writer's process ended"))  # no code
    assert not is_permanent(ConnectionResetError())
    assert is_permanent(StoreError("bad", permanent=True))
    assert is_permanent(TypeError("a value the driver cannot bind"))


# -- PostgreSQL --------------------------------------------------------------------------------


def pg_error(url: str, *statements: str) -> Exception:
    """What the last of ``statements`` raised (the others prepare it), on a fresh schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v INT NOT NULL)")
        conn.execute("INSERT INTO t VALUES (1, 1) ON CONFLICT DO NOTHING")
        *setup, last = statements
        for statement in setup:
            conn.execute(statement)
        try:
            conn.execute(last)
        except psycopg.Error as exc:
            return exc
    raise AssertionError("it did not fail")


PG_CASES = [
    pytest.param(("INSERT INTO t VALUES (1, 1)",), "23505", True, id="unique"),
    pytest.param(("INSERT INTO t VALUES (2, NULL)",), "23502", True, id="not-null"),
    pytest.param(("SELECT 'x'::int",), "22P02", True, id="bad-value"),
    pytest.param(("INSERT INTO t VALUS (2, 2)",), "42601", True, id="syntax"),
    pytest.param(("INSERT INTO gone VALUES (2)",), "42P01", True, id="no-table"),
    pytest.param(("SELECT nope FROM t",), "42703", True, id="no-column"),
    pytest.param(
        ("SET statement_timeout = 10", "SELECT pg_sleep(1)"), "57014", False, id="timeout"
    ),
    pytest.param(
        ("SET default_transaction_read_only = on", "INSERT INTO t VALUES (2, 2)"),
        "25006",
        False,
        id="read-only",
    ),
]


@pytest.mark.parametrize(("statements", "sqlstate", "permanent"), PG_CASES)
def test_postgresql_errors_are_classified_by_their_sqlstate(
    pg_url, statements, sqlstate, permanent
):
    exc = pg_error(pg_url, *statements)
    assert getattr(exc, "sqlstate", None) == sqlstate, exc
    assert is_permanent(exc) is permanent, exc
    assert store_error("read failed", exc).permanent is permanent


def test_a_row_lock_that_is_not_available_is_transient(pg_url):
    import psycopg

    with psycopg.connect(pg_url) as holder:
        holder.execute("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v INT NOT NULL)")
        holder.commit()
        holder.execute("LOCK TABLE t")  # held until the end of this transaction
        with psycopg.connect(pg_url) as waiter:
            waiter.execute("SET lock_timeout = 10")
            with pytest.raises(psycopg.Error) as refused:
                waiter.execute("LOCK TABLE t")
    assert refused.value.sqlstate == "55P03", refused.value
    assert not is_permanent(refused.value)


def test_a_server_that_refuses_connections_is_transient():
    import psycopg

    with socket.socket() as closed:  # bound, never listening: the refusal is immediate
        closed.bind(("127.0.0.1", 0))
        url = f"postgresql://agora@127.0.0.1:{closed.getsockname()[1]}/agora?connect_timeout=5"
        with pytest.raises(psycopg.OperationalError) as refused:
            psycopg.connect(url)
    assert refused.value.sqlstate is None
    assert not is_permanent(refused.value)


# -- The store's answer ------------------------------------------------------------------------


@pytest.mark.sqlite_only("the SQLite writer (its thread and its child process)")
@pytest.mark.parametrize("writer_process", [True, False], ids=["child-process", "thread"])
async def test_a_bad_statement_fails_its_write_as_permanent_naming_the_statement(
    tmp_path, writer_process
):
    async with open_store(tmp_path / "items.db", [ITEMS], writer_process=writer_process) as store:
        with trio.fail_after(20):
            await store.write([insert(1)])
            with pytest.raises(StoreError) as duplicate:
                await store.write([insert(2), insert(3, "item-1")])  # UNIQUE name
            with pytest.raises(StoreError) as missing:
                await store.read(lambda conn: conn.execute("SELECT nope FROM items").fetchall())
            await store.write([insert(4)])  # the writer goes on
    assert duplicate.value.permanent
    assert "SQLITE_CONSTRAINT_UNIQUE" in str(duplicate.value)
    assert "statement: INSERT INTO items (id, name) VALUES (?, ?)" in str(duplicate.value)
    assert "item-1" not in str(duplicate.value).split("statement:")[1]  # no parameters
    assert missing.value.permanent
    assert "no such column" in str(missing.value)


@pytest.mark.sqlite_only("a SQLite file opened shared (the guarded writer)")
async def test_a_bad_guarded_write_on_a_shared_file_is_permanent(tmp_path):
    async with open_store(tmp_path / "items.db", [ITEMS], shared=True) as store:
        with trio.fail_after(20):
            await store.write([insert(1)], [Guard("item", "1", 0)])
            with pytest.raises(StoreError) as duplicate:
                await store.write([insert(2, "item-1")], [Guard("item", "2", 0)])
    assert duplicate.value.permanent
    assert "statement: INSERT INTO items" in str(duplicate.value)


async def test_a_bad_statement_is_permanent_on_every_backend(tmp_path):
    """On the PostgreSQL pass this store is a schema on the test cluster."""
    items = with_statements(
        [ITEMS], "postgresql", {1: ["CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT UNIQUE)"]}
    )
    async with open_store(tmp_path / "items.db", items) as store:
        with trio.fail_after(20):
            with pytest.raises(StoreError) as duplicate:
                await store.write([insert(1), insert(2, "item-1")])
            with pytest.raises(StoreError) as gone:
                await store.write([("INSERT INTO gone (id) VALUES (?)", (1,))])
            await store.write([insert(1)])
    for failed in (duplicate.value, gone.value):
        assert failed.permanent, failed
        assert not failed.outcome_unknown
        assert "statement: INSERT INTO" in str(failed), failed
