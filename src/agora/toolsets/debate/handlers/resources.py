"""The inbox resource: ``debate://inbox/{session_id}``, one per session.

Reading it lists, per active binding of the session, how many addressed messages still wait
for their consumption receipt. A session that subscribed gets
``notifications/resources/updated`` when a post addressed to it (or to a role it holds)
commits, and when it advances its cursor. Only the session's owner can read it; any other
caller gets "Resource not found", as for a session that does not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.base import resource
from agora.toolsets.debate import sql
from agora.toolsets.debate.handlers.common import caller
from agora.toolsets.debate.rules import INBOX_URI, UUID_RE

if TYPE_CHECKING:
    from agora.mcp.catalog import ResourceEntry
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall


async def read_inbox(call: ToolCall) -> dict[str, Any]:
    """What waits in a session's inbox, per topic and role.

    Raises:
        LookupError: the session does not exist or is not the caller's.
    """
    session_id, who = str(call.args.get("session_id", "")), caller(call)
    if not UUID_RE.fullmatch(session_id):
        raise LookupError(session_id)

    def read(conn: ReadConn) -> dict[str, Any]:
        if sql.session_owners(conn, [session_id]).get(session_id) != who.name:
            raise LookupError(session_id)
        topics = []
        for topic_id, role in sql.active_bindings_of(conn, session_id):
            count, oldest, newest = sql.open_inbox(
                conn, topic_id, (f"role:{role}", f"session:{session_id}")
            )
            topics.append(
                {
                    "topic_id": topic_id,
                    "role": role,
                    "pending": count,
                    "oldest_ts": oldest,
                    "newest_ts": newest,
                }
            )
        return {
            "session_id": session_id,
            "topics": topics,
            "pending": sum(t["pending"] for t in topics),
        }

    result: dict[str, Any] = await call.runtime.read(read)
    return result


RESOURCES: list[ResourceEntry] = [
    resource(
        INBOX_URI,
        "debate inbox",
        read_inbox,
        description="A session's addressed messages still waiting for debate_signal_advance, "
        "per topic and role; subscribe for notifications/resources/updated on every change.",
    )
]
