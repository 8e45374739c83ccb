"""A change answers the long-polls it wakes in its own turn (`agora.runtime.polls`).

A parked poll's command runs right after the change that concerns it, in the same turn and
the same transaction; its reply comes straight from the actor after that one commit. Each
test parks a `Look` (which records a ``looked`` row once the counter reaches its need, as a
wait records its check) and drives changes at it: one commit for both, the reply held until
the commit is done, a failed commit saving neither, a not-ready look left parked without
re-running, a second change queued behind the first not seen by the look, a look that
raises failing alone, and a poll cancelled while its look commits. Inline ``:memory:``
store, autojump clock where time matters.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing
from _counter import Add, Get, Look, Tagged, log, stored

from agora.errors import StoreError
from agora.runtime.actor import Actor, InternalError

pytestmark = pytest.mark.sqlite_only(
    "only an unguarded store folds a poll into the change that wakes it; a guarded one "
    "re-runs the poll under its own version guard"
)


def gated_writes(store, monkeypatch, fail: Exception | None = None) -> trio.Event:
    """Hold every write of statements until the returned event is set; with ``fail``, the
    first held write raises it instead of committing (the later ones go through)."""
    gate = trio.Event()
    write = store.write
    failures = [fail] if fail is not None else []

    async def held(writes, *rest):
        if not writes:  # a read-only reply: nothing to commit
            return
        await gate.wait()
        if failures:
            raise failures.pop()
        await write(writes, *rest)

    monkeypatch.setattr(store, "write", held)
    return gate


class Submits:
    """Counts the commands the runtime hands to actors (a poll's re-runs among them): each
    one runs inline in its caller's task or is posted to the actor's mailbox."""

    def __init__(self, runtime, monkeypatch) -> None:
        self.count = 0
        run_inline, mailbox = Actor.run_inline, Actor.mailbox

        async def inline(actor, *args):
            self.count += 1
            return await run_inline(actor, *args)

        def posted(actor):
            self.count += 1
            return mailbox(actor)

        monkeypatch.setattr(Actor, "run_inline", inline)
        monkeypatch.setattr(Actor, "mailbox", posted)


async def parked(runtime, kind, nursery, results, look=None, key="me", key_of="k"):
    """Start a poll of ``look`` keyed ``key``; return once it is parked."""

    look = look or Look(1)

    async def poll() -> None:
        try:
            results.append(
                await runtime.poll(
                    kind, key_of, look, ready=lambda v: v >= look.need, timeout=50, wait_key=key
                )
            )
        except Exception as exc:
            results.append(exc)

    nursery.start_soon(poll)
    await trio.testing.wait_all_tasks_blocked()


async def test_a_change_and_the_poll_it_satisfies_commit_in_one_transaction(
    runtime, kind, store, monkeypatch
):
    submits, results = Submits(runtime, monkeypatch), []
    await runtime.call(kind, "k", Tagged(("other",)))  # loaded, value 1: Look(2) waits
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await parked(runtime, kind, nursery, results, Look(2))
            before = store.counters()
            assert await runtime.call(kind, "k", Tagged(("me",))) == 2
    after = store.counters()
    assert results == [2]
    assert (after["commits"], after["commands"]) == (before["commits"] + 1, before["commands"] + 1)
    assert submits.count == 3  # the first change, the first look, the second change
    assert await runtime.read(lambda c: log(c, "k")) == [
        (1, "tagged", 1),
        (2, "tagged", 2),
        (3, "looked", 2),
    ]


async def test_the_polls_reply_waits_for_the_commit_of_its_writes(
    runtime, kind, store, monkeypatch
):
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    gate = gated_writes(store, monkeypatch)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await parked(runtime, kind, nursery, results)
            nursery.start_soon(runtime.call, kind, "k", Tagged(("me",)))
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # the change and the look are one write, held at the gate
            assert await runtime.read(lambda c: log(c, "k")) == []
            gate.set()
            await trio.testing.wait_all_tasks_blocked()
            assert results == [1]
            # Durable before the reply was handed over (read back, committed).
            assert await runtime.read(lambda c: log(c, "k")) == [
                (1, "tagged", 1),
                (2, "looked", 1),
            ]


async def test_a_failed_commit_fails_the_change_and_the_poll_and_saves_neither(
    runtime, kind, store, monkeypatch, caplog
):
    caplog.set_level(logging.CRITICAL)
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    gate = gated_writes(store, monkeypatch, StoreError("disk says no"))
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await parked(runtime, kind, nursery, results)
            gate.set()
            with pytest.raises(InternalError, match="nothing was changed"):
                await runtime.call(kind, "k", Tagged(("me",)))
            await trio.testing.wait_all_tasks_blocked()
    assert len(results) == 1
    assert isinstance(results[0], InternalError)
    assert await runtime.read(lambda c: (stored(c, "k"), log(c, "k"))) == (None, [])
    assert await runtime.call(kind, "k", Get()) == 0  # memory reloaded from the store


async def test_a_poll_not_ready_after_the_change_stays_parked_without_re_running(
    runtime, kind, store, monkeypatch, autojump_clock
):
    submits, results = Submits(runtime, monkeypatch), []
    await runtime.call(kind, "k", Get())
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await parked(runtime, kind, nursery, results, Look(3))
            for _ in range(2):
                await runtime.call(kind, "k", Tagged(("me",)))
                await trio.testing.wait_all_tasks_blocked()
                assert results == []
            assert submits.count == 4  # Get, the look, two changes: no re-run submitted
            await runtime.call(kind, "k", Tagged(("me",)))
    assert results == [3]
    assert submits.count == 5
    assert [row[1] for row in await runtime.read(lambda c: log(c, "k"))] == [
        "tagged",
        "tagged",
        "tagged",
        "looked",
    ]


async def test_a_change_queued_behind_the_waking_one_comes_after_the_polls_look(
    runtime, kind, store, monkeypatch
):
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    gate = gated_writes(store, monkeypatch)
    replies: list[int] = []

    async def change(tag: str) -> None:
        replies.append(await runtime.call(kind, "k", Add(1, tag)))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await parked(runtime, kind, nursery, results, key=None)
            nursery.start_soon(change, "first")  # inline: its commit is held at the gate
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(change, "second")  # queues in the mailbox meanwhile
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
    assert results == [1]  # the look saw the first change alone
    assert replies == [1, 2]
    assert await runtime.read(lambda c: log(c, "k")) == [
        (1, "first", 1),
        (2, "looked", 1),
        (3, "second", 2),
    ]


async def test_a_poll_whose_command_raises_fails_alone_and_the_change_stands(runtime, kind, caplog):
    caplog.set_level(logging.CRITICAL)
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await parked(runtime, kind, nursery, results, Look(1, explode=True))
            assert await runtime.call(kind, "k", Tagged(("me",))) == 1
            await trio.testing.wait_all_tasks_blocked()
    assert len(results) == 1
    assert isinstance(results[0], InternalError)
    assert await runtime.read(lambda c: log(c, "k")) == [(1, "tagged", 1)]
    assert await runtime.call(kind, "k", Get()) == 1


async def test_a_poll_cancelled_while_its_look_commits_leaves_the_change_whole(
    runtime, kind, store, monkeypatch
):
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    gate = gated_writes(store, monkeypatch)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            async with trio.open_nursery() as polls:
                await parked(runtime, kind, polls, results)
                nursery.start_soon(runtime.call, kind, "k", Tagged(("me",)))
                await trio.testing.wait_all_tasks_blocked()
                polls.cancel_scope.cancel()  # the poll leaves while its look is committing
            gate.set()
    assert results == []
    assert [row[1] for row in await runtime.read(lambda c: log(c, "k"))] == ["tagged", "looked"]
    assert runtime.registry.get(kind, "k").parked == {}


async def test_a_change_queued_behind_a_polls_first_look_answers_it_in_the_same_group(
    runtime, kind, store, monkeypatch
):
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    gate = gated_writes(store, monkeypatch)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.call, kind, "k", Add(1, "first"))  # held at the gate
            await trio.testing.wait_all_tasks_blocked()
            await parked(runtime, kind, nursery, results, Look(2))  # its look queues
            nursery.start_soon(runtime.call, kind, "k", Tagged(("me",)))  # queues behind it
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
    assert results == [2]
    assert (runtime.polls.answered, runtime.polls.rerun) == (1, 0)  # it never parked
    assert await runtime.read(lambda c: log(c, "k")) == [
        (1, "first", 1),
        (2, "tagged", 2),
        (3, "looked", 2),
    ]


async def test_a_change_in_the_group_for_another_key_leaves_the_look_as_it_was(
    runtime, kind, store, monkeypatch, autojump_clock
):
    results: list[object] = []
    await runtime.call(kind, "k", Get())
    gate = gated_writes(store, monkeypatch)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.call, kind, "k", Add(1, "first"))
            await trio.testing.wait_all_tasks_blocked()
            await parked(runtime, kind, nursery, results, Look(2))
            nursery.start_soon(runtime.call, kind, "k", Tagged(("other",)))
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # value 2 now, but nothing told the look: it waits
            assert runtime.polls.answered == 0
            await runtime.call(kind, "k", Tagged(("me",)))
    assert results == [3]
    assert runtime.polls.answered == 1
