"""Two runtimes on one SQLite file opened shared: the version guard and the polled change feed.

Each runtime has its own store (writer thread, readers, watch connection) and its own actors,
as two agora processes would; they share only the file. (Real processes: test_processes.py.)
Real clock (the stores use threads), every wait inside `trio.fail_after`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio

sys.path.insert(0, str(Path(__file__).parents[1] / "runtime"))

from _counter import (
    MIGRATIONS,
    Add,
    Counter,
    CounterKind,
    DrawnKind,
    Get,
    Publish,
    SeenKind,
    log,
    stored,
)
from _two_runtimes import Listener, one_runner_that_moves

from agora.runtime.clock import Clock
from agora.runtime.registry import Runtime
from agora.store.db import open_store
from agora.store.neutral import Busy, Conflict

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.sqlite_only("a SQLite file shared by two processes")

WAIT = 20


@asynccontextmanager
async def node(path: Path) -> AsyncIterator[Runtime]:
    async with open_store(path, MIGRATIONS, shared=True) as store, trio.open_nursery() as nursery:
        rt = Runtime(store, nursery, clock=Clock(), idle_seconds=60)
        try:
            yield rt
        finally:
            rt.begin_shutdown()
            nursery.cancel_scope.cancel()


async def wait_following(rt: Runtime) -> None:
    """Until ``rt``'s change feed runs (its state, polled: no event exposes it)."""
    assert rt.follower is not None
    while rt.follower.connections == 0:  # noqa: ASYNC110
        await trio.sleep(0.005)


async def wait_parked(rt: Runtime, key: str) -> None:
    """Until a long-poll is parked on ``rt``'s counter ``key``."""
    while not (actor := rt.registry.named("counter", key)) or not actor.waiters:  # noqa: ASYNC110
        await trio.sleep(0.005)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agora.db"


async def test_no_update_is_lost_when_two_processes_drive_one_key(db):
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            acked: list[int] = []

            async def drive(rt: Runtime, tag: str) -> None:
                for _ in range(40):
                    with contextlib.suppress(Busy):  # retryable, and nothing was changed
                        acked.append(await rt.call(kind, "k", Add(1, tag)))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(drive, a, "a")
                nursery.start_soon(drive, b, "b")
            n = len(acked)
            assert sorted(acked) == list(range(1, n + 1))  # every reply a distinct value
            assert n >= 40
            assert await a.read(lambda c: stored(c, "k")) == n
            rows = await b.read(lambda c: log(c, "k"))
            assert [value for _, _, value in rows] == list(range(1, n + 1))
            assert await a.call(kind, "k", Get()) == n
            assert await b.call(kind, "k", Get()) == n
            # Both sides wrote, so at least one of them must have been overtaken and rerun.
            assert a.store.counters()["conflicts"] + b.store.counters()["conflicts"] >= 1


async def test_three_processes_writing_one_key_at_once_all_succeed(db):
    """As on PostgreSQL (tests/runtime/test_guarded.py): contention on one entity is settled
    by the reruns' random pauses and time budget, not answered Busy after three reruns."""
    kind = CounterKind()
    with trio.fail_after(WAIT * 3):
        async with node(db) as a, node(db) as b, node(db) as c:
            acked: list[int] = []

            async def drive(rt: Runtime, tag: str) -> None:
                for _ in range(20):
                    acked.append(await rt.call(kind, "hot", Add(1, tag)))  # noqa: PERF401 - never Busy

            async with trio.open_nursery() as nursery:
                for rt, tag in ((a, "a"), (b, "b"), (c, "c")):
                    for _ in range(3):
                        nursery.start_soon(drive, rt, tag)
            assert sorted(acked) == list(range(1, 181))
            assert await c.read(lambda conn: stored(conn, "hot")) == 180
            assert a.guard.busy + b.guard.busy + c.guard.busy == 0


async def test_a_cached_read_sees_a_write_acknowledged_by_the_other_process(db, monkeypatch):
    from agora.store import sqlite_shared

    monkeypatch.setattr(sqlite_shared, "POLL_SECONDS", 3600.0)  # no change feed: the probe
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            assert await a.call(kind, "k", Get()) == 0  # a caches the entity at version 0
            loads = len(kind.loads)
            assert await b.call(kind, "k", Add(5)) == 5
            assert await a.call(kind, "k", Get()) == 5
            assert len(kind.loads) == loads + 2  # b loaded once, a reloaded once


async def test_a_stale_write_is_rejected_reloaded_and_rerun(db, monkeypatch):
    from agora.store import sqlite_shared

    monkeypatch.setattr(sqlite_shared, "POLL_SECONDS", 3600.0)  # a keeps its stale copy
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            assert await a.call(kind, "k", Add(1)) == 1
            assert await b.call(kind, "k", Add(1)) == 2
            assert await a.call(kind, "k", Add(1)) == 3  # a's copy said 1: rejected, rerun
            assert a.store.counters()["conflicts"] == 1
            assert a.guard.retried == 1
            assert await b.read(lambda c: stored(c, "k")) == 3


async def test_a_waiter_in_one_process_wakes_when_the_other_commits(db, monkeypatch):
    from agora.runtime import follow

    monkeypatch.setattr(follow, "SWEEP_SECONDS", 3600.0)  # only the change feed may wake it
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            await wait_following(a)
            got: list[Any] = []

            async def wait() -> None:
                got.append(await a.poll(kind, "k", Get(), ready=lambda v: v >= 1, timeout=60))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait)
                await wait_parked(a, "k")
                await b.call(kind, "k", Add(1))
            assert got == [1]
            assert a.follower is not None
            assert a.follower.dropped >= 1


async def test_atomic_operations_through_two_processes_lose_nothing(db):
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            acked: list[list[Any]] = []

            async def drive(rt: Runtime) -> None:
                for _ in range(15):
                    with contextlib.suppress(Busy):  # retryable: nothing was changed
                        acked.append(
                            await rt.call_atomic([(kind, "x", Add(1)), (kind, "y", Add(2))])
                        )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(drive, a)
                nursery.start_soon(drive, b)
            n = len(acked)
            assert n >= 15
            assert sorted(acked) == [[i, 2 * i] for i in range(1, n + 1)]
            assert await a.read(lambda c: (stored(c, "x"), stored(c, "y"))) == (n, 2 * n)


async def test_a_background_task_runs_in_one_process_and_moves_when_it_stops(db, monkeypatch):
    await one_runner_that_moves(node, db, 0.02, monkeypatch, WAIT)


async def test_a_background_tasks_lock_file_and_log_line_name_it_as_the_operator_does(db, caplog):
    """An operator's finding: the lock file was named from the task's Python qualname
    (``agora.db.lock.periodic_build_toolset._locals_.purge_.task``) and the log said "for
    the cluster" on a SQLite file."""
    import logging

    from agora.runtime import background

    def build() -> background.BackgroundTask:
        async def purge(runtime: Runtime) -> None:
            ran.set()

        return background.periodic(3600, purge)

    ran = trio.Event()
    caplog.set_level(logging.INFO, logger="agora.runtime.background")
    with trio.fail_after(WAIT):
        async with node(db) as a, trio.open_nursery() as tasks:
            tasks.start_soon(background.supervise, build(), a, "chamber: purge")
            await ran.wait()
            locks = sorted(p.name for p in db.parent.iterdir() if p.name.endswith(".task"))
            assert locks == ["agora.db.lock.chamber-purge.task"]
            tasks.cancel_scope.cancel()
    said = [r.getMessage() for r in caplog.records if "runs background task" in r.getMessage()]
    assert said == [
        f"this process runs background task chamber: purge for the processes sharing {db}"
        f" ({background.node_name()})"
    ]


async def test_a_subscriber_in_one_process_hears_of_a_resource_changed_in_the_other(db):
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            await wait_following(a)
            await wait_following(b)
            here, there = Listener(), Listener()
            a.resources.watch(there, ["counter://k"])
            b.resources.watch(here, ["counter://k"])
            await b.call(kind, "k", Add(1))  # no URI named: nobody is told
            await b.call(kind, "k", Publish("counter://k"))
            await there.told.wait()
            await b.call(kind, "k", Add(1))
            await a.call(kind, "k", Add(1))  # let b's feed run past its own stamps
            for _ in range(10):
                await trio.sleep(0.01)
            assert there.heard == ["counter://k"]
            assert here.heard == ["counter://k"]  # the committing process tells its own, once


def test_a_step_another_process_applied_meanwhile_is_not_applied_twice(db, monkeypatch):
    # Two processes opening a fresh file shared both plan the same steps; the second to take
    # the write lock must find the step done, not run its CREATE TABLE again.
    from agora.store import migrations
    from agora.store.sqlite_connect import connect

    real_plan = migrations.plan
    raced: list[dict[str, int]] = []

    def plan_then_race(current: Any, steps: Any, dialect: str) -> Any:
        planned = real_plan(current, steps, dialect)
        if not raced:
            raced.append({})
            other = connect(str(db), synchronous="FULL")
            raced[0] = migrations.apply_migrations(other, MIGRATIONS)  # the other process
            other.close()
        return planned

    monkeypatch.setattr(migrations, "plan", plan_then_race)
    conn = connect(str(db), synchronous="FULL")
    try:
        assert migrations.apply_migrations(conn, MIGRATIONS) == {"counter": 1}
        assert raced == [{"counter": 1}]
        rows = conn.execute("SELECT component, version FROM agora_schema").fetchall()
        assert [tuple(r) for r in rows] == [("counter", 1)]
    finally:
        conn.close()


async def test_a_key_drawn_here_is_created_without_a_read_and_its_first_command_runs_inline(
    db, monkeypatch
):
    # On a shared file every load is a versioned read in a worker thread: an entry burst's
    # fresh attempts each paid one (and ran in the actor's task, not the caller's).
    kind = DrawnKind(drawn={"new"})
    ran_in: list[trio.lowlevel.Task] = []
    handle = Counter.handle

    def spy(self: Counter, command: Any, now: Any) -> Any:
        ran_in.append(trio.lowlevel.current_task())
        return handle(self, command, now)

    monkeypatch.setattr(Counter, "handle", spy)
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            assert await a.call(kind, "new", Add(2)) == 2
            assert kind.loads == []
            assert ran_in == [trio.lowlevel.current_task()]
            # Written at version 1 like any first write: the other process follows it.
            assert await b.call(kind, "new", Add(3)) == 5
            assert await a.call(kind, "new", Add(1)) == 6  # a's copy was stale: rerun
            assert await b.read(lambda c: log(c, "new")) == [(1, "", 2), (2, "", 5), (3, "", 6)]


async def test_a_key_new_only_to_this_process_is_read_on_a_shared_file(db):
    kind = SeenKind(drawn={"k"})
    with trio.fail_after(WAIT):
        async with node(db) as a, node(db) as b:
            assert await b.call(kind, "k", Add(4)) == 4  # b read it (it asks no create)
            assert kind.loads == ["k"]
            # a's "new" would have been a fresh counter at 0: it reads the stored one.
            assert await a.call(kind, "k", Add(1)) == 5
            assert kind.loads == ["k", "k"]


async def test_commands_answered_busy_are_logged_once_a_minute_per_entity(db, monkeypatch, caplog):
    # An operator saw one WARNING per refused call while nodes contended for one topic.
    from agora.runtime import guarding
    from agora.store import sqlite_shared

    monkeypatch.setattr(guarding, "RERUN_BUDGET", 0.0)  # the reruns always made, no more
    monkeypatch.setattr(sqlite_shared, "POLL_SECONDS", 3600.0)
    kind = CounterKind()
    with trio.fail_after(WAIT):
        async with node(db) as a:
            assert await a.call(kind, "k", Add(1)) == 1

            async def always_conflict(writes: Any, guards: Any = (), updated: Any = ()) -> None:
                raise Conflict([("counter", "k")])

            monkeypatch.setattr(a.store, "write", always_conflict)
            caplog.set_level(logging.DEBUG)
            for _ in range(3):
                with pytest.raises(Busy) as refused:
                    await a.call(kind, "k", Add(1))
                assert refused.value.told  # the call's own failure line goes to DEBUG
            assert a.guard.busy == 3
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [
        "counter k kept changing on other nodes: commands on it ran out of reruns and were"
        " answered Busy (said once a minute per entity; /healthz's guard busy counts every one)"
    ]
