"""A refusal that `Runtime.call` raises leaves no reference cycle behind. The exception's
traceback holds the frames it passed through; a frame that still held the exception (through
the command's slot) made a cycle, which the server's collector policy freezes with whatever
survived the collection (`agora.server.heap`) and keeps until its thaw, minutes later."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from _counter import Add, Refuse

from agora.runtime.entity import Effects
from cycles import refusals_and_garbage

if TYPE_CHECKING:
    from agora.runtime.clock import Now


async def test_a_refusal_raised_by_call_leaves_no_cycle(runtime, kind):
    await runtime.call(kind, "c1", Add(1))  # loaded: the refusals below run inline
    refused, left = await refusals_and_garbage(
        lambda: runtime.call(kind, "c1", Refuse()), ValueError
    )
    assert refused == 20
    assert not left & {"ValueError", "Slot", "traceback", "frame"}


class Rejected(Exception):
    """A business refusal raised inside the entity, returned as its reply."""


@dataclass
class Strict:
    """An entity that refuses every command the way the toolsets do: raise, catch, reply."""

    def handle(self, command: object, now: Now) -> Effects:
        try:
            raise Rejected("no")
        except Rejected as err:
            return Effects(reply=err)


@dataclass
class StrictKind:
    kind: str = "strict"

    def load(self, conn: object, key: str, now: Now) -> Strict:
        return Strict()


async def test_a_refusal_raised_and_caught_in_the_entity_leaves_no_cycle(runtime):
    kind = StrictKind()
    refused, left = await refusals_and_garbage(
        lambda: runtime.call(kind, "s1", "anything"), Rejected
    )
    assert refused == 20
    assert not left & {"Rejected", "Effects", "traceback", "frame"}
