"""Topic handlers: debate_init, debate_state / debate_close_topic, debate_set_lane,
debate_reconcile_project and debate_message_claim_reclaim."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import access
from agora.toolsets.debate.commands.creation import InitTopic
from agora.toolsets.debate.commands.lifecycle import (
    ChangeState,
    ReclaimClaims,
    ReconcileProject,
    SetLane,
)
from agora.toolsets.debate.handlers.common import (
    caller,
    checked,
    new_id,
    new_msg_id,
    opt,
    owners,
    run,
)
from agora.toolsets.debate.replies import tool_error
from agora.toolsets.debate.rules import (
    PROTOCOL_V1,
    check_roster_role,
    check_uuid,
    initial_lane,
    loads,
    normalise_ts,
    parse_iso,
    parse_json_object,
    parse_lane,
    reject,
    split_csv,
)

if TYPE_CHECKING:
    from agora.toolsets.base import ToolCall


def _roster(text: str | None, created_by: str) -> list[tuple[str, str | None]]:
    """(role, session) entries: a session id, "" to mint one, or None to leave the role
    unbound (open for a participant to bind with debate_bind_role)."""
    if text is None:
        return [(created_by, "")]
    entries = loads(text, "roles_json", "invalid_roles")
    if not isinstance(entries, list) or not entries:
        raise reject("invalid_roles", "roles_json must be a non-empty JSON array")
    out: list[tuple[str, str | None]] = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) - {"role", "session_id"}:
            raise reject("invalid_roles", "each roles_json entry is {role, session_id}")
        role = check_roster_role(entry.get("role"))  # type: ignore[arg-type]
        session = entry.get("session_id", "")
        if session:
            check_uuid(session, "session_id")
        elif session is not None and session != "":
            raise reject("invalid_roles", "session_id is a UUID, null or omitted")
        out.append((role, session))
    roles = [r for r, _ in out]
    sessions = [s for _, s in out if s]
    if len(set(roles)) != len(roles) or len(set(sessions)) != len(sessions):
        raise reject("invalid_roles", "roles and session ids in roles_json must be unique")
    if created_by not in roles:
        raise reject("invalid_roles", "created_by_role must be one of the declared roles")
    return out


def _protocol(call: ToolCall, roles: list[str]) -> dict[str, Any]:
    version = opt(call, "protocol_version")
    fields = ("blind_roles_csv", "max_rounds", "phase_timeout_seconds")
    if version != PROTOCOL_V1:
        if any(opt(call, f) is not None for f in fields):
            raise reject(
                "protocol_fields_require_debate_v1",
                "blind_roles_csv, max_rounds and phase_timeout_seconds need "
                "protocol_version debate/v1",
            )
        return {}
    blind = split_csv(call.args.get("blind_roles_csv"))
    if len(blind) != 2 or any(r not in roles for r in blind):
        raise reject("invalid_blind_roles", "debate/v1 needs exactly two declared blind roles")
    return {
        "protocol_version": PROTOCOL_V1,
        "blind_roles": blind,
        "max_rounds": int(call.args.get("max_rounds", 3)),
        "phase_timeout_seconds": int(call.args.get("phase_timeout_seconds", 300)),
    }


def _init_command(call: ToolCall) -> tuple[InitTopic, list[str]]:
    args = call.args
    who = caller(call)
    created_by = check_roster_role(args["created_by_role"])
    roster = _roster(opt(call, "roles_json"), created_by)
    metadata = parse_json_object(args.get("metadata_json") or "{}", "metadata_json")
    lane = initial_lane(metadata)
    protocol = _protocol(call, [r for r, _ in roster])
    resolve_by = opt(call, "resolve_by")
    resolve_by = normalise_ts(resolve_by) if resolve_by else None
    project = access.resolve_project(opt(call, "project"), who)
    shape = json.dumps(
        {
            "title": args["title"],
            "created_by_role": created_by,
            "roles": roster,
            "project": project,
            "resolve_by": resolve_by,
            "metadata": metadata,
            "protocol": protocol,
        },
        sort_keys=True,
    )
    named = [s for _, s in roster if s]
    entries = tuple((role, "" if s is None else s or new_id(), s == "") for role, s in roster)
    command = InitTopic(
        who,
        args["title"],
        created_by,
        project,
        resolve_by,
        {**metadata, "conductor_priority": lane},
        entries,
        protocol,
        shape,
        repeat="topic_id" in args,
    )
    return command, named


async def debate_init(call: ToolCall) -> dict[str, Any]:
    """Create a topic, or answer an identical repeat."""
    command, named = checked(_init_command, call)
    found = await owners(call, *named)
    for session in named:
        if found.get(session) != command.caller.name:
            raise tool_error(
                access.not_your_session(
                    "roles_json session_id",
                    session,
                    "name a session debate_session_open gave you, omit session_id to have one"
                    " minted, or set it to null to leave the role for its holder to bind",
                )
            )
    topic_id = call.args.get("topic_id") or new_id()
    result: dict[str, Any] = await run(call, topic_id, command)
    return result


async def debate_state(call: ToolCall) -> dict[str, Any]:
    """Move the topic forward (also debate_close_topic: the same path)."""
    args = call.args
    command = ChangeState(
        caller(call), new_msg_id(), args["role"], args["new_state"], opt(call, "reason")
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


async def debate_set_lane(call: ToolCall) -> dict[str, Any]:
    """Set the conductor's lane."""
    args = call.args
    lane, rank = checked(parse_lane, args["lane"])
    command = SetLane(
        caller(call),
        args["role"],
        lane,
        rank,
        args["reason"].strip(),
        opt(call, "next_action"),
        opt(call, "blocked_by"),
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


async def debate_reconcile_project(call: ToolCall) -> dict[str, Any]:
    """Set a sentinel topic's project once."""
    command = ReconcileProject(caller(call), call.args["project"])
    result: dict[str, Any] = await run(call, call.args["topic_id"], command)
    return result


async def debate_message_claim_reclaim(call: ToolCall) -> dict[str, Any]:
    """Sweep the caller's stale DECISION claims."""
    cutoff = call.args["older_than_ts"]
    checked(parse_iso, cutoff)
    command = ReclaimClaims(caller(call), cutoff, int(call.args.get("minimum_age_seconds", 60)))
    result: dict[str, Any] = await run(call, call.args["topic_id"], command)
    return result
