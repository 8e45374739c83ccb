"""Generated rooms: deterministic, varied, uniquely solvable, never printing an answer."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import QuickSession, Session
from hypothesis import given, settings
from hypothesis import strategies as st
from solver import Solver

from agora.toolsets.chamber import room as rooms
from agora.toolsets.chamber.constraints import Clue, Space, select_clues, split_among
from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.generate import build_room, rng_for

SUITES = [(s.id, s.engine) for s in default_contract().suites]


def fingerprint(suite: str, engine: str, seed: str) -> str:
    room = build_room(suite, engine, seed)
    answers = [list(lock.puzzle.answer) for lock in room.locks]
    return json.dumps({"texts": rooms.every_text(room), "answers": answers})


def test_same_suite_and_seed_give_the_same_room_byte_for_byte():
    first = {s: fingerprint(*s, "same") for s in SUITES}
    build_room.cache_clear()
    assert {s: fingerprint(*s, "same") for s in SUITES} == first


def test_rooms_are_identical_across_processes():
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]);"
        "from test_chamber_rooms import fingerprint, SUITES;"
        "print(json.dumps([fingerprint(*s, 'cross-process') for s in SUITES]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent)],
        capture_output=True, check=True, env=env, text=True,
    )  # fmt: skip
    assert json.loads(out.stdout) == [fingerprint(*s, "cross-process") for s in SUITES]


@pytest.mark.parametrize(("suite", "engine"), SUITES)
def test_kept_texts_are_what_a_fresh_room_renders(suite, engine):
    room = build_room(suite, engine, "kept")
    texts = rooms.every_text(room)
    assert rooms.every_text(room) == texts  # now served from the texts the room kept
    assert rooms.every_text(dataclasses.replace(room)) == texts  # same room, nothing kept
    for _ in range(2):
        with pytest.raises(KeyError):
            rooms.inspect(room, "no_such_object", 0)


def test_different_seeds_give_different_rooms():
    for suite, engine in SUITES:
        prints = {fingerprint(suite, engine, f"seed-{i}") for i in range(20)}
        assert len(prints) == 20


@pytest.mark.parametrize(("suite", "engine"), SUITES)
def test_clues_are_spread_so_no_single_object_gives_an_answer(suite, engine):
    for i in range(60):
        session = QuickSession(suite=suite, seed=f"spread-{i}")
        Solver(session.act, check_spread=True).run()
        assert session.attempt.solved


def test_hints_are_graded_and_counted():
    s = Session(seed="hints")
    lock = s.room.locks[0]
    texts = [s.act("hint")["observation"] for _ in range(4)]
    assert texts[0].startswith(f"Hint 1 for {lock.label}")
    assert all(s.room.object(h).name in texts[0] for h in lock.holders)
    assert texts[1].startswith("Hint 2")
    assert texts[2].startswith("Hint 3")
    assert texts[1] != texts[2]
    assert texts[3] == f"No further hints for {lock.label}."
    assert s.entity.attempt.hints_used == 3  # "no further hints" gave none


def test_a_wrong_answer_says_only_not_accepted():
    s = Session(seed="wrong")
    lock = s.room.locks[0]
    fmt = lock.puzzle.fmt
    from random_agent import random_value
    from solver import parse_format

    rng = rng_for("test", "wrong")
    while True:
        value = random_value(parse_format(fmt.describe()), rng)
        from agora.toolsets.chamber.values import parse_value

        if parse_value(fmt, value) != lock.puzzle.answer:
            break
    reply = s.act(lock.op, value=value)
    assert reply["observation"] == rooms.NOT_ACCEPTED
    # Full sentences, as every other reply is: a capital first, a full stop last.
    assert reply["observation"].startswith("Not accepted: a wrong submission, counted")
    assert reply["observation"].endswith("or ask for a hint.")
    assert reply["accepted"] is False
    assert reply["action_index"] == 1


@settings(max_examples=60, deadline=None)
@given(
    target=st.tuples(*[st.integers(0, 3)] * 4),
    seed=st.integers(0, 10_000),
)
def test_selected_clues_are_unique_and_minimal(target, seed):
    space = Space(tuple((a, b, c, d) for a in range(4) for b in range(4) for c in range(4)
                        for d in range(4)))  # fmt: skip

    def at(x, i, v, yes):
        return (x[i] == v) == yes

    def total(x, s):
        return sum(x) == s

    def gt(x, i, j, yes):
        return (x[i] > x[j]) == yes

    pool = [space.clue(f"sum {sum(target)}", total, sum(target))]
    pool += [space.clue(f"{i}{v}", at, i, v, target[i] == v) for i in range(4) for v in range(4)]
    pool += [space.clue(f"{i}>{j}", gt, i, j, target[i] > target[j])
             for i in range(4) for j in range(4) if i != j]  # fmt: skip
    rng = rng_for("hypothesis", str(seed))
    clues = select_clues(rng, space, target, pool, min_clues=1, max_clues=20)
    assert clues is not None
    assert space.survivors([c.mask for c in clues]) == [target]
    for drop in range(len(clues)):
        rest = [c.mask for k, c in enumerate(clues) if k != drop]
        assert len(space.survivors(rest)) > 1


def test_a_pool_with_a_false_clue_is_a_bug():
    space = Space((0, 1, 2))
    with pytest.raises(ValueError, match="false"):
        select_clues(rng_for("x", "y"), space, 0, [Clue("not zero", 0b110)])


def test_clues_are_dealt_so_every_holder_gets_one():
    dealt = split_among(rng_for("x", "y"), ["a", "b", "c", "d"], ["one", "two", "three"])
    assert all(dealt.values())
    assert sorted(c for clues in dealt.values() for c in clues) == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="fewer clues"):
        split_among(rng_for("x", "y"), ["a"], ["one", "two"])
