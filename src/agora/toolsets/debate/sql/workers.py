"""The worker-claim statements: migration 3 (``debate_worker_claims``), writes and reads.

One row per (topic, role, parent session, trigger): the derived worker's UUID session, its
state (active, completed, retired, exhausted), the parent cursor pair at allocation,
heartbeats, the terminal reply that completed it, details (JSON TEXT) and its requeue count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn

_SCHEMA_V3 = (
    "CREATE TABLE debate_worker_claims (topic_id TEXT NOT NULL, role TEXT NOT NULL, "
    "parent_session_id TEXT NOT NULL, trigger_msg_id TEXT NOT NULL, "
    "worker_session_id TEXT NOT NULL, owner TEXT NOT NULL, state TEXT NOT NULL, "
    "parent_cursor_ts TEXT, parent_cursor_msg_id TEXT, claimed_at TEXT NOT NULL, "
    "heartbeat_at TEXT NOT NULL, completed_at TEXT, ack_msg_id TEXT, details TEXT NOT NULL, "
    "requeue_count INTEGER NOT NULL, worker_n INTEGER NOT NULL, "
    "PRIMARY KEY (topic_id, role, parent_session_id, trigger_msg_id))",
    "CREATE UNIQUE INDEX debate_worker_claims_session ON debate_worker_claims (worker_session_id)",
)
_COLUMNS = (
    "topic_id, role, parent_session_id, trigger_msg_id, worker_session_id, owner, state, "
    "parent_cursor_ts, parent_cursor_msg_id, claimed_at, heartbeat_at, completed_at, "
    "ack_msg_id, details, requeue_count, worker_n"
)


def migrate_v3(db: Any) -> None:
    """Create the worker-claim table."""
    for statement in _SCHEMA_V3:
        db.execute(statement)


@dataclass(slots=True)
class WorkerClaim:
    """The derived worker of one trigger."""

    topic_id: str
    role: str
    parent_session_id: str
    trigger_msg_id: str
    worker_session_id: str
    owner: str
    state: str
    parent_cursor_ts: str | None
    parent_cursor_msg_id: str | None
    claimed_at: str
    heartbeat_at: str
    completed_at: str | None
    ack_msg_id: str | None
    details: dict[str, Any]
    requeue_count: int
    worker_n: int

    @property
    def key(self) -> tuple[str, str, str]:
        """(role, parent session, trigger): at most one claim each."""
        return (self.role, self.parent_session_id, self.trigger_msg_id)

    def public(self) -> dict[str, Any]:
        """The claim object of debate_worker_claim."""
        return {
            "topic_id": self.topic_id,
            "role": self.role,
            "parent_session_id": self.parent_session_id,
            "trigger_msg_id": self.trigger_msg_id,
            "worker_session_id": self.worker_session_id,
            "state": self.state,
            "parent_cursor": {"ts": self.parent_cursor_ts, "msg_id": self.parent_cursor_msg_id},
            "claimed_at": self.claimed_at,
            "heartbeat_at": self.heartbeat_at,
            "completed_at": self.completed_at,
            "ack_msg_id": self.ack_msg_id,
            "details": self.details,
            "requeue_count": self.requeue_count,
        }


def upsert_worker(c: WorkerClaim) -> Write:
    """A worker claim, inserted or brought up to date."""
    return (
        f"INSERT INTO debate_worker_claims ({_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (topic_id, role, parent_session_id, trigger_msg_id) DO UPDATE SET "
        "state = excluded.state, heartbeat_at = excluded.heartbeat_at, "
        "completed_at = excluded.completed_at, ack_msg_id = excluded.ack_msg_id, "
        "details = excluded.details, requeue_count = excluded.requeue_count",
        (
            c.topic_id,
            c.role,
            c.parent_session_id,
            c.trigger_msg_id,
            c.worker_session_id,
            c.owner,
            c.state,
            c.parent_cursor_ts,
            c.parent_cursor_msg_id,
            c.claimed_at,
            c.heartbeat_at,
            c.completed_at,
            c.ack_msg_id,
            json.dumps(c.details, separators=(",", ":"), sort_keys=True),
            c.requeue_count,
            c.worker_n,
        ),
    )


def worker_claims(conn: ReadConn, topic_id: str) -> list[WorkerClaim]:
    """Every worker claim of a topic, oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM debate_worker_claims WHERE topic_id = ? "
        "ORDER BY claimed_at, worker_session_id",
        (topic_id,),
    ).fetchall()
    return [
        WorkerClaim(*r[:13], json.loads(r[13]), int(r[14]), int(r[15]))  # type: ignore[call-arg]
        for r in rows
    ]


def trigger_vehicle(conn: ReadConn, topic_id: str, msg_id: str) -> str | None:
    """The preserved vehicle of a message of the topic (None when it is not there)."""
    r = conn.execute(
        "SELECT vehicle FROM debate_messages WHERE msg_id = ? AND topic_id = ?",
        (msg_id, topic_id),
    ).fetchone()
    return None if r is None else str(r[0])
