"""A thousand rooms per suite: sound, solved by reasoning, not by guessing.

The reference solver reads only observations and must open every lock of every room within
the 64-action budget; a random agent with well-formed values must win fewer than 1% of them.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest
from harness import Session
from solver import Solver
from survey import SeedReport, survey

from agora.toolsets.chamber.contract import default_contract
from agora.toolsets.chamber.generate import TEMPLATES

SEEDS = 1000
SUITE_OPS = {
    "chambre-chrono-v0": {"submit_time", "submit_sequence", "submit_order", "submit_number",
                          "submit_bolt"},
    "chambre-atelier-v0": {"submit_placement", "submit_bins", "submit_master", "submit_order",
                           "submit_bolt"},
}  # fmt: skip
SUITES = [s.id for s in default_contract().suites]


@pytest.fixture(scope="module")
def reports() -> dict[str, list[SeedReport]]:
    # One worker process per suite: the two surveys are independent and CPU-bound.
    if (os.cpu_count() or 1) < 2:
        return {suite: survey(suite, SEEDS) for suite in SUITES}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(SUITES), mp_context=context) as pool:
        done = pool.map(survey, SUITES, [SEEDS] * len(SUITES))
        return dict(zip(SUITES, done, strict=True))


@pytest.mark.parametrize("suite", SUITES)
def test_a_thousand_rooms_are_well_formed_and_never_print_an_answer(reports, suite):
    bad = [(r.seed, r.problems) for r in reports[suite] if r.problems]
    assert bad == []


@pytest.mark.parametrize("suite", SUITES)
def test_the_reference_solver_opens_every_room_within_the_action_limit(reports, suite):
    limit = default_contract().limits.max_actions
    assert all(r.solved for r in reports[suite])
    assert max(r.actions for r in reports[suite]) <= limit


@pytest.mark.parametrize("suite", SUITES)
def test_a_random_agent_solves_fewer_than_one_percent(reports, suite):
    wins = sum(r.random_solved for r in reports[suite])
    assert wins < SEEDS / 100
    # It rarely gets past even the first lock.
    assert sum(r.random_opened for r in reports[suite]) / SEEDS < 0.5


@pytest.mark.parametrize("suite", SUITES)
def test_every_template_appears_and_lock_counts_vary(reports, suite):
    engine = default_contract().suite(suite).engine
    templates = collections.Counter(r.template for r in reports[suite])
    assert set(templates) == {t.id for t in TEMPLATES[engine]}
    assert min(templates.values()) > SEEDS / (3 * len(TEMPLATES[engine]))
    assert {len(r.ops) for r in reports[suite]} == {3, 4, 5}
    assert {op for r in reports[suite] for op in r.ops} == SUITE_OPS[suite]
    assert all(r.ops[-1] == "submit_bolt" for r in reports[suite])


@pytest.mark.parametrize("suite", SUITES)
def test_the_solver_wins_through_the_attempt_entity_too(suite):
    for n in range(25):
        session = Session(suite=suite, seed=f"entity-{n}")
        reply = Solver(session.act).run()
        assert reply["attempt_state"] == "terminal_unsealed"
        assert reply["terminal"]
        assert reply["must_seal"]
        assert reply["allowed_ops"] == []
