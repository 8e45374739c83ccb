"""The commit deadline: no write waits on the database for ever, and shutdown is bounded.

A second SQLite connection holding ``BEGIN IMMEDIATE`` is another process writing (as
``agora cards sign`` does); the gate, parking the writer thread inside its transaction,
is a commit that does not return (a wedged fsync). Real files, the real clock, a short
``commit_timeout``; every wait inside ``trio.fail_after``.
"""

from __future__ import annotations

import sqlite3

import pytest
import trio
from _items import GATE, ITEMS, ids, insert

from agora.config import Config
from agora.errors import StoreError
from agora.server.embed import open_server
from agora.store.db import open_store
from agora.toolsets.base import Toolset

pytestmark = pytest.mark.sqlite_only(
    "a second SQLite connection holding BEGIN IMMEDIATE stands for another process"
)

#: Seconds a write may wait here: short, so the tests are quick.
DEADLINE = 0.2
#: The deadline of a write that must be *started* before it expires (its outcome is then
#: unknown): long enough that a loaded machine's writer thread always picks it up in time.
STARTED_DEADLINE = 1.5
TIMEOUT = 10


def hold_write_lock(path) -> sqlite3.Connection:
    """Another connection that takes the database's write lock and keeps it."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


async def test_a_write_kept_from_the_write_lock_fails_in_time_and_is_never_saved(tmp_path, caplog):
    path = tmp_path / "agora.db"
    async with open_store(path, [ITEMS], commit_timeout=DEADLINE) as store:
        other = hold_write_lock(path)
        try:
            with trio.fail_after(TIMEOUT), pytest.raises(StoreError) as refused:
                await store.write([insert(1)])
        finally:
            other.execute("ROLLBACK")  # the lock is free: the writer gets to the job now
            other.close()
        assert "nothing was saved" in str(refused.value)
        assert not refused.value.outcome_unknown
        assert "dropped" in caplog.text
        with trio.fail_after(TIMEOUT):
            await store.write([insert(2)])  # behind the dropped job: it has been dealt with
            assert await store.read(ids) == [2]


async def test_a_commit_that_does_not_return_fails_in_time_and_says_it_may_be_saved(
    file_store, gate, caplog
):
    store = file_store
    store.commit_timeout = STARTED_DEADLINE
    with trio.fail_after(TIMEOUT), pytest.raises(StoreError) as refused:
        await store.write([insert(1), GATE])  # runs, then hangs inside its transaction
    assert "may or may not have been saved" in str(refused.value)
    assert refused.value.outcome_unknown  # the runtime tells the caller so
    assert "stalled" in caplog.text
    gate.open()  # the commit returns after all: the error did not promise otherwise
    with trio.fail_after(TIMEOUT):
        await store.write([insert(2)])
        assert await store.read(ids) == [1, 2]


async def test_closing_the_store_does_not_wait_for_a_stuck_writer(tmp_path, gate, caplog):
    with trio.fail_after(TIMEOUT):
        async with open_store(
            tmp_path / "agora.db",
            [ITEMS, gate.migration],
            commit_timeout=STARTED_DEADLINE,
            writer_process=False,  # the gate holds the writer thread's own connection
        ) as store:
            with pytest.raises(StoreError, match="may or may not"):
                await store.write([GATE])
    assert "writer is stuck" in caplog.text  # the gate holds it for 10 s


async def test_shutdown_is_bounded_whatever_the_writer_does(tmp_path, gate):
    writing = trio.Event()
    outcome: list[str] = []

    async def write_forever(runtime) -> None:  # a background task whose commit never returns
        writing.set()
        try:
            await runtime.store.write([GATE])
        except StoreError as exc:
            outcome.append(str(exc))
            raise

    items = Toolset(
        name="items",
        handlers={},
        contract=None,
        migrations=[ITEMS, gate.migration],
        background=[write_forever],
    )
    config = Config(
        db=str(tmp_path / "agora.db"),
        grace_seconds=DEADLINE,
        commit_timeout=DEADLINE,
        writer_process=False,  # the gate holds the writer thread's own connection
    )
    with trio.fail_after(TIMEOUT):  # the gate would hold the writer for 10 s
        async with open_server(config, toolsets=[items], listen=False):
            await writing.wait()
            await gate.wait_entered()
    assert len(outcome) == 1
    assert "may or may not" in outcome[0]
