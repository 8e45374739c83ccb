"""A caller whose command queues in an actor's mailbox parks on its `Slot` without an event.

`agora.runtime.park.Slot.wait` parks the one caller's task itself and the actor's reply
reschedules it: no ``trio.Event`` (and its ParkingLot) per queued command. The caller stays
cancellable while its command waits in line, and the command still runs, unanswered.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from _counter import Add, Get

from agora.runtime.park import Slot


async def held(runtime, kind, key: str):
    """Load the entity, then hold its actor's turn so that the next commands queue."""
    await runtime.call(kind, key, Get())
    actor = runtime.registry.get(kind, key)
    actor._turn.acquire_nowait()
    return actor


@pytest.mark.sqlite_only(
    "a guarded store's command takes its actor's change event (to notice other nodes' "
    "changes meanwhile): one per change, whatever the slot does"
)
async def test_a_queued_call_waits_for_its_reply_with_no_event(runtime, kind, monkeypatch):
    actor = await held(runtime, kind, "k")
    made: list[trio.Event] = []
    event = trio.Event

    def counted() -> trio.Event:  # trio.Event itself, counted (it takes no subclass)
        made.append(event())
        return made[-1]

    monkeypatch.setattr(trio, "Event", counted)
    replies: list[int] = []

    async def add() -> None:
        replies.append(await runtime.call(kind, "k", Add(5)))

    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            for _ in range(3):
                callers.start_soon(add)
            await trio.testing.wait_all_tasks_blocked()
            assert actor.queued == 3  # all three in the mailbox, their callers parked
            actor._turn.release()
    assert sorted(replies) == [5, 10, 15]
    assert made == []


async def test_a_caller_cancelled_in_line_leaves_and_its_command_still_runs(runtime, kind):
    actor = await held(runtime, kind, "k")
    got: list[int] = []

    async def add(scope: trio.CancelScope) -> None:
        with scope:
            got.append(await runtime.call(kind, "k", Add(1)))

    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            cancelled, kept = trio.CancelScope(), trio.CancelScope()
            callers.start_soon(add, cancelled)
            await trio.testing.wait_all_tasks_blocked()
            callers.start_soon(add, kept)
            await trio.testing.wait_all_tasks_blocked()
            cancelled.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert cancelled.cancelled_caught
            actor._turn.release()  # the actor runs both; the first reply finds no one
        assert got == [2]
        assert await runtime.call(kind, "k", Get()) == 2


async def test_a_finished_slot_returns_at_once_without_a_checkpoint():
    slot = Slot()
    slot.set(7, None)
    with trio.CancelScope() as scope:
        scope.cancel()
        await slot.wait()  # no checkpoint: the cancellation does not fire here
    assert not scope.cancelled_caught
    assert slot.value == 7
