"""Worker handlers: debate_worker_claim and debate_worker_reclaim.

The trigger's vehicle is read from its preserved row (messages are immutable) so the topic
decides on the stored value, never on anything the caller says about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import sql
from agora.toolsets.debate.commands.workers import ClaimWorker, ReclaimWorkers
from agora.toolsets.debate.handlers.common import caller, checked, new_id, opt, run
from agora.toolsets.debate.rules import parse_iso, parse_json_object

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall


async def debate_worker_claim(call: ToolCall) -> dict[str, Any]:
    """Take (or heartbeat, or requeue) the derived worker of one trigger."""
    args = call.args
    details_text = opt(call, "details_json")
    details = (
        {} if details_text is None else checked(parse_json_object, details_text, "details_json")
    )
    topic_id, trigger = args["topic_id"], args["trigger_msg_id"]
    vehicle = await call.runtime.read(lambda conn: sql.trigger_vehicle(conn, topic_id, trigger))
    command = ClaimWorker(
        caller(call), args["role"], args["parent_session_id"], trigger, vehicle, new_id(), details
    )
    result: dict[str, Any] = await run(call, topic_id, command)
    return result


async def debate_worker_reclaim(call: ToolCall) -> dict[str, Any]:
    """Retire or complete the caller's stale worker claims."""
    cutoff = call.args["older_than_ts"]
    checked(parse_iso, cutoff)
    command = ReclaimWorkers(caller(call), cutoff, int(call.args.get("minimum_age_seconds", 120)))
    result: dict[str, Any] = await run(call, call.args["topic_id"], command)
    return result
