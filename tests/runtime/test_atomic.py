"""Atomic changes across entities (`Runtime.call_atomic`): all or nothing, in a fixed order.

Over the inline store on the autojump clock, with the store's `write` slowed down where a
test needs operations to overlap while they hold their turns.
"""

from __future__ import annotations

import random

import pytest
import trio
from _counter import Add, Explode, Garble, Get, Refuse, log, stored

from agora.errors import ToolError
from agora.runtime.actor import InternalError


def slow_writes(store, monkeypatch, seconds: float = 1.0) -> None:
    """Every commit first waits ``seconds`` (Trio clock), so turns stay held meanwhile."""
    write = store.write

    async def slow(batch, *rest):
        await trio.sleep(seconds)
        await write(batch, *rest)

    monkeypatch.setattr(store, "write", slow)


async def test_one_transaction_commits_every_entity_and_replies_in_the_given_order(
    runtime, kind, store
):
    with trio.fail_after(10):
        replies = await runtime.call_atomic([(kind, "b", Add(2, "x")), (kind, "a", Add(1, "x"))])
    assert replies == [2, 1]
    assert await runtime.read(lambda c: (stored(c, "a"), stored(c, "b"))) == (1, 2)
    assert await runtime.call(kind, "a", Get()) == 1
    assert runtime.registry.get(kind, "a").handled == 2


async def test_an_atomic_change_wakes_the_polls_of_the_entities_it_changed(
    runtime, kind, autojump_clock
):
    results: list = []

    async def poll(key: str) -> None:
        reply = await runtime.poll(kind, key, Get(), ready=lambda v: v > 0, timeout=50)
        results.append((key, reply, trio.current_time()))

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll, "a")
            nursery.start_soon(poll, "c")
            await trio.sleep(3)
            await runtime.call_atomic([(kind, "a", Add(4)), (kind, "b", Add(1))])
    assert sorted(results) == [("a", 4, 3), ("c", 0, 50)]


@pytest.mark.parametrize(
    ("second", "error"),
    [
        pytest.param(Explode(), InternalError, id="a-handle-raises"),
        pytest.param(Explode(ToolError), ToolError, id="a-handle-raises-a-tool-error"),
        pytest.param(Garble(), InternalError, id="a-handle-returns-no-effects"),
        pytest.param(Refuse(), ValueError, id="an-entity-refuses"),
        pytest.param(Add(-5), InternalError, id="the-commit-fails"),  # CHECK (value >= 0)
    ],
)
async def test_a_failure_anywhere_changes_nothing_and_no_actor_keeps_a_stale_copy(
    runtime, kind, second, error
):
    await runtime.call(kind, "b", Add(1))
    with trio.fail_after(10), pytest.raises(error):
        # "a" sorts first: its handle ran and mutated memory before "b" failed.
        await runtime.call_atomic([(kind, "b", second), (kind, "a", Add(7))])
    assert await runtime.read(lambda c: (stored(c, "a"), stored(c, "b"))) == (None, 1)
    assert await runtime.read(lambda c: log(c, "a")) == []
    loads = len(kind.loads)
    assert await runtime.call(kind, "a", Get()) == 0  # reloaded, not the stale 7
    assert await runtime.call(kind, "b", Get()) == 1
    assert kind.loads[loads:] == ["a", "b"]


async def test_a_cancelled_atomic_change_leaves_memory_as_the_store_has_it(
    runtime, kind, store, monkeypatch, autojump_clock
):
    slow_writes(store, monkeypatch)
    with trio.move_on_after(0.5):
        await runtime.call_atomic([(kind, "a", Add(1)), (kind, "b", Add(1))])
    monkeypatch.undo()
    assert await runtime.call(kind, "a", Get()) == 0
    assert await runtime.call(kind, "b", Get()) == 0


async def test_bad_operations_are_refused_before_anything_runs(runtime, kind):
    with pytest.raises(ValueError, match="once"):
        await runtime.call_atomic([(kind, "a", Add(1)), (kind, "a", Add(1))])
    with pytest.raises(LookupError):
        await runtime.call_atomic([(kind, "a", Add(1)), (kind, "missing-z", Add(1))])
    assert await runtime.call(kind, "a", Get()) == 0
    assert await runtime.call_atomic([]) == []


async def test_overlapping_concurrent_operations_never_deadlock_and_never_lose_a_change(
    runtime, kind, store, monkeypatch, autojump_clock
):
    # Each operation lists its keys in its own random order while commits are slow, so
    # operations overlap while holding turns; taking turns in that given order would
    # deadlock (a waits for b while b waits for a). Single calls run in between.
    slow_writes(store, monkeypatch)
    rng = random.Random(8)
    keys = ["a", "b", "c", "d"]
    expected = dict.fromkeys(keys, 0)
    plans = []
    for _ in range(30):
        chosen = rng.sample(keys, rng.randint(2, 4))
        plans.append(chosen)
        for key in chosen:
            expected[key] += 1

    async def atomic(chosen: list[str]) -> None:
        replies = await runtime.call_atomic([(kind, key, Add(1)) for key in chosen])
        assert len(replies) == len(chosen)

    async def single(key: str) -> None:
        await runtime.call(kind, key, Add(10))
        expected[key] += 10

    with trio.fail_after(200):
        async with trio.open_nursery() as nursery:
            for i, chosen in enumerate(plans):
                nursery.start_soon(atomic, chosen)
                if i % 5 == 0:
                    nursery.start_soon(single, keys[i % 4])
    values = {key: await runtime.call(kind, key, Get()) for key in keys}
    assert values == expected
    assert await runtime.read(lambda c: {k: stored(c, k) for k in keys}) == expected
