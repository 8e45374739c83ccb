"""Assignment locks: a sequence with repeats (submit_sequence) and sorting into bins (submit_bins).

In both, each position (sequence) or each name (bins) takes one value from a small alphabet,
repeats allowed, so the space is alphabet ** length (about a thousand to a few thousand
candidates). Clues count, compare and relate positions or names; outright assignments are kept
for last. Pure: no I/O, randomness only from the `random.Random` passed in.
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

from agora.toolsets.chamber.constraints import Clue, Space, select_clues
from agora.toolsets.chamber.lock import (
    COUNTS,
    ORDINALS,
    TIMES,
    LockPuzzle,
    LockSpec,
    cap,
    list_forms,
)
from agora.toolsets.chamber.values import ValueFormat

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

Word = tuple[int, ...]


@functools.cache
def _space(alphabet: int, length: int) -> Space[Word]:
    return Space(tuple(itertools.product(range(alphabet), repeat=length)))


def _first(w: Word, s: int) -> int:
    return w.index(s) if s in w else len(w)


def _follows(w: Word, s: int, u: int, yes: bool) -> bool:
    return any(x == s and y == u for x, y in itertools.pairwise(w)) == yes


def _repeats(w: Word, yes: bool) -> bool:
    return any(x == y for x, y in itertools.pairwise(w)) == yes


def _is(w: Word, i: int, s: int, yes: bool) -> bool:
    return (w[i] == s) == yes


def _same(w: Word, i: int, j: int, yes: bool) -> bool:
    return (w[i] == w[j]) == yes


def _count(w: Word, s: int, c: int) -> bool:
    return w.count(s) == c


def _first_before(w: Word, s: int, u: int) -> bool:
    return s in w and u in w and _first(w, s) < _first(w, u)


def _more(w: Word, s: int, u: int) -> bool:
    return w.count(s) > w.count(u)


def _alone(w: Word, a: int, yes: bool) -> bool:
    return (w.count(w[a]) == 1) == yes


def _positions(sp: Space[Word], sym: Sequence[str], t: Word) -> list[Clue]:
    pool: list[Clue] = []
    for i, s in itertools.product(range(len(t)), range(len(sym))):
        if t[i] == s:
            pool.append(sp.direct(f"The {ORDINALS[i]} one is {cap(sym[s])}.", _is, i, s, True))
        else:
            text = f"The {ORDINALS[i]} one is not {cap(sym[s])}."
            pool.append(sp.clue(text, _is, i, s, False))
    for i, j in itertools.combinations(range(len(t)), 2):
        same = t[i] == t[j]
        text = (
            f"The {ORDINALS[i]} and {ORDINALS[j]} ones are {'the same' if same else 'different'}."
        )
        pool.append(sp.clue(text, _same, i, j, same))
    return pool


def _sequence_pool(sym: Sequence[str], t: Word) -> list[Clue]:
    sp = _space(len(sym), len(t))
    pool = _positions(sp, sym, t)
    for s in range(len(sym)):
        c = t.count(s)
        text = f"{cap(sym[s])} never appears." if c == 0 else f"{cap(sym[s])} appears {TIMES[c]}."
        pool.append(sp.clue(text, _count, s, c))
    for s, u in itertools.permutations(range(len(sym)), 2):
        S, U = cap(sym[s]), cap(sym[u])
        if _first_before(t, s, u):
            # Says that both appear: read as written, "the first S comes before the first U"
            # also allows sequences with no U at all, and the answer would not be the only one.
            text = f"Both {S} and {U} appear, and the first {S} comes before the first {U}."
            pool.append(sp.clue(text, _first_before, s, u))
        if _more(t, s, u):
            pool.append(sp.clue(f"{S} appears more often than {U}.", _more, s, u))
        if _follows(t, s, u, True):
            text = f"Somewhere, {S} is immediately followed by {U}."
            pool.append(sp.clue(text, _follows, s, u, True))
        else:
            text = f"{S} is never immediately followed by {U}."
            pool.append(sp.clue(text, _follows, s, u, False))
    rep = _repeats(t, True)
    text = "Some two neighbours are the same." if rep else "No two neighbours are the same."
    pool.append(sp.clue(text, _repeats, rep))
    return pool


def make_sequence(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a sequence lock: ``spec.size`` values from the alphabet ``spec.slots``.

    Args:
        rng: The room's random source.
        spec: The template's lock description.

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    sym, n = spec.slots, spec.size
    target: Word = tuple(rng.randrange(len(sym)) for _ in range(n))
    if len(set(target)) < 3:
        return None
    pool = _sequence_pool(sym, target)
    clues = select_clues(rng, _space(len(sym), n), target, pool, min_clues=4)
    if clues is None:
        return None
    answer = tuple(sym[s] for s in target)
    i, j, k = rng.sample(range(n), 3)
    hints = (
        f"The {ORDINALS[i]} one is {cap(answer[i])}.",
        f"The {ORDINALS[j]} one is {cap(answer[j])} and the {ORDINALS[k]} one is {cap(answer[k])}.",
    )
    facts = tuple((f"count of {s} in {spec.label}", target.count(i)) for i, s in enumerate(sym))
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("sequence", items=sym, length=n),
        answer=answer,
        clues=tuple(c.text for c in clues),
        hints=hints,
        forms=list_forms(answer),
        facts=facts,
    )


def _pieces(k: int) -> str:
    return "nothing" if k == 0 else f"exactly {COUNTS[k]} piece" + ("s" if k > 1 else "")


def _each(
    sp: Space[Word], name: str, a: int, bins: Sequence[str], noun: str, t: Word
) -> list[Clue]:
    A = cap(name)
    pool: list[Clue] = []
    for b, bin_ in enumerate(bins):
        if t[a] == b:
            pool.append(sp.direct(f"{A} goes in the {bin_} {noun}.", _is, a, b, True))
        else:
            pool.append(sp.clue(f"{A} does not go in the {bin_} {noun}.", _is, a, b, False))
    alone = _alone(t, a, True)
    text = f"{A} is alone in its {noun}." if alone else f"{A} shares its {noun}."
    pool.append(sp.clue(text, _alone, a, alone))
    return pool


def _bins_pool(names: Sequence[str], bins: Sequence[str], noun: str, t: Word) -> list[Clue]:
    sp = _space(len(bins), len(names))
    pool: list[Clue] = []
    for a, name in enumerate(names):
        pool += _each(sp, name, a, bins, noun, t)
    for a, b in itertools.combinations(range(len(names)), 2):
        same = t[a] == t[b]
        where = f"the same {noun}" if same else f"different {noun}s"
        pool.append(
            sp.clue(f"{cap(names[a])} and {cap(names[b])} go in {where}.", _same, a, b, same)
        )
    for b, bin_ in enumerate(bins):
        k = t.count(b)
        pool.append(sp.clue(f"The {bin_} {noun} holds {_pieces(k)}.", _count, b, k))
    for b, c in itertools.permutations(range(len(bins)), 2):
        if _more(t, b, c):
            text = f"The {bins[b]} {noun} holds more pieces than the {bins[c]} {noun}."
            pool.append(sp.clue(text, _more, b, c))
    return pool


def make_bins(rng: random.Random, spec: LockSpec) -> LockPuzzle | None:
    """Generate a bins lock: sort ``spec.size`` names into the bins ``spec.slots``.

    Args:
        rng: The room's random source.
        spec: The template's lock description (``spec.noun`` names the container).

    Returns:
        The puzzle, or None if this draw did not give a good clue set.
    """
    names = tuple(rng.sample(spec.pool, spec.size))
    bins = spec.slots
    target: Word = tuple(rng.randrange(len(bins)) for _ in names)
    if len(set(target)) < len(bins):
        return None
    pool = _bins_pool(names, bins, spec.noun, target)
    clues = select_clues(rng, _space(len(bins), len(names)), target, pool, min_clues=4)
    if clues is None:
        return None
    answer = tuple(bins[b] for b in target)
    a = rng.randrange(len(names))
    b = rng.randrange(len(bins))
    inside = ", ".join(cap(n) for i, n in enumerate(names) if target[i] == b)
    hints = (
        f"{cap(names[a])} goes in the {bins[target[a]]} {spec.noun}.",
        f"The {bins[b]} {spec.noun} holds exactly: {inside}.",
    )
    pairs = tuple(f"{n}={b}" for n, b in zip(names, answer, strict=True))
    sizes = tuple((f"size of the {b} {spec.noun}", target.count(i)) for i, b in enumerate(bins))
    return LockPuzzle(
        spec=spec,
        fmt=ValueFormat("bins", items=names, slots=bins),
        answer=answer,
        clues=tuple(c.text for c in clues),
        hints=hints,
        forms=list_forms(pairs),
        facts=sizes,
    )
