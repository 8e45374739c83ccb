"""Long-poll over several keys (`Runtime.poll_many`), on the autojump clock.

The three guarantees of `poll` (answers on change, times out and stays usable, ends
cleanly when its actor stops or the server shuts down), for a wait that spans keys.
"""

from __future__ import annotations

import pytest
import trio
from _counter import Add, Crash, Get, Refuse

from agora.runtime.actor import InternalError

KEYS = ("a", "b", "c")


def any_at_least(n: int):
    return lambda replies: any(value >= n for value in replies.values())


async def _poll(runtime, kind, results, need=1, seconds=55.0, keys=KEYS):
    replies = await runtime.poll_many(
        kind, {key: Get() for key in keys}, ready=any_at_least(need), timeout=seconds
    )
    results.append((replies, trio.current_time()))


async def test_poll_many_answers_the_moment_any_key_changes(runtime, kind, autojump_clock):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, results)
            await trio.sleep(7)
            for key in KEYS:
                assert runtime.registry.get(kind, key).waiters == 1
            await runtime.call(kind, "b", Add(3))
    assert results == [({"a": 0, "b": 3, "c": 0}, start + 7)]
    for key in KEYS:
        actor = runtime.registry.get(kind, key)
        assert (actor.waiters, actor.listeners) == (0, set())
    # Only the key that changed was asked again.
    assert [runtime.registry.get(kind, k).handled for k in KEYS] == [1, 3, 1]


async def test_poll_many_keeps_waiting_through_changes_that_are_not_ready(
    runtime, kind, autojump_clock
):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, results, 5)
            await trio.sleep(2)
            await runtime.call(kind, "a", Add(1))
            await trio.sleep(3)
            await runtime.call(kind, "c", Add(2))
            await trio.sleep(4)
            assert results == []
            await runtime.call(kind, "a", Add(4))
    assert results == [({"a": 5, "b": 0, "c": 2}, start + 9)]


async def test_poll_many_times_out_exactly_and_the_actors_stay_usable(
    runtime, kind, autojump_clock
):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        await _poll(runtime, kind, results, seconds=2.5)
        assert results == [({"a": 0, "b": 0, "c": 0}, start + 2.5)]
        for key in KEYS:
            assert runtime.registry.get(kind, key).waiters == 0
        assert await runtime.call(kind, "c", Add(1)) == 1
        await _poll(runtime, kind, results, seconds=2.5)
    assert results[1] == ({"a": 0, "b": 0, "c": 1}, start + 2.5)
    assert runtime.registry.spawned == 3


async def test_poll_many_survives_an_actor_crashing_while_parked(runtime, kind, autojump_clock):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, results)
            await trio.sleep(2)
            with pytest.raises(InternalError):
                await runtime.call(kind, "b", Crash())
            await trio.sleep(3)
            assert results == []
            assert runtime.registry.get(kind, "b").waiters == 1  # parked on the new actor
            await runtime.call(kind, "b", Add(1))
    assert results == [({"a": 0, "b": 1, "c": 0}, start + 5)]
    assert runtime.registry.spawned == 4


async def test_shutdown_makes_parked_multi_polls_return_their_latest_replies(
    runtime, kind, autojump_clock
):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(_poll, runtime, kind, results)
            await trio.sleep(4)
            runtime.begin_shutdown()
    assert results == [({"a": 0, "b": 0, "c": 0}, start + 4)] * 20
    # One that starts during shutdown answers at once instead of parking.
    await _poll(runtime, kind, results)
    assert results[-1] == ({"a": 0, "b": 0, "c": 0}, start + 4)


async def test_a_cancelled_multi_poll_leaves_no_listener_behind(runtime, kind, autojump_clock):
    with trio.move_on_after(5):
        await _poll(runtime, kind, [])
    for key in KEYS:
        actor = runtime.registry.get(kind, key)
        assert (actor.waiters, actor.listeners) == (0, set())


async def test_poll_many_raises_what_a_command_raises(runtime, kind, autojump_clock):
    with pytest.raises(ValueError, match="refused"):
        await runtime.poll_many(
            kind, {"a": Get(), "b": Refuse()}, ready=lambda _: False, timeout=55
        )
    with pytest.raises(LookupError):
        await runtime.poll_many(kind, {"missing-x": Get()}, ready=lambda _: False, timeout=55)
    assert trio.current_time() == 0
