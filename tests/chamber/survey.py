"""One pass over many seeds of a suite, shared by the thousand-seed tests.

Each room is generated once and then checked for structure and leaks, solved by the
reference solver and played by the random agent, so the expensive part (generation) is paid
once per seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from harness import QuickSession
from random_agent import play
from solver import Solver

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber.generate import leaks
from agora.toolsets.chamber.lock import list_forms


@dataclass
class SeedReport:
    """What one seed's room looked like and how each agent fared."""

    seed: str
    template: str
    ops: tuple[str, ...]
    problems: list[str] = field(default_factory=list)
    solved: bool = False
    actions: int = 0
    random_solved: bool = False
    random_opened: int = 0


def _occurs(texts: str, form: str) -> bool:
    """Whether ``form`` occurs in ``texts``; a digit form must not touch other digits."""
    start = texts.find(form)
    while start != -1:
        before = texts[start - 1 : start]
        after = texts[start + len(form) : start + len(form) + 1]
        if not form[0].isdigit() or not (before.isdigit() or after.isdigit()):
            return True
        start = texts.find(form, start + 1)
    return False


def _verbatim(room: rooms.Room) -> list[str]:
    """Answer renderings found in any observation (an independent re-check of `leaks`)."""
    texts = "\n".join(rooms.every_text(room)).lower()
    found = []
    for lock in room.locks:
        answer = lock.puzzle.answer
        forms = [*list_forms(answer), "".join(answer)] if len(answer) > 1 else [answer[0]]
        found += [f"{lock.op}:{f}" for f in forms if _occurs(texts, f.lower())]
    return found


def _structure(room: rooms.Room) -> list[str]:
    problems = []
    if not 3 <= len(room.locks) <= 5:
        problems.append(f"{len(room.locks)} locks")
    for index, lock in enumerate(room.locks):
        if len(lock.holders) < 2:
            problems.append(f"{lock.op} clues on {len(lock.holders)} object(s)")
        for holder in lock.holders:
            obj = room.object(holder)
            if obj is None or obj.gate > index or not room.clues[holder].get(index):
                problems.append(f"{lock.op} holder {holder} unusable")
    return problems


def survey_seed(suite: str, seed: str) -> SeedReport:
    """Generate, check, solve and randomly play one room."""
    session = QuickSession(suite=suite, seed=seed)
    room = session.attempt.room
    report = SeedReport(seed, room.template, tuple(lock.op for lock in room.locks))
    report.problems += _structure(room)
    report.problems += [f"leak {f}" for f in leaks(room)] + [
        f"verbatim {f}" for f in _verbatim(room)
    ]
    try:
        Solver(session.act).run()
    except AssertionError as exc:
        report.problems.append(f"solver: {exc}")
    report.solved = session.attempt.solved
    report.actions = session.attempt.action_index
    rival = QuickSession(suite=suite, seed=seed)
    play(rival.act, random.Random(seed))
    report.random_solved = rival.attempt.solved
    report.random_opened = rival.attempt.opened
    return report


def survey(suite: str, seeds: int) -> list[SeedReport]:
    """Reports for seeds ``0..seeds-1`` of ``suite``."""
    return [survey_seed(suite, f"{suite}-{n}") for n in range(seeds)]
