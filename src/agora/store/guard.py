"""The version guard's rules and its portable SQL, shared by both backends' writers.

A guarded batch reads the version row of every entity its jobs guard, judges each job
(`judge`: accepted if every version it loaded is still current, else `Conflict`), runs the
accepted jobs' writes, then bumps the versions of those that committed. How the rows are
locked and sent is each writer's own (PostgreSQL: ``FOR UPDATE`` in sorted order, arrays,
pipelined; SQLite: ``BEGIN IMMEDIATE`` already holds the file's one write lock); the decision
is made here, once. The statements below are portable (``?`` placeholders, ``ON CONFLICT``).

On SQLite every bump also stamps its rows with the batch's change number (``stamp``, one
more than the highest): another process sharing the file finds what changed since it last
looked with one indexed range query (``stamp > ?``), which is how its waiters wake without
NOTIFY. A changed resource URI is a row of kind `agora.store.neutral.URI_MARK` (``@``).
This module does no I/O and imports no driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.store.neutral import Conflict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agora.store.jobs import Job

#: The version table of a shared SQLite file, with its change stamps (created when a
#: process opens the file shared; an unshared process never reads or writes it).
TABLES = (
    "CREATE TABLE IF NOT EXISTS agora_entities (kind TEXT NOT NULL, key TEXT NOT NULL, "
    "version BIGINT NOT NULL, stamp BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (kind, key))",
    "CREATE INDEX IF NOT EXISTS agora_entities_stamp ON agora_entities (stamp)",
)
#: The row of an entity guarded at version 0 (never written) may not exist yet.
CREATE = "INSERT INTO agora_entities (kind, key, version) VALUES (?, ?, 0) ON CONFLICT DO NOTHING"
VERSION = "SELECT version FROM agora_entities WHERE kind = ? AND key = ?"
LAST_STAMP = "SELECT COALESCE(MAX(stamp), 0) FROM agora_entities"
BUMP = "UPDATE agora_entities SET version = ?, stamp = ? WHERE kind = ? AND key = ?"
TOUCH = (
    "INSERT INTO agora_entities (kind, key, version, stamp) VALUES (?, ?, 1, ?) "
    "ON CONFLICT (kind, key) DO UPDATE SET version = agora_entities.version + 1, "
    "stamp = excluded.stamp"
)
CHANGED = "SELECT kind, key, version, stamp FROM agora_entities WHERE stamp > ? ORDER BY stamp"

Key = tuple[str, str]


def guarded_keys(batch: Sequence[Job]) -> tuple[list[Key], list[Key]]:
    """Every (kind, key) the batch guards, sorted, and those guarded at version 0."""
    keys = sorted({(g.kind, g.key) for job in batch for g in job.guards})
    fresh = sorted({(g.kind, g.key) for job in batch for g in job.guards if g.version == 0})
    return keys, fresh


def judge(
    batch: Sequence[Job], current: dict[Key, int]
) -> tuple[list[BaseException | None], list[int], list[tuple[str, str, int]]]:
    """Per job: accepted (its versions match) or a `Conflict`; the versions to bump to.

    Jobs are judged in batch order; an accepted job's new versions are what the next job
    guarding the same entity must have loaded (so two jobs of one batch cannot both win).

    Returns:
        The outcomes (None for accepted jobs), the accepted jobs' indexes, and each bumped
        entity's (kind, key, new version).
    """
    outcomes: list[BaseException | None] = [None] * len(batch)
    accepted: list[int] = []
    bumped: dict[Key, int] = {}
    for i, job in enumerate(batch):
        stale = [(g.kind, g.key) for g in job.guards if current.get((g.kind, g.key)) != g.version]
        if stale:
            outcomes[i] = Conflict(stale)
            continue
        accepted.append(i)
        for g in job.guards:
            current[(g.kind, g.key)] = bumped[(g.kind, g.key)] = g.version + 1
    return outcomes, accepted, [(kind, key, v) for (kind, key), v in bumped.items()]


def kept_changes(
    batch: Sequence[Job],
    outcomes: Sequence[BaseException | None],
    changes: list[tuple[str, str, int]],
) -> list[tuple[str, str, int]]:
    """``changes`` without those of jobs that failed after they were accepted.

    A failed job's version is not bumped (its writes were rolled back). Guarded entities
    are owned by one job per batch that wins (`judge`), so the first job guarding a key
    decides for it.
    """
    owner: dict[Key, BaseException | None] = {}
    for job, outcome in zip(batch, outcomes, strict=True):
        if isinstance(outcome, Conflict):
            continue
        for g in job.guards:
            owner.setdefault((g.kind, g.key), outcome)
    return [(kind, key, v) for kind, key, v in changes if owner.get((kind, key), 1) is None]
