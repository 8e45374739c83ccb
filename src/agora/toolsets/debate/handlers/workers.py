"""Worker handlers: debate_worker_claim, debate_worker_reclaim, debate_trigger_dry_run.

The trigger's vehicle is read from its preserved row (messages are immutable) so the topic
decides on the stored value, never on anything the caller says about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import access, sql
from agora.toolsets.debate.commands.wake import DryRunWake
from agora.toolsets.debate.commands.workers import ClaimWorker, ReclaimWorkers
from agora.toolsets.debate.handlers.common import caller, checked, new_id, opt, run
from agora.toolsets.debate.rules import UUID_RE, loads, parse_iso, parse_json_object, reject

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


def _trigger(text: str) -> tuple[str, object, str | None]:
    """(topic_id, schema_version, msg_id) named by a trigger response; a response that is
    not a JSON object, or names no topic, fails closed."""
    value = loads(text, "tool_response_json", "invalid_tool_response")
    if not isinstance(value, dict):
        raise reject("invalid_tool_response", "tool_response_json must be a JSON object")
    topic_id, msg_id = value.get("topic_id"), value.get("msg_id")
    if not isinstance(topic_id, str) or not UUID_RE.fullmatch(topic_id):
        raise access.denied()
    if not isinstance(msg_id, str) or not UUID_RE.fullmatch(msg_id):
        msg_id = None
    return topic_id, value.get("schema_version"), msg_id


async def debate_trigger_dry_run(call: ToolCall) -> dict[str, Any]:
    """Who a trigger would wake; records a history event, wakes nobody."""
    topic_id, schema, msg_id = checked(_trigger, call.args["tool_response_json"])
    action = opt(call, "action") or "dry_run_wake"
    vehicle = None
    if msg_id is not None:
        vehicle = await call.runtime.read(lambda conn: sql.trigger_vehicle(conn, topic_id, msg_id))
    command = DryRunWake(caller(call), action, schema, msg_id, vehicle)
    result: dict[str, Any] = await run(call, topic_id, command)
    return result
