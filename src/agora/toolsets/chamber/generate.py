"""Room generation: suite + seed -> one deterministic `Room`.

The seed and suite id are hashed into a `random.Random`, which picks a template of the
suite's engine, includes or drops its optional locks, generates each lock (earlier locks'
facts feed later dials), deals each lock's clues over two or three of its holder objects,
and finally rejects any room in which some observation would print an answer verbatim.
Same suite + seed -> the same room, byte for byte. Pure: no I/O, no clock, no global random.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agora.toolsets.chamber.constraints import split_among
from agora.toolsets.chamber.lock import LockPuzzle, LockSpec
from agora.toolsets.chamber.lock_assign import make_bins, make_sequence
from agora.toolsets.chamber.lock_digits import make_dial, make_master, make_number
from agora.toolsets.chamber.lock_order import make_order, make_placement
from agora.toolsets.chamber.lock_time import make_time_chain, make_time_window
from agora.toolsets.chamber.room import Lock, Room, RoomObject, every_text
from agora.toolsets.chamber.template import load_all

if TYPE_CHECKING:
    from agora.toolsets.chamber.template import LockSlot, Template

_TRIES = 40

#: Engine (as the contract's suites name it) -> its room templates, read once at import from
#: the data files under ``rooms/`` (a file that does not decode fails the import).
TEMPLATES: dict[str, tuple[Template, ...]] = load_all()


Maker = Callable[[random.Random, LockSpec, Sequence[tuple[str, int]]], LockPuzzle | None]

_MAKERS: dict[str, Maker] = {
    "order": lambda rng, spec, facts: make_order(rng, spec),
    "placement": lambda rng, spec, facts: make_placement(rng, spec),
    "sequence": lambda rng, spec, facts: make_sequence(rng, spec),
    "bins": lambda rng, spec, facts: make_bins(rng, spec),
    "time_window": lambda rng, spec, facts: make_time_window(rng, spec),
    "time_chain": lambda rng, spec, facts: make_time_chain(rng, spec),
    "number": lambda rng, spec, facts: make_number(rng, spec),
    "dial": make_dial,
    "master": lambda rng, spec, facts: make_master(rng, spec),
}


def rng_for(suite_id: str, seed: str) -> random.Random:
    """The deterministic random source of one suite + seed."""
    digest = hashlib.sha256(f"{suite_id}\x00{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest, "big"))


def _puzzle(rng: random.Random, spec: LockSpec, facts: Sequence[tuple[str, int]]) -> LockPuzzle:
    maker = _MAKERS[spec.kind]
    for _ in range(_TRIES):
        puzzle = maker(rng, spec, facts)
        if puzzle is not None:
            return puzzle
    raise RuntimeError(f"lock kind {spec.kind} failed {_TRIES} draws")  # pragma: no cover


def _holders(
    rng: random.Random, slot: LockSlot, gates: dict[str, int], index: int, clues: int
) -> list[str]:
    # The template lists the lock's natural home first (the pin charts for the master key):
    # it always carries some clues, and so does an object this lock's predecessor unsealed.
    eligible = [h for h in slot.holders if gates[h] <= index]
    chosen = eligible[:1] if eligible and eligible[0] == slot.holders[0] else []
    fresh = [h for h in eligible if index and gates[h] == index and h not in chosen]
    chosen += fresh[:1]
    count = max(len(chosen), min(len(eligible), clues, rng.choice((2, 3))))
    rest = [h for h in eligible if h not in chosen]
    chosen += rng.sample(rest, count - len(chosen))
    return [h for h in slot.holders if h in chosen]


def _draw(rng: random.Random, suite_id: str, template: Template) -> Room:
    slots = [s for s in template.locks if not s.optional or rng.random() < 0.5]
    ops = [s.spec.op for s in slots]
    gates = {
        o.id: ops.index(o.opens_with) + 1 if o.opens_with in ops else 0 for o in template.objects
    }
    facts: list[tuple[str, int]] = []
    locks: list[Lock] = []
    clues: dict[str, dict[int, tuple[str, ...]]] = {}
    for index, slot in enumerate(slots):
        puzzle = _puzzle(rng, slot.spec, facts)
        facts.extend(puzzle.facts)
        holders = _holders(rng, slot, gates, index, len(puzzle.clues))
        for holder, texts in split_among(rng, puzzle.clues, holders).items():
            clues.setdefault(holder, {})[index] = tuple(texts)
        locks.append(Lock(puzzle, tuple(holders)))
    objects = tuple(
        RoomObject(o.id, o.name, o.summary, o.flavor, gates[o.id]) for o in template.objects
    )
    return Room(suite_id, template.id, template.title, template.intro, objects, tuple(locks), clues)


def _contains(blob: str, form: str) -> bool:
    """Whether ``form`` occurs in ``blob``; digit forms must not touch other digits."""
    form = form.lower()
    digits = form[:1].isdigit()
    start = blob.find(form)
    while start != -1:
        end = start + len(form)
        if not digits:
            return True
        before = blob[start - 1] if start else ""
        after = blob[end] if end < len(blob) else ""
        if not before.isdigit() and not after.isdigit():
            return True
        start = blob.find(form, start + 1)
    return False


def leaks(room: Room) -> list[str]:
    """Every answer rendering that some observation of ``room`` contains (empty: none)."""
    blob = "\n\x00\n".join(every_text(room)).lower()
    return [form for lock in room.locks for form in lock.puzzle.forms if _contains(blob, form)]


@functools.lru_cache(maxsize=256)
def build_room(suite_id: str, engine: str, seed: str) -> Room:
    """The room of ``suite_id`` + ``seed``, generated by the suite's ``engine``.

    Args:
        suite_id: The suite, e.g. ``chambre-chrono-v0`` (part of the random seed).
        engine: The suite's engine (``chamber`` or ``atelier``), which picks the templates.
        seed: Any string; the same seed always gives the same room.

    Returns:
        The room.

    Raises:
        KeyError: if no templates exist for ``engine``.
    """
    templates = TEMPLATES[engine]
    rng = rng_for(suite_id, seed)
    template = rng.choice(templates)
    for _ in range(_TRIES):
        room = _draw(rng, suite_id, template)
        if not leaks(room):
            return room
    raise RuntimeError(f"template {template.id} leaked answers {_TRIES} times")  # pragma: no cover
