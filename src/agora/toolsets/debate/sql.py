"""Every SQL statement of the debate toolset: schema, the writes a command makes, and reads.

Written so a second backend can run the same statements: ``?`` placeholders, JSON stored as
TEXT and parsed in Python, fixed-width UTC TEXT timestamps, ``ON CONFLICT`` upserts, and no
SQLite-only functions in the statements. Search runs on the casefolded ``body_folded``
column: an FTS5 ``trigram`` index (kept by a trigger, the migration's business) narrows
candidates and a literal ``LIKE ... ESCAPE`` decides, so both paths return the same rows
(PostgreSQL would put a ``pg_trgm`` index on the same column). This module builds statements
and reads rows; it never commits (the actor or the runtime does).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.store.migrations import Migration
from agora.toolsets.debate.model import Binding, Claim, Cursor, MsgMeta, TopicRow
from agora.toolsets.debate.rules import DEFERRED_PREFIX

if TYPE_CHECKING:
    import sqlite3

    import sqlite_utils

    from agora.runtime.entity import Write

_SCHEMA = """
CREATE TABLE debate_sessions (session_id TEXT PRIMARY KEY, principal TEXT NOT NULL,
  runtime TEXT, label TEXT, created_at TEXT NOT NULL);
CREATE INDEX debate_sessions_principal ON debate_sessions (principal, created_at);
CREATE TABLE debate_topics (topic_id TEXT PRIMARY KEY, title TEXT NOT NULL, project TEXT,
  state TEXT NOT NULL, created_at TEXT NOT NULL, created_by_role TEXT NOT NULL,
  resolve_by TEXT, archived_at TEXT, metadata TEXT NOT NULL, roles TEXT NOT NULL,
  protocol TEXT NOT NULL, shape TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX debate_topics_state ON debate_topics (state);
CREATE TABLE debate_bindings (topic_id TEXT NOT NULL, role TEXT NOT NULL,
  generation INTEGER NOT NULL, session_id TEXT NOT NULL, owner TEXT NOT NULL, runtime TEXT,
  state TEXT NOT NULL, reason TEXT, bound_by_msg_id TEXT, bound_by_role TEXT,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, retired_by TEXT,
  PRIMARY KEY (topic_id, role, generation));
CREATE INDEX debate_bindings_owner ON debate_bindings (owner, state);
CREATE INDEX debate_bindings_session ON debate_bindings (session_id);
CREATE TABLE debate_messages (msg_id TEXT PRIMARY KEY, topic_id TEXT NOT NULL,
  ts TEXT NOT NULL, role TEXT NOT NULL, author_session_id TEXT, priority TEXT NOT NULL,
  kind TEXT NOT NULL, body TEXT NOT NULL, body_folded TEXT NOT NULL, reply_to TEXT,
  vehicle TEXT NOT NULL, standing INTEGER, recipients TEXT NOT NULL, payload TEXT,
  body_mode TEXT, protocol_version TEXT);
CREATE UNIQUE INDEX debate_messages_cursor ON debate_messages (topic_id, ts, msg_id);
CREATE INDEX debate_messages_kind ON debate_messages (topic_id, kind, ts);
CREATE INDEX debate_messages_reply ON debate_messages (topic_id, reply_to);
CREATE TABLE debate_deliveries (msg_id TEXT NOT NULL, recipient TEXT NOT NULL,
  topic_id TEXT NOT NULL, state TEXT NOT NULL, delivered_at TEXT, done_at TEXT,
  PRIMARY KEY (msg_id, recipient));
CREATE INDEX debate_deliveries_open ON debate_deliveries (topic_id, state);
CREATE TABLE debate_cursors (topic_id TEXT NOT NULL, role TEXT NOT NULL,
  session_id TEXT NOT NULL, last_ts TEXT, last_msg_id TEXT, last_check_at TEXT,
  superseded INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (topic_id, role, session_id));
CREATE TABLE debate_watermarks (topic_id TEXT NOT NULL, role TEXT NOT NULL,
  last_ts TEXT NOT NULL, last_msg_id TEXT NOT NULL, PRIMARY KEY (topic_id, role));
CREATE TABLE debate_claims (msg_id TEXT PRIMARY KEY, topic_id TEXT NOT NULL,
  role TEXT NOT NULL, session_id TEXT NOT NULL, owner TEXT NOT NULL, state TEXT NOT NULL,
  claimed_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX debate_claims_topic ON debate_claims (topic_id, state);
CREATE TABLE debate_history (topic_id TEXT NOT NULL, seq INTEGER NOT NULL, at TEXT NOT NULL,
  event TEXT NOT NULL, actor TEXT NOT NULL, detail TEXT NOT NULL,
  PRIMARY KEY (topic_id, seq));
CREATE VIRTUAL TABLE debate_messages_fts USING fts5 (body_folded, content='',
  tokenize='trigram');
"""
_FTS_TRIGGER = """
CREATE TRIGGER debate_messages_fts_insert AFTER INSERT ON debate_messages BEGIN
  INSERT INTO debate_messages_fts (rowid, body_folded) VALUES (new.rowid, new.body_folded);
END
"""


def _migrate_v1(db: sqlite_utils.Database) -> None:
    # One statement at a time: executescript would commit the migration's transaction.
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute(_FTS_TRIGGER)


MIGRATIONS = (Migration(component="debate", version=1, apply=_migrate_v1),)

# -- writes -----------------------------------------------------------------------------------


def insert_session(
    session_id: str, principal: str, runtime: str | None, label: str | None, at: str
) -> Write:
    """A new session; a repeat of the same id changes nothing."""
    return (
        "INSERT INTO debate_sessions (session_id, principal, runtime, label, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO NOTHING",
        (session_id, principal, runtime, label, at),
    )


def insert_topic(row: TopicRow) -> Write:
    """The topic row of a new topic."""
    return (
        "INSERT INTO debate_topics (topic_id, title, project, state, created_at, "
        "created_by_role, resolve_by, archived_at, metadata, roles, protocol, shape, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.topic_id,
            row.title,
            row.project,
            row.state,
            row.created_at,
            row.created_by_role,
            row.resolve_by,
            row.archived_at,
            _dump(row.metadata),
            _dump(row.roles),
            _dump(row.protocol),
            row.shape,
            row.updated_at,
        ),
    )


def update_topic(row: TopicRow) -> Write:
    """The mutable columns of a topic row."""
    return (
        "UPDATE debate_topics SET project = ?, state = ?, archived_at = ?, metadata = ?, "
        "roles = ?, updated_at = ? WHERE topic_id = ?",
        (
            row.project,
            row.state,
            row.archived_at,
            _dump(row.metadata),
            _dump(row.roles),
            row.updated_at,
            row.topic_id,
        ),
    )


def upsert_binding(b: Binding) -> Write:
    """A binding generation, inserted or brought up to date."""
    return (
        "INSERT INTO debate_bindings (topic_id, role, generation, session_id, owner, runtime, "
        "state, reason, bound_by_msg_id, bound_by_role, created_at, updated_at, retired_by) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (topic_id, role, generation) DO UPDATE SET state = excluded.state, "
        "updated_at = excluded.updated_at, retired_by = excluded.retired_by",
        (
            b.topic_id,
            b.role,
            b.generation,
            b.session_id,
            b.owner,
            b.runtime,
            b.state,
            b.reason,
            b.bound_by_msg_id,
            b.bound_by_role,
            b.created_at,
            b.updated_at,
            b.retired_by,
        ),
    )


def insert_message(
    topic_id: str,
    meta: MsgMeta,
    body: str,
    author_session_id: str | None,
    vehicle: str,
    extra: dict[str, Any],
) -> Write:
    """One message (append-only: never updated, never deleted)."""
    standing = None if meta.standing is None else int(meta.standing)
    return (
        "INSERT INTO debate_messages (msg_id, topic_id, ts, role, author_session_id, priority, "
        "kind, body, body_folded, reply_to, vehicle, standing, recipients, payload, body_mode, "
        "protocol_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            meta.msg_id,
            topic_id,
            meta.ts,
            meta.role,
            author_session_id,
            meta.priority,
            meta.kind,
            body,
            body.casefold(),
            meta.reply_to,
            vehicle,
            standing,
            _dump(list(meta.recipients)),
            extra.get("payload"),
            extra.get("body_mode"),
            extra.get("protocol_version"),
        ),
    )


def insert_delivery(topic_id: str, msg_id: str, recipient: str) -> Write:
    """A pending delivery marker of one message for one recipient."""
    return (
        "INSERT INTO debate_deliveries (msg_id, recipient, topic_id, state) "
        "VALUES (?, ?, ?, 'pending') ON CONFLICT (msg_id, recipient) DO NOTHING",
        (msg_id, recipient, topic_id),
    )


def mark_delivery(msg_id: str, recipient: str, state: str, at: str) -> Write:
    """Move a delivery marker to ``delivered`` or ``done``."""
    column = "delivered_at" if state == "delivered" else "done_at"
    return (
        f"UPDATE debate_deliveries SET state = ?, {column} = ? WHERE msg_id = ? AND recipient = ?",
        (state, at, msg_id, recipient),
    )


def upsert_cursor(topic_id: str, role: str, session_id: str, c: Cursor) -> Write:
    """A signal cursor, inserted or replaced."""
    return (
        "INSERT INTO debate_cursors (topic_id, role, session_id, last_ts, last_msg_id, "
        "last_check_at, superseded) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (topic_id, role, session_id) DO UPDATE SET last_ts = excluded.last_ts, "
        "last_msg_id = excluded.last_msg_id, last_check_at = excluded.last_check_at, "
        "superseded = excluded.superseded",
        (topic_id, role, session_id, c.ts, c.msg_id, c.last_check_at, int(c.superseded)),
    )


def upsert_watermark(topic_id: str, role: str, ts: str, msg_id: str) -> Write:
    """The (topic, role) watermark."""
    return (
        "INSERT INTO debate_watermarks (topic_id, role, last_ts, last_msg_id) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (topic_id, role) DO UPDATE SET "
        "last_ts = excluded.last_ts, last_msg_id = excluded.last_msg_id",
        (topic_id, role, ts, msg_id),
    )


def upsert_claim(topic_id: str, c: Claim) -> Write:
    """A DECISION claim, inserted or moved to its new state."""
    return (
        "INSERT INTO debate_claims (msg_id, topic_id, role, session_id, owner, state, "
        "claimed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (msg_id) "
        "DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
        (c.msg_id, topic_id, c.role, c.session_id, c.owner, c.state, c.claimed_at, c.updated_at),
    )


def insert_history(
    topic_id: str, seq: int, at: str, event: str, actor: str, detail: dict[str, Any]
) -> Write:
    """One audit/history event, in the same transaction as the change it records."""
    return (
        "INSERT INTO debate_history (topic_id, seq, at, event, actor, detail) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (topic_id, seq, at, event, actor, _dump(detail)),
    )


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


# -- reads ------------------------------------------------------------------------------------

MESSAGE_COLUMNS = (
    "msg_id, topic_id, ts, role, author_session_id, priority, kind, body, reply_to, vehicle, "
    "standing, recipients, payload, body_mode"
)


def topic_row(conn: sqlite3.Connection, topic_id: str) -> TopicRow | None:
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
    return None if r is None else _topic(r)


def _topic(r: sqlite3.Row) -> TopicRow:
    metadata, roles, protocol = json.loads(r[8]), json.loads(r[9]), json.loads(r[10])
    if not isinstance(metadata, dict) or not isinstance(roles, list):
        raise ValueError(f"topic {r[0]}: malformed roster or metadata")
    return TopicRow(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], metadata, roles, protocol, r[11], r[12]
    )


def bindings(conn: sqlite3.Connection, topic_id: str) -> list[Binding]:
    """Every binding generation of a topic, by role then generation."""
    rows = conn.execute(
        "SELECT topic_id, role, generation, session_id, owner, runtime, state, reason, "
        "bound_by_msg_id, bound_by_role, created_at, updated_at, retired_by "
        "FROM debate_bindings WHERE topic_id = ? ORDER BY role, generation",
        (topic_id,),
    ).fetchall()
    return [Binding(*r) for r in rows]


def message_metas(conn: sqlite3.Connection, topic_id: str) -> list[MsgMeta]:
    """What the topic entity keeps of each message, in (ts, msg_id) order."""
    rows = conn.execute(
        "SELECT msg_id, ts, role, kind, priority, reply_to, recipients, standing, "
        "substr(body, 1, 10) FROM debate_messages WHERE topic_id = ? ORDER BY ts, msg_id",
        (topic_id,),
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


def open_deliveries(conn: sqlite3.Connection, topic_id: str) -> list[tuple[str, str, str]]:
    """(msg_id, recipient, state) of the topic's delivery markers not yet done."""
    rows = conn.execute(
        "SELECT msg_id, recipient, state FROM debate_deliveries "
        "WHERE topic_id = ? AND state <> 'done'",
        (topic_id,),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def cursors(conn: sqlite3.Connection, topic_id: str) -> dict[tuple[str, str], Cursor]:
    """The topic's signal cursors by (role, session_id)."""
    rows = conn.execute(
        "SELECT role, session_id, last_ts, last_msg_id, last_check_at, superseded "
        "FROM debate_cursors WHERE topic_id = ?",
        (topic_id,),
    ).fetchall()
    return {(r[0], r[1]): Cursor(r[2], r[3], r[4], bool(r[5])) for r in rows}


def watermarks(conn: sqlite3.Connection, topic_id: str) -> dict[str, tuple[str, str]]:
    """The topic's watermarks by role."""
    rows = conn.execute(
        "SELECT role, last_ts, last_msg_id FROM debate_watermarks WHERE topic_id = ?",
        (topic_id,),
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def claims(conn: sqlite3.Connection, topic_id: str) -> list[Claim]:
    """The topic's DECISION claims."""
    rows = conn.execute(
        "SELECT msg_id, role, session_id, owner, state, claimed_at, updated_at "
        "FROM debate_claims WHERE topic_id = ?",
        (topic_id,),
    ).fetchall()
    return [Claim(*r) for r in rows]


def history_seq(conn: sqlite3.Connection, topic_id: str) -> int:
    """The topic's last history sequence number (0 when none)."""
    r = conn.execute(
        "SELECT MAX(seq) FROM debate_history WHERE topic_id = ?", (topic_id,)
    ).fetchone()
    return int(r[0] or 0)


def history(conn: sqlite3.Connection, topic_id: str) -> list[dict[str, Any]]:
    """A topic's audit/history events, oldest first."""
    rows = conn.execute(
        "SELECT seq, at, event, actor, detail FROM debate_history WHERE topic_id = ? ORDER BY seq",
        (topic_id,),
    ).fetchall()
    return [
        {"seq": r[0], "at": r[1], "event": r[2], "actor": r[3], "detail": json.loads(r[4])}
        for r in rows
    ]


def session_owners(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, str]:
    """The owning principal of each existing session among ``session_ids``."""
    if not session_ids:
        return {}
    marks = ",".join("?" * len(session_ids))
    rows = conn.execute(
        f"SELECT session_id, principal FROM debate_sessions WHERE session_id IN ({marks})",
        tuple(session_ids),
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def sessions_of(conn: sqlite3.Connection, principal: str, limit: int) -> list[sqlite3.Row]:
    """A principal's sessions, newest first."""
    return conn.execute(
        "SELECT session_id, runtime, label, created_at FROM debate_sessions "
        "WHERE principal = ? ORDER BY created_at DESC, session_id LIMIT ?",
        (principal, limit),
    ).fetchall()


def bindings_of_sessions(conn: sqlite3.Connection, session_ids: list[str]) -> list[sqlite3.Row]:
    """Every binding of the given sessions."""
    if not session_ids:
        return []
    marks = ",".join("?" * len(session_ids))
    return conn.execute(
        "SELECT session_id, topic_id, role, state, generation FROM debate_bindings "
        f"WHERE session_id IN ({marks}) ORDER BY topic_id, role, generation",
        tuple(session_ids),
    ).fetchall()


def messages_by_id(conn: sqlite3.Connection, msg_ids: list[str]) -> dict[str, sqlite3.Row]:
    """Full message rows by id."""
    if not msg_ids:
        return {}
    marks = ",".join("?" * len(msg_ids))
    rows = conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM debate_messages WHERE msg_id IN ({marks})",
        tuple(msg_ids),
    ).fetchall()
    return {r[0]: r for r in rows}


def message_at(conn: sqlite3.Connection, topic_id: str, msg_id: str) -> tuple[str, str] | None:
    """The (ts, msg_id) of a message of the topic, or None."""
    r = conn.execute(
        "SELECT ts, msg_id FROM debate_messages WHERE topic_id = ? AND msg_id = ?",
        (topic_id, msg_id),
    ).fetchone()
    return None if r is None else (r[0], r[1])


def latest_of_kind(conn: sqlite3.Connection, topic_id: str, kind: str) -> tuple[str, str] | None:
    """The (ts, msg_id) of the topic's newest message of ``kind``, or None."""
    r = conn.execute(
        "SELECT ts, msg_id FROM debate_messages WHERE topic_id = ? AND kind = ? "
        "ORDER BY ts DESC, msg_id DESC LIMIT 1",
        (topic_id, kind),
    ).fetchone()
    return None if r is None else (r[0], r[1])


def page(
    conn: sqlite3.Connection,
    topic_id: str,
    after: tuple[str, str],
    kinds: list[str],
    priorities: list[str],
    limit: int,
) -> list[sqlite3.Row]:
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


def search(
    conn: sqlite3.Connection, topic_id: str, phrase: str | None, pattern: str, limit: int
) -> list[sqlite3.Row]:
    """Messages whose folded body contains the literal pattern, newest first.

    With ``phrase`` the trigram index narrows the candidates first; without it (queries
    shorter than a trigram) the topic's messages are scanned. Both keep the same LIKE test.
    """
    if phrase is not None:
        return conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM debate_messages WHERE topic_id = ? "
            "AND rowid IN (SELECT rowid FROM debate_messages_fts WHERE debate_messages_fts "
            "MATCH ?) AND body_folded LIKE ? ESCAPE '\\' ORDER BY ts DESC, msg_id DESC LIMIT ?",
            (topic_id, phrase, pattern, limit),
        ).fetchall()
    return conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM debate_messages WHERE topic_id = ? "
        "AND body_folded LIKE ? ESCAPE '\\' ORDER BY ts DESC, msg_id DESC LIMIT ?",
        (topic_id, pattern, limit),
    ).fetchall()
