"""Keyed long-polls (`Runtime.poll` with ``wait_key``): a change that names other keys in
its `Effects.wakes` does not re-run the poll's command; its own key, an unkeyed change, a
stop or shutdown do. Autojump clock over the inline store: times are exact.
"""

from __future__ import annotations

import trio
from _counter import Add, Get, Tagged

from agora.runtime.actor import SIGNAL_LOG


class Counting:
    """A `Get` that counts how many times the poll ran it."""

    def __init__(self) -> None:
        self.runs = 0

    def ready(self, need: int):
        def judge(value: int) -> bool:
            self.runs += 1
            return value >= need

        return judge


async def test_a_keyed_poll_sleeps_through_changes_for_other_keys(runtime, kind, autojump_clock):
    counting, results = Counting(), []

    async def poll() -> None:
        reply = await runtime.poll(
            kind, "a", Get(), ready=counting.ready(3), timeout=50, wait_key="me"
        )
        results.append((reply, trio.current_time()))

    start = trio.current_time()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll)
            await trio.sleep(1)
            for _ in range(2):
                await runtime.call(kind, "a", Tagged(("other",)))  # value 2, not for me
            await trio.sleep(1)
            assert counting.runs == 1  # only the first look ran
            await runtime.call(kind, "a", Tagged(("other", "me")))
    assert results == [(3, start + 2)]
    assert counting.runs == 2


async def test_an_unkeyed_change_wakes_a_keyed_poll(runtime, kind, autojump_clock):
    counting, results = Counting(), []

    async def poll() -> None:
        results.append(
            await runtime.poll(kind, "a", Get(), ready=counting.ready(1), timeout=50, wait_key="me")
        )

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll)
            await trio.sleep(1)
            await runtime.call(kind, "a", Add(1))  # wakes=None: every poll
    assert results == [1]


async def test_a_keyed_change_still_wakes_unkeyed_polls(runtime, kind, autojump_clock):
    results = []

    async def poll() -> None:
        results.append(await runtime.poll(kind, "a", Get(), ready=lambda v: v >= 1, timeout=50))

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll)
            await trio.sleep(1)
            await runtime.call(kind, "a", Tagged(("someone",)))
    assert results == [1]


async def test_a_poll_behind_more_signals_than_remembered_re_runs(runtime, kind, autojump_clock):
    await runtime.call(kind, "a", Get())
    actor = runtime.registry.get(kind, "a")
    since = actor.epoch
    for _ in range(SIGNAL_LOG + 1):
        await runtime.call(kind, "a", Tagged(("other",)))
    assert actor.concerns(since, "me")  # forgotten: it cannot tell, so it re-runs
    assert not actor.concerns(since + 1, "me")  # all remembered, none for "me"
    assert actor.concerns(-1, "me")


async def test_shutdown_ends_a_keyed_poll_with_its_latest_reply(runtime, kind, autojump_clock):
    results = []

    async def poll() -> None:
        results.append(
            await runtime.poll(kind, "a", Get(), ready=lambda v: v >= 5, timeout=50, wait_key="me")
        )

    start = trio.current_time()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll)
            await trio.sleep(1)
            await runtime.call(kind, "a", Tagged(("other",)))
            await trio.sleep(1)
            runtime.begin_shutdown()
    assert results == [0]  # the change for "other" was not looked at
    assert trio.current_time() == start + 2
