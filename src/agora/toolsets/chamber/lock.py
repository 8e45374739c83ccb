"""What a generated lock is, and the wording helpers every lock kind shares.

A `LockSpec` is a template's description of a lock (its op, kind, label and the theme words
to draw from); a `LockPuzzle` is one generated instance: format, canonical answer, the clue
sentences to spread over objects, two graded hints, and the renderings of the answer that
no observation may ever contain. This module only declares data and wording; it must not
generate anything or know any room.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agora.toolsets.chamber.values import ValueFormat

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
COUNTS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")
TIMES = ("never", "once", "twice", "three times", "four times", "five times")


#: What the answer of each kind of lock is: (the noun its label must end with, a statement of
#: exactly what is submitted). A label names the quantity its answer is, never a neighbour
#: of it: a time lock that opens 30 minutes after the collection is "the ... opening time".
ANSWER_IS: dict[str, tuple[str, str]] = {
    "order": ("order", "the order of all the names, earliest first"),
    "sequence": ("sequence", "the names of the sequence, first to last"),
    "placement": ("layout", "which name goes in each slot"),
    "bins": ("sorting", "which bin each name goes in"),
    "time_window": ("time", "the time of day the clues describe"),
    "time_chain": (
        "opening time",
        "the true time of day the lock opens (the stated interval after the event its clue "
        "names, with the clock's error undone), not what the faulty clock shows then, nor any "
        "event's time",
    ),
    "number": ("number", "the number the clues describe"),
    "dial": ("setting", "the digits the dial is set to, in order"),
    "master": ("depths", "the cut depth of each pin of the master key, in pin order"),
}


@dataclass(frozen=True, slots=True)
class LockSpec:
    """A template's description of one lock.

    Attributes:
        op: The submit op that opens it.
        kind: The generator (``order``, ``placement``, ``sequence``, ``bins``,
            ``time_window``, ``time_chain``, ``number``, ``dial``, ``master``).
        label: How observations name it, e.g. ``the chime order``.
        pool: Theme words the generator draws names from.
        size: How many names (or the sequence length) to draw.
        slots: Bin names (bins) or sequence alphabet (sequence).
        noun: A theme noun (bins: the container; time_chain: the clock; master: the door).
        events: Event names for ``time_chain``.
    """

    op: str
    kind: str
    label: str
    pool: tuple[str, ...] = ()
    size: int = 0
    slots: tuple[str, ...] = ()
    noun: str = ""
    events: tuple[str, ...] = ()

    @property
    def quantity(self) -> str:
        """The noun that names what this lock's answer is (its label ends with it)."""
        return ANSWER_IS[self.kind][0]

    @property
    def answer_is(self) -> str:
        """Exactly what the answer of this lock is, in words."""
        return ANSWER_IS[self.kind][1]


@dataclass(frozen=True, slots=True)
class LockPuzzle:
    """One generated lock.

    Attributes:
        spec: The template's description.
        fmt: The value format the op accepts.
        answer: The canonical answer (what `values.parse_value` yields for it).
        clues: True sentences that, all together and only together, fix the answer.
        hints: Nudges two and three (nudge one, where to look, is written by the room).
        forms: Renderings of the answer that must not appear in any observation.
        facts: Numbers a later lock may refer to, e.g. ``position of owl`` -> 3.
    """

    spec: LockSpec
    fmt: ValueFormat
    answer: tuple[str, ...]
    clues: tuple[str, ...]
    hints: tuple[str, str]
    forms: tuple[str, ...]
    facts: tuple[tuple[str, int], ...] = ()


def cap(word: str) -> str:
    """``word`` with its first letter in upper case (names read as proper nouns)."""
    return word[:1].upper() + word[1:]


def list_forms(answer: tuple[str, ...]) -> tuple[str, ...]:
    """The ways a list answer could be printed verbatim."""
    seps = (", ", ",", " ", "-", " -> ", " → ", "; ", " then ")
    return (*(sep.join(answer) for sep in seps), json.dumps(list(answer)))


def clock(minute: int) -> str:
    """Minute of the day -> ``HH:MM``."""
    minute %= 1440
    return f"{minute // 60:02d}:{minute % 60:02d}"


def duration(minutes: int) -> str:
    """A positive number of minutes in words, e.g. ``2 hours 5 minutes``."""
    h, m = divmod(minutes, 60)
    parts = []
    if h:
        parts.append(f"{h} hour" + ("s" if h > 1 else ""))
    if m or not h:
        parts.append(f"{m} minute" + ("s" if m != 1 else ""))
    return " ".join(parts)
