"""Wording a solver can rely on: every lock's label names exactly the quantity its answer is.

Each lock kind states what its answer is (`lock.ANSWER_IS`); labels end with that noun. Over
1,000 seeds per template, every time lock's clues, read as the reference solver reads them,
make the answer the quantity the label names: an opening time is the time the lock opens,
never the time of an event of the chain (the collection time is not when the postbag opens).
"""

from __future__ import annotations

import pytest
from sentences import Chain, sequence_test, solve_time
from solver import check_label, parse_format, render, space

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber.generate import TEMPLATES, build_room, rng_for
from agora.toolsets.chamber.lock import ANSWER_IS
from agora.toolsets.chamber.lock_assign import make_sequence
from agora.toolsets.chamber.lock_time import make_time_chain, make_time_window

SEEDS = 1000
TEMPLATE_IDS = [(engine, t) for engine, ts in TEMPLATES.items() for t in ts]
SEQUENCE_TEMPLATES = [
    (engine, t) for engine, t in TEMPLATE_IDS if any(s.spec.kind == "sequence" for s in t.locks)
]


def test_every_kind_of_lock_states_what_its_answer_is():
    kinds = {s.spec.kind for _, t in TEMPLATE_IDS for s in t.locks}
    assert kinds == set(ANSWER_IS)
    for noun, statement in ANSWER_IS.values():
        assert noun
        assert statement


@pytest.mark.parametrize(("engine", "template"), TEMPLATE_IDS, ids=lambda v: getattr(v, "id", v))
def test_labels_name_their_answers_quantity(engine, template):
    labels = [slot.spec.label for slot in template.locks]
    assert len(set(labels)) == len(labels)
    for slot in template.locks:
        spec = slot.spec
        assert spec.label.startswith("the ")
        assert spec.label.endswith(" " + spec.quantity), (spec.label, spec.kind)
        others = {noun for kind, (noun, _) in ANSWER_IS.items() if kind != spec.kind}
        assert not any(
            spec.label.endswith(" " + n) for n in others if not spec.quantity.endswith(n)
        )
        assert not set(spec.events) & set(spec.label.split()), spec.label


@pytest.mark.parametrize(("engine", "template"), TEMPLATE_IDS, ids=lambda v: getattr(v, "id", v))
def test_a_thousand_seeds_per_template_make_each_label_name_its_answer(engine, template):
    makers = {"time_chain": make_time_chain, "time_window": make_time_window}
    checked = 0
    for n in range(SEEDS):
        rng = rng_for(template.id, f"wording-{n}")
        for slot in template.locks:
            spec = slot.spec
            fmt = parse_format(_describe(spec.kind))
            if spec.kind not in makers:
                check_label(spec.label, fmt, [])
                continue
            puzzle = None
            while puzzle is None:
                puzzle = makers[spec.kind](rng, spec)
            clues = [c.lower() for c in puzzle.clues]
            # The reader's label check, and the answer the clues give for that quantity.
            check_label(spec.label, fmt, clues)
            assert solve_time(clues) == [_minutes(puzzle.answer[0])]
            chain = Chain()
            for clue in clues:
                chain.read(clue)
            assert (chain.opens is not None) == (spec.kind == "time_chain")
            checked += 1
    assert checked >= SEEDS * sum(s.spec.kind in makers for s in template.locks)


@pytest.mark.parametrize(
    ("engine", "template"), SEQUENCE_TEMPLATES, ids=lambda v: getattr(v, "id", v)
)
def test_a_thousand_seeds_per_template_make_sequence_clues_as_written_name_one_answer(
    engine, template
):
    """Read literally, every sequence the clues allow is the answer: "the first Penny comes
    before the first Crown" allowed sequences with no Crown at all, which the generator
    never meant (58 of them for one post office room)."""
    (spec,) = [slot.spec for slot in template.locks if slot.spec.kind == "sequence"]
    for n in range(SEEDS):
        rng = rng_for(template.id, f"wording-{n}")
        puzzle = None
        while puzzle is None:
            puzzle = make_sequence(rng, spec)
        fmt = parse_format(puzzle.fmt.describe())
        tests = [sequence_test(clue.lower(), fmt) for clue in puzzle.clues]
        allowed = [w for w in space(fmt) if all(test(w) for test in tests)]
        assert [render(fmt, w) for w in allowed] == [list(puzzle.answer)], puzzle.clues


def test_the_post_office_time_lock_is_its_opening_time_not_the_collection():
    room = next(
        r
        for r in (build_room("chambre-chrono-v0", "chamber", f"po-{i}") for i in range(400))
        if r.template == "post_office"
    )
    lock = room.locks[0]
    assert lock.label == "the postbag opening time"
    assert "collection" not in lock.label
    assert lock.puzzle.spec.answer_is.startswith("the true time of day the lock opens")


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def _describe(kind: str) -> str:
    # The format line a reader sees in look, for the formats whose label check needs no clues.
    return {
        "order": "a JSON array of all 2 names, earliest first: a, b",
        "placement": 'a JSON array of 1 strings "slot=name", one per slot (s), using each of: a',
        "sequence": "a JSON array of 2 names in order, each one of: a, b (repeats allowed)",
        "bins": 'a JSON array of 1 strings "name=bin", one per name (a), bins: x, y',
        "number": "a whole number from 100 to 999",
        "dial": "a string of 3 digits, each from 0 to 9",
        "master": "a string of 3 digits, each from 0 to 9",
        "time_window": 'a string "HH:MM"',
        "time_chain": 'a string "HH:MM"',
    }[kind]


def test_a_lock_is_said_solved_in_its_nouns_number():
    # "Accepted: the master key depths is solved", and "Sealed until the master key depths is
    # solved": the verb now agrees with the one plural quantity.
    depths = 0
    for suite, engine in (("chambre-chrono-v0", "chamber"), ("chambre-atelier-v0", "atelier")):
        for seed in range(40):
            for lock in build_room(suite, engine, f"verb-{seed}").locks:
                plural = lock.puzzle.spec.quantity == "depths"
                assert lock.solved == f"{lock.label} {'are' if plural else 'is'} solved"
                depths += plural
    assert depths  # the master key's lock was among them


def test_a_faulty_clocks_reading_says_it_is_a_24_hour_clock():
    # "The hall clock read 05:16": read as a 12-hour face it could be 17:16, and a careful
    # solver found a second answer (15:13 for 03:13) that fit every clue.
    chains = [(t, s.spec) for _, t in TEMPLATE_IDS for s in t.locks if s.spec.kind == "time_chain"]
    assert chains
    for template, spec in chains:
        rng = rng_for(template.id, "reading")
        puzzle = None
        while puzzle is None:
            puzzle = make_time_chain(rng, spec)
        [reading] = [c for c in puzzle.clues if " read " in c]
        assert reading.startswith(f"The {spec.noun} (a 24-hour clock) read "), reading


def test_the_lock_to_open_says_in_look_exactly_what_its_answer_is():
    # A label names the quantity; what the solver reads in look says what the answer is, so a
    # time reckoned from a faulty clock is not mistaken for what that clock shows.
    seen = set()
    for suite, engine in (("chambre-chrono-v0", "chamber"), ("chambre-atelier-v0", "atelier")):
        for n in range(60):
            room = build_room(suite, engine, f"answer-{n}")
            seen.add(room.template)
            for i, lock in enumerate(room.locks):
                lines = rooms.look(room, i).splitlines()
                current = [line for line in lines if ": CURRENT: " in line]
                assert current == [
                    f"{i + 1}. {lock.label}: CURRENT: {lock.op} with value = "
                    f"{lock.puzzle.fmt.describe()}; the answer is {lock.puzzle.spec.answer_is}"
                ]
                if lock.puzzle.spec.kind == "time_chain":
                    assert "not what the faulty clock shows" in current[0]
                    # The opening clue may name an event that is not the latest of the chain
                    # (one came "before" another): the answer names no "last event".
                    assert "after the event its clue names" in current[0]
    assert seen == {template.id for _, template in TEMPLATE_IDS}
