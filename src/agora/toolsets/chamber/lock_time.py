"""Time locks (``submit_time``): a time pinned down by properties, or reckoned from a faulty clock.

``time_window``: the answer is a minute of the day (1440 candidates) described only by its
properties: a window, divisibility of the minutes, parity of the hour, digit sums,
comparisons. ``time_chain``: a clock that runs fast or slow read some time at an event;
later events follow at stated intervals; the lock opens an interval after the last. When
the clock's error has no stated direction, one extra property tells the two readings apart.
Uniqueness is brute-forced over all 1440 minutes. Pure: randomness only from the `rng` passed in.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from agora.toolsets.chamber.constraints import Clue, Space, select_clues
from agora.toolsets.chamber.lock import LockPuzzle, LockSpec, clock, duration
from agora.toolsets.chamber.values import ValueFormat

if TYPE_CHECKING:
    import random

DAY: Space[int] = Space(tuple(range(1440)))
_MULTIPLES = (2, 3, 4, 5, 6, 10, 15)


def _after(lo: int) -> int:
    return DAY.full & ~((1 << (lo + 1)) - 1)


def _before(hi: int) -> int:
    return (1 << hi) - 1


def _digits(t: int) -> tuple[int, int, int, int]:
    h, m = divmod(t, 60)
    return h // 10, h % 10, m // 10, m % 10


def _multiple(x: int, k: int, yes: bool) -> bool:
    return (x % 60 % k == 0) == yes


def _odd_hour(x: int, odd: int) -> bool:
    return x // 60 % 2 == odd


def _digit_sum(x: int, total: int) -> bool:
    return sum(_digits(x)) == total


def _minutes_vs_hour(x: int, sign: int) -> bool:
    m, h = x % 60, x // 60
    return (m > h) - (m < h) == sign


def _twin_minutes(x: int, yes: bool) -> bool:
    return (x % 60 // 10 == x % 60 % 10) == yes


def _afternoon(x: int, yes: bool) -> bool:
    return (x >= 720) == yes


def _property_pool(rng: random.Random, t: int) -> list[Clue]:
    h, m = divmod(t, 60)
    pool: list[Clue] = []
    lo = max(0, t - rng.randint(30, 300))
    hi = min(1439, t + rng.randint(30, 300))
    if lo < t:
        pool.append(Clue(f"It is after {clock(lo)}.", _after(lo)))
    if t < hi:
        pool.append(Clue(f"It is before {clock(hi)}.", _before(hi)))
    for k in _MULTIPLES:
        yes = m % k == 0
        text = f"The minutes are {'' if yes else 'not '}a multiple of {k}."
        pool.append(DAY.clue(text, _multiple, k, yes))
    pool.append(DAY.clue(f"The hour is {'odd' if h % 2 else 'even'}.", _odd_hour, h % 2))
    total = sum(_digits(t))
    pool.append(DAY.clue(f"The four digits add up to {total}.", _digit_sum, total))
    if m != h:
        text = f"The minutes are {'greater' if m > h else 'less'} than the hour."
        pool.append(DAY.clue(text, _minutes_vs_hour, 1 if m > h else -1))
    same = _twin_minutes(t, True)
    text = "The two minute digits are the same." if same else "The two minute digits differ."
    pool.append(DAY.clue(text, _twin_minutes, same))
    pm = t >= 720
    pool.append(DAY.clue("It is noon or later." if pm else "It is before noon.", _afternoon, pm))
    return pool


def _hints(t: int) -> tuple[str, str]:
    h, m = divmod(t, 60)
    lo = m // 10 * 10
    return (
        f"The hour is {h}.",
        f"The hour is {h} and the minutes are between {lo} and {lo + 9}.",
    )


def make_time_window(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a time lock described only by properties of the time.

    Args:
        rng: The room's random source.
        spec: The template's lock description.

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    t = rng.randrange(1440)
    clues = select_clues(rng, DAY, t, _property_pool(rng, t), min_clues=3, max_clues=7)
    if clues is None:
        return None
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("time"),
        answer=(clock(t),),
        clues=tuple(c.text for c in clues),
        hints=_hints(t),
        forms=(clock(t),),
    )


def make_time_chain(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a time lock reckoned from a faulty clock and a chain of intervals.

    Args:
        rng: The room's random source.
        spec: The template's lock description (``noun``: the clock, ``events``: 2 or more
            event names in order).

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    events = spec.events[: rng.randint(2, len(spec.events))]
    start = rng.randrange(1440)
    error = rng.randint(3, 29) * rng.choice((1, -1))
    texts: list[str] = []
    stated = rng.random() < 0.5
    if stated:
        way = "fast" if error > 0 else "slow"
        texts.append(f"The {spec.noun} runs {abs(error)} minutes {way}.")
    else:
        texts.append(
            f"The {spec.noun} is {abs(error)} minutes off; nobody noted whether fast or slow."
        )
    # (24-hour: read as a 12-hour face, 05:16 could be 17:16, and the chain two answers)
    texts.append(
        f"The {spec.noun} (a 24-hour clock) read {clock(start + error)} at the {events[0]}."
    )
    when = start
    for prev, event in itertools.pairwise(events):
        step = rng.randint(15, 200)
        if rng.random() < 0.2:
            texts.append(f"The {event} came {duration(step)} before the {prev}.")
            when -= step
        else:
            texts.append(f"The {event} came {duration(step)} after the {prev}.")
            when += step
    last = rng.randint(5, 120)
    texts.append(f"It opens {duration(last)} after the {events[-1]}.")
    t = (when + last) % 1440
    # The chain itself allows one time, or two when the error's direction is unknown.
    masks = [DAY.bit(t)]
    if not stated:
        other = (t + 2 * error) % 1440
        masks = [DAY.bit(t) | DAY.bit(other)]
        split = [c for c in _property_pool(rng, t) if not c.mask & DAY.bit(other)]
        if not split:
            return None
        tell = rng.choice(split)
        masks.append(tell.mask)
        texts.append(tell.text)
    if DAY.survivors(masks) != [t]:
        return None
    h0 = clock(start)
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("time"),
        answer=(clock(t),),
        clues=tuple(texts),
        hints=(
            f"First find when the {events[0]} really happened: undo the {spec.noun}'s error.",
            f"The {events[0]} really happened at {h0}.",
        ),
        forms=(clock(t),),
    )
