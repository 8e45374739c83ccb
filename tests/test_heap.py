"""The server's collector policy (`agora.server.heap`): bounded generations, and the
survivors of each middle or full collection frozen so the next one scans only what is new."""

from __future__ import annotations

import gc
import weakref
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from agora.server import heap
from agora.server.heap import HeapKeeper

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture
def keeper() -> Iterator[HeapKeeper]:
    installed = HeapKeeper()
    installed.install()
    try:
        yield installed
    finally:
        installed.remove()


class Node:
    """A tracked object that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def test_install_freezes_the_heap_and_bounds_the_generations(keeper: HeapKeeper):
    assert gc.get_threshold() == (heap.YOUNG, heap.MIDDLE, heap.OLD)
    assert gc.get_freeze_count() > 0
    assert keeper._collected in gc.callbacks


def test_remove_gives_the_collector_back():
    before = gc.get_threshold()
    keeper = HeapKeeper()
    keeper.install()
    keeper.remove()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert keeper._collected not in gc.callbacks


@pytest.mark.parametrize("generation", [1, 2])
def test_the_survivors_of_a_middle_or_full_collection_are_frozen(
    keeper: HeapKeeper, generation: int
):
    survivors = [Node() for _ in range(1000)]
    assert not keeper.freeze_if_collected()  # no collection yet: nothing to do
    frozen = gc.get_freeze_count()
    gc.collect(0)
    assert not keeper.freeze_if_collected()  # a young collection leaves the old alone
    gc.collect(generation)
    assert keeper.collections == 1
    assert keeper.freeze_if_collected()
    assert gc.get_freeze_count() >= frozen + len(survivors)
    assert not keeper.freeze_if_collected()
    # Garbage made since is still found: only what survived is out of the collector's reach.
    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b
    assert gc.collect() >= 2


async def test_run_freezes_within_a_check_interval(
    keeper: HeapKeeper, autojump_clock: trio.testing.MockClock
):
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper.run)
        gc.collect()
        frozen = gc.get_freeze_count()
        await trio.sleep(heap.CHECK_SECONDS * 1.5)
        assert keeper.freezes >= 1
        assert gc.get_freeze_count() >= frozen
        nursery.cancel_scope.cancel()


def test_a_cycle_that_died_frozen_is_freed_by_the_thaw(keeper: HeapKeeper):
    a, b = Node(), Node()
    a.other, b.other = b, a
    gc.collect(1)
    assert keeper.freeze_if_collected()  # the live cycle is frozen with the survivors
    probe = weakref.ref(a)
    del a, b
    gc.collect()
    assert probe() is not None  # dead, but frozen: out of the collector's reach
    assert keeper.thaw() >= 2
    assert probe() is None
    assert gc.get_freeze_count() > 0  # what is alive is frozen again


async def test_run_thaws_every_thaw_interval(
    keeper: HeapKeeper, autojump_clock: trio.testing.MockClock
):
    async with trio.open_nursery() as nursery:
        nursery.start_soon(keeper.run)
        await trio.sleep(heap.THAW_SECONDS - heap.CHECK_SECONDS / 2)
        assert keeper.thaws == 0
        await trio.sleep(heap.CHECK_SECONDS)
        assert keeper.thaws == 1
        nursery.cancel_scope.cancel()
