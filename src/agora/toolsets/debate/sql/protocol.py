"""The debate/v1 statements: the micro-state row and the judge projections.

Migration 2 adds ``debate_protocol`` (one row per v1 topic; ``blind_roles`` and
``blind_commits`` as JSON TEXT) and ``debate_judge_projections`` (immutable AB/BA
projections and their verdicts); migration 7 adds its ``closed_early`` column (JSON TEXT:
how a role outside the blind pair closed a live debate). A state update names the
transition_version it replaces, so a row never moves from a stale read. Statements only;
nothing here commits.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from agora.toolsets.debate.protocol.judging import Projection
from agora.toolsets.debate.protocol.state import ProtocolState, hidden_ids
from agora.toolsets.debate.rules import OPEN_STATES
from agora.toolsets.debate.sql.inlist import in_list
from agora.toolsets.debate.sql.reads import bindings, topic_from_row

if TYPE_CHECKING:
    from agora.runtime.entity import Write
    from agora.store.neutral import ReadConn
    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.model import Binding, TopicRow

_SCHEMA_V2 = (
    "CREATE TABLE debate_protocol (topic_id TEXT PRIMARY KEY, protocol_version TEXT NOT NULL, "
    "phase TEXT NOT NULL, round_no INTEGER NOT NULL, max_rounds INTEGER NOT NULL, "
    "blind_roles TEXT NOT NULL, blind_commits TEXT NOT NULL, blind_barrier_state TEXT NOT NULL, "
    "stalemate_reason TEXT, transition_version INTEGER NOT NULL, phase_deadline_at TEXT, "
    "phase_timeout_seconds INTEGER NOT NULL, updated_at TEXT NOT NULL)",
    "CREATE INDEX debate_protocol_deadline ON debate_protocol (phase_deadline_at)",
    "CREATE TABLE debate_judge_projections (projection_id TEXT PRIMARY KEY, "
    "topic_id TEXT NOT NULL, round_no INTEGER NOT NULL, order_key TEXT NOT NULL, "
    "left_msg_id TEXT NOT NULL, right_msg_id TEXT NOT NULL, projection TEXT NOT NULL, "
    "verdict TEXT, judge_role TEXT, created_at TEXT NOT NULL, decided_at TEXT)",
    "CREATE INDEX debate_judge_projections_topic ON debate_judge_projections (topic_id)",
)

_STATE_COLUMNS = (
    "topic_id, protocol_version, phase, round_no, max_rounds, blind_roles, blind_commits, "
    "blind_barrier_state, stalemate_reason, transition_version, phase_deadline_at, "
    "phase_timeout_seconds, updated_at, closed_early"
)


_PROJECTION_COLUMNS = (
    "projection_id, topic_id, round_no, order_key, left_msg_id, right_msg_id, projection, "
    "verdict, judge_role, created_at, decided_at"
)


def migrate_v2(db: Any) -> None:
    """Create the debate/v1 tables."""
    for statement in _SCHEMA_V2:
        db.execute(statement)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _params(s: ProtocolState) -> tuple[Any, ...]:
    return (
        s.phase,
        s.round_no,
        s.max_rounds,
        _dump(s.blind_roles),
        _dump(s.blind_commits),
        s.blind_barrier_state,
        s.stalemate_reason,
        s.transition_version,
        s.phase_deadline_at,
        s.phase_timeout_seconds,
        s.updated_at,
        None if s.closed_early is None else _dump(s.closed_early),
    )


def insert_protocol(s: ProtocolState) -> Write:
    """The micro-state row of a new v1 topic."""
    return (
        f"INSERT INTO debate_protocol ({_STATE_COLUMNS}) "
        "VALUES (?, 'debate/v1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (s.topic_id, *_params(s)),
    )


def update_protocol(s: ProtocolState, prior_version: int) -> Write:
    """The new micro-state, replacing the row only at ``prior_version`` (compare-and-swap)."""
    return (
        "UPDATE debate_protocol SET phase = ?, round_no = ?, max_rounds = ?, blind_roles = ?, "
        "blind_commits = ?, blind_barrier_state = ?, stalemate_reason = ?, "
        "transition_version = ?, phase_deadline_at = ?, phase_timeout_seconds = ?, "
        "updated_at = ?, closed_early = ? WHERE topic_id = ? AND transition_version = ?",
        (*_params(s), s.topic_id, prior_version),
    )


def _state(r: Any) -> ProtocolState:
    return ProtocolState(
        topic_id=r[0],
        phase=r[2],
        round_no=int(r[3]),
        max_rounds=int(r[4]),
        blind_roles=json.loads(r[5]),
        blind_commits=json.loads(r[6]),
        blind_barrier_state=r[7],
        stalemate_reason=r[8],
        transition_version=int(r[9]),
        phase_deadline_at=r[10],
        phase_timeout_seconds=int(r[11]),
        updated_at=r[12],
        closed_early=None if r[13] is None else json.loads(r[13]),
    )


def protocol_state(conn: ReadConn, topic_id: str) -> ProtocolState | None:
    """The topic's micro-state with its judge projections, or None for a legacy (or
    unknown) topic."""
    r = conn.execute(
        f"SELECT {_STATE_COLUMNS} FROM debate_protocol WHERE topic_id = ?", (topic_id,)
    ).fetchone()
    if r is None:
        return None
    state = _state(r)
    rows = conn.execute(
        f"SELECT {_PROJECTION_COLUMNS} FROM debate_judge_projections WHERE topic_id = ? "
        "ORDER BY round_no, order_key",
        (topic_id,),
    ).fetchall()
    for p in rows:
        verdict = None if p[7] is None else json.loads(p[7])
        state.projections[p[0]] = Projection(
            p[0], p[1], int(p[2]), p[3], p[4], p[5], json.loads(p[6]), p[9], verdict, p[8], p[10]
        )
    return state


def insert_projection(p: Projection) -> Write:
    """A new judge projection (immutable)."""
    return (
        f"INSERT INTO debate_judge_projections ({_PROJECTION_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, NULL)",
        (
            p.projection_id,
            p.topic_id,
            p.round_no,
            p.order_key,
            p.left_msg_id,
            p.right_msg_id,
            _dump(p.positions),
            p.created_at,
        ),
    )


def set_verdict(p: Projection) -> Write:
    """A projection's verdict; a projection takes exactly one."""
    return (
        "UPDATE debate_judge_projections SET verdict = ?, judge_role = ?, decided_at = ? "
        "WHERE projection_id = ? AND verdict IS NULL",
        (_dump(p.verdict), p.judge_role, p.decided_at, p.projection_id),
    )


def projection_topic(conn: ReadConn, projection_id: str) -> str | None:
    """The topic a projection belongs to, or None."""
    r = conn.execute(
        "SELECT topic_id FROM debate_judge_projections WHERE projection_id = ?",
        (projection_id,),
    ).fetchone()
    return None if r is None else str(r[0])


def payloads(conn: ReadConn, topic_id: str, msg_ids: list[str]) -> dict[str, Any]:
    """msg_id -> parsed payload (None when absent) of messages of one topic."""
    out: dict[str, Any] = {}
    for msg_id in msg_ids:
        r = conn.execute(
            "SELECT payload FROM debate_messages WHERE msg_id = ? AND topic_id = ?",
            (msg_id, topic_id),
        ).fetchone()
        if r is not None:
            out[msg_id] = None if r[0] is None else json.loads(r[0])
    return out


def expired_phases(conn: ReadConn, at: str) -> list[tuple[str, str, int]]:
    """(topic_id, phase, transition_version) of timed phases whose deadline is at or before
    ``at``, on ACTIVE topics (an INIT topic's clock has not started; a resolved or archived
    debate is over: its phase stays as it ended), in topic order."""
    rows = conn.execute(
        "SELECT p.topic_id, p.phase, p.transition_version FROM debate_protocol p "
        "JOIN debate_topics t ON t.topic_id = p.topic_id "
        "WHERE p.phase_deadline_at IS NOT NULL AND p.phase_deadline_at <= ? "
        "AND p.phase IN ('BLIND_CLAIM', 'DEBATE', 'ADJUDICATE') AND t.state = 'ACTIVE' "
        "ORDER BY p.topic_id",
        (at,),
    ).fetchall()
    return [(r[0], r[1], int(r[2])) for r in rows]


def blind_hidden(
    conn: ReadConn, topic_id: str, caller: Caller, viewer_role: str | None
) -> set[str]:
    """The msg_ids the blind barrier hides from this viewer (committed rows)."""
    state = protocol_state(conn, topic_id)
    if state is None or not state.pending_blind():
        return set()
    return hidden_ids(state, caller, viewer_role, bindings(conn, topic_id))


_TOPIC_COLUMNS = (
    "t.topic_id, t.title, t.project, t.state, t.created_at, t.created_by_role, t.resolve_by, "
    "t.archived_at, t.metadata, t.roles, t.protocol, t.shape, t.updated_at"
)


#: `OPEN_STATES` as SQL literals (constants of this module, never caller input).
_OPEN: Final = ", ".join(f"'{state}'" for state in OPEN_STATES)


def recovery_candidates(
    conn: ReadConn, topic_ids: list[str] | None
) -> list[tuple[TopicRow, list[Binding]]]:
    """Open (INIT or ACTIVE, `OPEN_STATES` as the work queue counts them: a whole debate
    runs while its topic stays INIT) debate/v1 topics whose phase is not terminal, with
    their bindings; only ``topic_ids`` when given. In topic order.

    Raises:
        ValueError: a topic's stored roster or metadata is malformed.
    """
    query = (
        f"SELECT {_TOPIC_COLUMNS} FROM debate_topics t JOIN debate_protocol p "
        f"ON p.topic_id = t.topic_id WHERE t.state IN ({_OPEN}) "
        "AND p.phase NOT IN ('STOPPED', 'ESCALATED')"
    )
    params: tuple[str, ...] = ()
    if topic_ids is not None:
        if not topic_ids:
            return []
        marks, params = in_list(topic_ids)
        query += f" AND t.topic_id IN ({marks})"
    rows = conn.execute(query + " ORDER BY t.topic_id", params).fetchall()
    out = []
    for r in rows:
        row = topic_from_row(r)
        if not all(isinstance(role, str) for role in row.roles):
            raise ValueError(f"topic {row.topic_id}: malformed roster")
        out.append((row, bindings(conn, row.topic_id)))
    return out


def blind_pending(conn: ReadConn, topic_ids: list[str]) -> dict[str, set[str]]:
    """topic_id -> msg_ids of its committed blind CLAIMs not yet released (topics with
    none are left out)."""
    out: dict[str, set[str]] = {}
    for start in range(0, len(topic_ids), 500):
        marks, params = in_list(topic_ids[start : start + 500])
        rows = conn.execute(
            "SELECT topic_id, blind_commits FROM debate_protocol WHERE "
            f"blind_barrier_state = 'waiting' AND topic_id IN ({marks})",
            params,
        ).fetchall()
        for topic_id, commits in rows:
            held = set(json.loads(commits).values())
            if held:
                out[topic_id] = held
    return out


def latest_visible(conn: ReadConn, topic_id: str, hidden: set[str]) -> dict[str, Any] | None:
    """The newest message of a topic that is not in ``hidden`` (id, ts, role, kind,
    priority), or None."""
    rows = conn.execute(
        "SELECT msg_id, ts, role, kind, priority FROM debate_messages WHERE topic_id = ? "
        "ORDER BY ts DESC, msg_id DESC LIMIT ?",
        (topic_id, len(hidden) + 1),
    ).fetchall()
    for r in rows:
        if r[0] not in hidden:
            return {"msg_id": r[0], "ts": r[1], "role": r[2], "kind": r[3], "priority": r[4]}
    return None
