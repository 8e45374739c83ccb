"""Digit locks: a number (submit_number), a bolt dial (submit_bolt), a master key (submit_master).

``number``: a three-digit number fixed by arithmetic properties (range, divisibility,
remainders, digit sums and comparisons). ``dial``: four pins of 1-6 fixed by scored trial
settings (in place / misplaced, as in Mastermind) and properties; a dial may also refer to a
number an earlier lock of the room established (a position in an order, a count in a
sequence). ``master``: the five cut depths (1-5) of a master key, from cylinder pin charts
(each pin takes its door's own depth or the master's) and keys that agree with the master
at a stated number of pins. All are brute-forced at generation time. Pure: randomness only
from the `rng` passed in.
"""

from __future__ import annotations

import functools
import itertools
import operator
import random
from typing import TYPE_CHECKING

from agora.toolsets.chamber.constraints import Clue, Space, select_clues
from agora.toolsets.chamber.lock import COUNTS, ORDINALS, LockPuzzle, LockSpec
from agora.toolsets.chamber.values import ValueFormat

if TYPE_CHECKING:
    from collections.abc import Sequence

Code = tuple[int, ...]
_PLACES = ("hundreds", "tens", "units")

NUMBERS: Space[int] = Space(tuple(range(100, 1000)))


def _num_digits(x: int) -> tuple[int, int, int]:
    return x // 100, x // 10 % 10, x % 10


def _divisible(x: int, k: int, yes: bool) -> bool:
    return (x % k == 0) == yes


def _remainder(x: int, k: int, r: int) -> bool:
    return x % k == r


def _digit_total(x: int, total: int) -> bool:
    return sum(_num_digits(x)) == total


def _digit_gt(x: int, i: int, j: int) -> bool:
    d = _num_digits(x)
    return d[i] > d[j]


def _digit_odd(x: int, i: int, odd: bool) -> bool:
    return (_num_digits(x)[i] % 2 == 1) == odd


def _distinct(x: int, yes: bool) -> bool:
    return (len(set(_num_digits(x))) == 3) == yes


def _number_pool(rng: random.Random, t: int) -> list[Clue]:
    sp = NUMBERS
    lo = max(99, t - rng.randint(20, 300))
    hi = min(1000, t + rng.randint(20, 300))
    window = ((1 << (hi - 100)) - 1) & ~((1 << (lo + 1 - 100)) - 1)
    pool = [Clue(f"It is greater than {lo} and less than {hi}.", window)]
    for k in range(2, 14):
        yes = t % k == 0
        pool.append(sp.clue(f"It is {'' if yes else 'not '}divisible by {k}.", _divisible, k, yes))
        if not yes and k >= 7:
            text = f"Divided by {k}, it leaves a remainder of {t % k}."
            pool.append(sp.clue(text, _remainder, k, t % k))
    d = _num_digits(t)
    pool.append(sp.clue(f"Its digits add up to {sum(d)}.", _digit_total, sum(d)))
    for i, j in itertools.permutations(range(3), 2):
        if d[i] > d[j]:
            text = f"Its {_PLACES[i]} digit is larger than its {_PLACES[j]} digit."
            pool.append(sp.clue(text, _digit_gt, i, j))
    for i in range(3):
        odd = d[i] % 2 == 1
        text = f"Its {_PLACES[i]} digit is {'odd' if odd else 'even'}."
        pool.append(sp.clue(text, _digit_odd, i, odd))
    distinct = len(set(d)) == 3
    text = "All three of its digits differ." if distinct else "Some digit of it repeats."
    pool.append(sp.clue(text, _distinct, distinct))
    return pool


def make_number(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a number lock: a three-digit number described by its properties.

    Args:
        rng: The room's random source.
        spec: The template's lock description.

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    t = rng.randrange(100, 1000)
    clues = select_clues(rng, NUMBERS, t, _number_pool(rng, t), min_clues=3, max_clues=7)
    if clues is None:
        return None
    d = _num_digits(t)
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("number", low=100, high=999),
        answer=(str(t),),
        clues=tuple(c.text for c in clues),
        hints=(
            f"Its hundreds digit is {d[0]}.",
            f"Its hundreds digit is {d[0]} and its units digit is {d[2]}.",
        ),
        forms=(str(t),),
    )


@functools.cache
def _codes(length: int, low: int, high: int) -> Space[Code]:
    return Space(tuple(itertools.product(range(low, high + 1), repeat=length)))


@functools.cache
def _histogram(code: Code) -> tuple[int, ...]:
    return tuple(code.count(v) for v in range(10))


def score(guess: Code, code: Code) -> tuple[int, int]:
    """Mastermind score of ``guess`` against ``code``: (in place, right but misplaced)."""
    exact = sum(map(operator.eq, guess, code))
    common = sum(map(min, _histogram(guess), _histogram(code)))
    return exact, common - exact


def dashed(code: Sequence[int]) -> str:
    """``(3, 5, 1, 2)`` -> ``3-5-1-2``."""
    return "-".join(map(str, code))


def _pin_is(x: Code, pin: int, depth: int) -> bool:
    return x[pin] == depth


def _code_sum(x: Code, total: int) -> bool:
    return sum(x) == total


def _pin_gt(x: Code, i: int, j: int, yes: bool) -> bool:
    return (x[i] > x[j]) == yes


def _never(x: Code, depth: int) -> bool:
    return depth not in x


def _agreements(sp: Space[Code], key: Code, count: int) -> int:
    """Mask of codes that equal ``key`` at exactly ``count`` pins (a DP over pins)."""
    exactly = [sp.full] + [0] * len(key)
    for pin, depth in enumerate(key):
        same = sp.where(_pin_is, pin, depth)
        exactly = [
            (exactly[j] & ~same) | ((exactly[j - 1] & same) if j else 0)
            for j in range(len(exactly))
        ]
    return exactly[count]


@functools.cache
def _scored(guess: Code) -> dict[tuple[int, int], int]:
    """Mask of the dial codes that give each score against ``guess`` (one pass, cached)."""
    masks: dict[tuple[int, int], int] = {}
    for i, code in enumerate(_codes(4, 1, 6).values):
        key = score(guess, code)
        masks[key] = masks.get(key, 0) | 1 << i
    return masks


#: The trial settings a dial's scratch marks are drawn from (fixed, so their masks cache).
_TRIALS: tuple[Code, ...] = tuple(random.Random(6).sample(_codes(4, 1, 6).values, 256))
#: A trial's score in words ("none in place and two misplaced").
_SCORES = ("none", *COUNTS[1:])


def _dial_pool(rng: random.Random, t: Code, facts: Sequence[tuple[str, int]]) -> list[Clue]:
    sp = _codes(4, 1, 6)
    pool: list[Clue] = []
    for guess in rng.sample(_TRIALS, 24):
        if guess == t:
            continue
        b, w = score(guess, t)
        text = f"Setting {dashed(guess)} gave {_SCORES[b]} in place and {_SCORES[w]} misplaced."
        pool.append(Clue(text, _scored(guess)[b, w]))
    total = sum(t)
    pool.append(sp.clue(f"The pins add up to {total}.", _code_sum, total))
    for i, j in itertools.combinations(range(4), 2):
        if t[i] != t[j]:
            up = t[i] > t[j]
            text = f"Pin {i + 1} is set {'higher' if up else 'lower'} than pin {j + 1}."
            pool.append(sp.clue(text, _pin_gt, i, j, up))
    for what, value in facts:
        pool += [
            sp.clue(f"Pin {i + 1} equals the {what}.", _pin_is, i, value)
            for i in range(4)
            if t[i] == value
        ]
    return pool


def make_dial(
    rng: random.Random, spec: LockSpec, facts: Sequence[tuple[str, int]] = ()
) -> LockPuzzle | None:
    """Generate a bolt dial: four pins set 1-6, from scored trials and properties.

    Args:
        rng: The room's random source.
        spec: The template's lock description.
        facts: Numbers earlier locks of the room established, which clues may cite.

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    usable = [(w, v) for w, v in facts if 1 <= v <= 6]
    t: Code = tuple(rng.randint(1, 6) for _ in range(4))
    if usable and rng.random() < 0.7:
        _, value = rng.choice(usable)
        i = rng.randrange(4)
        t = (*t[:i], value, *t[i + 1 :])
    pool = _dial_pool(rng, t, usable)
    clues = select_clues(rng, _codes(4, 1, 6), t, pool, min_clues=3, max_clues=8)
    if clues is None:
        return None
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("digits", length=4, low=1, high=6),
        answer=tuple(map(str, t)),
        clues=tuple(c.text for c in clues),
        hints=(f"Pin 1 is set to {t[0]}.", f"Pin 1 is set to {t[0]} and pin 2 to {t[1]}."),
        forms=_code_forms(t),
    )


def _code_forms(t: Code) -> tuple[str, ...]:
    return tuple(sep.join(map(str, t)) for sep in ("", "-", " ", ", ", ","))


def _door(sp: Space[Code], rng: random.Random, door: str, noun: str, t: Code) -> list[Clue]:
    key: Code = tuple(rng.randint(1, 5) for _ in t)
    parts = []
    chart = sp.full
    for p in sorted(rng.sample(range(len(t)), rng.randint(2, 3))):
        low, high = sorted((key[p], t[p]))
        parts.append(
            f"pin {p + 1} takes {low} only" if low == high else f"pin {p + 1} takes {low} or {high}"
        )
        chart &= sp.where(_pin_is, p, low) | sp.where(_pin_is, p, high)
    agree = sum(map(operator.eq, key, t))
    plural = "" if agree == 1 else "s"
    return [
        Clue(f"The {door} {noun}: " + ", ".join(parts) + ".", chart),
        Clue(
            f"The {door} key is cut {dashed(key)} and agrees with the master at exactly "
            f"{COUNTS[agree]} pin{plural}.",
            _agreements(sp, key, agree),
        ),
    ]


def _master_pool(rng: random.Random, doors: Sequence[str], noun: str, t: Code) -> list[Clue]:
    sp = _codes(5, 1, 5)
    pool: list[Clue] = []
    for door in doors:
        pool += _door(sp, rng, door, noun, t)
    total = sum(t)
    pool.append(sp.clue(f"The master's depths add up to {total}.", _code_sum, total))
    pool += [
        sp.clue(f"The master is never cut to depth {depth}.", _never, depth)
        for depth in range(1, 6)
        if depth not in t
    ]
    for i, j in itertools.combinations(range(5), 2):
        if t[i] != t[j]:
            up = t[i] > t[j]
            way = "deeper" if up else "shallower"
            text = f"On the master, pin {i + 1} is cut {way} than pin {j + 1}."
            pool.append(sp.clue(text, _pin_gt, i, j, up))
    return pool


def make_master(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a master-key lock: five depths 1-5 from pin charts and keys of several doors.

    Args:
        rng: The room's random source.
        spec: The template's lock description (``pool``: door names, ``noun``: what the
            chart describes, e.g. ``cylinder``).

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    t: Code = tuple(rng.randint(1, 5) for _ in range(5))
    doors = rng.sample(spec.pool, spec.size)
    pool = _master_pool(rng, doors, spec.noun, t)
    clues = select_clues(rng, _codes(5, 1, 5), t, pool, min_clues=3, max_clues=9)
    if clues is None:
        return None
    a, b = rng.sample(range(5), 2)
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("digits", length=5, low=1, high=5),
        answer=tuple(map(str, t)),
        clues=tuple(c.text for c in clues),
        hints=(
            f"The master's {ORDINALS[a]} pin is cut to depth {t[a]}.",
            f"The master's {ORDINALS[a]} pin is cut to depth {t[a]} and its {ORDINALS[b]} "
            f"pin to depth {t[b]}.",
        ),
        forms=_code_forms(t),
    )
