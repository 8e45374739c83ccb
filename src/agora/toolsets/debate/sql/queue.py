"""The work queue's queries: candidate topics and their signals, a few set-wise statements.

Each function takes the topic ids it is about and answers a dict keyed by topic id, so the
queue costs a fixed number of statements however many topics it ranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.debate.model import Binding
from agora.toolsets.debate.sql.inlist import in_list

if TYPE_CHECKING:
    from collections.abc import Collection

    from agora.store.neutral import ReadConn

_TOPIC_COLUMNS = (
    "topic_id, title, project, state, created_at, created_by_role, resolve_by, archived_at, "
    "metadata, roles, protocol, shape, updated_at"
)


def queue_topics(conn: ReadConn, states: list[str], topic_ids: list[str] | None) -> list[Any]:
    """Topic rows in ``states`` (and among ``topic_ids`` when given), by topic id."""
    if not states or (topic_ids is not None and not topic_ids):
        return []  # `IN ()` is SQLite's, not standard SQL: PostgreSQL refuses it
    marks, params = in_list(states)
    sql = f"SELECT {_TOPIC_COLUMNS} FROM debate_topics WHERE state IN ({marks})"
    if topic_ids is not None:
        marks, more = in_list(topic_ids)
        sql += f" AND topic_id IN ({marks})"
        params += more
    return conn.execute(sql + " ORDER BY topic_id", params).fetchall()


def bindings_of_topics(conn: ReadConn, topic_ids: list[str]) -> dict[str, list[Binding]]:
    """Every binding of the given topics, by topic."""
    out: dict[str, list[Binding]] = {t: [] for t in topic_ids}
    if not topic_ids:
        return out
    marks, params = in_list(topic_ids)
    rows = conn.execute(
        "SELECT topic_id, role, generation, session_id, owner, runtime, state, reason, "
        "bound_by_msg_id, bound_by_role, created_at, updated_at, retired_by, override_msg_id "
        f"FROM debate_bindings WHERE topic_id IN ({marks}) ORDER BY topic_id, role, generation",
        params,
    ).fetchall()
    for r in rows:
        out[r[0]].append(Binding(*r))
    return out


def open_questions(conn: ReadConn, topic_ids: list[str]) -> dict[str, tuple[int, int]]:
    """(open Qs, open H-priority Qs) per topic: Qs with no A reply nor [DEFERRED: reply."""
    if not topic_ids:
        return {}
    marks, params = in_list(topic_ids)
    rows = conn.execute(
        "SELECT q.topic_id, COUNT(*), SUM(CASE WHEN q.priority = 'H' THEN 1 ELSE 0 END) "
        f"FROM debate_messages q WHERE q.topic_id IN ({marks}) AND q.kind = 'Q' "
        "AND NOT EXISTS (SELECT 1 FROM debate_messages a WHERE a.topic_id = q.topic_id "
        "AND a.reply_to = q.msg_id AND (a.kind = 'A' OR substr(a.body, 1, 10) = '[DEFERRED:')) "
        "GROUP BY q.topic_id",
        params,
    ).fetchall()
    return {r[0]: (int(r[1]), int(r[2] or 0)) for r in rows}


def active_claims(conn: ReadConn, topic_ids: list[str]) -> dict[str, int]:
    """Active one-shot DECISION claims per topic."""
    if not topic_ids:
        return {}
    marks, params = in_list(topic_ids)
    rows = conn.execute(
        "SELECT topic_id, COUNT(*) FROM debate_claims WHERE state = 'active' "
        f"AND topic_id IN ({marks}) GROUP BY topic_id",
        params,
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def open_priorities(
    conn: ReadConn, topic_ids: list[str], hidden: Collection[str] = ()
) -> dict[str, set[str]]:
    """The priorities of messages whose delivery is not done yet, per topic, leaving out
    ``hidden`` (blind CLAIMs the barrier still holds back from the caller: their priority
    would tell that one was posted)."""
    if not topic_ids:
        return {}
    marks, params = in_list(topic_ids)
    sql = (
        "SELECT DISTINCT d.topic_id, m.priority FROM debate_deliveries d "
        "JOIN debate_messages m ON m.msg_id = d.msg_id "
        f"WHERE d.state <> 'done' AND d.topic_id IN ({marks})"
    )
    if hidden:
        marks, more = in_list(sorted(hidden))
        sql += f" AND d.msg_id NOT IN ({marks})"
        params += more
    rows = conn.execute(sql, params).fetchall()
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(r[0], set()).add(r[1])
    return out


def latest_messages(conn: ReadConn, topic_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The newest message of each topic (id, ts, role, kind, priority)."""
    out: dict[str, dict[str, Any]] = {}
    for topic_id in topic_ids:
        r = conn.execute(
            "SELECT msg_id, ts, role, kind, priority FROM debate_messages WHERE topic_id = ? "
            "ORDER BY ts DESC, msg_id DESC LIMIT 1",
            (topic_id,),
        ).fetchone()
        if r is not None:
            out[topic_id] = {
                "msg_id": r[0],
                "ts": r[1],
                "role": r[2],
                "kind": r[3],
                "priority": r[4],
            }
    return out
