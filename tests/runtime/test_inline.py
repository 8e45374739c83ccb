"""Commands run in the caller's task when the actor is free: same order, same guarantees.

When an actor's entity is loaded and nothing is queued or running, `Runtime.call` runs the
command in the caller's task under the actor's turn instead of posting it. These tests hold
a command in its commit (a gate on ``store.write``) and check that everything arriving
meanwhile waits its turn in arrival order, that an inline caller cancelled before its
commit leaves memory as the store has it, and that a bug on the inline path ends the actor
like a crash of its task: the caller gets an internal error, queued callers retry on a
fresh actor.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from _counter import Add, Counter, Get, break_first_write, log

from agora.errors import StoreError
from agora.runtime.actor import InternalError


class Gate:
    """Holds every ``store.write`` until opened; counts the writes that entered."""

    def __init__(self, store, monkeypatch) -> None:
        self.opened = trio.Event()
        self.entered = 0
        self._write = store.write
        monkeypatch.setattr(store, "write", self.write)

    async def write(self, writes, *rest):
        self.entered += 1
        await self.opened.wait()
        await self._write(writes, *rest)


async def test_a_free_actor_runs_the_command_in_the_callers_task(runtime, kind, monkeypatch):
    await runtime.call(kind, "a", Add(1))  # loads the entity, in the actor's task
    actor = runtime.registry.get(kind, "a")
    assert actor.can_run_inline()
    ran_in: list[trio.lowlevel.Task] = []
    handle = Counter.handle

    def spy(self, command, now):
        ran_in.append(trio.lowlevel.current_task())
        return handle(self, command, now)

    monkeypatch.setattr(Counter, "handle", spy)
    assert await runtime.call(kind, "a", Add(2)) == 3
    assert ran_in == [trio.lowlevel.current_task()]
    assert actor.handled == 2
    assert kind.loads == ["a"]


async def test_callers_arriving_during_an_inline_command_wait_their_turn_in_order(
    runtime, kind, store, monkeypatch
):
    await runtime.call(kind, "a", Get())  # entity loaded
    actor = runtime.registry.get(kind, "a")
    gate = Gate(store, monkeypatch)
    replies: list[tuple[str, int]] = []

    async def caller(tag: str) -> None:
        replies.append((tag, await runtime.call(kind, "a", Add(1, tag))))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, "first")
            await trio.testing.wait_all_tasks_blocked()
            assert gate.entered == 1  # the first runs inline, held in its commit
            assert not actor.can_run_inline()
            for n in range(5):
                nursery.start_soon(caller, f"later-{n}")
                await trio.testing.wait_all_tasks_blocked()
            assert gate.entered == 1  # nobody overtook or overlapped the held command
            assert actor.queued == 5
            gate.opened.set()
    assert sorted(replies) == [("first", 1)] + [(f"later-{n}", n + 2) for n in range(5)]
    rows = await runtime.read(lambda conn: log(conn, "a"))
    assert [tag for _, tag, _ in rows] == ["first"] + [f"later-{n}" for n in range(5)]
    assert actor.can_run_inline()  # free again


async def test_an_inline_caller_cancelled_before_its_commit_leaves_memory_as_stored(
    runtime, kind, store, monkeypatch
):
    await runtime.call(kind, "a", Add(2, "kept"))
    gate = Gate(store, monkeypatch)  # a cancellable wait before the commit is submitted
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.call, kind, "a", Add(5, "cancelled"))
            await trio.testing.wait_all_tasks_blocked()
            assert gate.entered == 1
            nursery.cancel_scope.cancel()
    monkeypatch.undo()
    assert await runtime.call(kind, "a", Get()) == 2  # reloaded: the handled +5 never landed
    rows = await runtime.read(lambda conn: log(conn, "a"))
    assert [(tag, value) for _, tag, value in rows] == [("kept", 2)]
    assert kind.loads == ["a", "a"]


async def test_a_bug_on_the_inline_path_ends_the_actor_and_queued_callers_retry(
    runtime, kind, store, monkeypatch
):
    await runtime.call(kind, "a", Get())
    actor = runtime.registry.get(kind, "a")
    opened = break_first_write(store, monkeypatch, KeyError("a bug, not a StoreError"))
    outcomes: list[object] = []

    async def caller(tag: str) -> None:
        try:
            outcomes.append((tag, await runtime.call(kind, "a", Add(1, tag))))
        except InternalError:
            outcomes.append((tag, "internal error"))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, "inline")
            await trio.testing.wait_all_tasks_blocked()
            for n in range(3):
                nursery.start_soon(caller, f"queued-{n}")
            await trio.testing.wait_all_tasks_blocked()
            assert actor.queued == 3
            opened.set()
    assert outcomes[0] == ("inline", "internal error")
    # The queued commands ran on a fresh actor, loaded from the store (the failed one was
    # never committed). They retried as they woke, so in no promised order (as after any
    # actor crash), but each exactly once.
    assert sorted(tag for tag, _ in outcomes[1:]) == [f"queued-{n}" for n in range(3)]
    assert sorted(value for _, value in outcomes[1:]) == [1, 2, 3]
    assert runtime.registry.get(kind, "a") is not actor
    assert runtime.registry.spawned == 2


async def test_a_store_error_on_the_inline_path_is_an_internal_error_and_a_reload(
    runtime, kind, store, monkeypatch
):
    await runtime.call(kind, "a", Add(2))

    async def full(writes, *rest):
        raise StoreError("disk full")

    monkeypatch.setattr(store, "write", full)
    with pytest.raises(InternalError, match="could not be saved"):
        await runtime.call(kind, "a", Add(1))
    monkeypatch.undo()
    assert await runtime.call(kind, "a", Get()) == 2  # reloaded: the failed change is gone
    assert kind.loads == ["a", "a"]
