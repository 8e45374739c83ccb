"""The optional Memory store: its tables, created by the first Memory write, and every statement.

Memory is off by default, and reading its status must not create anything, so its tables are
not migrations: `create_store` (``CREATE TABLE IF NOT EXISTS``) is part of the transaction of
the first Memory write, and a read of a store that does not exist is told apart by the
backend's "no such table" error (an owner that never wrote has no generation row).
``router_memory_meta`` holds the generation counter (bumped by every Memory write, never
reset, so a summary digest never comes back), ``router_memory_observations`` the recorded
workflows (routing context only: no objective text, no path), ``router_memory_feedback``
typed feedback, ``router_memory_receipts`` each Memory command's idempotency receipt,
``router_memory_revisions`` the managed Profiles' revisions, ``router_memory_rejections``
the candidates the user rejected and ``router_memory_proposals`` the rollback proposals
awaiting review. Same rules as `sql`: ``?`` placeholders, JSON as TEXT, fixed-width UTC
TEXT timestamps.

Every row belongs to an owner: the name of the principal whose call wrote it, ``''`` for a
caller without a token (a local, single-user server). Each owner has its own generation
and its own rows; every statement names the owner, so no read, count, digest or delete
reaches another's. Router schema step 5 (`V5`) gives the tables of a store made before
owners existed the owner column: their rows go to the anonymous/local owner.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any, Final

from agora.store.neutral import POSTGRESQL, SQLITE, MissingTable, ReadConn, dialect_of
from agora.toolsets.base import Migration

if TYPE_CHECKING:
    import sqlite_utils

    from agora.runtime.entity import Write

#: Each Memory table: its columns after ``owner`` (the principal's name, empty for the
#: anonymous/local caller) and its key within one owner.
_SHAPES: Final[dict[str, tuple[str, str]]] = {
    "router_memory_meta": ("name TEXT NOT NULL, value BIGINT NOT NULL", "name"),
    "router_memory_observations": (
        "observation_id TEXT NOT NULL, workspace_identity TEXT NOT NULL,"
        " workflow_run_id TEXT NOT NULL, session_id TEXT NOT NULL,"
        " route_signature_digest TEXT NOT NULL, observation_json TEXT NOT NULL,"
        " observation_digest TEXT NOT NULL, recorded_day TEXT NOT NULL, recorded_at TEXT NOT NULL",
        "observation_id",
    ),
    "router_memory_feedback": (
        "feedback_id TEXT NOT NULL, observation_id TEXT NOT NULL,"
        " workspace_identity TEXT NOT NULL, feedback_json TEXT NOT NULL,"
        " feedback_digest TEXT NOT NULL, recorded_at TEXT NOT NULL",
        "feedback_id",
    ),
    "router_memory_receipts": (
        "session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, request_digest TEXT NOT NULL,"
        " result_json TEXT NOT NULL, created_at TEXT NOT NULL",
        "session_id, idempotency_key",
    ),
    "router_memory_revisions": (
        "revision_id TEXT NOT NULL, target_profile_class TEXT NOT NULL,"
        " profile_key TEXT NOT NULL, revision_no BIGINT NOT NULL, profile_json TEXT NOT NULL,"
        " profile_digest TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL",
        "revision_id",
    ),
    "router_memory_rejections": (
        "candidate_id TEXT NOT NULL, profile_key TEXT NOT NULL, rejected_at TEXT NOT NULL",
        "candidate_id",
    ),
    "router_memory_proposals": (
        "proposal_id TEXT NOT NULL, target_profile_class TEXT NOT NULL,"
        " profile_key TEXT NOT NULL, proposal_json TEXT NOT NULL, created_at TEXT NOT NULL",
        "proposal_id",
    ),
}


def _create(table: str) -> str:
    columns, key = _SHAPES[table]
    return (
        f"CREATE TABLE IF NOT EXISTS {table} (owner TEXT NOT NULL, {columns},"
        f" PRIMARY KEY (owner, {key}))"
    )


def create_store(owner: str) -> list[Write]:
    """The statements that create the Memory store (and ``owner``'s part) if missing."""
    return [(_create(table), ()) for table in _SHAPES] + [(
        "INSERT INTO router_memory_meta (owner, name, value) VALUES (?, 'generation', 0)"
        " ON CONFLICT DO NOTHING", (owner,),
    )]  # fmt: skip


def bump(owner: str, generation: int) -> Write:
    """Record ``owner``'s new generation."""
    return (
        "UPDATE router_memory_meta SET value = ? WHERE owner = ? AND name = 'generation'",
        (generation, owner),
    )


def _insert(table: str, owner: str, row: dict[str, Any]) -> Write:
    cols, marks = ", ".join(row), ", ".join("?" for _ in row)
    return (f"INSERT INTO {table} (owner, {cols}) VALUES (?, {marks})", (owner, *row.values()))


def insert_observation(owner: str, row: dict[str, Any]) -> Write:
    """Record one observation (``row`` has every column but the owner)."""
    return _insert("router_memory_observations", owner, row)


def insert_feedback(owner: str, row: dict[str, Any]) -> Write:
    """Record one feedback entry (``row`` has every column but the owner)."""
    return _insert("router_memory_feedback", owner, row)


def insert_receipt(
    owner: str, session: str, key: str, request_digest: str, result: str, at: str
) -> Write:
    """Keep a Memory command's idempotency receipt (replacing the one of a command that ran
    anew because the observation its result named was purged)."""
    return (
        "INSERT INTO router_memory_receipts (owner, session_id, idempotency_key, request_digest,"
        " result_json, created_at) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (owner, session_id, idempotency_key) DO UPDATE SET"
        " request_digest = excluded.request_digest, result_json = excluded.result_json,"
        " created_at = excluded.created_at",
        (owner, session, key, request_digest, result, at),
    )


#: What each purge scope deletes (table names); scopes not listed are not available.
PURGES: dict[str, tuple[str, ...]] = {
    "history-only": ("router_memory_observations", "router_memory_feedback"),
    "analytics-only": ("router_memory_feedback",),
    "candidates-only": ("router_memory_rejections", "router_memory_proposals"),
    "managed-profiles-only": ("router_memory_revisions", "router_memory_proposals"),
    "revisions-only": (),  # the older revisions of each managed Profile, one by one
    "all-memory-data": (
        "router_memory_observations", "router_memory_feedback", "router_memory_receipts",
        "router_memory_rejections", "router_memory_proposals",
    ),
}  # fmt: skip
#: Added to ``all-memory-data`` when the caller includes managed Profiles.
MANAGED_TABLE = "router_memory_revisions"


def delete_observation(owner: str, observation_id: str) -> list[Write]:
    """Delete one observation and the feedback bound to it (retention)."""
    return [
        ("DELETE FROM router_memory_feedback WHERE owner = ? AND observation_id = ?",
         (owner, observation_id)),
        ("DELETE FROM router_memory_observations WHERE owner = ? AND observation_id = ?",
         (owner, observation_id)),
    ]  # fmt: skip


def insert_revision(owner: str, row: dict[str, Any]) -> Write:
    """Record one managed Profile revision (``row`` has every column but the owner)."""
    return _insert("router_memory_revisions", owner, row)


def delete_revision(owner: str, revision_id: str) -> Write:
    """Drop one managed Profile revision (beyond the newest kept)."""
    return (
        "DELETE FROM router_memory_revisions WHERE owner = ? AND revision_id = ?",
        (owner, revision_id),
    )


def delete_rejection(owner: str, candidate_id: str) -> Write:
    """Forget a rejection whose suppression expired (retention)."""
    return (
        "DELETE FROM router_memory_rejections WHERE owner = ? AND candidate_id = ?",
        (owner, candidate_id),
    )


def insert_rejection(owner: str, candidate_id: str, key: str, at: str) -> Write:
    """Remember that the user rejected a candidate (it stays suppressed for a while)."""
    return (
        "INSERT INTO router_memory_rejections (owner, candidate_id, profile_key, rejected_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (owner, candidate_id, key, at),
    )


def insert_proposal(
    owner: str, proposal_id: str, target: str, key: str, proposal: str, at: str
) -> Write:
    """Keep a reviewable proposal that no candidate derives (a rollback), replacing an
    earlier version of it (the same rollback asked again)."""
    return (
        "INSERT INTO router_memory_proposals (owner, proposal_id, target_profile_class,"
        " profile_key, proposal_json, created_at) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (owner, proposal_id) DO UPDATE SET proposal_json = excluded.proposal_json,"
        " created_at = excluded.created_at",
        (owner, proposal_id, target, key, proposal, at),
    )


def delete_all(owner: str, table: str) -> Write:
    """Delete ``owner``'s rows of one Memory table (``table`` comes from `PURGES`)."""
    assert table in {t for tables in PURGES.values() for t in tables} | {MANAGED_TABLE}
    return (f"DELETE FROM {table} WHERE owner = ?", (owner,))


def _missing_table(exc: Exception) -> bool:
    # "No such table" as each backend says it: SQLite's OperationalError, and the store's
    # `MissingTable` (PostgreSQL's SQLSTATE 42P01, translated by the backend).
    if isinstance(exc, MissingTable):
        return True
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("no such table")


#: The ``source`` of a revision the automatic-managed promotion wrote: this + candidate id.
AUTO_SOURCE: Final = "auto:"


def _feedback_ids(rows: list[Any]) -> dict[str, list[str]]:
    # observation_id -> the feedback_ids bound to it
    ids: dict[str, list[str]] = {}
    for observation_id, feedback_id in rows:
        ids.setdefault(str(observation_id), []).append(str(feedback_id))
    return ids


def read_store(conn: ReadConn, owner: str) -> dict[str, Any] | None:
    """``owner``'s Memory rows needed in memory, or None if it has no Memory store."""
    if not store_exists(conn):
        return None
    try:
        generation = conn.execute(
            "SELECT value FROM router_memory_meta WHERE owner = ? AND name = 'generation'",
            (owner,),
        ).fetchone()
    except Exception as exc:
        if _missing_table(exc):  # Memory never wrote anything
            return None
        raise
    if generation is None:  # Memory never wrote anything of this owner's
        return None

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in conn.execute(sql, (owner,)).fetchall()]

    observations = [  # what a second remember_workflow of the run answers: digest and target
        (*row[:6], row[6], json.loads(row[7]).get("target_profile_class"))
        for row in rows(
            "SELECT observation_id, workspace_identity, workflow_run_id, session_id,"
            " route_signature_digest, recorded_at, observation_digest, observation_json"
            " FROM router_memory_observations WHERE owner = ? ORDER BY recorded_at, observation_id"
        )
    ]
    feedback = rows(
        "SELECT observation_id, feedback_id FROM router_memory_feedback WHERE owner = ?"
    )
    sources = rows("SELECT revision_id, source FROM router_memory_revisions WHERE owner = ?")
    return {
        "generation": generation[0],
        "observations": observations,
        "feedback": _feedback_ids(feedback),
        "receipts": rows(
            "SELECT session_id, idempotency_key, request_digest, result_json"
            " FROM router_memory_receipts WHERE owner = ?"
        ),
        "revisions": rows(
            "SELECT target_profile_class, profile_key, revision_no, revision_id,"
            " profile_digest, profile_json FROM router_memory_revisions WHERE owner = ?"
            " ORDER BY revision_no"
        ),
        "rejections": dict(
            rows("SELECT candidate_id, rejected_at FROM router_memory_rejections WHERE owner = ?")
        ),
        "proposals": rows(
            "SELECT proposal_id, target_profile_class, profile_key, proposal_json"
            " FROM router_memory_proposals WHERE owner = ?"
        ),
        "auto_promoted": {
            str(r): str(src).removeprefix(AUTO_SOURCE)
            for r, src in sources
            if str(src).startswith(AUTO_SOURCE)
        },
    }


#: Whether ``router_memory_meta`` exists, asked without an error: PostgreSQL logs every
#: failed statement, and the upkeep's probe of a store never made left `ERROR: relation
#: "router_memory_meta" does not exist` in its log each time a node took the upkeep (an
#: operator's finding). ``to_regclass`` resolves the name on the search_path, as a query does.
_META_EXISTS: Final = {
    SQLITE: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'router_memory_meta'",
    POSTGRESQL: "SELECT 1 WHERE to_regclass('router_memory_meta') IS NOT NULL",
}


def store_exists(conn: ReadConn) -> bool:
    """Whether any Memory store was made (its tables are made with the first write), asked
    without a failing statement (`_META_EXISTS`)."""
    return conn.execute(_META_EXISTS[dialect_of(conn)]).fetchone() is not None


def owners(conn: ReadConn) -> list[str]:
    """Every owner with a Memory store (for the background upkeep), none if there is none."""
    if not store_exists(conn):
        return []
    try:
        found = conn.execute(
            "SELECT owner FROM router_memory_meta WHERE name = 'generation' ORDER BY owner"
        ).fetchall()
    except Exception as exc:
        if _missing_table(exc):  # (dropped since: a race with nothing to do)
            return []
        raise
    return [str(r[0]) for r in found]


def read_workspace(conn: ReadConn, owner: str, identity: str) -> list[tuple[Any, ...]] | None:
    """``owner``'s observations of one workspace identity, each with its feedback, oldest
    first.

    Returns:
        ``(observation_id, workflow_run_id, observation_json, recorded_day, recorded_at,
        [feedback_json, ...])`` rows, or None if the store does not exist.
    """
    if not store_exists(conn):
        return None
    try:
        rows = conn.execute(
            "SELECT observation_id, workflow_run_id, observation_json, recorded_day, recorded_at"
            " FROM router_memory_observations WHERE owner = ? AND workspace_identity = ?"
            " ORDER BY recorded_at, observation_id",
            (owner, identity),
        ).fetchall()
    except Exception as exc:
        if _missing_table(exc):  # nothing was ever recorded
            return None
        raise
    feedback: dict[str, list[str]] = {}
    for observation_id, doc in conn.execute(
        "SELECT observation_id, feedback_json FROM router_memory_feedback"
        " WHERE owner = ? AND workspace_identity = ?",
        (owner, identity),
    ):
        feedback.setdefault(observation_id, []).append(doc)
    return [(*tuple(r), feedback.get(r[0], [])) for r in rows]


def _sqlite_v5(db: sqlite_utils.Database) -> None:
    # Rebuild each Memory table that exists with the owner column first and in its key; the
    # rows it held go to the anonymous/local owner (''). Tables Memory never made stay absent.
    for table, (columns, _key) in _SHAPES.items():
        if not db[table].exists():
            continue
        names = ", ".join(c.split()[0] for c in columns.split(","))
        old = f"{table}_v4"
        db.execute(f"ALTER TABLE {table} RENAME TO {old}")
        db.execute(_create(table))
        db.execute(f"INSERT INTO {table} (owner, {names}) SELECT '', {names} FROM {old}")
        db.execute(f"DROP TABLE {old}")


def _postgresql_v5() -> list[str]:
    # The same step in place: IF EXISTS leaves the tables Memory never made absent.
    steps = []
    for table, (_columns, key) in _SHAPES.items():
        steps += [
            f"ALTER TABLE IF EXISTS {table} ADD COLUMN IF NOT EXISTS owner TEXT NOT NULL"
            " DEFAULT ''",
            f"ALTER TABLE IF EXISTS {table} ALTER COLUMN owner DROP DEFAULT",
            f"ALTER TABLE IF EXISTS {table} DROP CONSTRAINT IF EXISTS {table}_pkey",
            f"ALTER TABLE IF EXISTS {table} ADD PRIMARY KEY (owner, {key})",
        ]
    return steps


#: Router schema step 5: Memory rows belong to a principal (existing rows: anonymous/local).
V5: Final = Migration(
    component="router", version=5, apply=_sqlite_v5, sql={"postgresql": _postgresql_v5()}
)
