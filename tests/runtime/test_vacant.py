"""Looking up a key nothing was created under leaves no actor behind.

An actor cost ~7 KB and stayed `actor_idle_seconds` (300 s) after its last command, so a
client asking for made-up keys (a chess page for a table that does not exist, a chamber
handle it invented) could hold memory without bound and without a token. An actor whose
entity is not loaded (its load raised `LookupError`) or says it is ``vacant`` is dropped as
soon as it is idle; one with queued commands or parked long-polls is kept, so commands on a
key still run one at a time in arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import trio
import trio.testing
from _counter import Add, Counter, CounterKind, Get

from agora.runtime.entity import Effects


@dataclass
class Sparse(Counter):
    """A counter that says it is vacant until something was written for it."""

    @property
    def vacant(self) -> bool:
        return self.seq == 0


@dataclass
class SparseKind(CounterKind):
    """Counters whose missing keys load as vacant `Sparse` entities; keys in ``new`` are
    made by ``create``, without a load (as the chamber makes the handles it draws)."""

    kind: str = "sparse_counter"
    new: set[str] = field(default_factory=set)

    def create(self, key: str, now: object) -> Sparse | None:
        if key in self.new:
            self.new.discard(key)
            return Sparse(key)
        return None

    def load(self, conn, key, now):  # type: ignore[no-untyped-def]
        counter = super().load(conn, key, now)
        return Sparse(counter.key, counter.value, counter.seq)


@pytest.fixture
def sparse() -> SparseKind:
    return SparseKind()


@pytest.fixture
def held_read(store, monkeypatch) -> tuple[trio.Event, trio.Event]:
    """(reading, read): the store's reads wait for ``read`` once ``reading`` is set."""
    reading, read = trio.Event(), trio.Event()
    original = store.read

    async def held(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        reading.set()
        await read.wait()
        return await original(fn, *args, **kwargs)

    monkeypatch.setattr(store, "read", held)
    return reading, read


async def test_lookups_of_missing_keys_leave_no_actor(runtime, kind, sparse):
    with trio.fail_after(10):
        for i in range(50):
            assert await runtime.call(sparse, f"nobody-{i}", Get()) == 0
            with pytest.raises(LookupError):  # a load that finds nothing and says so
                await runtime.call(kind, f"missing-{i}", Get())
    assert len(runtime.registry) == 0
    assert runtime.registry.spawned == 100


async def test_a_command_that_creates_the_entity_keeps_its_actor(runtime, sparse):
    assert await runtime.call(sparse, "made", Add(2)) == 2
    assert len(runtime.registry) == 1
    assert await runtime.call(sparse, "made", Get()) == 2
    assert sparse.loads == ["made"]  # still in memory: no second load


async def test_an_entity_without_the_attribute_stays_resident(runtime, kind):
    assert await runtime.call(kind, "plain", Get()) == 0
    assert len(runtime.registry) == 1  # evicted by the reaper once idle, as before


async def test_commands_queued_on_a_vacant_actor_run_in_order_before_it_goes(
    runtime, sparse, held_read
):
    # The first lookup loads (held); the others queue behind it on the same actor. The
    # first caller's answer must not drop the actor under the queued ones.
    reading, read = held_read
    replies: list[tuple[int, int]] = []

    async def call(i: int, command: Get | Add) -> None:
        replies.append((i, await runtime.call(sparse, "late", command)))

    with trio.fail_after(10):
        async with trio.open_nursery() as callers:
            callers.start_soon(call, 0, Get())
            await reading.wait()
            for i, command in enumerate([Get(), Add(5), Get()], start=1):
                callers.start_soon(call, i, command)
                await trio.testing.wait_all_tasks_blocked()
            read.set()
    assert sorted(replies) == [(0, 0), (1, 0), (2, 5), (3, 5)]
    assert sparse.loads == ["late"]
    assert len(runtime.registry) == 1  # the Add made it: resident

    with trio.fail_after(10):
        async with trio.open_nursery() as callers:
            for i in range(4):
                callers.start_soon(call, 10 + i, Get())  # "late" is loaded: inline, in order
    assert len(runtime.registry) == 1


async def test_a_long_poll_keeps_a_vacant_actor_and_wakes_when_the_key_is_made(
    runtime, sparse, autojump_clock
):
    answer: list[int] = []

    async def wait() -> None:
        answer.append(await runtime.poll(sparse, "soon", Get(), ready=bool, timeout=60))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        assert (len(runtime.registry), runtime.registry.parked()) == (1, 1)
        assert await runtime.call(sparse, "soon", Get()) == 0  # a lookup meanwhile...
        assert len(runtime.registry) == 1  # ...leaves the parked poll its actor
        assert await runtime.call(sparse, "soon", Add(3)) == 3
    assert answer == [3]
    assert len(runtime.registry) == 1


async def test_a_long_poll_that_times_out_on_a_vacant_key_leaves_no_actor(
    runtime, sparse, autojump_clock
):
    assert await runtime.poll(sparse, "never", Get(), ready=bool, timeout=5) == 0
    assert trio.current_time() == 5
    assert len(runtime.registry) == 0


async def test_a_poll_whose_actor_was_dropped_before_it_parked_runs_again(runtime, sparse):
    # Another caller of the key may drop the idle vacant actor after a poll's reply is in
    # and before the poll parks (both queued on it; the other caller resumed first). Here
    # the poll's own `ready` drops it at that moment. The dropped actor says it changed, so
    # the poll runs its command again on a fresh actor and parks there, where the change
    # that makes the key reaches it, instead of sleeping on an actor nobody signals.
    # Made by `create`, the actor runs its commands inline and has no task whose end
    # would signal it.
    sparse.new.add("k")
    registry = runtime.registry
    dropped: list[bool] = []
    answer: list[int] = []

    def ready(value: int) -> bool:
        if not dropped:
            actor = registry.current(sparse, "k")
            assert actor is not None
            registry.settle(actor)
            dropped.append(registry.current(sparse, "k") is None)
        return value > 0

    async def wait() -> None:
        answer.append(await runtime.poll(sparse, "k", Get(), ready=ready, timeout=60))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            assert dropped == [True]
            assert (len(registry), registry.parked()) == (1, 1)
            assert await runtime.call(sparse, "k", Add(1)) == 1
    assert answer == [1]


async def test_an_effects_reply_exception_on_a_vacant_key_still_drops_it(runtime):
    # A refusal (an exception reply, as chess answers a missing table) is a lookup too.
    @dataclass
    class Refusing:
        vacant: bool = True

        def handle(self, command: object, now: object) -> Effects:
            return Effects(reply=KeyError("no such thing"))

    @dataclass
    class RefusingKind:
        kind: str = "refusing"

        def load(self, conn, key, now):  # type: ignore[no-untyped-def]
            return Refusing()

    for i in range(10):
        with pytest.raises(KeyError):
            await runtime.call(RefusingKind(), f"x{i}", Get())
    assert len(runtime.registry) == 0


async def test_a_lookup_cancelled_while_queued_leaves_no_actor(runtime, sparse, held_read):
    # Its command still runs (unanswered) after its caller left: the actor's task drops the
    # actor once it is idle, as the caller would have.
    reading, read = held_read
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runtime.call, sparse, "gone", Get())
            await reading.wait()
            nursery.cancel_scope.cancel()
        assert len(runtime.registry) == 1  # its load is still held
        read.set()
        await trio.testing.wait_all_tasks_blocked()
    assert len(runtime.registry) == 0
