"""A PostgreSQL that stops answering: every store operation a call waits on is bounded.

The database sits behind `pg_stall.StallingRelay`, which stalls it as SIGSTOP would: the
connections stay open and the bytes are taken, but nothing answers. Before, a read, an entity
load and a version probe waited for as long as the stall lasted (the probe shielded from any
cancellation), and closing the store waited for them; only a write had its commit deadline.
Now each fails within the store's ``commit_timeout`` with a retryable `StoreError`, its
connection is cut and replaced, and once the database answers again the same store reads and
writes without a restart. Real time (a real server, real sockets): a short deadline.
"""

from __future__ import annotations

import contextlib
import time

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
#: The store's deadline in these tests (seconds).
DEADLINE = 1.5
#: What a bounded operation may take past its deadline (a busy 2-core machine).
SLACK = 2.0
WAIT = 40


def _names(conn):
    return [r[0] for r in conn.execute("SELECT name FROM items ORDER BY id").fetchall()]


async def _bounded(operation) -> StoreError:
    """Run ``operation``; it must fail with a retryable StoreError within the deadline."""
    began = time.monotonic()
    with pytest.raises(StoreError) as caught:
        await operation()
    took = time.monotonic() - began
    assert took < DEADLINE + SLACK, took
    assert not caught.value.permanent
    return caught.value


async def test_reads_loads_probes_and_writes_are_bounded_while_postgresql_is_stalled(pg_url):
    with stalling_relay(pg_url) as relay, trio.fail_after(WAIT):
        async with open_pg_store(relay.url, [ITEMS], commit_timeout=DEADLINE) as store:
            await store.write([("INSERT INTO items (id, name) VALUES (?, ?)", (1, "a"))])
            assert await store.read(_names) == ["a"]  # a pooled reader, warm
            await store.probe([("item", "1")])  # the probe connection, warm
            relay.stall()
            read = await _bounded(lambda: store.read(_names))
            # A node paused itself (SIGSTOP, a paused VM) runs out its deadlines too: an
            # operator's paused node blamed a healthy PostgreSQL alone.
            assert str(read).endswith(
                f"did not answer within {DEADLINE:g} s (or this node was paused)"
            ), read
            await _bounded(lambda: store.read_versioned("item", "1", _names))
            probe = await _bounded(lambda: store.probe([("item", "1")]))
            assert str(probe).endswith("(or this node was paused)"), probe
            write = await _bounded(
                lambda: store.write([("INSERT INTO items (id, name) VALUES (?, ?)", (2, "b"))])
            )
            assert write.outcome_unknown  # its COMMIT was out: the write may be saved
            # Callers cancelled meanwhile (a client that gave up) are not held either.
            with trio.move_on_after(0.2) as gave_up:
                await store.read(_names)
            assert gave_up.cancelled_caught
            relay.resume()
            # The cut connections were replaced: the same store works again.
            await store.write([("INSERT INTO items (id, name) VALUES (?, ?)", (3, "c"))])
            assert (await store.read(_names))[-1] == "c"
            assert (await store.probe([("item", "1")])) == {("item", "1"): 0}


async def test_closing_the_store_is_bounded_while_postgresql_is_stalled(pg_url):
    with stalling_relay(pg_url) as relay, trio.fail_after(WAIT):
        began = 0.0
        async with open_pg_store(relay.url, [ITEMS], commit_timeout=DEADLINE) as store:
            await store.write([("INSERT INTO items (id, name) VALUES (?, ?)", (1, "a"))])
            assert await store.read(_names) == ["a"]
            relay.stall()
            async with trio.open_nursery() as nursery:  # calls left waiting on the database
                for _ in range(3):
                    nursery.start_soon(_ignore_failure, lambda: store.read(_names))
                nursery.start_soon(_ignore_failure, lambda: store.probe([("item", "1")]))
                nursery.start_soon(
                    _ignore_failure,
                    lambda: store.write([("INSERT INTO items (id, name) VALUES (?, ?)", (2, "b"))]),
                )
                await trio.sleep(0.3)
                began = time.monotonic()
                nursery.cancel_scope.cancel()  # shutdown cancels them
        took = time.monotonic() - began
        assert took < DEADLINE + SLACK, took


async def _ignore_failure(operation) -> None:
    with contextlib.suppress(StoreError):
        await operation()


async def test_a_start_on_a_stalled_postgresql_names_the_server_it_waited_for(pg_url, monkeypatch):
    """An operator's finding: a node started while PostgreSQL was stalled exited with
    "cannot open the PostgreSQL database: connection timeout expired", naming no server,
    port or user, where libpq's "connection refused" names them."""
    monkeypatch.setattr("agora.store.pg_sql.CONNECT_TIMEOUT", 2)
    with stalling_relay(pg_url) as relay, trio.fail_after(WAIT):
        relay.hold_after(0)  # takes each connection, never answers
        with pytest.raises(StoreError) as refused:
            async with open_pg_store(relay.url, [ITEMS], commit_timeout=DEADLINE):
                pass
    said = str(refused.value)
    port = relay.url.split("@")[-1].split("/")[0].split(":")[1]
    assert said.startswith("cannot open the PostgreSQL database: connection timeout expired"), said
    assert f"(host 127.0.0.1, port {port}, user agora, database " in said, said
    assert said.endswith("no answer within 2 s; is it stopped, or stalled?)"), said
