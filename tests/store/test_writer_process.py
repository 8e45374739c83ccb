"""The writer's child process (`agora.store.writer_process`): real processes, a real file.

A file store runs its writes in a child process by default. These tests kill it, stop it and
feed it what it cannot take, and check what the writes' callers learn and what is saved.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import trio
from _items import ITEMS, ids, insert
from _wal_lock import dms_holder

from agora.errors import StoreError
from agora.store import diskfault, writer_process
from agora.store.db import open_store
from agora.store.writer_process import ProcessWriter
from disks import fill

pytestmark = pytest.mark.sqlite_only("the SQLite writer's child process")

#: A write that keeps the child busy for many seconds before it inserts item 99.
SLOW = (
    "INSERT INTO items (id, name) SELECT 99, 'slow' FROM (WITH RECURSIVE c(x) AS "
    "(SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT max(x) FROM c)",
    (),
)


def _child(store) -> int:
    writer = store._writer
    assert isinstance(writer, ProcessWriter)
    return writer.conn.pid


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie not yet reaped has).

    A process reaped between opening its ``stat`` and reading it makes the read fail
    with ``ESRCH`` (``ProcessLookupError``) rather than the open with ``ENOENT``.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def _until_gone(pid: int) -> None:
    """Until process ``pid`` has ended."""
    with trio.fail_after(10):
        while not _gone(pid):  # noqa: ASYNC110 - another process's end, polled
            await trio.sleep(0.01)


async def test_writes_are_committed_by_a_child_process_in_its_own_session(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        await store.write([insert(1)])
        child = _child(store)
        assert child != os.getpid()
        # Its own session: a Ctrl-C at the server's terminal does not reach it.
        assert os.getsid(child) != os.getsid(0)
        assert await store.read(ids) == [1]
        counters = store.counters()
        assert counters["commands"] == 1
        assert counters["statements_cpu_ms"] > 0  # the child's, reported back
    await _until_gone(child)  # closing the store ends it


async def test_opening_keeps_the_wal_and_index_the_migrations_made(tmp_path: Path):
    # Had the migrations' connection closed before the child opened the file, it would have
    # been the last one: the WAL checkpointed and deleted with its index, both made anew by
    # the child (new files, which a disk failing soon after may never have written out).
    db = tmp_path / "a.db"
    async with open_store(db, [ITEMS]) as store:
        wal = await trio.Path(f"{db}-wal").stat()
        assert wal.st_size > 0  # the migrations' frames are still there
        assert store.counters()["commits"] == 0


async def test_the_child_outlives_a_sigterm_sent_to_every_process_of_the_server(tmp_path: Path):
    # systemd's stop signals every process of the service: the server's shutdown still needs
    # its writer for the writes in flight.
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        child = _child(store)
        for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            os.kill(child, stop)
        await trio.sleep(0.2)
        await store.write([insert(1)])
        assert _child(store) == child
        assert store.counters()["writer_restarts"] == 0
        assert await store.read(ids) == [1]


async def test_writer_process_off_keeps_the_writes_in_the_thread(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS], writer_process=False) as store:
        await store.write([insert(1)])
        assert type(store._writer.conn) is sqlite3.Connection
        assert store.counters()["writer_pid"] is None
        assert await store.read(ids) == [1]


async def test_a_child_killed_between_batches_is_replaced_before_the_next_write(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        await store.write([insert(1)])
        first = _child(store)
        os.kill(first, signal.SIGKILL)
        await _until_gone(first)
        assert store.counters()["writer_pid"] is None  # no child runs until the next write
        await store.write([insert(2)])  # not refused: a new child took it
        assert _child(store) != first
        counters = store.counters()
        assert counters["writer_pid"] == _child(store)
        assert counters["writer_restarts"] == 1
        assert await store.read(ids) == [1, 2]


async def _killed_inside_a_batch(store) -> StoreError:
    """What a slow write learns when its child is killed while it runs the batch."""
    began = store._writer.begin_s
    refused: list[StoreError] = []

    async def slow_write() -> None:
        with pytest.raises(StoreError) as caught:
            await store.write([SLOW])
        refused.append(caught.value)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(slow_write)
        with trio.fail_after(10):
            while store._writer.begin_s == began:  # noqa: ASYNC110 - until BEGIN is done
                await trio.sleep(0.01)
        await trio.sleep(0.3)  # the writes are in the pipe, and the child at work
        os.kill(_child(store), signal.SIGKILL)
    return refused[0]


async def test_a_child_killed_inside_a_batch_fails_it_as_maybe_saved(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        await store.write([insert(1)])
        error = await _killed_inside_a_batch(store)
        assert error.outcome_unknown  # it was sent: the COMMIT may have been done
        assert "may or may not have been saved" in str(error)
        assert "killed by signal 9" in str(error)
        await store.write([insert(2)])
        assert await store.read(ids) == [1, 2]  # killed before its COMMIT: nothing of it


async def test_a_child_that_dies_again_before_any_commit_is_replaced_at_once(
    tmp_path: Path, monkeypatch, caplog
):
    # The pacing of reopens after disk errors (a reopen with no commit since is not retried
    # for REOPEN_SECONDS) must not keep a dead child in place: every write would fail.
    monkeypatch.setattr(diskfault, "REOPEN_SECONDS", 3600.0)
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        await store.write([insert(1)])
        first = _child(store)
        os.kill(first, signal.SIGKILL)
        await _until_gone(first)
        assert (await _killed_inside_a_batch(store)).outcome_unknown  # the second child
        await store.write([insert(2)])  # a third child takes it at once
        assert store.counters()["writer_restarts"] == 2
        assert await store.read(ids) == [1, 2]
    started = [r for r in caplog.records if "in a new writer process" in r.getMessage()]
    assert [r.levelname for r in started] == ["WARNING", "WARNING"]
    assert f"(the last one, pid {first}, killed by signal 9)" in started[0].getMessage()
    assert "disk error" not in caplog.text  # a dead child is not a disk error


async def test_a_stopped_child_fails_writes_in_time_and_saves_nothing(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS], commit_timeout=1.0) as store:
        await store.write([insert(1)])
        child = _child(store)
        os.kill(child, signal.SIGSTOP)
        try:
            with trio.fail_after(10), pytest.raises(StoreError) as refused:
                await store.write([insert(2)])  # its BEGIN is not answered
            assert "nothing was saved" in str(refused.value)
            assert not refused.value.outcome_unknown
        finally:
            os.kill(child, signal.SIGCONT)
        with trio.fail_after(10):
            await store.write([insert(3)])  # behind the dropped one, which never runs
        assert await store.read(ids) == [1, 3]
        assert _child(store) == child  # the same child, only late


async def test_a_write_whose_parameters_cannot_be_pickled_fails_alone(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        outcomes: dict[int, str] = {}

        async def write(item: int, name: object) -> None:
            try:
                await store.write([("INSERT INTO items (id, name) VALUES (?, ?)", (item, name))])
            except StoreError as exc:
                outcomes[item] = str(exc)
            else:
                outcomes[item] = "ok"

        async with trio.open_nursery() as nursery:  # queued together: one batch, or a few
            for item in range(1, 21):
                nursery.start_soon(write, item, (lambda: 1) if item == 7 else f"item-{item}")
        assert "pickle" in outcomes.pop(7)
        assert set(outcomes.values()) == {"ok"}
        assert await store.read(ids) == [i for i in range(1, 21) if i != 7]


async def test_sqlite_error_codes_cross_the_pipe(tmp_path: Path):
    async with open_store(tmp_path / "a.db", [ITEMS]) as store:
        await store.write([insert(1)])
        with pytest.raises(StoreError) as refused:
            await store.write([insert(1, "again")])
        cause = refused.value.__cause__
        assert type(cause) is sqlite3.IntegrityError
        assert cause.sqlite_errorcode == 1555  # SQLITE_CONSTRAINT_PRIMARYKEY
        assert cause.sqlite_errorname == "SQLITE_CONSTRAINT_PRIMARYKEY"


async def test_a_child_that_cannot_start_fails_the_open(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(writer_process, "CHILD", tmp_path / "missing.py")
    with pytest.raises(StoreError, match=r"its writer process.*exit status"):
        async with open_store(tmp_path / "a.db", [ITEMS]):
            pass


async def test_cancelling_an_open_while_its_child_starts_kills_the_child(
    tmp_path: Path, monkeypatch
):
    # A child that never answers its "open" (a stuck disk, say): the open waits for it in a
    # thread, and a cancellation of the open must end that wait.
    started = tmp_path / "started"
    mute = tmp_path / "mute_child.py"
    mute.write_text(
        f"import os, time\nopen({str(started)!r}, 'w').write(str(os.getpid()))\ntime.sleep(30)\n"
    )
    monkeypatch.setattr(writer_process, "CHILD", mute)
    entered = False
    with trio.fail_after(20):  # the old code waited out the child's 30 s
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def cancel_once_started() -> None:
                    while not started.exists() or not started.read_text():  # noqa: ASYNC110
                        await trio.sleep(0.01)
                    scope.cancel()

                nursery.start_soon(cancel_once_started)
                async with open_store(tmp_path / "a.db", [ITEMS]):
                    entered = True
    assert scope.cancelled_caught
    assert not entered
    await _until_gone(int(started.read_text()))  # killed, not left to sleep


async def test_the_server_keeps_the_wal_index_locked_after_its_child_died(tmp_path: Path):
    db = tmp_path / "a.db"
    async with open_store(db, [ITEMS]) as store:
        await store.write([insert(1)])
        assert await store.read(ids) == [1]  # a read connection of this process is open
        child = _child(store)
        os.kill(child, signal.SIGKILL)
        await _until_gone(child)
        # Another process opening the file now must not truncate the index under us.
        assert await trio.to_thread.run_sync(dms_holder, db) == os.getpid()
        await store.write([insert(2)])
        assert await store.read(ids) == [1, 2]


_SERVER = textwrap.dedent(
    """
    import sys, trio
    sys.path.insert(0, sys.argv[2])
    from _items import ITEMS, insert
    from agora.store.db import open_store

    async def main():
        async with open_store(sys.argv[1], [ITEMS]) as store:
            await store.write([insert(1)])
            print(store._writer.conn.pid, flush=True)
            await trio.sleep_forever()

    trio.run(main)
    """
)


def test_the_child_ends_when_its_server_is_killed(tmp_path: Path):
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(tmp_path / "a.db"), os.path.dirname(__file__)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        child = int(server.stdout.readline())
    finally:
        server.kill()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)
    conn = sqlite3.connect(tmp_path / "a.db")
    try:
        assert conn.execute("SELECT id FROM items").fetchall() == [(1,)]
    finally:
        conn.close()


async def test_a_final_checkpoint_a_full_disk_refuses_is_logged_and_nothing_is_lost(
    small_disk: Path, caplog
):
    db = small_disk / "a.db"
    async with open_store(db, [ITEMS]) as store:
        for i in range(100):  # 300 KB in the WAL: the checkpoint must grow the file
            await store.write([insert(i, f"{i:04d}" + "x" * 3000)])
        fill(small_disk)
    assert "final checkpoint" in caplog.text
    assert "database or disk is full" in caplog.text
    (small_disk / "filler").unlink()
    with contextlib.closing(sqlite3.connect(db)) as conn:  # replays the WAL
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 100
