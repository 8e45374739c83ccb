"""The statements a debate command commits: one function per row change, no execution.

``?`` placeholders, JSON as TEXT, fixed-width UTC TEXT timestamps, ``ON CONFLICT`` upserts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from agora.runtime.entity import Write
    from agora.toolsets.debate.model import Binding, Claim, Cursor, MsgMeta, TopicRow


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


def touch_topic(topic_id: str, at: str) -> Write:
    """Record when the topic last changed without its row changing (maintenance, judging);
    posts and cursor moves leave it alone: a message's ts says when it came."""
    return ("UPDATE debate_topics SET updated_at = ? WHERE topic_id = ?", (at, topic_id))


def upsert_binding(b: Binding) -> Write:
    """A binding generation, inserted or brought up to date."""
    return (
        "INSERT INTO debate_bindings (topic_id, role, generation, session_id, owner, runtime, "
        "state, reason, bound_by_msg_id, bound_by_role, created_at, updated_at, retired_by, "
        "override_msg_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
            b.override_msg_id,
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
        "protocol_version, override_msg_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            extra.get("override_msg_id"),
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


#: Compact JSON with sorted keys (what ``json.dumps(..., separators=(",", ":"),
#: sort_keys=True)`` writes for ASCII text; non-ASCII stays UTF-8), about ten times faster.
_ENCODER = msgspec.json.Encoder(order="sorted")


def _dump(value: Any) -> str:
    return _ENCODER.encode(value).decode()
