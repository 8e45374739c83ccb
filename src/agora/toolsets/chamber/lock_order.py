"""Permutation locks: an order of names (submit_order) and a 2x3 placement (submit_placement).

Both answers are permutations. A candidate is the tuple of positions (order) or slots
(placement) of each name; the clue pool is every true relational statement about the target
(before, next to, between, directly above, same row, ...), with outright positions kept for
last. `constraints.select_clues` keeps a minimal subset with exactly one survivor. Pure: no
I/O, randomness only from the `random.Random` passed in.
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

from agora.toolsets.chamber.constraints import Clue, Space, select_clues
from agora.toolsets.chamber.lock import COUNTS, ORDINALS, LockPuzzle, LockSpec, cap, list_forms
from agora.toolsets.chamber.values import ValueFormat

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

Pos = tuple[int, ...]

SLOTS = ("top-left", "top-middle", "top-right", "bottom-left", "bottom-middle", "bottom-right")
_ROWS = ("top", "bottom")
_COLS = ("left", "middle", "right")


@functools.cache
def _space(n: int) -> Space[Pos]:
    """Every assignment of ``n`` names to ``n`` distinct positions."""
    return Space(tuple(itertools.permutations(range(n))))


# Statements as predicates over a candidate p (p[i] = position or slot of name i).
def _lt(p: Pos, a: int, b: int) -> bool:
    return p[a] < p[b]


def _next(p: Pos, a: int, b: int) -> bool:
    return p[b] == p[a] + 1


def _gap(p: Pos, a: int, b: int, gap: int) -> bool:
    return abs(p[a] - p[b]) - 1 == gap


def _far(p: Pos, a: int, b: int) -> bool:
    return abs(p[a] - p[b]) != 1


def _between(p: Pos, x: int, m: int, y: int) -> bool:
    return min(p[x], p[y]) < p[m] < max(p[x], p[y])


def _end(p: Pos, a: int, last: int, end: bool) -> bool:
    return (p[a] in (0, last)) == end


def _not_at(p: Pos, a: int, k: int) -> bool:
    return p[a] != k


def _at(p: Pos, a: int, k: int) -> bool:
    return p[a] == k


def _pairs(sp: Space[Pos], names: Sequence[str], t: Pos) -> list[Clue]:
    pool: list[Clue] = []
    for a, b in itertools.permutations(range(len(names)), 2):
        A, B = cap(names[a]), cap(names[b])
        if t[a] < t[b]:
            pool.append(sp.clue(f"{A} comes before {B}.", _lt, a, b))
        if t[b] == t[a] + 1:
            pool.append(sp.clue(f"{A} comes immediately before {B}.", _next, a, b))
        if a > b:
            continue
        gap = abs(t[a] - t[b]) - 1
        if gap == 0:
            pool.append(sp.clue(f"{A} and {B} are next to each other.", _gap, a, b, 0))
            continue
        pool.append(sp.clue(f"{A} and {B} are not next to each other.", _far, a, b))
        other = "other comes" if gap == 1 else "others come"
        text = f"Exactly {COUNTS[gap]} {other} between {A} and {B}."
        pool.append(sp.clue(text, _gap, a, b, gap))
    return pool


def _order_pool(names: Sequence[str], t: Pos) -> list[Clue]:
    n = len(names)
    sp = _space(n)
    last = n - 1
    pool = _pairs(sp, names, t)
    for a, b, c in itertools.combinations(range(n), 3):
        for x, m, y in ((a, b, c), (b, a, c), (a, c, b)):
            if _between(t, x, m, y):
                X, M, Y = cap(names[x]), cap(names[m]), cap(names[y])
                pool.append(sp.clue(f"{M} comes somewhere between {X} and {Y}.", _between, x, m, y))
    for a in range(n):
        A = cap(names[a])
        end = t[a] in (0, last)
        text = f"{A} is at one end." if end else f"{A} is at neither end."
        pool.append(sp.clue(text, _end, a, last, end))
        for k in range(n):
            if k != t[a]:
                pool.append(sp.clue(f"{A} is not {ORDINALS[k]}.", _not_at, a, k))
        pool.append(sp.direct(f"{A} is {ORDINALS[t[a]]}.", _at, a, t[a]))
    return pool


def make_order(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate an order lock: arrange ``spec.size`` names, earliest first.

    Args:
        rng: The room's random source.
        spec: The template's lock description (names drawn from ``spec.pool``).

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    n = spec.size
    names = tuple(rng.sample(spec.pool, n))
    target: Pos = tuple(rng.sample(range(n), n))
    clues = select_clues(rng, _space(n), target, _order_pool(names, target), min_clues=4)
    if clues is None:
        return None
    answer = tuple(sorted(names, key=lambda name: target[names.index(name)]))
    a, b, c = rng.sample(range(n), 3)
    hints = (
        f"{cap(names[a])} is {ORDINALS[target[a]]}.",
        f"{cap(names[b])} is {ORDINALS[target[b]]} and {cap(names[c])} is {ORDINALS[target[c]]}.",
    )
    facts = tuple(
        (f"position of {name} in {spec.label}", target[i] + 1) for i, name in enumerate(names)
    )
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("order", items=names),
        answer=answer,
        clues=tuple(c.text for c in clues),
        hints=hints,
        forms=list_forms(answer),
        facts=facts,
    )


def _row(s: int) -> int:
    return s // 3


def _col(s: int) -> int:
    return s % 3


def _in_row(p: Pos, a: int, r: int) -> bool:
    return _row(p[a]) == r


def _in_col(p: Pos, a: int, c: int, yes: bool) -> bool:
    return (_col(p[a]) == c) == yes


def _above(p: Pos, a: int, b: int) -> bool:
    return p[b] == p[a] + 3


def _left(p: Pos, a: int, b: int) -> bool:
    return _col(p[a]) < _col(p[b])


def _beside(p: Pos, a: int, b: int) -> bool:
    return _row(p[a]) == _row(p[b]) and abs(p[a] - p[b]) == 1


def _same_row(p: Pos, a: int, b: int, same: bool) -> bool:
    return (_row(p[a]) == _row(p[b])) == same


def _single(sp: Space[Pos], name: str, a: int, slot: int) -> list[Clue]:
    A = cap(name)
    r, c = _row(slot), _col(slot)
    pool = [
        sp.clue(f"{A} is on the {_ROWS[r]} row.", _in_row, a, r),
        sp.clue(f"{A} is in the {_COLS[c]} column.", _in_col, a, c, True),
    ]
    pool += [
        sp.clue(f"{A} is not in the {_COLS[o]} column.", _in_col, a, o, False)
        for o in range(3)
        if o != c
    ]
    if c == 1:
        pool.append(sp.clue(f"{A} is not in a corner.", _in_col, a, 1, True))
    else:
        pool.append(sp.clue(f"{A} is in a corner.", _in_col, a, 1, False))
    pool.append(sp.direct(f"{A} is at {SLOTS[slot]}.", _at, a, slot))
    return pool


def _placement_pool(names: Sequence[str], t: Pos) -> list[Clue]:
    sp = _space(len(SLOTS))
    pool: list[Clue] = []
    for a, name in enumerate(names):
        pool += _single(sp, name, a, t[a])
    for a, b in itertools.permutations(range(len(names)), 2):
        A, B = cap(names[a]), cap(names[b])
        if _above(t, a, b):
            pool.append(sp.clue(f"{A} is directly above {B}.", _above, a, b))
        if _left(t, a, b):
            pool.append(sp.clue(f"{A} is somewhere left of {B}.", _left, a, b))
        if a > b:
            continue
        if _beside(t, a, b):
            pool.append(sp.clue(f"{A} and {B} are side by side.", _beside, a, b))
        same = _row(t[a]) == _row(t[b])
        text = f"{A} and {B} are on {'the same row' if same else 'different rows'}."
        pool.append(sp.clue(text, _same_row, a, b, same))
    return pool


def make_placement(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a placement lock: six names on a board of two rows and three columns.

    Args:
        rng: The room's random source.
        spec: The template's lock description (names drawn from ``spec.pool``).

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    n = len(SLOTS)
    names = tuple(rng.sample(spec.pool, n))
    target: Pos = tuple(rng.sample(range(n), n))
    pool = _placement_pool(names, target)
    clues = select_clues(rng, _space(n), target, pool, min_clues=4)
    if clues is None:
        return None
    by_slot = {s: names[i] for i, s in enumerate(target)}
    answer = tuple(by_slot[s] for s in range(n))
    a = rng.randrange(n)
    row = rng.randrange(2)
    top = ", ".join(cap(by_slot[row * 3 + c]) for c in range(3))
    hints = (
        f"{cap(names[a])} is at {SLOTS[target[a]]}.",
        f"The {_ROWS[row]} row, left to right: {top}.",
    )
    pairs = tuple(f"{s}={name}" for s, name in zip(SLOTS, answer, strict=True))
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("placement", items=names, slots=SLOTS),
        answer=answer,
        clues=tuple(c.text for c in clues),
        hints=hints,
        forms=(*list_forms(answer), *list_forms(pairs)),
    )
