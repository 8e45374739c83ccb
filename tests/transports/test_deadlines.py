"""The sweeper that ends HTTP connections waiting past their deadline, under Trio's mock
clock: never early, at most one period late, also for a wait that begins while it sleeps,
and only while there is something to watch."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from agora.transports.deadlines import PERIOD, Sweeper

TIMEOUT = 600  # mock seconds


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


class Waiter:
    """A connection that notes when it was expired."""

    def __init__(self, deadline: float = math.inf) -> None:
        self.deadline = deadline
        self.expired_at: float | None = None

    def expire(self) -> None:
        assert self.expired_at is None, "expired twice"
        self.expired_at = trio.current_time()


async def test_a_late_wait_is_expired_within_a_period_and_a_waitless_one_never(clock):
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            sweeper = Sweeper(nursery)
            start = trio.current_time()
            late, idle = Waiter(start + 30), Waiter()
            sweeper.add(late)
            sweeper.add(idle)
            sweeper.due(late.deadline)
            await trio.sleep(29.9)
            assert late.expired_at is None  # never early
            await trio.sleep(0.1 + PERIOD)
            assert late.expired_at is not None
            assert 30 <= late.expired_at - start <= 30 + PERIOD
            await trio.sleep(100)
            assert idle.expired_at is None
            assert len(sweeper) == 1  # the expired one is watched no more
            sweeper.discard(idle)


async def test_a_wait_that_begins_while_the_sweeper_sleeps_is_still_ended_on_time(clock):
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            sweeper = Sweeper(nursery)
            start = trio.current_time()
            far, soon = Waiter(start + 300), Waiter()
            sweeper.add(far)
            sweeper.add(soon)
            sweeper.due(far.deadline)
            await trio.sleep(1)  # the sweeper sleeps until `far` is due
            soon.deadline = trio.current_time() + 5
            assert soon.deadline < sweeper.wake_at
            sweeper.due(soon.deadline)
            await trio.sleep(5 + PERIOD)
            assert soon.expired_at is not None
            assert 6 <= soon.expired_at - start <= 6 + PERIOD
            assert far.expired_at is None
            # A later wait changes nothing: the sweeper finds it when it wakes.
            later = trio.current_time() + 400
            assert later > sweeper.wake_at
            far.deadline = later
            await trio.sleep(400 + PERIOD)
            assert far.expired_at is not None
            assert later <= far.expired_at <= later + PERIOD


async def test_the_sweeper_task_runs_only_while_it_watches_something(clock):
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            sweeper = Sweeper(nursery)
            one = Waiter()
            sweeper.add(one)
            await trio.sleep(2)
            assert len(nursery.child_tasks) == 1
            sweeper.discard(one)
            await trio.sleep(2)
            assert not nursery.child_tasks  # ended with the last connection
            again = Waiter(trio.current_time() + 1)
            sweeper.add(again)  # and starts with the next
            sweeper.due(again.deadline)
            await trio.sleep(1 + PERIOD)
            assert again.expired_at is not None
        # The nursery closed by itself: no task was left behind.


async def test_a_failing_expiry_does_not_stop_the_others(clock, caplog):
    class Broken(Waiter):
        def expire(self) -> None:
            raise RuntimeError("bug")

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            sweeper = Sweeper(nursery)
            now = trio.current_time()
            broken, fine = Broken(now + 1), Waiter(now + 1)
            sweeper.add(broken)
            sweeper.add(fine)
            sweeper.due(now + 1)
            await trio.sleep(1 + PERIOD)
            assert fine.expired_at is not None
            assert "expiring a connection failed" in caplog.text
