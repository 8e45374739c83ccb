"""Long-poll (`Runtime.poll`): answers on change, times out exactly, wakes many, ends cleanly.

All on Trio's autojump clock over the inline store: times are exact, nothing really sleeps.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from _counter import Add, Crash, Explode, Get, Refuse

from agora.errors import ToolError
from agora.runtime.actor import InternalError


def at_least(n: int):
    return lambda value: value >= n


async def _poll(runtime, kind, results, need=1, seconds=55.0, key="a"):
    reply = await runtime.poll(kind, key, Get(), ready=at_least(need), timeout=seconds)
    results.append((reply, trio.current_time()))


async def test_a_poll_answers_the_moment_the_entity_changes(runtime, kind, autojump_clock):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, results)
            await trio.sleep(7)
            await runtime.call(kind, "a", Add(3))
    assert results == [(3, start + 7)]


async def test_a_poll_keeps_waiting_through_changes_that_are_not_ready(
    runtime, kind, autojump_clock
):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, results, 5)
            await trio.sleep(2)
            await runtime.call(kind, "a", Add(1))
            await trio.sleep(7)
            assert results == []
            await runtime.call(kind, "a", Add(4))
    assert results == [(5, start + 9)]


async def test_a_ready_poll_answers_at_once(runtime, kind, autojump_clock):
    await runtime.call(kind, "a", Add(1))
    start = trio.current_time()
    assert await runtime.poll(kind, "a", Get(), ready=at_least(1), timeout=55) == 1
    assert await runtime.poll(kind, "a", Get(), ready=at_least(9), timeout=0) == 1
    assert trio.current_time() == start


async def test_a_poll_times_out_at_exactly_its_timeout_and_the_actor_stays_usable(
    runtime, kind, autojump_clock
):
    start = trio.current_time()
    with trio.fail_after(60):
        reply = await runtime.poll(kind, "a", Get(), ready=at_least(1), timeout=2.5)
    assert reply == 0
    assert trio.current_time() == start + 2.5
    actor = runtime.registry.get(kind, "a")
    assert actor.waiters == 0
    assert await runtime.call(kind, "a", Add(1)) == 1
    with trio.fail_after(60):
        assert await runtime.poll(kind, "a", Get(), ready=at_least(1), timeout=2.5) == 1
    assert trio.current_time() == start + 2.5
    assert runtime.registry.spawned == 1


async def test_many_waiters_on_one_key_all_wake_on_one_change(runtime, kind, autojump_clock):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for _ in range(200):
                nursery.start_soon(_poll, runtime, kind, results)
            await trio.sleep(3)
            assert runtime.registry.get(kind, "a").waiters == 200
            await runtime.call(kind, "a", Add(1))
    assert results == [(1, start + 3)] * 200
    assert runtime.registry.get(kind, "a").waiters == 0
    assert runtime.registry.spawned == 1


async def test_a_change_wakes_only_the_waiters_of_its_key(runtime, kind, autojump_clock):
    start = trio.current_time()
    a: list = []
    b: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, a)
            nursery.start_soon(_poll, runtime, kind, b, 1, 10.0, "b")
            await trio.sleep(1)
            await runtime.call(kind, "a", Add(1))
    assert a == [(1, start + 1)]
    assert b == [(0, start + 10)]


async def test_shutdown_makes_parked_polls_return_their_latest_reply(runtime, kind, autojump_clock):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for key in ("a", "b"):
                for _ in range(50):
                    nursery.start_soon(_poll, runtime, kind, results, 1, 55.0, key)
            await trio.sleep(4)
            runtime.begin_shutdown()
    assert results == [(0, start + 4)] * 100
    # A poll that starts during shutdown answers at once instead of parking.
    assert await runtime.poll(kind, "a", Get(), ready=at_least(1), timeout=55) == 0
    assert trio.current_time() == start + 4


async def test_a_cancelled_poll_does_not_pin_its_actor(runtime, kind, autojump_clock):
    with trio.move_on_after(5):
        await runtime.poll(kind, "a", Get(), ready=at_least(1), timeout=55)
    actor = runtime.registry.get(kind, "a")
    assert actor.waiters == 0


async def test_a_parked_poll_survives_its_actor_crashing(runtime, kind, autojump_clock):
    start = trio.current_time()
    results: list = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_poll, runtime, kind, results)
            await trio.sleep(2)
            with pytest.raises(InternalError):
                await runtime.call(kind, "a", Crash())
            await trio.sleep(3)
            assert results == []
            assert runtime.registry.get(kind, "a").waiters == 1  # parked on the new actor
            await runtime.call(kind, "a", Add(1))
    assert results == [(1, start + 5)]
    assert runtime.registry.spawned == 2


@pytest.mark.parametrize(
    ("command", "error"),
    [
        pytest.param(Explode(), InternalError, id="handle-bug"),
        pytest.param(Refuse(), ValueError, id="refusal"),
        pytest.param(Explode(ToolError), ToolError, id="tool-error-raised"),
    ],
)
async def test_a_poll_raises_what_its_command_raises(runtime, kind, autojump_clock, command, error):
    with pytest.raises(error):
        await runtime.poll(kind, "a", command, ready=lambda _: False, timeout=55)
    assert trio.current_time() == 0


def awaiting(task: trio.lowlevel.Task) -> list[str]:
    """The coroutines a parked task is suspended in, outermost first."""
    chain, coro = [], task.coro
    while hasattr(coro, "cr_code"):
        chain.append(coro.cr_code.co_qualname)
        coro = coro.cr_await
    return chain


async def test_a_parked_poll_keeps_no_frame_of_runtime_poll(runtime, kind, autojump_clock):
    tasks: list[trio.lowlevel.Task] = []

    async def poll() -> None:
        tasks.append(trio.lowlevel.current_task())
        await runtime.poll(kind, "a", Get(), ready=at_least(1), timeout=60)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll)
            await trio.testing.wait_all_tasks_blocked()
            # Every wake-up of a parked poll walks its frames: `Runtime.poll` hands over the
            # coroutine of `agora.runtime.polls.poll` instead of awaiting it in one more.
            assert awaiting(tasks[0]) == [
                "test_a_parked_poll_keeps_no_frame_of_runtime_poll.<locals>.poll",
                "poll",
                "wait_task_rescheduled",
            ]
            await runtime.call(kind, "a", Add(1))
