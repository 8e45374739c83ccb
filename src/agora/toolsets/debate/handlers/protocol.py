"""debate/v1 handlers: debate_protocol_state, debate_judge_prepare, debate_judge_verdict.

The micro-state is read from committed rows behind the topic read gate; every caller who
may not see it, and every topic without it, gets the one not-configured error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import access, sql
from agora.toolsets.debate.commands.judging import GiveVerdict, PrepareJudging
from agora.toolsets.debate.handlers.common import caller, checked, run
from agora.toolsets.debate.protocol.judging import parse_verdict
from agora.toolsets.debate.protocol.state import not_configured
from agora.toolsets.debate.replies import tool_error

if TYPE_CHECKING:
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall


async def debate_protocol_state(call: ToolCall) -> dict[str, Any]:
    """The topic's debate/v1 micro-state."""
    topic_id, who = call.args["topic_id"], caller(call)

    def read(conn: ReadConn) -> dict[str, Any] | None:
        row = sql.topic_row(conn, topic_id)
        if not access.can_read(row, sql.bindings(conn, topic_id), who):
            return None
        state = sql.protocol_state(conn, topic_id)
        return None if state is None else state.public()

    result = await call.runtime.read(read)
    if result is None:
        raise tool_error(not_configured())
    return result


async def debate_judge_prepare(call: ToolCall) -> dict[str, Any]:
    """Fix the AB and BA projections of two opposing positions."""
    args = call.args
    topic_id, left, right = args["topic_id"], args["left_msg_id"], args["right_msg_id"]
    # Messages are immutable: their payloads can be read before the actor decides.
    found = await call.runtime.read(lambda conn: sql.payloads(conn, topic_id, [left, right]))
    command = PrepareJudging(caller(call), left, right, found)
    result: dict[str, Any] = await run(call, topic_id, command)
    return result


async def debate_judge_verdict(call: ToolCall) -> dict[str, Any]:
    """Record one verdict; the second of a pair decides."""
    args = call.args
    verdict = checked(parse_verdict, args["verdict_json"])
    projection = args["projection_id"]
    topic_id = await call.runtime.read(lambda conn: sql.projection_topic(conn, projection))
    if topic_id is None:
        raise tool_error(access.denied())
    command = GiveVerdict(caller(call), projection, args["judge_role"], verdict)
    result: dict[str, Any] = await run(call, topic_id, command)
    return result
