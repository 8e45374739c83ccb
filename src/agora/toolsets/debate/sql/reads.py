"""The queries on committed rows: rebuilding a topic, and the read tools' pages.

Run on a read connection (``runtime.read``) or by `TopicKind.load`; nothing here writes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.store.neutral import SQLITE, dialect_of
from agora.toolsets.debate.model import Binding, Claim, Cursor, MsgMeta, TopicRow
from agora.toolsets.debate.rules import DEFERRED_PREFIX
from agora.toolsets.debate.sql.fts import SEARCH_HITS
from agora.toolsets.debate.sql.inlist import in_list

if TYPE_CHECKING:
    from collections.abc import Collection

    from agora.store.neutral import ReadConn

_COLUMNS = (
    "msg_id",
    "topic_id",
    "ts",
    "role",
    "author_session_id",
    "priority",
    "kind",
    "body",
    "reply_to",
    "vehicle",
    "standing",
    "recipients",
    "payload",
    "body_mode",
    "override_msg_id",
)
MESSAGE_COLUMNS = ", ".join(_COLUMNS)
_PREFIXED = ", ".join(f"m.{c}" for c in _COLUMNS)


def topic_row(conn: ReadConn, topic_id: str) -> TopicRow | None:
    """The topic's row, or None.

    Raises:
        ValueError: if its stored JSON is malformed.
    """
    r = conn.execute(
        "SELECT topic_id, title, project, state, created_at, created_by_role, resolve_by, "
        "archived_at, metadata, roles, protocol, shape, updated_at FROM debate_topics "
        "WHERE topic_id = ?",
        (topic_id,),
    ).fetchone()
    return None if r is None else topic_from_row(r)


def topic_from_row(r: Any) -> TopicRow:
    """A ``debate_topics`` row (all columns, in order) as a `TopicRow`.

    Raises:
        ValueError: if its stored roster or metadata is malformed.
    """
    metadata, roles, protocol = json.loads(r[8]), json.loads(r[9]), json.loads(r[10])
    if not isinstance(metadata, dict) or not isinstance(roles, list):
        raise ValueError(f"topic {r[0]}: malformed roster or metadata")
    return TopicRow(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], metadata, roles, protocol, r[11], r[12]
    )


def bindings(conn: ReadConn, topic_id: str) -> list[Binding]:
    """Every binding generation of a topic, by role then generation."""
    rows = conn.execute(
        "SELECT topic_id, role, generation, session_id, owner, runtime, state, reason, "
        "bound_by_msg_id, bound_by_role, created_at, updated_at, retired_by, override_msg_id "
        "FROM debate_bindings WHERE topic_id = ? ORDER BY role, generation",
        (topic_id,),
    ).fetchall()
    return [Binding(*r) for r in rows]


def message_metas(
    conn: ReadConn, topic_id: str, after: tuple[str, str] | None = None
) -> list[MsgMeta]:
    """What the topic entity keeps of each message, in (ts, msg_id) order; with ``after``
    (a message's ts and msg_id), of the messages that follow it only."""
    since: str = ""
    args: tuple[str, ...] = (topic_id,)
    if after is not None:
        since, args = " AND (ts > ? OR (ts = ? AND msg_id > ?))", (topic_id, after[0], *after)
    rows = conn.execute(
        "SELECT msg_id, ts, role, kind, priority, reply_to, recipients, standing, "
        f"substr(body, 1, 10) FROM debate_messages WHERE topic_id = ?{since} "
        "ORDER BY ts, msg_id",
        args,
    ).fetchall()
    return [
        MsgMeta(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            tuple(json.loads(r[6])),
            None if r[7] is None else bool(r[7]),
            str(r[8]).startswith(DEFERRED_PREFIX),
        )
        for r in rows
    ]


def open_deliveries(conn: ReadConn, topic_id: str) -> list[tuple[str, str, str]]:
    """(msg_id, recipient, state) of the topic's delivery markers not yet done."""
    rows = conn.execute(
        "SELECT msg_id, recipient, state FROM debate_deliveries "
        "WHERE topic_id = ? AND state <> 'done'",
        (topic_id,),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def cursors(conn: ReadConn, topic_id: str) -> dict[tuple[str, str], Cursor]:
    """The topic's signal cursors by (role, session_id)."""
    rows = conn.execute(
        "SELECT role, session_id, last_ts, last_msg_id, last_check_at, superseded "
        "FROM debate_cursors WHERE topic_id = ?",
        (topic_id,),
    ).fetchall()
    return {(r[0], r[1]): Cursor(r[2], r[3], r[4], bool(r[5])) for r in rows}


def watermarks(conn: ReadConn, topic_id: str) -> dict[str, tuple[str, str]]:
    """The topic's watermarks by role."""
    rows = conn.execute(
        "SELECT role, last_ts, last_msg_id FROM debate_watermarks WHERE topic_id = ?",
        (topic_id,),
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def claims(conn: ReadConn, topic_id: str) -> list[Claim]:
    """The topic's DECISION claims."""
    rows = conn.execute(
        "SELECT msg_id, role, session_id, owner, state, claimed_at, updated_at "
        "FROM debate_claims WHERE topic_id = ?",
        (topic_id,),
    ).fetchall()
    return [Claim(*r) for r in rows]


def history_seq(conn: ReadConn, topic_id: str) -> int:
    """The topic's last history sequence number (0 when none)."""
    r = conn.execute(
        "SELECT MAX(seq) FROM debate_history WHERE topic_id = ?", (topic_id,)
    ).fetchone()
    return int(r[0] or 0)


def history(conn: ReadConn, topic_id: str) -> list[dict[str, Any]]:
    """A topic's audit/history events, oldest first."""
    rows = conn.execute(
        "SELECT seq, at, event, actor, detail FROM debate_history WHERE topic_id = ? ORDER BY seq",
        (topic_id,),
    ).fetchall()
    return [
        {"seq": r[0], "at": r[1], "event": r[2], "actor": r[3], "detail": json.loads(r[4])}
        for r in rows
    ]


def session_owners(conn: ReadConn, session_ids: list[str]) -> dict[str, str]:
    """The owning principal of each existing session among ``session_ids``."""
    if not session_ids:
        return {}
    marks, params = in_list(session_ids)
    rows = conn.execute(
        f"SELECT session_id, principal FROM debate_sessions WHERE session_id IN ({marks})",
        params,
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def session_principals(conn: ReadConn, session_ids: list[str]) -> dict[str, str]:
    """The principal behind each session among ``session_ids``: its owner, or for a worker
    session (`debate_worker_claim`) the owner of its claim."""
    if not session_ids:
        return {}
    marks, params = in_list(session_ids)
    rows = conn.execute(
        f"SELECT session_id, principal FROM debate_sessions WHERE session_id IN ({marks}) "
        "UNION ALL SELECT worker_session_id, owner FROM debate_worker_claims "
        f"WHERE worker_session_id IN ({marks})",
        params + params,
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def sessions_of(conn: ReadConn, principal: str, limit: int) -> list[Any]:
    """A principal's sessions, newest first."""
    return conn.execute(
        "SELECT session_id, runtime, label, created_at FROM debate_sessions "
        "WHERE principal = ? ORDER BY created_at DESC, session_id LIMIT ?",
        (principal, limit),
    ).fetchall()


def bindings_of_sessions(conn: ReadConn, session_ids: list[str]) -> list[Any]:
    """Every binding of the given sessions."""
    if not session_ids:
        return []
    marks, params = in_list(session_ids)
    return conn.execute(
        "SELECT session_id, topic_id, role, state, generation FROM debate_bindings "
        f"WHERE session_id IN ({marks}) ORDER BY topic_id, role, generation",
        params,
    ).fetchall()


def messages_by_id(conn: ReadConn, msg_ids: list[str]) -> dict[str, Any]:
    """Full message rows by id."""
    if not msg_ids:
        return {}
    marks, params = in_list(msg_ids)
    rows = conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM debate_messages WHERE msg_id IN ({marks})", params
    ).fetchall()
    return {r[0]: r for r in rows}


def message_at(conn: ReadConn, topic_id: str, msg_id: str) -> tuple[str, str] | None:
    """The (ts, msg_id) of a message of the topic, or None."""
    r = conn.execute(
        "SELECT ts, msg_id FROM debate_messages WHERE topic_id = ? AND msg_id = ?",
        (topic_id, msg_id),
    ).fetchone()
    return None if r is None else (r[0], r[1])


def latest_compaction(conn: ReadConn, topic_id: str) -> tuple[str, str] | None:
    """The (ts, msg_id) of the topic's newest COMPACTION message, or None.

    The kind is written literally: the kind index holds only the kinds a query names (see
    `agora.toolsets.debate.sql.schema`), and a planner proves it applies from the literal.
    """
    r = conn.execute(
        "SELECT ts, msg_id FROM debate_messages WHERE topic_id = ? AND kind = 'COMPACTION' "
        "ORDER BY ts DESC, msg_id DESC LIMIT 1",
        (topic_id,),
    ).fetchone()
    return None if r is None else (r[0], r[1])


def page(
    conn: ReadConn,
    topic_id: str,
    after: tuple[str, str],
    kinds: list[str],
    priorities: list[str],
    limit: int,
) -> list[Any]:
    """Up to ``limit`` messages strictly after the compound cursor ``after``, oldest first."""
    where = ["topic_id = ?", "(ts > ? OR (ts = ? AND msg_id > ?))"]
    params: list[Any] = [topic_id, after[0], after[0], after[1]]
    if kinds:
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if priorities:
        where.append(f"priority IN ({','.join('?' * len(priorities))})")
        params.extend(priorities)
    params.append(limit)
    return conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM debate_messages WHERE {' AND '.join(where)} "
        "ORDER BY ts, msg_id LIMIT ?",
        tuple(params),
    ).fetchall()


def search_recent(
    conn: ReadConn, topic_id: str, pattern: str, limit: int, window: int
) -> list[Any]:
    """Matches among the topic's ``window`` newest messages, newest first.

    When they hold ``limit`` matches these are the newest ``limit`` of the whole topic, so
    a common query never touches the index (whose lists for common trigrams span every
    topic of the store).
    """
    return conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM (SELECT {MESSAGE_COLUMNS}, body_folded "
        "FROM debate_messages WHERE topic_id = ? ORDER BY ts DESC, msg_id DESC LIMIT ?) "
        "AS recent WHERE body_folded LIKE ? ESCAPE '\\' ORDER BY ts DESC, msg_id DESC LIMIT ?",
        (topic_id, window, pattern, limit),
    ).fetchall()


def search(
    conn: ReadConn, topic_id: str, phrase: str | None, pattern: str, limit: int
) -> list[Any]:
    """Messages whose folded body contains the literal pattern, newest first.

    With ``phrase`` the trigram index drives the query (its matches and the messages past
    its watermark, `fts.SEARCH_HITS`, then their rows: a rare query costs its few matches,
    not a scan of the topic); without it the topic's
    messages are scanned newest first until ``limit`` match. Both keep the same LIKE test,
    so they return the same rows.
    """
    if phrase is not None and dialect_of(conn) == SQLITE:  # PostgreSQL: pg_trgm serves LIKE
        return conn.execute(
            f"SELECT {_PREFIXED} FROM ({SEARCH_HITS}) AS f CROSS JOIN debate_messages AS m "
            "ON m.rowid = f.hit WHERE m.topic_id = ? AND m.body_folded LIKE ? ESCAPE '\\' "
            "ORDER BY m.ts DESC, m.msg_id DESC LIMIT ?",
            (phrase, topic_id, pattern, limit),
        ).fetchall()
    return conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM debate_messages WHERE topic_id = ? "
        "AND body_folded LIKE ? ESCAPE '\\' ORDER BY ts DESC, msg_id DESC LIMIT ?",
        (topic_id, pattern, limit),
    ).fetchall()


def active_bindings_of(conn: ReadConn, session_id: str) -> list[tuple[str, str]]:
    """(topic_id, role) of every active binding a session holds."""
    rows = conn.execute(
        "SELECT topic_id, role FROM debate_bindings WHERE session_id = ? AND state = 'active' "
        "ORDER BY topic_id, role",
        (session_id,),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def open_inbox(
    conn: ReadConn, topic_id: str, keys: tuple[str, str], hidden: Collection[str] = ()
) -> tuple[int, str | None, str | None]:
    """(count, oldest ts, newest ts) of the topic's messages for ``keys`` not yet consumed,
    leaving out ``hidden`` (what the blind barrier hides from the inbox's viewer: a held-back
    CLAIM must not show in a count or a date either)."""
    sql = (
        "SELECT COUNT(DISTINCT d.msg_id), MIN(m.ts), MAX(m.ts) FROM debate_deliveries d "
        "JOIN debate_messages m ON m.msg_id = d.msg_id "
        "WHERE d.topic_id = ? AND d.recipient IN (?, ?) AND d.state <> 'done'"
    )
    params: tuple[str, ...] = (topic_id, *keys)
    if hidden:
        marks, more = in_list(sorted(hidden))
        sql += f" AND d.msg_id NOT IN ({marks})"
        params += more
    r = conn.execute(sql, params).fetchone()
    return int(r[0] or 0), r[1], r[2]
