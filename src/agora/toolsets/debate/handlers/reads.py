"""Read handlers over committed rows: debate_read and debate_search; and the background
task that keeps search's index (`index_task`).

Each handler runs in one read transaction: load the topic and its bindings, apply the read
gate (`access.check_read`, the uniform denial otherwise), then query. Reading never moves a
cursor and never writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.runtime.background import periodic
from agora.store.neutral import SQLITE
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.handlers.common import caller, checked, opt, own_sessions_only
from agora.toolsets.debate.replies import message, tool_error
from agora.toolsets.debate.rules import (
    AFTER_ALL_IDS,
    KINDS,
    READ_LIMIT,
    READ_MAX,
    SEARCH_LIMIT,
    SEARCH_MAX,
    START,
    fts_phrase,
    like_pattern,
    normalise_ts,
    reject,
    split_csv,
)
from agora.toolsets.debate.sql import fts

#: How many of a topic's newest messages a search tries before it asks the index.
SEARCH_WINDOW = 2000
#: Seconds between two catch-ups of the SQLite search index (`sql.fts`): the tail a
#: search reads past the index holds the messages of about this long.
INDEX_EVERY = 0.25


async def index_step(runtime: Runtime) -> None:
    """Index the messages past the search index's watermark (SQLite only), a backlog
    `fts.BATCH` messages per transaction; new posts meanwhile wait for the next tick."""
    if runtime.store.dialect != SQLITE:
        return
    while (pending := await runtime.read(sql.backlog)) > 0:
        await runtime.write(sql.catch_up())
        if pending <= fts.BATCH:
            return


#: The background task of the toolset: `index_step` every `INDEX_EVERY` seconds.
index_task = periodic(INDEX_EVERY, index_step)
#: Most messages a search expects to scan past those before it asks the index instead.
SCAN_BUDGET = 10 * SEARCH_WINDOW

if TYPE_CHECKING:
    from agora.runtime.registry import Runtime
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall
    from agora.toolsets.debate.access import Caller


def _gate(conn: ReadConn, topic_id: str, who: Caller, role: str | None) -> str:
    row = sql.topic_row(conn, topic_id)
    row = access.check_read(row, sql.bindings(conn, topic_id), who)
    if role is not None and role not in row.roles:
        raise access.denied()
    return row.state


async def debate_read(call: ToolCall) -> dict[str, Any]:
    """One page of the topic-wide transcript."""
    args, who = call.args, caller(call)
    topic_id, role = args["topic_id"], args["role"]
    since_ts = opt(call, "since_ts")
    since_ts = checked(normalise_ts, since_ts) if since_ts else None
    limit = min(int(args.get("limit", READ_LIMIT)), READ_MAX)
    kinds = split_csv(args.get("kind_filter_csv"))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:  # else a filter no message can match reads as an empty topic
        raise tool_error(
            reject(
                "unknown_kind",
                f"kind_filter_csv names unknown kinds {unknown}; the kinds are {', '.join(KINDS)}",
                unknown=unknown,
                allowed=list(KINDS),
            )
        )
    priorities = split_csv(args.get("priority_filter_csv"))

    def read(conn: ReadConn) -> dict[str, Any]:
        state = _gate(conn, topic_id, who, role)
        hidden = sql.blind_hidden(conn, topic_id, who, role)
        bootstrap = None
        if opt(call, "since_msg_id") is not None:
            after = sql.message_at(conn, topic_id, args["since_msg_id"])
            # A blind CLAIM the barrier hides from the caller is, to the caller, no message.
            if after is None or args["since_msg_id"] in hidden:
                raise reject("unknown_cursor", "since_msg_id names no message of this topic")
        elif since_ts is not None:
            after = (since_ts, AFTER_ALL_IDS)
        elif args.get("since_latest_compaction") and (
            snap := sql.latest_compaction(conn, topic_id)
        ):
            # Resume at the snapshot itself: it is the first message returned.
            bootstrap, after = snap[1], (snap[0], "")
        else:
            after = sql.watermarks(conn, topic_id).get(role, START)
        rows = sql.page(conn, topic_id, after, kinds, priorities, limit + 1 + len(hidden))
        rows = [r for r in rows if r[0] not in hidden]
        truncated = len(rows) > limit
        rows = rows[:limit]
        last = rows[-1] if rows else None
        return {
            "messages": own_sessions_only(conn, who, [message(r) for r in rows]),
            "topic_state": state,
            "last_msg_id_returned": last[0] if last else None,
            "last_ts_returned": last[2] if last else None,
            "count": len(rows),
            "truncated": truncated,
            "next_msg_id_cursor": last[0] if truncated and last else None,
            "next_ts_cursor": last[2] if truncated and last else None,
            "limit": limit,
            "bootstrap_compaction_msg_id": bootstrap,
        }

    result: dict[str, Any] = await call.runtime.read(lambda conn: checked(read, conn))
    return result


async def debate_search(call: ToolCall) -> dict[str, Any]:
    """Literal substring search, newest first."""
    args, who = call.args, caller(call)
    topic_id, query = args["topic_id"], args["query"]
    viewer = opt(call, "viewer_role")
    raw = args.get("limit")
    limit = SEARCH_LIMIT if raw is None else max(1, min(int(raw), SEARCH_MAX))
    folded = query.casefold()
    pattern = like_pattern(folded)
    # Trigrams need three characters; shorter queries take the literal scan.
    phrase = fts_phrase(folded) if len(folded) >= 3 else None

    def read(conn: ReadConn) -> dict[str, Any]:
        _gate(conn, topic_id, who, None)
        hidden = sql.blind_hidden(conn, topic_id, who, viewer)
        want = limit + len(hidden)
        rows = sql.search_recent(conn, topic_id, pattern, want, SEARCH_WINDOW)
        if len(rows) < want:
            # Not enough among the newest. At the density found there, will a scan of the
            # topic find the rest within SCAN_BUDGET messages? Then it is a common query
            # (the trigram index's lists for common trigrams span the whole store).
            # Otherwise it is a rare one, even with a hit or two among the newest: the
            # index goes straight to its few rows instead of scanning the whole topic.
            found = len(rows)
            common = found and (want - found) * SEARCH_WINDOW <= SCAN_BUDGET * found
            rows = sql.search(conn, topic_id, None if common else phrase, pattern, want)
        rows = [r for r in rows if r[0] not in hidden][:limit]
        return {
            "topic_id": topic_id,
            "query": query,
            "count": len(rows),
            "limit": limit,
            "messages": own_sessions_only(conn, who, [message(r) for r in rows]),
        }

    result: dict[str, Any] = await call.runtime.read(lambda conn: checked(read, conn))
    return result
