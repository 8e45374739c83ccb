"""Opening a database leaves the embedding program's event loop running, and can be cancelled.

Another process holds the file's write lock (a real process in ``BEGIN IMMEDIATE``), or a
toolset's migration step runs long, while `agora.open_server` opens the file: the host's own
task keeps ticking meanwhile, and a cancellation of the open ends it with the file as it
was and nothing of it left open. Before, the open ran on the Trio thread: the host's tasks
froze for as long as the lock was held (up to SQLite's 30 s busy timeout) or the step ran,
and no cancel scope could end it.

The holder lets go of the lock when told or, so that a frozen loop cannot hang the test,
after `VALVE` seconds (the old code's open then succeeded late, and the tests failed).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import pytest
import trio

from agora.config import Config
from agora.server.embed import open_server
from agora.store.db import open_store
from agora.toolsets.base import Migration, Toolset
from pg_stall import stalling_relay

if TYPE_CHECKING:
    from pathlib import Path

#: The tests of a SQLite file (the last is PostgreSQL's).
SQLITE_ONLY = pytest.mark.sqlite_only("another process holds a SQLite file's write lock")


#: Ticks of the host's own task that must happen while the open waits.
TICKS = 20
#: Seconds after which the holder lets go of the lock untold (only a frozen loop gets there).
VALVE = 10
TIMEOUT = 20

_HOLDER = """
import select, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
told, _, _ = select.select([sys.stdin], [], [], float(sys.argv[2]))
conn.execute("ROLLBACK")
conn.close()
print("told" if told else "valve", flush=True)
"""


class Holder:
    """Another process that holds ``path``'s write lock until `release`."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, path: Path) -> Holder:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _HOLDER, str(path), str(VALVE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        said = b""
        with trio.fail_after(TIMEOUT):
            while not said.endswith(b"held\n"):
                chunk = await process.stdout.receive_some()
                assert chunk, "the holder ended before it held the lock"
                said += chunk
        return cls(process)

    async def release(self) -> str:
        """Let go of the lock; say whether the holder was ``"told"`` to or let go of it
        untold, at the ``"valve"`` (the host's tasks were frozen for that long)."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        with contextlib.suppress(trio.BrokenResourceError):  # gone at the valve
            await self.process.stdin.send_all(b"go\n")
        said = b""
        with trio.fail_after(TIMEOUT):
            while chunk := await self.process.stdout.receive_some():
                said += chunk
            assert await self.process.wait() == 0
        return said.decode().strip()


async def _ok(call):
    return {}


def _create_extra(db) -> None:
    db.execute("CREATE TABLE extra_t (x INTEGER)")


def _extra(*steps: Migration) -> Toolset:
    tool = {"name": "extra_t", "description": "", "inputSchema": {"type": "object"}}
    return Toolset(
        name="extra",
        contract=None,
        tools=[tool],
        handlers={"extra_t": _ok},
        migrations=list(steps) or [Migration("extra", 1, _create_extra)],
    )


async def _made(path: Path) -> None:
    """``path`` as an earlier start left it: migrated, without the extra toolset."""
    async with open_store(path, [Migration("items", 1, lambda db: None)]):
        pass


def _extra_state(path: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """The extra toolset's tables and schema rows in ``path``."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE 'extra%' ORDER BY name"
        ).fetchall()
        rows = conn.execute("SELECT * FROM agora_schema WHERE component = 'extra'").fetchall()
    return [t[0] for t in tables], rows


def _open_files(path: Path) -> list[str]:
    """This process's open descriptors on the database, its WAL, index or lock file."""
    names = {str(path) + suffix for suffix in ("", "-wal", "-shm", ".lock")}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
        if target in names:
            found.append(target)
    return found


async def _tick_until(done) -> int:
    ticks = 0
    while not done(ticks):
        await trio.sleep(0.001)
        ticks += 1
    return ticks


async def _tick_while_the_open_waits(path: Path) -> None:
    """Tick until the open has connected to ``path`` (a descriptor on it: its lock file is
    taken before), then `TICKS` more: the ticks the host gets while the open waits."""
    database = str(path)
    await _tick_until(lambda _: database in _open_files(path))
    await _tick_until(lambda ticks: ticks >= TICKS)


@SQLITE_ONLY
async def test_the_host_keeps_running_while_the_open_waits_for_another_process_s_lock(tmp_path):
    path = tmp_path / "agora.db"
    await _made(path)
    holder = await Holder.start(path)
    released: list[str] = []

    async def host_task() -> None:
        await _tick_while_the_open_waits(path)
        released.append(await holder.release())

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host_task)
            async with open_server(
                Config(port=0, db=str(path)), toolsets=[_extra()], listen=False
            ) as server:
                assert server.runtime.store.versions["extra"] == 1
    assert released == ["told"]  # by the host's task, which ticked while the open waited


@SQLITE_ONLY
async def test_cancelling_an_open_that_waits_for_the_lock_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "agora.db"
    await _made(path)
    before = _extra_state(path)
    holder = await Holder.start(path)
    entered = False
    try:
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                scope = trio.CancelScope()

                async def host_task() -> None:
                    await _tick_while_the_open_waits(path)
                    scope.cancel()  # the host gives up on the open (a timeout, say)

                nursery.start_soon(host_task)
                with scope:
                    async with open_server(
                        Config(port=0, db=str(path)), toolsets=[_extra()], listen=False
                    ):
                        entered = True
        assert scope.cancelled_caught
        assert not entered
        assert _open_files(path) == []  # the open's thread closed its connection
    finally:
        assert await holder.release() == "told"
    assert _extra_state(path) == before == ([], [])  # nothing was migrated
    async with open_server(Config(port=0, db=str(path)), toolsets=[_extra()], listen=False):
        pass  # the file's lock was let go of; the next start migrates it
    assert _extra_state(path) == (["extra_t"], [("extra", 1)])


@SQLITE_ONLY
async def test_the_host_keeps_running_while_a_migration_step_runs(tmp_path):
    path = tmp_path / "agora.db"
    may_end = threading.Event()

    def long_step(db) -> None:
        _create_extra(db)
        if not may_end.wait(VALVE):  # the host's task sets it, if it runs
            raise RuntimeError("the host's task did not run while the step did")

    async def host_task() -> None:
        await _tick_until(lambda ticks: ticks >= TICKS)
        may_end.set()

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host_task)
            async with open_store(path, [Migration("extra", 1, long_step)]) as store:
                assert store.versions == {"extra": 1}


@SQLITE_ONLY
async def test_cancelling_an_open_mid_step_rolls_the_step_back(tmp_path):
    path = tmp_path / "agora.db"
    await _made(path)
    started = threading.Event()

    def endless_step(db) -> None:
        _create_extra(db)
        started.set()
        db.execute(  # millions of rows: seconds, unless the cancellation stops it
            "INSERT INTO extra_t WITH RECURSIVE c(x) AS"
            " (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000000) SELECT x FROM c"
        )

    entered = False
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def host_task() -> None:
                await _tick_until(lambda _: started.is_set())
                scope.cancel()

            nursery.start_soon(host_task)
            with scope:
                async with open_store(path, [Migration("extra", 1, endless_step)]):
                    entered = True
    assert scope.cancelled_caught
    assert not entered
    assert _open_files(path) == []
    assert _extra_state(path) == ([], [])  # the step was rolled back


async def test_cancelling_an_open_that_waits_for_another_node_s_migration_lock(pg_url):
    """PostgreSQL: the open waits, in a thread, for the advisory lock another node holds
    while it migrates; a cancellation ends the wait (the server cancels the statement)
    before that node lets go, and the open migrated nothing."""
    psycopg = pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")
    items = Migration("items", 1, sql={"postgresql": ["CREATE TABLE items (id BIGINT)"]})
    with psycopg.connect(pg_url, autocommit=True) as node:
        schema = node.execute("SELECT current_schema()").fetchone()[0]
        node.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"agora:{schema}:migrate",))
        waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ended: list[bool] = []
        released: list[bool] = []  # whether the open had ended when the node let go
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                scope = trio.CancelScope()

                async def host_task() -> None:
                    await _tick_until(lambda _: node.execute(waiting).fetchone()[0] == 1)
                    scope.cancel()
                    with trio.move_on_after(VALVE):  # only the old code waits here
                        await _tick_until(lambda _: bool(ended))
                    released.append(bool(ended))
                    node.execute("SELECT pg_advisory_unlock_all()")

                nursery.start_soon(host_task)
                with scope:
                    try:
                        async with open_store(pg_url, [items]):
                            pytest.fail("opened while another node held the lock")
                    finally:
                        ended.append(True)
        assert scope.cancelled_caught
        assert released == [True]
        assert node.execute(waiting).fetchone()[0] == 0  # the open's wait is gone
        assert node.execute("SELECT to_regclass('items')").fetchone()[0] is None


async def test_cancelling_an_open_while_its_writer_connects_ends_the_wait(pg_url):
    """PostgreSQL: the server takes the writer's connection and never answers (a stalled
    server): the open waits in a thread for psycopg's connect, bounded only by its 10 s
    ``connect_timeout``; a cancellation ends the wait at once (the thread is left to time
    out, and closes what it made if it ever connects)."""
    pytest.importorskip("psycopg", reason="needs: psycopg (pip install '.[pg]')")
    items = Migration("items", 1, sql={"postgresql": ["CREATE TABLE items (id BIGINT)"]})
    with stalling_relay(pg_url) as relay:
        relay.hold_after(1)  # the migration's connection passes; the writer's is held
        with trio.fail_after(TIMEOUT):
            async with trio.open_nursery() as nursery:
                scope = trio.CancelScope()

                async def host_task() -> None:
                    await _tick_until(lambda _: bool(relay.held))
                    scope.cancel()

                nursery.start_soon(host_task)
                with scope:
                    async with open_store(relay.url, [items]):
                        pytest.fail("opened through a server that never answered")
        # Cancelled, not the connect's timeout 10 s later (a StoreError: "cannot open").
        assert scope.cancelled_caught
