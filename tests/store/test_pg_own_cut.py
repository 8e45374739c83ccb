"""A connection this node cut itself (its own commit deadline) is no PostgreSQL outage.

An operator's finding: a node paused for 11 s (SIGSTOP, PostgreSQL healthy) ran out a write's
deadline as it resumed; the store told the outage account of that write and cut the writer's
connection. A read answered next (one INFO line: "failed once"), and then the writer's next
batch met the cut connection, "server closed the connection unexpectedly", told as the
writer failing again: a WARNING "PostgreSQL is unreachable", and 8 ms later "answers again
after 0 s and 1 failed attempts". The connection this node cut is now replaced before its
next use, and a batch that fails on it is not told again: the account has it once, as the
write whose deadline passed. Real PostgreSQL, real sockets.
"""

from __future__ import annotations

import logging

import pytest
import trio

from agora.errors import StoreError
from agora.store.migrations import Migration
from pg_stall import stalling_relay

pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")

from agora.store.pg import open_pg_store

ITEMS = Migration(
    "items",
    1,
    sql={"postgresql": ["CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)"]},
)
INSERT = "INSERT INTO items (id, name) VALUES (?, ?)"
#: The store's deadline in these tests (seconds).
DEADLINE = 1.0


def _names(conn):
    return [r[0] for r in conn.execute("SELECT name FROM items ORDER BY id").fetchall()]


def _outage_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "agora.store.outage"]


async def test_a_connection_cut_between_batches_is_replaced_without_an_outage(pg_url, caplog):
    caplog.set_level(logging.DEBUG, logger="agora.store")
    with trio.fail_after(30):
        async with open_pg_store(pg_url, [ITEMS], commit_timeout=DEADLINE) as store:
            await store.write([(INSERT, (1, "a"))])
            # The node resumes: the write's deadline passed as its batch ended, so the store
            # tells the account and cuts the (now idle) write connection; a read answers next.
            assert store.outage is not None
            store.outage.failed("a write", StoreError("its commit did not finish"), refused=1)
            store._commit_stalled()
            assert await store.read(_names) == ["a"]
            await store.write([(INSERT, (2, "b"))])  # the writer's next batch
            assert await store.read(_names) == ["a", "b"]
    lines = _outage_lines(caplog)
    assert [level for level, _ in lines] == ["INFO"], lines  # before: INFO, WARNING, INFO
    assert "failed once" in lines[0][1], lines
    assert "server closed the connection" not in caplog.text


async def test_a_batch_failing_on_the_connection_cut_under_it_is_told_once(pg_url, caplog):
    caplog.set_level(logging.DEBUG, logger="agora.store")
    with stalling_relay(pg_url) as relay, trio.fail_after(30):
        async with open_pg_store(relay.url, [ITEMS], commit_timeout=DEADLINE) as store:
            await store.write([(INSERT, (1, "a"))])
            assert await store.read(_names) == ["a"]
            relay.stall()  # one batch waits past its deadline, as on a paused node
            with pytest.raises(StoreError) as late:
                await store.write([(INSERT, (2, "b"))])
            assert late.value.outcome_unknown
            relay.resume()
            await trio.sleep(0.3)  # the writer's batch fails on the cut connection meanwhile
            assert (await store.read(_names))[0] == "a"
            await store.write([(INSERT, (3, "c"))])
    lines = _outage_lines(caplog)
    assert [level for level, _ in lines] == ["INFO"], lines  # before: WARNING, then INFO
    assert "failed once" in lines[0][1], lines
