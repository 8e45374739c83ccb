"""debate_work_queue: open topics the caller can see, in deterministic priority order.

One read transaction: candidate topics, the read gate per topic (unreachable topics vanish
silently), then the signals of the visible ones in a few set-wise queries. Conductor callers
also get sentinel topics as metadata-only reconciliation candidates, with no message query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import access, sql
from agora.toolsets.debate.handlers.common import caller, checked
from agora.toolsets.debate.protocol.state import debates
from agora.toolsets.debate.replies import tool_error
from agora.toolsets.debate.rules import (
    OPEN_STATES,
    PRIORITY_RANK,
    SENTINEL_PROJECT,
    STATES,
    UUID_RE,
    reject,
    split_csv,
)
from agora.toolsets.debate.triage import ORDERING, Signals, lane_of, score

if TYPE_CHECKING:
    import datetime as dt

    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall
    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.model import Binding, TopicRow

QUEUE_LIMIT = 50


def _item(row: TopicRow, signals: Signals | None, now: dt.datetime) -> dict[str, Any]:
    lane, _ = lane_of(row.metadata)
    meta = row.metadata.get("conductor_priority") or {}
    item: dict[str, Any] = {
        "topic_id": row.topic_id,
        "title": row.title,
        "state": row.state,
        "lane": lane,
        "next_action": meta.get("next_action"),
        "blocked_by": meta.get("blocked_by"),
        "resolve_by": row.resolve_by,
    }
    if signals is None:  # a sentinel topic: identifiers only
        return {
            **item,
            "priority_score": 0.0,
            "reason_codes": ["project_unset"],
            "metadata_only": True,
        }
    total, reasons = score(signals, now)
    top = max(signals.priorities, key=PRIORITY_RANK.__getitem__, default=None)
    return {
        **item,
        "priority_score": total,
        "reason_codes": reasons,
        "open_questions": signals.open_questions,
        "blocked_count": signals.blocked,
        "active_claims": signals.claims,
        "missing_roles": signals.missing_roles,
        "max_priority": top,
        "metadata_only": False,
    }


def _held_from(
    conn: ReadConn,
    who: Caller,
    pending: dict[str, set[str]],
    bindings: dict[str, list[Binding]],
) -> dict[str, set[str]]:
    """The held blind CLAIMs of ``pending`` (topic_id -> msg_ids) hidden from ``who``: all of
    them, but on the topics where a conductor does not debate (`debates`)."""
    if not who.conductor:
        return pending
    out = {}
    for topic_id, held in pending.items():
        state = sql.protocol_state(conn, topic_id)
        if state is not None and debates(state, bindings[topic_id], who.name):
            out[topic_id] = held
    return out


def _queue(
    conn: ReadConn,
    who: Caller,
    states: list[str],
    ids: list[str] | None,
    now: dt.datetime,
) -> list[dict[str, Any]]:
    try:
        rows = [sql.topic_from_row(r) for r in sql.queue_topics(conn, states, ids)]
    except ValueError as exc:
        raise reject("corrupt_topic_record", f"a stored topic is malformed: {exc}") from None
    bindings = sql.bindings_of_topics(conn, [r.topic_id for r in rows])
    visible = [r for r in rows if access.can_read(r, bindings[r.topic_id], who)]
    sentinels = [r for r in rows if r.project == SENTINEL_PROJECT and who.conductor]
    ids_seen = [r.topic_id for r in visible]
    questions = sql.open_questions(conn, ids_seen)
    claims = sql.active_claims(conn, ids_seen)
    # A blind CLAIM not yet released is, for anyone but a conductor that does not debate,
    # nobody's latest message and no pending priority (the queue views as no role, as a
    # search without viewer_role).
    blind = _held_from(conn, who, sql.blind_pending(conn, ids_seen), bindings)
    peaks = sql.open_priorities(conn, ids_seen, {m for ids in blind.values() for m in ids})
    latest: dict[str, dict[str, Any] | None] = dict(sql.latest_messages(conn, ids_seen))
    for topic_id, hidden in blind.items():
        if (latest.get(topic_id) or {}).get("msg_id") in hidden:
            latest[topic_id] = sql.latest_visible(conn, topic_id, hidden)
    items = []
    for row in visible:
        lane, rank = lane_of(row.metadata)
        # Closing a topic retires its bindings by design: a closed topic misses no role, and
        # its deadline is no longer urgent.
        is_open = row.state in OPEN_STATES
        held = (
            {b.role for b in bindings[row.topic_id] if b.state == "active"}
            if is_open
            else set(row.roles)
        )
        open_q, blocked = questions.get(row.topic_id, (0, 0))
        signals = Signals(
            lane,
            rank,
            row.resolve_by if is_open else None,
            open_q,
            blocked,
            claims.get(row.topic_id, 0),
            [r for r in row.roles if r not in held],
            peaks.get(row.topic_id, set()),
        )
        items.append({**_item(row, signals, now), "latest_message": latest.get(row.topic_id)})
    items.extend({**_item(row, None, now), "latest_message": None} for row in sentinels)
    items.sort(key=lambda i: (-i["priority_score"], i["topic_id"]))
    return items


async def debate_work_queue(call: ToolCall) -> dict[str, Any]:
    """Rank the open topics the caller can see."""
    args, who = call.args, caller(call)
    limit = int(args.get("limit", QUEUE_LIMIT))
    states = split_csv(args.get("states_csv")) or ["INIT", "ACTIVE"]
    unknown = [s for s in states if s not in STATES]
    if unknown:
        raise tool_error(reject("unknown_state", f"unknown states {unknown}; use {STATES}"))
    ids: list[str] | None = None
    skipped: list[str] = []
    if args.get("topics_csv"):
        given = split_csv(args["topics_csv"])
        ids = [t for t in given if UUID_RE.fullmatch(t)]
        skipped = [t for t in given if not UUID_RE.fullmatch(t)]
    now = call.runtime.clock.wall()
    items = await call.runtime.read(lambda conn: checked(_queue, conn, who, states, ids, now))
    return {
        "items": items[:limit],
        "count": min(limit, len(items)),
        "total": len(items),
        "limit": limit,
        "skipped_invalid_topic_ids": skipped,
        "ordering": list(ORDERING),
    }
