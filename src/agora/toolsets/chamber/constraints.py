"""Choosing clues for a generated lock so that exactly one answer survives.

A lock kind enumerates its whole answer space (at most a few thousand values) as a `Space`,
draws a target, and writes a pool of clues that are all true of the target. Each clue
carries the bitmask of the candidates it allows, so checking a set of clues is a brute force
over the whole space done with a few integer ANDs. `select_clues` keeps a random subset that
cuts the space down to the target alone, then prunes it to a minimal set: drop any clue and
a second answer appears. Minimality is what makes a lock need every object its clues are
spread over. Masks of the same statement are cached per space, so generating many rooms
stays cheap. This module is pure: no I/O, no clocks, randomness only from the
`random.Random` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Hashable, Sequence

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Clue:
    """One true statement about the answer.

    Attributes:
        text: The sentence an agent reads (one line, ends with a period).
        mask: Bit ``i`` is set iff candidate ``i`` of the space satisfies the statement.
        direct: A statement that pins part of the answer outright; used only when the
            indirect clues cannot finish the job.
    """

    text: str
    mask: int
    direct: bool = False


@dataclass(eq=False)
class Space(Generic[T]):
    """An enumerated answer space with cached statement masks.

    Attributes:
        values: Every candidate answer, in a fixed order.
    """

    values: tuple[T, ...]
    _index: dict[T, int] = field(init=False, repr=False)
    _cache: dict[Hashable, int] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._index = {v: i for i, v in enumerate(self.values)}

    @property
    def full(self) -> int:
        """The mask of every candidate."""
        return (1 << len(self.values)) - 1

    def bit(self, value: T) -> int:
        """The mask of the single candidate ``value``."""
        return 1 << self._index[value]

    def where(self, test: Callable[..., bool], *args: Hashable) -> int:
        """The mask of candidates ``x`` with ``test(x, *args)``, cached per test and args.

        Args:
            test: A module-level predicate (its identity is part of the cache key).
            *args: The statement's parameters (name indices, numbers, ...).

        Returns:
            The mask.
        """
        key = (test, args)
        mask = self._cache.get(key)
        if mask is None:
            mask = 0
            for i, value in enumerate(self.values):
                if test(value, *args):
                    mask |= 1 << i
            self._cache[key] = mask
        return mask

    def clue(self, text: str, test: Callable[..., bool], *args: Hashable) -> Clue:
        """An indirect clue whose mask is ``where(test, *args)``."""
        return Clue(text, self.where(test, *args))

    def direct(self, text: str, test: Callable[..., bool], *args: Hashable) -> Clue:
        """A direct clue (pins part of the answer) whose mask is ``where(test, *args)``."""
        return Clue(text, self.where(test, *args), direct=True)

    def survivors(self, masks: Sequence[int]) -> list[T]:
        """Every candidate allowed by all ``masks`` (the brute-force check)."""
        alive = self.full
        for mask in masks:
            alive &= mask
        return [v for i, v in enumerate(self.values) if alive >> i & 1]


def _greedy(full: int, goal: int, pool: Sequence[Clue]) -> tuple[list[Clue], int]:
    chosen: list[Clue] = []
    alive = full
    for clue in pool:
        if alive == goal:
            break
        narrowed = alive & clue.mask
        if narrowed != alive:
            chosen.append(clue)
            alive = narrowed
    return chosen, alive


def _prune(rng: random.Random, full: int, goal: int, chosen: list[Clue]) -> list[Clue]:
    kept = list(chosen)
    order = list(range(len(chosen)))
    rng.shuffle(order)
    for i in order:
        others = full
        for clue in kept:
            if clue is not chosen[i]:
                others &= clue.mask
        if others == goal:
            kept.remove(chosen[i])
    return kept


def select_clues(
    rng: random.Random,
    space: Space[T],
    target: T,
    pool: Sequence[Clue],
    *,
    min_clues: int = 2,
    max_clues: int = 9,
) -> list[Clue] | None:
    """Pick a minimal set of clues from ``pool`` whose only common answer is ``target``.

    Args:
        rng: The lock's deterministic random source.
        space: The whole answer space.
        target: The answer; every clue in ``pool`` must be true of it.
        pool: Candidate clues; indirect ones are tried first, in random order.
        min_clues: Fewer clues than this is too easy a lock: None.
        max_clues: More clues than this is too long to read: None.

    Returns:
        The clues in a random order, or None when the pool cannot single out the target
        within the bounds (the caller draws again).

    Raises:
        ValueError: if a clue of the pool is false of the target.
    """
    goal = space.bit(target)
    if any(not clue.mask & goal for clue in pool):
        raise ValueError("a clue in the pool is false of the target")
    indirect = [c for c in pool if not c.direct]
    direct = [c for c in pool if c.direct]
    rng.shuffle(indirect)
    rng.shuffle(direct)
    chosen, alive = _greedy(space.full, goal, indirect + direct)
    if alive != goal:
        return None
    kept = _prune(rng, space.full, goal, chosen)
    alive = space.full
    for clue in kept:
        alive &= clue.mask
    if alive != goal:  # pragma: no cover - the brute-force check; pruning preserves it
        raise AssertionError("clue selection lost uniqueness")
    if not min_clues <= len(kept) <= max_clues:
        return None
    rng.shuffle(kept)
    return kept


def split_among(
    rng: random.Random, clues: Sequence[str], holders: Sequence[str]
) -> dict[str, list[str]]:
    """Deal ``clues`` over ``holders`` so that every holder gets at least one.

    Args:
        rng: The room's deterministic random source.
        clues: Clue sentences; there must be at least as many as holders.
        holders: Object ids that will carry the clues.

    Returns:
        Holder -> its clue sentences, in the order dealt.

    Raises:
        ValueError: if there are fewer clues than holders.
    """
    if len(clues) < len(holders):
        raise ValueError("fewer clues than objects to carry them")
    shuffled = list(clues)
    rng.shuffle(shuffled)
    dealt: dict[str, list[str]] = {h: [shuffled[i]] for i, h in enumerate(holders)}
    for text in shuffled[len(holders) :]:
        dealt[rng.choice(list(holders))].append(text)
    return dealt
