"""The inbox resource: ``debate://inbox/{session_id}``, one per session.

Reading it lists, per active binding of the session, how many addressed messages still wait
for their consumption receipt; a debate/v1 blind CLAIM the barrier still hides from the owner
(viewing as that role) is neither counted nor dated. A session that subscribed gets
``notifications/resources/updated`` when a post addressed to it (or to a role it holds)
commits, and when it advances its cursor. Only the session's owner can read it or subscribe
to it; any other caller gets "Resource not found" for both, as for a session that does not
exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.base import resource
from agora.toolsets.debate import sql
from agora.toolsets.debate.handlers.common import caller
from agora.toolsets.debate.rules import INBOX_URI, UUID_RE

if TYPE_CHECKING:
    from collections.abc import Callable

    from agora.mcp.catalog import ResourceEntry
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall


def _owned(call: ToolCall) -> Callable[[ReadConn], str]:
    """A read that returns the inbox's session id if the caller owns that session.

    Raises:
        LookupError: (at once, or from the read) the session does not exist, its id is
            malformed, or it is not the caller's: one answer for all.
    """
    session_id, who = str(call.args.get("session_id", "")), caller(call)
    if not UUID_RE.fullmatch(session_id):
        raise LookupError(session_id)

    def owned(conn: ReadConn) -> str:
        if sql.session_owners(conn, [session_id]).get(session_id) != who.name:
            raise LookupError(session_id)
        return session_id

    return owned


async def check_inbox(call: ToolCall) -> None:
    """May the caller subscribe to this inbox: the same test as `read_inbox`'s.

    Raises:
        LookupError: the session does not exist or is not the caller's.
    """
    await call.runtime.read(_owned(call))


async def read_inbox(call: ToolCall) -> dict[str, Any]:
    """What waits in a session's inbox, per topic and role.

    Raises:
        LookupError: the session does not exist or is not the caller's.
    """
    owned, who = _owned(call), caller(call)

    def read(conn: ReadConn) -> dict[str, Any]:
        session_id = owned(conn)
        topics = []
        for topic_id, role in sql.active_bindings_of(conn, session_id):
            hidden = sql.blind_hidden(conn, topic_id, who, role)
            count, oldest, newest = sql.open_inbox(
                conn, topic_id, (f"role:{role}", f"session:{session_id}"), hidden
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
        "per topic and role; subscribe for notifications/resources/updated on every change "
        "(only its owner may read it or subscribe to it).",
        check=check_inbox,
    )
]
