"""An entity kind's optional ``create(key, now)``: a known-new entity is used without a load."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from _counter import Add, CounterKind

from agora.runtime.entity import Effects


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


async def test_a_created_entity_is_used_without_reading_the_store(runtime):
    kind = FreshKind(new={"made"})
    assert await runtime.call(kind, "made", Add(2)) == 2
    assert await runtime.call(kind, "made", Add(3)) == 5  # the same entity, still in memory
    assert kind.loads == []
    # A key the kind does not know is new is loaded as before.
    assert await runtime.call(kind, "stored", Add(1)) == 1
    assert kind.loads == ["stored"]
