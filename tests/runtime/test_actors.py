"""Actors on demand: one actor per key under races, commands in order, idle eviction, respawn.

Time-dependent tests run on Trio's autojump clock over the inline store, so eviction times
are asserted exactly; every indefinite wait sits inside `trio.fail_after`.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from _counter import IDLE, Add, Get, When, log, stored

from agora.runtime.actor import MAX_GROUP
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime

#: How late past the idle period an eviction may come (the reaper's pass interval).
SLACK = 1 / 8


def watch_evictions(runtime, monkeypatch) -> list[tuple[str, float]]:
    """Record (key, time) each time an actor leaves the registry."""
    seen: list[tuple[str, float]] = []
    forget = runtime.registry.forget

    def spy(actor):
        before = len(runtime.registry)
        forget(actor)
        if len(runtime.registry) < before:  # the reaper and the actor's exit both call it
            seen.append((actor.key, trio.current_time()))

    monkeypatch.setattr(runtime.registry, "forget", spy)
    return seen


async def test_an_actor_is_spawned_on_first_use_and_loaded_once(runtime, kind):
    assert len(runtime.registry) == 0
    assert await runtime.call(kind, "a", Add(2)) == 2
    assert len(runtime.registry) == 1
    assert runtime.registry.spawned == 1
    assert await runtime.call(kind, "a", Get()) == 2
    assert kind.loads == ["a"]
    assert await runtime.read(lambda conn: stored(conn, "a")) == 2


async def test_the_entity_reads_time_from_the_runtime_clock(store, nursery, kind, autojump_clock):
    wall = FakeWall()
    runtime = Runtime(store, nursery, clock=Clock(wall))
    start = trio.current_time()
    first = await runtime.call(kind, "a", When())
    await trio.sleep(5)
    wall.advance(60)
    second = await runtime.call(kind, "a", When())
    assert (first.mono, second.mono) == (start, start + 5)
    assert second.wall == wall.current
    assert (second.wall - first.wall).total_seconds() == 60


async def test_many_callers_on_one_key_meet_one_actor_and_are_served_in_order(runtime, kind):
    tasks, each = 50, 10
    replies: dict[int, list[int]] = {t: [] for t in range(tasks)}

    async def caller(t: int) -> None:
        for i in range(each):
            replies[t].append(await runtime.call(kind, "k", Add(1, f"{t}:{i}")))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for t in range(tasks):
                nursery.start_soon(caller, t)
    total = tasks * each
    assert runtime.registry.spawned == 1
    assert kind.loads == ["k"]
    assert sorted(v for r in replies.values() for v in r) == list(range(1, total + 1))
    entries = await runtime.read(lambda conn: log(conn, "k"))
    assert [(seq, value) for seq, _, value in entries] == [(n, n) for n in range(1, total + 1)]
    tag_of = {value: tag for _, tag, value in entries}
    for t, values in replies.items():
        # Each caller's commands were committed in the order it sent them, and the reply
        # it got is the value its own command committed.
        assert values == sorted(values)
        assert [tag_of[v] for v in values] == [f"{t}:{i}" for i in range(each)]
    assert await runtime.call(kind, "k", Get()) == total


async def test_each_key_gets_its_own_actor(runtime, kind):
    keys = [f"k{i}" for i in range(20)]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for key in keys:
                for _ in range(5):
                    nursery.start_soon(runtime.call, kind, key, Add(1))
    assert runtime.registry.spawned == 20
    assert len(runtime.registry) == 20
    assert sorted(kind.loads) == sorted(keys)
    for key in keys:
        assert await runtime.call(kind, key, Get()) == 5


async def test_an_idle_actor_is_evicted_after_idle_seconds(
    runtime, kind, autojump_clock, monkeypatch
):
    evicted = watch_evictions(runtime, monkeypatch)
    start = trio.current_time()
    await runtime.call(kind, "a", Add(1))
    await trio.sleep(IDLE - 0.5)
    assert len(runtime.registry) == 1
    assert evicted == []
    await trio.sleep(0.5 + IDLE * SLACK)
    [(key, at)] = evicted
    assert key == "a"
    assert start + IDLE <= at <= start + IDLE * (1 + SLACK)
    assert len(runtime.registry) == 0


async def test_every_command_restarts_the_idle_timer(runtime, kind, autojump_clock, monkeypatch):
    evicted = watch_evictions(runtime, monkeypatch)
    start = trio.current_time()
    for _ in range(3):
        await runtime.call(kind, "a", Add(1))
        await trio.sleep(IDLE - 1)
    assert evicted == []
    await trio.sleep(1 + IDLE * SLACK)
    [(_, at)] = evicted
    last = start + 2 * (IDLE - 1)
    assert last + IDLE <= at <= last + IDLE * (1 + SLACK)


async def test_a_command_after_eviction_respawns_and_reloads_from_the_store(
    runtime, kind, autojump_clock
):
    await runtime.call(kind, "a", Add(5))
    await trio.sleep(IDLE + 1)
    assert len(runtime.registry) == 0
    assert await runtime.call(kind, "a", Get()) == 5
    assert await runtime.call(kind, "a", Add(1)) == 6
    assert runtime.registry.spawned == 2
    assert kind.loads == ["a", "a"]
    entries = await runtime.read(lambda conn: log(conn, "a"))
    assert [(seq, value) for seq, _, value in entries] == [(1, 5), (2, 6)]


async def test_no_eviction_while_a_waiter_is_parked(runtime, kind, autojump_clock, monkeypatch):
    evicted = watch_evictions(runtime, monkeypatch)
    start = trio.current_time()
    replies: list[tuple[int, float]] = []

    async def waiter() -> None:
        reply = await runtime.poll(kind, "a", Get(), ready=lambda v: v > 0, timeout=100)
        replies.append((reply, trio.current_time()))

    with trio.fail_after(200):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.sleep(3 * IDLE + 1)
            assert evicted == []
            assert runtime.registry.get(kind, "a").waiters == 1
    assert replies == [(0, start + 100)]
    assert evicted == []
    await trio.sleep(IDLE)
    [(key, at)] = evicted
    assert key == "a"
    assert start + 100 < at <= start + 100 + IDLE
    assert runtime.registry.spawned == 1


async def test_a_call_arriving_as_the_actor_evicts_is_answered(runtime, kind, autojump_clock):
    # The call lands on the very tick the idle timer fires. Which of the two runs first
    # varies (Trio randomises), so try many times: neither order may lose the command.
    for n in range(1, 21):
        with trio.fail_after(IDLE * 2):
            assert await runtime.call(kind, "a", Add(1)) == n
        await trio.sleep(IDLE)
    assert await runtime.call(kind, "a", Get()) == 20


async def test_a_full_mailbox_makes_callers_wait_their_turn(store, nursery, kind, monkeypatch):
    runtime = Runtime(store, nursery, mailbox=2)
    gate = trio.Event()
    write = store.write

    async def slow_write(writes, *rest):
        await gate.wait()
        await write(writes, *rest)

    monkeypatch.setattr(store, "write", slow_write)
    results: list[int] = []

    async def caller(i: int) -> None:
        results.append(await runtime.call(kind, "k", Add(1, str(i))))

    callers_count = MAX_GROUP + 10
    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            for i in range(callers_count):
                callers.start_soon(caller, i)
            await trio.testing.wait_all_tasks_blocked()
            actor = runtime.registry.get(kind, "k")
            stats = actor.send.statistics()
            assert stats.current_buffer_used == 2  # the bound holds
            # The actor holds at most one group (its write is held); the rest wait to send.
            assert stats.tasks_waiting_send >= callers_count - 2 - MAX_GROUP
            assert actor.handled == 0
            gate.set()
    assert sorted(results) == list(range(1, callers_count + 1))
    assert runtime.registry.spawned == 1
    assert await runtime.read(lambda conn: stored(conn, "k")) == callers_count


@pytest.mark.parametrize("mailbox", [pytest.param(0, id="rendezvous"), pytest.param(1, id="one")])
async def test_tiny_mailboxes_still_serve_everyone(store, nursery, kind, mailbox):
    runtime = Runtime(store, nursery, mailbox=mailbox)
    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            for _ in range(30):
                callers.start_soon(runtime.call, kind, "k", Add(1))
    assert await runtime.call(kind, "k", Get()) == 30
