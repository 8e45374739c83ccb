"""A reference agent for the chamber: reads observations only, reasons, and opens every lock.

It plays like an agent would: ``look`` once, ``inspect`` every readable object, then for
the current lock collects the clue lines printed under ``Concerning <lock label>:``, turns
each English sentence into a predicate, brute-forces the answer space the lock's format
describes, and submits the single survivor. It never imports the generator's answers; it
only parses text. Any sentence it cannot parse is an error (so wording drift is caught).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sentences import (
    ORD,
    PARSERS,
    Candidate,
    Chain,
    Format,
    Unparsed,
    code_test,
    name_index,
    number_test,
    solve_time,
)

Act = Callable[..., dict[str, Any]]


@dataclass
class LockInfo:
    """One lock as ``look`` describes it."""

    label: str
    op: str
    fmt: str
    #: What the answer is, as the lock to open now states it (None on a waiting lock).
    answer: str | None = None


def parse_format(text: str) -> Format:
    """Parse ``ValueFormat.describe`` output back into an answer space."""
    if m := re.match(r"a JSON array of all (\d+) names, earliest first: (.+)$", text):
        return Format("order", tuple(m[2].split(", ")))
    if m := re.match(r'a JSON array of \d+ strings "slot=name", one per slot \((.+?)\), '
                     r"using each of: (.+)$", text):  # fmt: skip
        return Format("placement", tuple(m[2].split(", ")), tuple(m[1].split(", ")))
    if m := re.match(r"a JSON array of (\d+) names in order, each one of: (.+) \(repeats", text):
        return Format("sequence", tuple(m[2].split(", ")), length=int(m[1]))
    if m := re.match(r'a JSON array of \d+ strings "name=bin", one per name \((.+?)\), '
                     r"bins: (.+)$", text):  # fmt: skip
        return Format("bins", tuple(m[1].split(", ")), tuple(m[2].split(", ")))
    if text.startswith('a string "HH:MM"'):
        return Format("time")
    if m := re.match(r"a whole number from (\d+) to (\d+)", text):
        return Format("number", low=int(m[1]), high=int(m[2]))
    if m := re.match(r"a string of (\d+) digits, each from (\d) to (\d)", text):
        return Format("digits", length=int(m[1]), low=int(m[2]), high=int(m[3]))
    raise Unparsed(text)


def parse_look(text: str) -> tuple[list[str], list[LockInfo]]:
    """Object ids and locks (with their formats) from a ``look`` observation."""
    objects = re.findall(r"^- ([a-z_]+): ", text, re.M)
    pattern = r"^\d+\. (.+?): (?:CURRENT|waiting): (submit_\w+) with value = (.+?)"
    pattern += r"(?:; the answer is (.+))?$"
    locks = [LockInfo(m[1], m[2], m[3], m[4]) for m in re.finditer(pattern, text, re.M)]
    return objects, locks


def clue_lines(texts: Iterable[str], label: str) -> list[str]:
    """Every clue printed under ``Concerning <label>:`` in the given inspections."""
    found = []
    for text in texts:
        current = None
        for line in text.splitlines():
            if line.startswith("Concerning "):
                current = line[len("Concerning ") : -1]
            elif line.startswith("- ") and current == label:
                found.append(line[2:])
    return found


def space(fmt: Format) -> Iterable[Candidate]:
    """Every candidate of a format, in the solver's own representation."""
    n = len(fmt.names)
    match fmt.kind:
        case "order" | "placement":
            return itertools.permutations(range(n))
        case "sequence":
            return itertools.product(range(n), repeat=fmt.length)
        case "bins":
            return itertools.product(range(len(fmt.slots)), repeat=n)
        case "number":
            return range(fmt.low, fmt.high + 1)
        case "digits":
            return itertools.product(range(fmt.low, fmt.high + 1), repeat=fmt.length)
    raise Unparsed(fmt.kind)


def render(fmt: Format, c: Candidate) -> str | list[str]:
    """A candidate as a submit value."""
    match fmt.kind:
        case "order":
            return [name for _, name in sorted(zip(c, fmt.names, strict=True))]
        case "placement":
            return [f"{fmt.slots[slot]}={fmt.names[i]}" for i, slot in enumerate(c)]
        case "sequence":
            return [fmt.names[i] for i in c]
        case "bins":
            return [f"{fmt.names[i]}={fmt.slots[b]}" for i, b in enumerate(c)]
        case "number":
            return str(c)
        case "digits":
            return "-".join(map(str, c))
        case "time":
            return f"{c // 60:02d}:{c % 60:02d}"
    raise Unparsed(fmt.kind)


def facts_of(fmt: Format, label: str, c: Candidate) -> dict[str, int]:
    """Numbers a solved lock establishes that later dials may cite."""
    if fmt.kind == "order":
        return {f"position of {n} in {label}": c[i] + 1 for i, n in enumerate(fmt.names)}
    if fmt.kind == "sequence":
        return {f"count of {n} in {label}": c.count(i) for i, n in enumerate(fmt.names)}
    if fmt.kind == "bins":
        return {f"size of the {b}": c.count(i) for i, b in enumerate(fmt.slots)}
    return {}


def _narrow_sequence(fmt: Format, clues: list[str]) -> list[set[int]]:
    every = set(range(len(fmt.names)))
    allowed = [set(every) for _ in range(fmt.length)]
    ix = name_index(fmt)
    for s in clues:
        if m := re.fullmatch(r"the (\w+) one is (not )?(\w+)\.", s):
            allowed[ORD[m[1]]] &= every - {ix[m[3]]} if m[2] else {ix[m[3]]}
    return allowed


def _narrow_bins(fmt: Format, clues: list[str]) -> list[set[int]]:
    every = set(range(len(fmt.slots)))
    allowed = [set(every) for _ in fmt.names]
    ix, bins = name_index(fmt), {b: i for i, b in enumerate(fmt.slots)}
    for s in clues:
        if m := re.fullmatch(r"(\w+) (goes|does not go) in the (\w+) \w+\.", s):
            b = bins[m[3]]
            allowed[ix[m[1]]] &= {b} if m[2] == "goes" else every - {b}
    return allowed


def _narrow_digits(fmt: Format, clues: list[str]) -> list[set[int]]:
    allowed = [set(range(fmt.low, fmt.high + 1)) for _ in range(fmt.length)]
    for s in clues:
        if m := re.fullmatch(r"the master is never cut to depth (\d)\.", s):
            for a in allowed:
                a.discard(int(m[1]))
        elif re.fullmatch(r"the \w+ \w+: (.+)\.", s) and "key is cut" not in s:
            for pin, low, high in re.findall(r"pin (\d) takes (\d)(?: or (\d)| only)", s):
                allowed[int(pin) - 1] &= {int(low), int(high or low)}
    return allowed


_NARROW = {"sequence": _narrow_sequence, "bins": _narrow_bins, "digits": _narrow_digits}


def solve_lock(fmt: Format, clues: list[str], facts: dict[str, int]) -> list[Candidate]:
    """Every candidate of ``fmt`` that satisfies all ``clues`` (lower-cased sentences).

    One-position statements are applied first, while enumerating, as a person would write
    down the possibilities per position before combining them.
    """
    if fmt.kind == "time":
        return solve_time(clues)
    if fmt.kind == "number":
        tests = [number_test(s) for s in clues]
    elif fmt.kind == "digits":
        # Cheap statements first, scored trials last.
        tests = [code_test(s, facts) for s in sorted(clues, key=lambda s: s.startswith("set"))]
    else:
        tests = [PARSERS[fmt.kind](s, fmt) for s in clues]
    narrow = _NARROW.get(fmt.kind)
    alive: Iterable[Candidate] = (
        itertools.product(*map(sorted, narrow(fmt, clues))) if narrow else space(fmt)
    )
    for test in tests:
        alive = [c for c in alive if test(c)]
    return list(alive)


#: The noun a lock's label must end with, by the answer format a reader sees in ``look``.
LABEL_NOUNS = {
    "order": ("order",),
    "placement": ("layout",),
    "sequence": ("sequence",),
    "bins": ("sorting",),
    "number": ("number",),
    "digits": ("setting", "depths"),
}


def check_label(label: str, fmt: Format, clues: list[str], answer: str | None = None) -> None:
    """Assert the label names exactly the quantity the clues make the answer.

    A careful reader takes the label at its word: a lock labelled "the collection time"
    expects the collection time. So when the clues reckon when the lock opens, the label
    must say "opening time" and name no event of the chain; a time described directly must
    not be called an opening time.

    Raises:
        AssertionError: the label names something else than the answer.
    """
    if fmt.kind != "time":
        assert label.endswith(LABEL_NOUNS[fmt.kind]), f"{label!r} for a {fmt.kind} answer"
        return
    chain = Chain()
    for clue in clues:
        chain.read(clue)
    if chain.opens is not None:
        assert label.endswith(" opening time"), f"{label!r} for when the lock opens"
        events = {chain.opens[0], *chain.steps, *(b for b, _ in chain.steps.values())}
        if chain.reading:
            events.add(chain.reading[1])
        named = [e for e in events if e in label.split()]
        assert not named, f"{label!r} names the event(s) {named}, not the opening time"
        if answer is not None and chain.reading:  # reckoned from a faulty clock's reading
            assert answer.startswith("the true time"), answer
            assert "not what the faulty clock shows" in answer, answer
    else:
        assert label.endswith(" time"), f"{label!r} for a time"
        assert "opening" not in label, f"{label!r}: nothing here opens at that time"


@dataclass
class Solver:
    """Plays one attempt through ``act(op, object=None, value=None) -> reply``."""

    act: Act
    check_spread: bool = False
    seen: dict[str, str] = field(default_factory=dict)
    facts: dict[str, int] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def _inspect(self, object_id: str) -> None:
        self.seen[object_id] = self.act("inspect", object=object_id)["observation"]

    def run(self) -> dict[str, Any]:
        """Solve the room; returns the last reply (terminal when solved)."""
        objects, locks = parse_look(self.act("look")["observation"])
        for obj in objects:
            self._inspect(obj)
        reply: dict[str, Any] = {}
        for lock in locks:
            fmt = parse_format(lock.fmt)
            clues = [c.lower() for c in clue_lines(self.seen.values(), lock.label)]
            check_label(lock.label, fmt, clues, lock.answer)
            if self.check_spread:
                self._check_spread(fmt, lock.label)
            found = solve_lock(fmt, clues, self.facts)
            if len(found) != 1:
                raise AssertionError(f"{lock.label}: {len(found)} candidates from {clues}")
            reply = self.act(lock.op, value=render(fmt, found[0]))
            if not reply.get("accepted"):
                raise AssertionError(f"{lock.label}: answer not accepted")
            self.facts.update(facts_of(fmt, lock.label, found[0]))
            freed = re.search(r"Now unsealed: ([a-z_, ]+)\.", reply["observation"])
            for obj in freed[1].split(", ") if freed else ():
                self._inspect(obj)
        return reply

    def _check_spread(self, fmt: Format, label: str) -> None:
        """Assert the lock's clues sit on two or more objects and no one object suffices."""
        holders = 0
        for obj, text in self.seen.items():
            alone = [c.lower() for c in clue_lines([text], label)]
            if not alone:
                continue
            holders += 1
            try:
                left = len(solve_lock(fmt, alone, self.facts))
            except Unparsed as exc:  # e.g. half a clock chain: not enough to reckon at all
                if "chain" not in str(exc):
                    raise
                continue
            assert left > 1, f"{label}: {obj} alone fixes the answer"
        assert holders >= 2, f"{label}: clues on {holders} object(s)"
