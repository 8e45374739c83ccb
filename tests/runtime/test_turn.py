"""An actor's turn and change event are made lazily, and behave as the objects they replace.

`agora.runtime.park.Turn` replaces a ``trio.Lock`` per actor: a flag until a task has to
wait, then a FIFO queue whose release hands the turn to the longest waiter. An actor's
``change`` event is made only when someone asks for it (a long-poll, a guarded command), so
a reply's ``Slot.change`` is looked up on first use: the event current at the reply if
nothing changed since, else an event already set.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from _counter import Add, Get

from agora.runtime.park import Turn

#: Why the event tests are SQLite's: on a guarded store every command takes its actor's
#: change event (to notice another node's change while it awaits its load or probe).
GUARDED_TAKES_THE_EVENT = "a guarded store's command takes its actor's change event"


async def test_a_turn_goes_to_its_waiters_in_arrival_order():
    turn = Turn()
    turn.acquire_nowait()
    order: list[int] = []

    async def waiter(i: int) -> None:
        await turn.acquire()
        order.append(i)
        await trio.lowlevel.checkpoint()
        turn.release()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for i in range(4):  # each in line before the next arrives
                nursery.start_soon(waiter, i)
                await trio.testing.wait_all_tasks_blocked()
            turn.release()
            # Handed over, not freed: nobody may cut in ahead of the queue.
            assert turn.locked()
            with pytest.raises(trio.WouldBlock):
                turn.acquire_nowait()
    assert order == [0, 1, 2, 3]
    assert not turn.locked()


async def test_a_cancelled_waiter_leaves_the_line_without_the_turn():
    turn = Turn()
    turn.acquire_nowait()
    got: list[str] = []
    scopes: dict[str, trio.CancelScope] = {}

    async def waiter(name: str) -> None:
        with trio.CancelScope() as scopes[name]:
            await turn.acquire()
            got.append(name)
            turn.release()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for name in ("cancelled", "kept"):
                nursery.start_soon(waiter, name)
                await trio.testing.wait_all_tasks_blocked()
            scopes["cancelled"].cancel()
            await trio.testing.wait_all_tasks_blocked()
            turn.release()
    assert got == ["kept"]
    assert not turn.locked()


async def test_a_free_turn_is_taken_at_once_and_a_stray_release_is_refused():
    turn = Turn()
    with trio.fail_after(5):
        await turn.acquire()
    assert turn.locked()
    turn.release()
    with pytest.raises(RuntimeError):
        turn.release()


async def test_only_the_task_holding_the_turn_may_give_it_back():
    turn = Turn()
    turn.acquire_nowait()  # held by this task
    refused: list[RuntimeError] = []

    async def stranger() -> None:
        with pytest.raises(RuntimeError, match="does not hold") as caught:
            turn.release()
        refused.append(caught.value)

    async def waiter() -> None:
        await turn.acquire()  # handed over by the release below: now this task's
        turn.release()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stranger)
            await trio.testing.wait_all_tasks_blocked()
            assert refused
            assert turn.locked()  # the stranger's release changed nothing
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            turn.release()
            with pytest.raises(RuntimeError, match="does not hold"):
                turn.release()  # handed to the waiter: no longer this task's
    assert not turn.locked()


async def test_inline_commands_make_no_change_event_until_someone_asks(runtime, kind):
    await runtime.call(kind, "a", Add(1))  # loads it in the actor's task
    actor = runtime.registry.get(kind, "a")
    await runtime.call(kind, "a", Add(1))  # runs inline, changes the entity
    assert actor._change is None
    first = actor.change
    assert first is actor.change
    assert not first.is_set()
    await runtime.call(kind, "a", Add(1))
    assert first.is_set()  # the change woke whoever held it
    assert actor._change is None


async def test_a_replys_change_event_is_the_next_change_even_if_asked_for_late(runtime, kind):
    await runtime.call(kind, "a", Add(1))
    _, early = await runtime._submit(kind, "a", Get())
    await runtime.call(kind, "a", Add(1))  # a change after that reply, before anyone asked
    _, latest = await runtime._submit(kind, "a", Get())
    assert early.change is not None
    assert early.change.is_set()
    assert latest.change is not None
    assert not latest.change.is_set()
    actor = runtime.registry.get(kind, "a")
    assert latest.change is actor.change
    await runtime.call(kind, "a", Add(1))
    assert latest.change.is_set()


@pytest.mark.sqlite_only(GUARDED_TAKES_THE_EVENT)
async def test_a_poll_whose_first_reply_is_ready_makes_no_change_event(runtime, kind):
    await runtime.call(kind, "a", Add(1))  # loads it in the actor's task
    actor = runtime.registry.get(kind, "a")
    await runtime.call(kind, "a", Add(1))
    assert actor._change is None
    with trio.fail_after(5):
        assert await runtime.poll(kind, "a", Get(), ready=lambda v: v >= 2, timeout=60) == 2
    assert actor._change is None  # it would not park: no event to park on


@pytest.mark.sqlite_only(GUARDED_TAKES_THE_EVENT)
async def test_a_poll_answered_ready_by_the_change_it_waited_for_makes_no_new_event(
    runtime, kind, autojump_clock
):
    await runtime.call(kind, "a", Add(1))
    actor = runtime.registry.get(kind, "a")
    got: list[int] = []

    async def poll() -> None:
        got.append(await runtime.poll(kind, "a", Get(), ready=lambda v: v >= 2, timeout=60))

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll)
            await trio.testing.wait_all_tasks_blocked()
            parked_on = actor._change
            assert parked_on is not None  # the parked poll asked for the event of its reply
            await runtime.call(kind, "a", Add(1))  # answers the poll in its own turn
    assert got == [2]
    assert parked_on.is_set()
    assert actor._change is None  # the ready answer made no event after the change
