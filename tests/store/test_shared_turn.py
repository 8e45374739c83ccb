"""The write turn of a shared SQLite file, held by another process that does not let go.

The writers of the processes sharing a file take turns on an ``flock`` (``<db>.lock.write``,
`agora.store.sqlite_guard`). Here a real second process takes that lock and keeps it, as a
process stopped with SIGSTOP would: a write then fails within the store's commit deadline
with an error naming the other process's hold, nothing of it is saved, the store closes
promptly with its writer thread ended, and once the other process lets go the writes go
through again. Real files, a real subprocess, a short ``commit_timeout``; every wait in
``trio.fail_after``.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest
import trio
from _items import ITEMS, ids, insert

from agora.errors import StoreError
from agora.store.db import open_store
from agora.store.write_turn import WriteTurn

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from agora.store.sqlite import Store

pytestmark = pytest.mark.sqlite_only("the flock the writers of a shared SQLite file take turns on")

#: Seconds a write may wait here: short, so the tests are quick.
DEADLINE = 0.3
TIMEOUT = 10

#: Takes the write turn's flock, says so, and keeps it until its stdin closes.
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@asynccontextmanager
async def turn_held(db: Path, lock: str = ".lock.write") -> AsyncIterator[trio.Process]:
    """Another process holding ``db``'s write turn (the flock of ``db`` + ``lock``) while
    the block runs."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", HOLDER, f"{db}{lock}"], stdin=-1, stdout=-1
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        with trio.fail_after(TIMEOUT):
            said = b""
            while b"\n" not in said:
                chunk = await process.stdout.receive_some()
                assert chunk, "the holder ended before taking the lock"
                said += chunk
        yield process
    finally:
        with trio.CancelScope(shield=True), trio.fail_after(TIMEOUT):
            await process.stdin.aclose()  # lets go of the lock
            await process.wait()
            await process.stdout.aclose()


async def test_a_write_kept_from_the_turn_fails_in_time_and_the_store_closes(tmp_path):
    db = tmp_path / "agora.db"
    async with turn_held(db):
        async with open_store(db, [ITEMS], shared=True, commit_timeout=DEADLINE) as store:
            writer = store._guarded_writer
            with trio.fail_after(TIMEOUT), pytest.raises(StoreError) as refused:
                await store.write([insert(1)])
            assert "nothing was saved" in str(refused.value)
            assert "another process" in str(refused.value)
            assert not refused.value.outcome_unknown
        # Closed while the turn is still held: the writer thread stopped waiting and ended,
        # and the store let go of everything (not left behind as a stuck writer).
        assert not writer.running
        assert writer.closed
    async with open_store(db, [ITEMS], shared=True) as store:
        assert await store.read(ids) == []  # the refused write was never saved


async def test_writes_go_through_again_once_the_other_process_lets_go(tmp_path):
    db = tmp_path / "agora.db"
    async with open_store(db, [ITEMS], shared=True, commit_timeout=DEADLINE) as store:
        async with turn_held(db):
            for n in range(2):  # the first batch waits for the turn, the next one too
                with trio.fail_after(TIMEOUT), pytest.raises(StoreError, match="another process"):
                    await store.write([insert(n)])
        with trio.fail_after(TIMEOUT):
            await store.write([insert(7)])
            assert await store.read(ids) == [7]


async def test_closing_the_store_ends_its_writers_wait_for_the_turn(tmp_path):
    db = tmp_path / "agora.db"
    refused: list[StoreError] = []

    async def write(store: Store) -> None:
        with pytest.raises(StoreError) as caught:
            await store.write([insert(1)])
        refused.append(caught.value)

    async with trio.open_nursery() as nursery, turn_held(db):
        async with open_store(db, [ITEMS], shared=True, commit_timeout=60) as store:
            writer = store._guarded_writer
            nursery.start_soon(write, store)
            with trio.fail_after(TIMEOUT):
                while not writer.turn.contended:  # noqa: ASYNC110 - the writer thread's state
                    await trio.sleep(0.005)
        # Closed while its writer waited for the turn (a deadline of a minute away): the
        # wait ended, the write failed saying so, and the thread is gone.
        assert not writer.running
        assert writer.closed
    assert len(refused) == 1
    assert "the store closed while another process held" in str(refused[0])
    assert "nothing was saved" in str(refused[0])


def free(path: Path) -> bool:
    """Whether another open file description can take ``path``'s flock now."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # drops the lock if taken
    return True


@pytest.fixture
def turns(tmp_path):
    """The path of a write turn's lock file, and a `WriteTurn` on it (closed after the test)."""
    path = tmp_path / "turns"
    turn = WriteTurn(str(path))
    yield path, turn
    turn.close()


async def taker_waiting(nursery: trio.Nursery, turn: WriteTurn, got: list[bool]) -> None:
    """Start a thread taking ``turn`` (deadline a minute away) that appends what it got to
    ``got``; return once it waits for a holder to let go."""

    async def take() -> None:
        got.append(await trio.to_thread.run_sync(turn.take, time.perf_counter() + 60))

    nursery.start_soon(take)
    while not turn.contended:  # noqa: ASYNC110 - the taker thread's state
        await trio.sleep(0.005)


async def test_a_turn_that_comes_after_its_taker_gave_up_is_given_back(turns):
    path, turn = turns
    async with turn_held(path, ""):
        with trio.fail_after(TIMEOUT):
            deadline = time.perf_counter() + DEADLINE
            assert not await trio.to_thread.run_sync(turn.take, deadline)
        assert (turn.contended, turn.missed) == (1, 1)
    # The holder let go: the helper's flock got the turn for nobody, and gave it back. (The
    # file is also free for a moment before the helper's flock wakes: wait for the helper.)
    with trio.fail_after(TIMEOUT):
        while turn._blocked or not free(path):  # noqa: ASYNC110 - the helper thread, polled
            await trio.sleep(0.005)
        assert await trio.to_thread.run_sync(turn.take, time.perf_counter() + DEADLINE)
    assert turn.contended == 1  # taken without waiting
    assert not free(path)
    turn.give()
    assert free(path)


async def test_a_waiting_taker_gets_the_turn_the_moment_it_is_free(turns):
    path, turn = turns
    got: list[bool] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery, turn_held(path, "") as holder:
            await taker_waiting(nursery, turn, got)
            assert holder.stdin is not None
            await holder.stdin.aclose()  # the holder lets go and ends
        assert got == [True]  # long before its deadline: handed over by the helper
    assert not free(path)
    turn.give()
    assert free(path)


async def test_stop_ends_a_wait_for_the_turn(turns):
    path, turn = turns
    got: list[bool] = []
    async with turn_held(path, ""):
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                await taker_waiting(nursery, turn, got)
                turn.stop()
        assert got == [False]
        assert not await trio.to_thread.run_sync(turn.take, time.perf_counter() + 60)
