"""Commands that queue while an actor commits run together under one commit.

Each test holds the first write at a gate so that the next commands queue in the mailbox,
then opens it and checks what the group did: one commit, replies in order, a read in the
group woken by a later change of the same group, all or nothing on a failed commit, a
failing ``handle`` alone. Inline ``:memory:`` store, autojump clock where time matters.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from _counter import IDLE, Add, CounterKind, Explode, Get, When, log, stored

from agora.errors import ToolError
from agora.runtime.actor import InternalError
from agora.runtime.clock import Clock, FakeWall
from agora.runtime.registry import Runtime

pytestmark = pytest.mark.sqlite_only(
    "queued commands share a commit only on an unguarded store; a guarded one commits each "
    "under its own version guard"
)


def gated_writes(store, monkeypatch) -> tuple[trio.Event, list[int]]:
    """Hold every write until the returned event is set; record each write's statements."""
    gate = trio.Event()
    sizes: list[int] = []
    write = store.write

    async def held(writes, *rest):
        sizes.append(len(writes))
        await gate.wait()
        await write(writes, *rest)

    monkeypatch.setattr(store, "write", held)
    return gate, sizes


async def start_in_order(nursery, *fns) -> None:
    """Start each call once the previous one is parked (so they queue in this order)."""
    for fn in fns:
        nursery.start_soon(fn)
        await trio.testing.wait_all_tasks_blocked()


async def test_commands_queued_behind_a_commit_share_the_next_commit(
    runtime, kind, store, monkeypatch
):
    gate, sizes = gated_writes(store, monkeypatch)
    replies: list[int] = []

    async def add(tag: str) -> None:
        replies.append(await runtime.call(kind, "k", Add(1, tag)))

    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            await start_in_order(callers, *(lambda t=t: add(t) for t in "abcdef"))
            assert sizes == [2]  # "a" is committing; the other five wait in the mailbox
            gate.set()
    assert sorted(replies) == [1, 2, 3, 4, 5, 6]
    assert sizes == [2, 10]  # one commit for the five queued commands
    assert [tag for _, tag, _ in await runtime.read(lambda c: log(c, "k"))] == list("abcdef")


async def test_a_read_in_a_group_wakes_for_a_later_change_of_the_group(
    runtime, kind, store, monkeypatch, autojump_clock
):
    gate, sizes = gated_writes(store, monkeypatch)
    got: list[int] = []

    async def poll() -> None:
        got.append(await runtime.poll(kind, "k", Get(), ready=lambda v: v >= 2, timeout=60))

    with trio.fail_after(120):
        async with trio.open_nursery() as callers:
            start = trio.current_time()
            await start_in_order(
                callers,
                lambda: runtime.call(kind, "k", Add(1)),  # committing
                poll,  # queued: reads 1, not ready
                lambda: runtime.call(kind, "k", Add(1)),  # queued after it: makes 2
            )
            gate.set()
    assert got == [2]
    assert trio.current_time() == start  # woken by the group's commit, not the timeout
    # The group's commit answered the poll too: the later change of its group ran its
    # command again right after it (`agora.runtime.polls`), so no re-run of its own.
    assert sizes == [2, 2]
    assert (runtime.polls.answered, runtime.polls.rerun) == (1, 0)


async def test_a_failed_group_commit_fails_every_command_of_the_group(
    runtime, kind, store, monkeypatch
):
    gate, _ = gated_writes(store, monkeypatch)
    outcomes: dict[int, object] = {}

    async def add(n: int, delta: int) -> None:
        try:
            outcomes[n] = await runtime.call(kind, "k", Add(delta))
        except InternalError as exc:
            outcomes[n] = str(exc)

    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            await start_in_order(callers, lambda: add(0, 1), lambda: add(1, 1), lambda: add(2, -5))
            gate.set()
    failed = "internal error; nothing was changed"  # a CHECK no retry can pass: a bug
    # -5 breaks the CHECK: its group commits nothing
    assert outcomes == {0: 1, 1: failed, 2: failed}
    assert await runtime.read(lambda c: stored(c, "k")) == 1
    assert await runtime.call(kind, "k", Get()) == 1  # reloaded from the store


@pytest.mark.parametrize(
    ("error", "said"),
    [
        pytest.param(RuntimeError, "internal error", id="a-bug"),
        pytest.param(ToolError, "refused: boom", id="a-tool-error"),  # the refusal it is
    ],
)
async def test_a_handle_that_raises_in_a_group_fails_alone(
    runtime, kind, store, monkeypatch, caplog, error, said
):
    gate, _ = gated_writes(store, monkeypatch)
    outcomes: dict[str, object] = {}

    async def run(name: str, command) -> None:
        try:
            outcomes[name] = await runtime.call(kind, "k", command)
        except InternalError:
            outcomes[name] = "internal error"
        except ToolError as exc:
            outcomes[name] = f"refused: {exc.text}"

    with trio.fail_after(5), caplog.at_level(logging.ERROR):
        async with trio.open_nursery() as callers:
            await start_in_order(
                callers,
                lambda: run("a", Add(1, "a")),
                lambda: run("b", Add(1, "b")),
                lambda: run("x", Explode(error)),  # mutates +1000, then raises
                lambda: run("c", Add(1, "c")),  # runs on the reloaded entity
            )
            gate.set()
    assert outcomes == {"a": 1, "b": 2, "x": said, "c": 3}
    assert [tag for _, tag, _ in await runtime.read(lambda c: log(c, "k"))] == list("abc")
    assert await runtime.read(lambda c: stored(c, "k")) == 3
    assert ("failed on Explode" in caplog.text) is (error is not ToolError)  # a refusal: no bug


@pytest.mark.parametrize("count", [pytest.param(40, id="more-than-a-group")])
async def test_a_group_is_bounded_and_the_rest_follow(runtime, kind, store, monkeypatch, count):
    gate, sizes = gated_writes(store, monkeypatch)

    async def add() -> None:
        await runtime.call(kind, "k", Add(1))

    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            await start_in_order(callers, *([add] * count))
            gate.set()
    assert await runtime.read(lambda c: stored(c, "k")) == count
    assert sum(sizes) == 2 * count
    assert max(sizes) == 2 * 32  # MAX_GROUP commands of two statements each


class Ticking(FakeWall):
    """A wall clock one second later at every reading."""

    def now(self):
        self.advance(1)
        return self.current


async def test_a_group_reads_the_clock_once_for_all_its_commands(store, nursery, monkeypatch):
    runtime = Runtime(store, nursery, clock=Clock(Ticking()), idle_seconds=IDLE, mailbox=8)
    kind = CounterKind()
    gate, sizes = gated_writes(store, monkeypatch)
    seen: dict[str, object] = {}

    async def when(name: str) -> None:
        seen[name] = (await runtime.call(kind, "k", When())).wall

    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as callers:
                await start_in_order(
                    callers,
                    lambda: runtime.call(kind, "k", Add(1)),  # committing
                    lambda: when("a"),  # the group queued behind it
                    lambda: runtime.call(kind, "k", Add(1)),
                    lambda: when("b"),
                )
                gate.set()
        assert sizes == [2, 2]
        # One reading, not one per command: they ran back to back, in one step.
        assert seen["a"] == seen["b"]
        await when("after")
        assert seen["after"] > seen["a"]  # a later command reads the clock again
    finally:
        runtime.begin_shutdown()
