"""debate/v1 handlers: debate_protocol_state.

The micro-state is read from committed rows behind the topic read gate; every caller who
may not see it, and every topic without it, gets the one not-configured error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import access, sql
from agora.toolsets.debate.handlers.common import caller
from agora.toolsets.debate.protocol.state import not_configured
from agora.toolsets.debate.replies import tool_error

if TYPE_CHECKING:
    import sqlite3

    from agora.toolsets.base import ToolCall


async def debate_protocol_state(call: ToolCall) -> dict[str, Any]:
    """The topic's debate/v1 micro-state."""
    topic_id, who = call.args["topic_id"], caller(call)

    def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
        row = sql.topic_row(conn, topic_id)
        if not access.can_read(row, sql.bindings(conn, topic_id), who):
            return None
        state = sql.protocol_state(conn, topic_id)
        return None if state is None else state.public()

    result = await call.runtime.read(read)
    if result is None:
        raise tool_error(not_configured())
    return result
