"""The version guard's decision (`agora.store.guard`), shared by the SQLite and PostgreSQL writers.

Pure functions: which jobs of a batch are accepted against the versions on file, and which
versions a batch bumps once some accepted jobs failed.
"""

from __future__ import annotations

import pytest

from agora.store.guard import guarded_keys, judge, kept_changes
from agora.store.jobs import Job
from agora.store.neutral import Conflict, Guard


def job(*guards: tuple[str, int]) -> Job:
    return Job([], lambda _: None, guards=tuple(Guard("k", key, v) for key, v in guards))


@pytest.mark.parametrize(
    ("current", "batch", "accepted", "bumped"),
    [
        # The writer creates a new entity's row at version 0 before it judges.
        pytest.param({("k", "a"): 0}, [job(("a", 0))], [0], [("k", "a", 1)], id="new-entity"),
        pytest.param({}, [job(("a", 2))], [], [], id="row-missing"),
        pytest.param({("k", "a"): 3}, [job(("a", 3))], [0], [("k", "a", 4)], id="current"),
        pytest.param({("k", "a"): 4}, [job(("a", 3))], [], [], id="moved"),
        pytest.param(
            {("k", "a"): 3},
            [job(("a", 3)), job(("a", 3))],
            [0],
            [("k", "a", 4)],
            id="two-jobs-one-version-first-wins",
        ),
        pytest.param(
            {("k", "a"): 3},
            [job(("a", 3)), job(("a", 4))],
            [0, 1],
            [("k", "a", 5)],
            id="second-job-builds-on-the-first",
        ),
        pytest.param(
            {("k", "a"): 1, ("k", "b"): 7},
            [job(("a", 1), ("b", 6))],
            [],
            [],
            id="one-stale-entity-rejects-the-whole-job",
        ),
    ],
)
def test_judge(current, batch, accepted, bumped):
    outcomes, got, changes = judge(batch, dict(current))
    assert got == accepted
    assert changes == bumped
    for i, outcome in enumerate(outcomes):
        assert (outcome is None) == (i in accepted)
        if outcome is not None:
            assert isinstance(outcome, Conflict)


def test_a_conflict_names_every_stale_entity():
    outcomes, _, _ = judge([job(("a", 1), ("b", 2))], {("k", "a"): 2, ("k", "b"): 3})
    assert isinstance(outcomes[0], Conflict)
    assert outcomes[0].stale == [("k", "a"), ("k", "b")]


def test_a_failed_job_bumps_nothing_and_a_rejected_one_does_not_decide():
    batch = [job(("a", 5)), job(("a", 3)), job(("b", 0))]
    outcomes, accepted, changes = judge(batch, {("k", "a"): 3, ("k", "b"): 0})
    assert accepted == [1, 2]
    assert isinstance(outcomes[0], Conflict)
    # The accepted job on "a" committed; the one on "b" failed (its writes rolled back).
    outcomes[2] = RuntimeError("constraint")
    assert kept_changes(batch, outcomes, changes) == [("k", "a", 4)]


def test_guarded_keys_are_sorted_and_fresh_ones_named():
    keys, fresh = guarded_keys([job(("b", 0), ("a", 2)), job(("c", 0), ("a", 2))])
    assert keys == [("k", "a"), ("k", "b"), ("k", "c")]
    assert fresh == [("k", "b"), ("k", "c")]
