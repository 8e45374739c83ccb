"""Clue sentences as predicates: the English the chamber prints, parsed back into tests.

Each ``*_test`` turns one lower-cased clue sentence into a predicate over the solver's own
candidate representation (positions, symbol indices, digits, minutes of the day); anything
it cannot read raises `Unparsed`, so a change of wording fails loudly.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Candidate = Any
Test = Callable[[Candidate], bool]

ORD = {w: i for i, w in enumerate(("first", "second", "third", "fourth", "fifth", "sixth"))}
NUM = {w: i for i, w in enumerate(("no", "one", "two", "three", "four", "five", "six", "seven"))}
NUM["none"] = 0
TIMES = {"once": 1, "twice": 2, "three times": 3, "four times": 4, "five times": 5}
PLACE = {"hundreds": 0, "tens": 1, "units": 2}
SLOTS = ("top-left", "top-middle", "top-right", "bottom-left", "bottom-middle", "bottom-right")
COLS = {"left": 0, "middle": 1, "right": 2}


class Unparsed(ValueError):
    """A clue sentence the solver does not understand."""


@dataclass
class Format:
    """An answer space parsed from a format description."""

    kind: str
    names: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()
    length: int = 0
    low: int = 0
    high: int = 0


def name_index(fmt: Format) -> dict[str, int]:
    """Name -> its index in the format."""
    return {n: i for i, n in enumerate(fmt.names)}


def order_test(s: str, fmt: Format) -> Test:
    """Parse an order clue (candidate: tuple of positions by name index)."""
    ix = name_index(fmt)
    last = len(fmt.names) - 1
    if m := re.fullmatch(r"(\w+) comes before (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda p: p[a] < p[b]
    if m := re.fullmatch(r"(\w+) comes immediately before (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda p: p[b] == p[a] + 1
    if m := re.fullmatch(r"(\w+) and (\w+) are (not )?next to each other\.", s):
        a, b, neg = ix[m[1]], ix[m[2]], bool(m[3])
        return lambda p: (abs(p[a] - p[b]) == 1) != neg
    if m := re.fullmatch(r"exactly (\w+) others? comes? between (\w+) and (\w+)\.", s):
        k, a, b = NUM[m[1]], ix[m[2]], ix[m[3]]
        return lambda p: abs(p[a] - p[b]) - 1 == k
    if m := re.fullmatch(r"(\w+) comes somewhere between (\w+) and (\w+)\.", s):
        mid, x, y = ix[m[1]], ix[m[2]], ix[m[3]]
        return lambda p: min(p[x], p[y]) < p[mid] < max(p[x], p[y])
    if m := re.fullmatch(r"(\w+) is at (one|neither) end\.", s):
        a, one = ix[m[1]], m[2] == "one"
        return lambda p: (p[a] in (0, last)) == one
    if m := re.fullmatch(r"(\w+) is (not )?(\w+)\.", s):
        a, neg, k = ix[m[1]], bool(m[2]), ORD[m[3]]
        return lambda p: (p[a] == k) != neg
    raise Unparsed(s)


def placement_test(s: str, fmt: Format) -> Test:
    """Parse a placement clue (candidate: tuple of slot indices by name index)."""
    ix = name_index(fmt)
    if m := re.fullmatch(r"(\w+) is on the (top|bottom) row\.", s):
        a, r = ix[m[1]], (0 if m[2] == "top" else 1)
        return lambda p: p[a] // 3 == r
    if m := re.fullmatch(r"(\w+) is (not )?in the (left|middle|right) column\.", s):
        a, neg, c = ix[m[1]], bool(m[2]), COLS[m[3]]
        return lambda p: (p[a] % 3 == c) != neg
    if m := re.fullmatch(r"(\w+) is (not )?in a corner\.", s):
        a, neg = ix[m[1]], bool(m[2])
        return lambda p: (p[a] % 3 != 1) != neg
    if m := re.fullmatch(r"(\w+) is at ([a-z-]+)\.", s):
        a, slot = ix[m[1]], SLOTS.index(m[2])
        return lambda p: p[a] == slot
    if m := re.fullmatch(r"(\w+) is directly above (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda p: p[b] == p[a] + 3
    if m := re.fullmatch(r"(\w+) is somewhere left of (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda p: p[a] % 3 < p[b] % 3
    if m := re.fullmatch(r"(\w+) and (\w+) are side by side\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda p: p[a] // 3 == p[b] // 3 and abs(p[a] - p[b]) == 1
    if m := re.fullmatch(r"(\w+) and (\w+) are on (the same row|different rows)\.", s):
        a, b, same = ix[m[1]], ix[m[2]], m[3] == "the same row"
        return lambda p: (p[a] // 3 == p[b] // 3) == same
    raise Unparsed(s)


def _first(w: tuple[int, ...], s: int) -> int:
    return w.index(s) if s in w else len(w)


def sequence_test(s: str, fmt: Format) -> Test:
    """Parse a sequence clue (candidate: tuple of symbol indices)."""
    ix = name_index(fmt)
    if m := re.fullmatch(r"the (\w+) one is (not )?(\w+)\.", s):
        i, neg, v = ORD[m[1]], bool(m[2]), ix[m[3]]
        return lambda w: (w[i] == v) != neg
    if m := re.fullmatch(r"the (\w+) and (\w+) ones are (the same|different)\.", s):
        i, j, same = ORD[m[1]], ORD[m[2]], m[3] == "the same"
        return lambda w: (w[i] == w[j]) == same
    if m := re.fullmatch(r"(\w+) never appears\.", s):
        v = ix[m[1]]
        return lambda w: v not in w
    if m := re.fullmatch(r"(\w+) appears (once|twice|three times|four times|five times)\.", s):
        v, c = ix[m[1]], TIMES[m[2]]
        return lambda w: w.count(v) == c
    both = r"both (\w+) and (\w+) appear, and the first \1 comes before the first \2\."
    if m := re.fullmatch(both, s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda w: a in w and b in w and _first(w, a) < _first(w, b)
    if m := re.fullmatch(r"(\w+) appears more often than (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda w: w.count(a) > w.count(b)
    if m := re.fullmatch(r"somewhere, (\w+) is immediately followed by (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda w: any(x == a and y == b for x, y in itertools.pairwise(w))
    if m := re.fullmatch(r"(\w+) is never immediately followed by (\w+)\.", s):
        a, b = ix[m[1]], ix[m[2]]
        return lambda w: not any(x == a and y == b for x, y in itertools.pairwise(w))
    if m := re.fullmatch(r"(some|no) two neighbours are the same\.", s):
        some = m[1] == "some"
        return lambda w: any(x == y for x, y in itertools.pairwise(w)) == some
    raise Unparsed(s)


def bins_test(s: str, fmt: Format) -> Test:
    """Parse a bins clue (candidate: tuple of bin indices by name index)."""
    ix = name_index(fmt)
    bins = {b: i for i, b in enumerate(fmt.slots)}
    if m := re.fullmatch(r"(\w+) (goes|does not go) in the (\w+) \w+\.", s):
        a, yes, b = ix[m[1]], m[2] == "goes", bins[m[3]]
        return lambda w: (w[a] == b) == yes
    if m := re.fullmatch(r"(\w+) is alone in its \w+\.", s):
        a = ix[m[1]]
        return lambda w: w.count(w[a]) == 1
    if m := re.fullmatch(r"(\w+) shares its \w+\.", s):
        a = ix[m[1]]
        return lambda w: w.count(w[a]) > 1
    if m := re.fullmatch(r"(\w+) and (\w+) go in (the same|different) \w+\.", s):
        a, b, same = ix[m[1]], ix[m[2]], m[3] == "the same"
        return lambda w: (w[a] == w[b]) == same
    if m := re.fullmatch(r"the (\w+) \w+ holds exactly (\w+) pieces?\.", s):
        b, k = bins[m[1]], NUM[m[2]]
        return lambda w: w.count(b) == k
    if m := re.fullmatch(r"the (\w+) \w+ holds nothing\.", s):
        b = bins[m[1]]
        return lambda w: b not in w
    if m := re.fullmatch(r"the (\w+) \w+ holds more pieces than the (\w+) \w+\.", s):
        b, c = bins[m[1]], bins[m[2]]
        return lambda w: w.count(b) > w.count(c)
    raise Unparsed(s)


def _hm(text: str) -> int:
    h, m = text.split(":")
    return int(h) * 60 + int(m)


def _dur(text: str) -> int:
    m = re.fullmatch(r"(?:(\d+) hours?)? ?(?:(\d+) minutes?)?", text)
    if not m:
        raise Unparsed(text)
    return int(m[1] or 0) * 60 + int(m[2] or 0)


def time_property(s: str) -> Test:
    """Parse a property of a time of day (candidate: minute of the day)."""
    if m := re.fullmatch(r"it is after (\d\d:\d\d)\.", s):
        lo = _hm(m[1])
        return lambda x: x > lo
    if m := re.fullmatch(r"it is before (\d\d:\d\d)\.", s):
        hi = _hm(m[1])
        return lambda x: x < hi
    if m := re.fullmatch(r"the minutes are (not )?a multiple of (\d+)\.", s):
        neg, k = bool(m[1]), int(m[2])
        return lambda x: (x % 60 % k == 0) != neg
    if m := re.fullmatch(r"the hour is (odd|even)\.", s):
        odd = int(m[1] == "odd")
        return lambda x: x // 60 % 2 == odd
    if m := re.fullmatch(r"the four digits add up to (\d+)\.", s):
        total = int(m[1])
        return lambda x: sum(map(int, f"{x // 60:02d}{x % 60:02d}")) == total
    if m := re.fullmatch(r"the minutes are (greater|less) than the hour\.", s):
        gt = m[1] == "greater"
        return lambda x: (x % 60 > x // 60) if gt else (x % 60 < x // 60)
    if m := re.fullmatch(r"the two minute digits (are the same|differ)\.", s):
        same = m[1] == "are the same"
        return lambda x: (x % 60 // 10 == x % 60 % 10) == same
    if s == "it is noon or later.":
        return lambda x: x >= 720
    if s == "it is before noon.":
        return lambda x: x < 720
    raise Unparsed(s)


@dataclass
class Chain:
    """A faulty-clock chain: clock error(s), one reading, intervals, and when the lock opens."""

    errors: tuple[int, ...] = ()
    reading: tuple[int, str] | None = None
    steps: dict[str, tuple[str, int]] = field(default_factory=dict)
    opens: tuple[str, int] | None = None

    def read(self, s: str) -> bool:
        """Take in a chain sentence; False if ``s`` is not one."""
        if m := re.fullmatch(r"the .+ runs (\d+) minutes (fast|slow)\.", s):
            self.errors = (int(m[1]) if m[2] == "fast" else -int(m[1]),)
        elif m := re.fullmatch(
            r"the .+ is (\d+) minutes off; nobody noted whether fast or slow\.", s
        ):
            self.errors = (int(m[1]), -int(m[1]))
        elif m := re.fullmatch(r"the .+ read (\d\d:\d\d) at the (\w+)\.", s):
            self.reading = (_hm(m[1]), m[2])
        elif m := re.fullmatch(r"the (\w+) came (.+) (after|before) the (\w+)\.", s):
            self.steps[m[1]] = (m[4], _dur(m[2]) * (1 if m[3] == "after" else -1))
        elif m := re.fullmatch(r"it opens (.+) after the (\w+)\.", s):
            self.opens = (m[2], _dur(m[1]))
        else:
            return False
        return True

    def times(self) -> list[int]:
        """The opening time for each possible clock error."""
        if not self.errors or self.reading is None or self.opens is None:
            raise Unparsed("incomplete clock chain")
        found = []
        for error in self.errors:
            when = {self.reading[1]: self.reading[0] - error}
            pending = dict(self.steps)
            while pending:
                ready = [k for k, (base, _) in pending.items() if base in when]
                if not ready:
                    raise Unparsed("incomplete clock chain")
                for k in ready:
                    base, delta = pending.pop(k)
                    when[k] = when[base] + delta
            if self.opens[0] not in when:
                raise Unparsed("incomplete clock chain")
            found.append((when[self.opens[0]] + self.opens[1]) % 1440)
        return found


def solve_time(clues: list[str]) -> list[int]:
    """All times (minutes) the clues allow: a faulty-clock chain, properties, or both."""
    chain = Chain()
    tests = [time_property(s) for s in clues if not chain.read(s)]
    chained = chain.errors or chain.reading or chain.opens
    candidates: Iterable[int] = chain.times() if chained else range(1440)
    return [x for x in candidates if all(t(x) for t in tests)]


def number_test(s: str) -> Test:
    """Parse a property of a three-digit number."""

    def digits(x: int) -> tuple[int, int, int]:
        return x // 100, x // 10 % 10, x % 10

    if m := re.fullmatch(r"it is greater than (\d+) and less than (\d+)\.", s):
        lo, hi = int(m[1]), int(m[2])
        return lambda x: lo < x < hi
    if m := re.fullmatch(r"it is (not )?divisible by (\d+)\.", s):
        neg, k = bool(m[1]), int(m[2])
        return lambda x: (x % k == 0) != neg
    if m := re.fullmatch(r"divided by (\d+), it leaves a remainder of (\d+)\.", s):
        k, r = int(m[1]), int(m[2])
        return lambda x: x % k == r
    if m := re.fullmatch(r"its digits add up to (\d+)\.", s):
        total = int(m[1])
        return lambda x: sum(digits(x)) == total
    if m := re.fullmatch(r"its (\w+) digit is larger than its (\w+) digit\.", s):
        i, j = PLACE[m[1]], PLACE[m[2]]
        return lambda x: digits(x)[i] > digits(x)[j]
    if m := re.fullmatch(r"its (\w+) digit is (odd|even)\.", s):
        i, odd = PLACE[m[1]], m[2] == "odd"
        return lambda x: (digits(x)[i] % 2 == 1) == odd
    if s == "all three of its digits differ.":
        return lambda x: len(set(digits(x))) == 3
    if s == "some digit of it repeats.":
        return lambda x: len(set(digits(x))) < 3
    raise Unparsed(s)


def mastermind(guess: tuple[int, ...], code: tuple[int, ...]) -> tuple[int, int]:
    """(in place, misplaced) of ``guess`` against ``code``."""
    exact = sum(g == c for g, c in zip(guess, code, strict=True))
    common = sum(min(guess.count(v), code.count(v)) for v in set(guess))
    return exact, common - exact


def code_test(s: str, facts: dict[str, int]) -> Test:
    """Parse a dial or master-key clue (candidate: tuple of digits)."""
    if m := re.fullmatch(r"setting ([\d-]+) gave (\w+) in place and (\w+) misplaced\.", s):
        guess = tuple(map(int, m[1].split("-")))
        exact, total = NUM[m[2]], NUM[m[2]] + NUM[m[3]]
        counts = {v: guess.count(v) for v in set(guess)}

        def scored(c: tuple[int, ...]) -> bool:
            if sum(map(operator.eq, guess, c)) != exact:
                return False
            return sum(min(n, c.count(v)) for v, n in counts.items()) == total

        return scored
    if m := re.fullmatch(r"the (?:pins|master's depths) add up to (\d+)\.", s):
        total = int(m[1])
        return lambda c: sum(c) == total
    compare = r"(?:on the master, )?pin (\d) is (?:set|cut) (higher|lower|deeper|shallower) than"
    if m := re.fullmatch(compare + r" pin (\d)\.", s):
        i, up, j = int(m[1]) - 1, m[2] in ("higher", "deeper"), int(m[3]) - 1
        return lambda c: (c[i] > c[j]) == up
    if m := re.fullmatch(r"pin (\d) equals the (.+)\.", s):
        what = m[2]
        if what.startswith("size of the "):
            what = " ".join(what.split()[:4])  # "size of the <bin>": the noun is decoration
        i, value = int(m[1]) - 1, facts[what]
        return lambda c: c[i] == value
    if m := re.fullmatch(r"the master is never cut to depth (\d)\.", s):
        d = int(m[1])
        return lambda c: d not in c
    keyed = r"the \w+ key is cut ([\d-]+) and agrees with the master at exactly (\w+) pins?\."
    if m := re.fullmatch(keyed, s):
        key, k = tuple(map(int, m[1].split("-"))), NUM[m[2]]
        return lambda c: sum(a == b for a, b in zip(key, c, strict=True)) == k
    if m := re.fullmatch(r"the \w+ \w+: (.+)\.", s):
        allowed = {}
        for pin, low, high in re.findall(r"pin (\d) takes (\d)(?: or (\d)| only)", m[1]):
            allowed[int(pin) - 1] = {int(low), int(high or low)}
        return lambda c: all(c[p] in ok for p, ok in allowed.items())
    raise Unparsed(s)


PARSERS: dict[str, Callable[[str, Format], Test]] = {
    "order": order_test,
    "placement": placement_test,
    "sequence": sequence_test,
    "bins": bins_test,
}
