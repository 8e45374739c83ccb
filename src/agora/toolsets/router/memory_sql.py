"""The optional Memory store: its tables, created by the first Memory write, and every statement.

Memory is off by default, and reading its status must not create anything, so its tables are
not migrations: `create_store` (``CREATE TABLE IF NOT EXISTS``) is part of the transaction of
the first Memory write, and a read of a store that does not exist is told apart by the
backend's "no such table" error. ``router_memory_meta`` holds the generation counter (bumped
by every Memory write, never reset, so a summary digest never comes back),
``router_memory_observations`` the recorded workflows (routing context only: no objective
text, no path), ``router_memory_feedback`` typed feedback, ``router_memory_receipts`` each
Memory command's idempotency receipt, ``router_memory_revisions`` the managed Profiles'
revisions, ``router_memory_rejections`` the candidates the user rejected and
``router_memory_proposals`` the rollback proposals awaiting review. Same rules as
`sql`: ``?`` placeholders, JSON as TEXT, fixed-width UTC TEXT timestamps.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Final

from agora.store.neutral import MissingTable, ReadConn

if TYPE_CHECKING:
    from agora.runtime.entity import Write

_TABLES = (
    """CREATE TABLE IF NOT EXISTS router_memory_meta (
        name TEXT PRIMARY KEY, value BIGINT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS router_memory_observations (
        observation_id TEXT PRIMARY KEY, workspace_identity TEXT NOT NULL,
        workflow_run_id TEXT NOT NULL, session_id TEXT NOT NULL,
        route_signature_digest TEXT NOT NULL, observation_json TEXT NOT NULL,
        observation_digest TEXT NOT NULL, recorded_day TEXT NOT NULL, recorded_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS router_memory_feedback (
        feedback_id TEXT PRIMARY KEY, observation_id TEXT NOT NULL,
        workspace_identity TEXT NOT NULL, feedback_json TEXT NOT NULL,
        feedback_digest TEXT NOT NULL, recorded_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS router_memory_receipts (
        session_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, request_digest TEXT NOT NULL,
        result_json TEXT NOT NULL, created_at TEXT NOT NULL,
        PRIMARY KEY (session_id, idempotency_key))""",
    """CREATE TABLE IF NOT EXISTS router_memory_revisions (
        revision_id TEXT PRIMARY KEY, target_profile_class TEXT NOT NULL,
        profile_key TEXT NOT NULL, revision_no BIGINT NOT NULL, profile_json TEXT NOT NULL,
        profile_digest TEXT NOT NULL, source TEXT NOT NULL, created_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS router_memory_rejections (
        candidate_id TEXT PRIMARY KEY, profile_key TEXT NOT NULL, rejected_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS router_memory_proposals (
        proposal_id TEXT PRIMARY KEY, target_profile_class TEXT NOT NULL,
        profile_key TEXT NOT NULL, proposal_json TEXT NOT NULL, created_at TEXT NOT NULL)""",
    "INSERT INTO router_memory_meta (name, value) VALUES ('generation', 0) ON CONFLICT DO NOTHING",
)


def create_store() -> list[Write]:
    """The statements that create the Memory store if it does not exist yet."""
    return [(statement, ()) for statement in _TABLES]


def bump(generation: int) -> Write:
    """Record the store's new generation."""
    return ("UPDATE router_memory_meta SET value = ? WHERE name = 'generation'", (generation,))


def insert_observation(row: dict[str, Any]) -> Write:
    """Record one observation (``row`` has every column)."""
    cols, marks = ", ".join(row), ", ".join("?" for _ in row)
    return (
        f"INSERT INTO router_memory_observations ({cols}) VALUES ({marks})",
        tuple(row.values()),
    )


def insert_feedback(row: dict[str, Any]) -> Write:
    """Record one feedback entry (``row`` has every column)."""
    cols, marks = ", ".join(row), ", ".join("?" for _ in row)
    return (f"INSERT INTO router_memory_feedback ({cols}) VALUES ({marks})", tuple(row.values()))


def insert_receipt(session: str, key: str, request_digest: str, result: str, at: str) -> Write:
    """Keep a Memory command's idempotency receipt."""
    return (
        "INSERT INTO router_memory_receipts (session_id, idempotency_key, request_digest,"
        " result_json, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (session, key, request_digest, result, at),
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


def delete_observation(observation_id: str) -> list[Write]:
    """Delete one observation and the feedback bound to it (retention)."""
    return [
        ("DELETE FROM router_memory_feedback WHERE observation_id = ?", (observation_id,)),
        ("DELETE FROM router_memory_observations WHERE observation_id = ?", (observation_id,)),
    ]


def insert_revision(row: dict[str, Any]) -> Write:
    """Record one managed Profile revision (``row`` has every column)."""
    cols, marks = ", ".join(row), ", ".join("?" for _ in row)
    return (f"INSERT INTO router_memory_revisions ({cols}) VALUES ({marks})", tuple(row.values()))


def delete_revision(revision_id: str) -> Write:
    """Drop one managed Profile revision (beyond the newest kept)."""
    return ("DELETE FROM router_memory_revisions WHERE revision_id = ?", (revision_id,))


def delete_rejection(candidate_id: str) -> Write:
    """Forget a rejection whose suppression expired (retention)."""
    return ("DELETE FROM router_memory_rejections WHERE candidate_id = ?", (candidate_id,))


def insert_rejection(candidate_id: str, key: str, at: str) -> Write:
    """Remember that the user rejected a candidate (it stays suppressed for a while)."""
    return (
        "INSERT INTO router_memory_rejections (candidate_id, profile_key, rejected_at)"
        " VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (candidate_id, key, at),
    )


def insert_proposal(proposal_id: str, target: str, key: str, proposal: str, at: str) -> Write:
    """Keep a reviewable proposal that no candidate derives (a rollback)."""
    return (
        "INSERT INTO router_memory_proposals (proposal_id, target_profile_class, profile_key,"
        " proposal_json, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (proposal_id, target, key, proposal, at),
    )


def delete_all(table: str) -> Write:
    """Delete every row of one Memory table (``table`` comes from `PURGES`, never input)."""
    assert table in {t for tables in PURGES.values() for t in tables} | {MANAGED_TABLE}
    return (f"DELETE FROM {table}", ())


def _missing_table(exc: Exception) -> bool:
    # "No such table" as each backend says it: SQLite's OperationalError, and the store's
    # `MissingTable` (PostgreSQL's SQLSTATE 42P01, translated by the backend).
    if isinstance(exc, MissingTable):
        return True
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("no such table")


#: The ``source`` of a revision the automatic-managed promotion wrote: this + candidate id.
AUTO_SOURCE: Final = "auto:"


def read_store(conn: ReadConn) -> dict[str, Any] | None:
    """The Memory store's rows needed in memory, or None if the store does not exist."""
    try:
        generation = conn.execute(
            "SELECT value FROM router_memory_meta WHERE name = 'generation'"
        ).fetchone()
    except Exception as exc:
        if _missing_table(exc):  # Memory never wrote anything
            return None
        raise
    observations = conn.execute(
        "SELECT observation_id, workspace_identity, workflow_run_id, session_id,"
        " route_signature_digest, recorded_at FROM router_memory_observations"
        " ORDER BY recorded_at, observation_id"
    ).fetchall()
    feedback = conn.execute(
        "SELECT observation_id, COUNT(*) FROM router_memory_feedback GROUP BY observation_id"
    ).fetchall()
    receipts = conn.execute(
        "SELECT session_id, idempotency_key, request_digest, result_json"
        " FROM router_memory_receipts"
    ).fetchall()
    revisions = conn.execute(
        "SELECT target_profile_class, profile_key, revision_no, revision_id, profile_digest,"
        " profile_json FROM router_memory_revisions ORDER BY revision_no"
    ).fetchall()
    rejections = conn.execute(
        "SELECT candidate_id, rejected_at FROM router_memory_rejections"
    ).fetchall()
    sources = conn.execute("SELECT revision_id, source FROM router_memory_revisions").fetchall()
    proposals = conn.execute(
        "SELECT proposal_id, target_profile_class, profile_key, proposal_json"
        " FROM router_memory_proposals"
    ).fetchall()
    return {
        "proposals": [tuple(r) for r in proposals],
        "generation": generation[0] if generation else 0,
        "observations": [tuple(r) for r in observations],
        "feedback": {str(o): int(n) for o, n in feedback},
        "receipts": [tuple(r) for r in receipts],
        "revisions": [tuple(r) for r in revisions],
        "rejections": {str(c): str(at) for c, at in rejections},
        "auto_promoted": {
            str(r): str(src).removeprefix(AUTO_SOURCE)
            for r, src in sources
            if str(src).startswith(AUTO_SOURCE)
        },
    }


def read_workspace(conn: ReadConn, identity: str) -> list[tuple[Any, ...]] | None:
    """One workspace identity's observations, each with its feedback types, oldest first.

    Returns:
        ``(observation_id, workflow_run_id, observation_json, recorded_day, recorded_at,
        [feedback_json, ...])`` rows, or None if the store does not exist.
    """
    try:
        rows = conn.execute(
            "SELECT observation_id, workflow_run_id, observation_json, recorded_day, recorded_at"
            " FROM router_memory_observations WHERE workspace_identity = ?"
            " ORDER BY recorded_at, observation_id",
            (identity,),
        ).fetchall()
    except Exception as exc:
        if _missing_table(exc):  # nothing was ever recorded
            return None
        raise
    feedback: dict[str, list[str]] = {}
    for observation_id, doc in conn.execute(
        "SELECT observation_id, feedback_json FROM router_memory_feedback"
        " WHERE workspace_identity = ?",
        (identity,),
    ):
        feedback.setdefault(observation_id, []).append(doc)
    return [(*tuple(r), feedback.get(r[0], [])) for r in rows]
