"""agora.runtime.park: long-polls parked behind one timer task (autojump clock)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from agora.runtime.park import Timers

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[trio.Nursery, Timers]]:
    """`Timers` on a nursery of their own, and that nursery; leaving the block waits for it,
    so a timer task left behind fails the test (after 1000 virtual seconds)."""
    with trio.fail_after(1000):
        async with trio.open_nursery() as nursery:
            yield nursery, Timers(nursery)


async def test_deadline_fires_at_its_exact_time(autojump_clock: trio.testing.MockClock) -> None:
    async with serving() as (nursery, timers):
        watched: set[Any] = set()
        ends: dict[str, float] = {}

        async def wait(name: str, after: float) -> None:
            start = trio.current_time()
            assert not await timers.park((watched,), start + after)
            ends[name] = trio.current_time() - start

        nursery.start_soon(wait, "late", 30.0)
        await trio.sleep(1)
        nursery.start_soon(wait, "early", 5.0)  # earlier than the timer's current deadline
        await trio.sleep(1)
        nursery.start_soon(wait, "later", 100.0)
    assert ends == {"late": 30.0, "early": 5.0, "later": 100.0}
    assert not watched  # every sleeper took itself out


async def test_set_wakes_every_parked_task_before_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving() as (nursery, timers):
        first: set[Any] = set()
        second: set[Any] = set()
        woke: list[tuple[bool, float]] = []

        async def wait() -> None:
            woke.append((await timers.park((first, second), trio.current_time() + 60), 0.0))
            woke[-1] = (woke[-1][0], trio.current_time())

        for _ in range(3):
            nursery.start_soon(wait)
        await trio.sleep(7)
        assert len(first) == len(second) == 3
        for sleeper in list(second):
            sleeper.set()
            sleeper.set()  # a second wake is a no-op
    assert woke == [(True, 7.0)] * 3
    assert not first
    assert not second


async def test_outer_cancel_scope_still_cancels_a_parked_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving() as (_nursery, timers):
        watched: set[Any] = set()
        with trio.move_on_after(3) as scope:
            await timers.park((watched,), trio.current_time() + 50)
        assert scope.cancelled_caught
        assert trio.current_time() == 3
        assert not watched
        # The timer task ends once no one is parked: the nursery closes at once.
    assert trio.current_time() == 3


async def test_timer_task_restarts_for_a_later_poll(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving() as (_nursery, timers):
        for round_ in range(3):
            start = trio.current_time()
            assert not await timers.park((set(),), start + 2 + round_)
            assert trio.current_time() == start + 2 + round_


@pytest.mark.parametrize("delay", [0.0, -1.0])
async def test_a_past_deadline_returns_at_once(
    autojump_clock: trio.testing.MockClock, delay: float
) -> None:
    async with serving() as (_nursery, timers):
        assert not await timers.park((set(),), trio.current_time() + delay)
    assert trio.current_time() == 0


async def test_a_shutting_down_runtime_parks_no_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def runtime_nursery(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started(nursery)
            await trio.sleep_forever()

    with trio.fail_after(1000):
        async with trio.open_nursery() as outer:
            nursery = await outer.start(runtime_nursery)
            nursery.cancel_scope.cancel()  # shutdown began: no timer task would run
            watched: set[Any] = set()
            assert not await Timers(nursery).park((watched,), trio.current_time() + 60)
            assert not watched
    assert trio.current_time() == 0


async def test_entries_of_woken_polls_are_dropped(autojump_clock: trio.testing.MockClock) -> None:
    async with serving() as (nursery, timers):
        watched: set[Any] = set()

        async def long_wait() -> None:
            assert await timers.park((watched,), trio.current_time() + 900)

        nursery.start_soon(timers.park, (set(),), 5.0)  # keeps the timer task running
        for _ in range(300):  # each woken at once: its heap entry is stale
            nursery.start_soon(long_wait)
            await trio.sleep(0.001)
            for sleeper in list(watched):
                sleeper.set()
            await trio.sleep(0.001)
        assert len(timers._heap) <= 2 * 1 + 64 + 1  # compacted, not 301 entries
        start = trio.current_time()
        assert not await timers.park((watched,), start + 2)
        assert trio.current_time() == start + 2
