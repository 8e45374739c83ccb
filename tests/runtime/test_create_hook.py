"""An entity kind's optional ``create(key, now)``: a known-new entity is used without a load."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing
from _counter import IDLE, Add, CounterKind

from agora.runtime.clock import Clock, FakeWall, Now
from agora.runtime.entity import Effects
from agora.runtime.registry import Runtime

pytestmark = pytest.mark.sqlite_only(
    "these kinds' create hook is asked on an unguarded store only; a guarded store asks only "
    "kinds with create_on_shared (test_guarded.py, shared_file/test_shared_runtime.py)"
)


@dataclass
class Fresh:
    """An entity no store row backs yet."""

    value: int = 0

    def handle(self, command: Any, now: Any) -> Effects:
        self.value += command.delta
        return Effects(reply=self.value)


@dataclass
class FreshKind(CounterKind):
    """Counters whose keys in ``new`` are created in memory (`CounterKind` counts loads)."""

    new: set[str] = field(default_factory=set)
    kind: str = "fresh_counter"

    def create(self, key: str, now: Any) -> Fresh | None:
        if key in self.new:
            self.new.discard(key)
            return Fresh()
        return None


@pytest.fixture
def held_commit(store, monkeypatch) -> tuple[trio.Event, trio.Event]:
    """(committing, commit): the store's writes wait for ``commit`` once ``committing`` is set."""
    committing, commit = trio.Event(), trio.Event()
    write = store.write

    async def held(writes, *args):
        committing.set()
        await commit.wait()
        await write(writes, *args)

    monkeypatch.setattr(store, "write", held)
    return committing, commit


async def test_a_created_entity_is_used_without_reading_the_store(runtime):
    kind = FreshKind(new={"made"})
    assert await runtime.call(kind, "made", Add(2)) == 2
    assert await runtime.call(kind, "made", Add(3)) == 5  # the same entity, still in memory
    assert kind.loads == []
    # A key the kind does not know is new is loaded as before.
    assert await runtime.call(kind, "stored", Add(1)) == 1
    assert kind.loads == ["stored"]


async def test_an_actor_whose_first_command_ran_inline_is_still_evicted_when_idle(
    runtime, autojump_clock, held_commit
):
    # Its task starts while the inline command awaits the commit and parks on the mailbox:
    # the actor is idle from then on, and the reaper must see it so.
    kind = FreshKind(new={"made"})
    committing, commit = held_commit
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.call, kind, "made", Add(1))
        with trio.fail_after(5):
            await committing.wait()
        await trio.testing.wait_all_tasks_blocked()  # the actor's task is parked meanwhile
        commit.set()
    assert len(runtime.registry) == 1
    await trio.sleep(IDLE * 2)
    assert len(runtime.registry) == 0
    assert await runtime.call(kind, "made", Add(1)) == 1  # never stored: Fresh keeps no row


async def test_the_first_command_on_a_created_entity_runs_in_the_callers_task(runtime, monkeypatch):
    # No trip through the new actor's mailbox: the entity is known new, so nothing is loaded
    # and the caller runs the command under the actor's turn, as for any free loaded actor.
    kind = FreshKind(new={"made"})
    ran_in: list[trio.lowlevel.Task] = []
    handle = Fresh.handle

    def spy(self, command, now):
        ran_in.append(trio.lowlevel.current_task())
        return handle(self, command, now)

    monkeypatch.setattr(Fresh, "handle", spy)
    assert await runtime.call(kind, "made", Add(2)) == 2
    assert ran_in == [trio.lowlevel.current_task()]
    assert runtime.registry.get(kind, "made").handled == 1


def _actor_tasks() -> list[str]:
    """The names of the live actor tasks of `FreshKind` (every task of the run, walked)."""
    found, tasks = [], [trio.lowlevel.current_root_task()]
    while tasks:
        task = tasks.pop()
        if task.name.startswith("fresh_counter:"):
            found.append(task.name)
        tasks.extend(child for n in task.child_nurseries for child in n.child_tasks)
    return found


async def test_an_actor_whose_commands_all_run_inline_never_starts_a_task(runtime, nursery):
    # Entering the chamber makes one new actor per attempt: its task, mailbox and their
    # scheduling were a fifth of an entry's event-loop time, for commands that never queue.
    kind = FreshKind(new={f"k{i}" for i in range(50)})
    for i in range(50):
        assert await runtime.call(kind, f"k{i}", Add(1)) == 1
    assert await runtime.call(kind, "k0", Add(1)) == 2
    assert len(runtime.registry) == 50
    assert _actor_tasks() == []


async def test_a_command_that_must_queue_starts_the_task_and_runs_after_the_inline_one(
    runtime, nursery, held_commit
):
    kind = FreshKind(new={"made"})
    committing, commit = held_commit
    replies: list[int] = []

    async def call(delta: int) -> None:
        replies.append(await runtime.call(kind, "made", Add(delta)))

    with trio.fail_after(5):
        async with trio.open_nursery() as callers:
            callers.start_soon(call, 1)
            await committing.wait()
            assert _actor_tasks() == []  # the first command runs in its caller's task
            callers.start_soon(call, 10)
            await trio.testing.wait_all_tasks_blocked()
            assert _actor_tasks() == ["fresh_counter:made"]  # the second had to queue
            commit.set()
    assert replies == [1, 11]


async def test_an_idle_actor_without_a_task_is_evicted(runtime, nursery, autojump_clock):
    kind = FreshKind(new={"made"})
    assert await runtime.call(kind, "made", Add(1)) == 1
    assert len(runtime.registry) == 1
    await trio.sleep(IDLE * 2)
    assert len(runtime.registry) == 0
    assert _actor_tasks() == []


async def test_a_stopped_runtime_runs_no_command_not_even_an_inline_one(store):
    from agora.errors import ActorStopped
    from agora.runtime.registry import Runtime

    kind = FreshKind(new={"made", "late"})
    async with trio.open_nursery() as actors:
        runtime = Runtime(store, actors, idle_seconds=IDLE)
        assert await runtime.call(kind, "made", Add(1)) == 1
        actors.cancel_scope.cancel()
        with pytest.raises(ActorStopped):
            await runtime.call(kind, "late", Add(1))
    assert "late" in kind.new  # nothing was created for it


@dataclass
class Readings(Clock):
    """A clock that keeps every reading it gives."""

    given: list[Now] = field(default_factory=list)

    def now(self) -> Now:
        reading = super().now()
        self.given.append(reading)
        return reading


@dataclass
class Stamped:
    """An entity that remembers the readings it was made and handled at."""

    made: Now
    handled: list[Now] = field(default_factory=list)

    def handle(self, command: Any, now: Now) -> Effects:
        self.handled.append(now)
        return Effects(reply=self)


@dataclass
class StampedKind(CounterKind):
    kind: str = "stamped"

    def create(self, key: str, now: Now) -> Stamped:
        return Stamped(now)


async def test_a_created_entitys_first_command_reads_the_clock_once(store, nursery):
    clock = Readings(FakeWall())
    runtime = Runtime(store, nursery, clock=clock, idle_seconds=IDLE)
    kind = StampedKind()
    entity = await runtime.call(kind, "a", Add(1))
    assert clock.given == [entity.made]
    assert entity.handled == [entity.made]
    clock.wall_source.advance(5)
    await runtime.call(kind, "a", Add(1))  # loaded already: a reading of its own
    assert len(clock.given) == 2
    assert entity.handled == clock.given
    assert entity.handled[1].wall > entity.made.wall
    runtime.begin_shutdown()
