"""Sessions and bindings: debate_session_open / _list, debate_add_role, debate_bind_role,
debate_rotate_session and debate_list_bindings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agora.mcp.results import Guided
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.commands.bindings import AddRole, BindRole
from agora.toolsets.debate.commands.rotation import RotateSession
from agora.toolsets.debate.commands.seats import roster_note
from agora.toolsets.debate.handlers.common import caller, checked, new_id, opt, owners, run
from agora.toolsets.debate.rules import check_roster_role, stamp

if TYPE_CHECKING:
    from agora.store.neutral import ReadConn
    from agora.toolsets.base import ToolCall


async def debate_session_open(call: ToolCall) -> dict[str, Any]:
    """Mint a session owned by the caller."""
    who = caller(call)
    session_id, at = new_id(), stamp(call.runtime.clock.wall())
    runtime, label = opt(call, "runtime"), opt(call, "label")
    await call.runtime.write([sql.insert_session(session_id, who.name, runtime, label, at)])
    return {
        "session_id": session_id,
        "principal": who.name,
        "runtime": runtime,
        "label": label,
        "created_at": at,
    }


async def debate_session_list(call: ToolCall) -> dict[str, Any]:
    """The caller's sessions, newest first, with their bindings."""
    name, limit = caller(call).name, int(call.args.get("limit", 200))

    def read(conn: ReadConn) -> tuple[list[dict[str, Any]], bool]:
        rows = sql.sessions_of(conn, name, limit + 1)  # one more: whether more are there
        more, rows = len(rows) > limit, rows[:limit]
        found: dict[str, dict[str, Any]] = {
            r[0]: {
                "session_id": r[0],
                "runtime": r[1],
                "label": r[2],
                "created_at": r[3],
                "bindings": [],
            }
            for r in rows
        }
        for b in sql.bindings_of_sessions(conn, list(found)):
            found[b[0]]["bindings"].append(
                {"topic_id": b[1], "role": b[2], "state": b[3], "generation": b[4]}
            )
        return list(found.values()), more

    sessions, more = await call.runtime.read(read)
    return {"sessions": sessions, "count": len(sessions), "has_more": more}


def _binding_fields(call: ToolCall) -> dict[str, Any]:
    return {
        "reason": opt(call, "reason"),
        "runtime": opt(call, "runtime"),
        "override_msg_id": opt(call, "conductor_override_msg_id"),
        "bound_by_msg_id": opt(call, "bound_by_msg_id"),
        "bound_by_role": opt(call, "bound_by_role"),
        "replace_active": bool(call.args.get("replace_active", False)),
    }


async def debate_add_role(call: ToolCall) -> dict[str, Any]:
    """Append a role with its active binding."""
    args = call.args
    role = checked(check_roster_role, args["role"])
    found = await owners(call, args["session_id"])
    command = AddRole(
        caller(call),
        role,
        args["session_id"],
        found.get(args["session_id"]),
        **_binding_fields(call),
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


async def debate_bind_role(call: ToolCall) -> dict[str, Any]:
    """Install, retire or diagnose a binding."""
    args = call.args
    found = await owners(call, args["session_id"])
    command = BindRole(
        caller(call),
        args["role"],
        args["session_id"],
        found.get(args["session_id"]),
        state=args.get("state", "active"),
        **_binding_fields(call),
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


async def debate_rotate_session(call: ToolCall) -> dict[str, Any]:
    """Swap a role's owner between two of the caller's sessions."""
    args = call.args
    old, new = args["old_session_id"], args["new_session_id"]
    found = await owners(call, old, new)
    fields = _binding_fields(call)
    del fields["override_msg_id"], fields["replace_active"]
    command = RotateSession(
        caller(call), args["role"], old, new, found, args["cursor_mode"], **fields
    )
    result: dict[str, Any] = await run(call, args["topic_id"], command)
    return result


async def debate_list_bindings(call: ToolCall) -> dict[str, Any]:
    """A topic's bindings; session ids only for their owner or a star caller."""
    who, topic_id = caller(call), call.args["topic_id"]

    def read(conn: ReadConn) -> dict[str, Any]:
        row = sql.topic_row(conn, topic_id)
        group = sql.bindings(conn, topic_id)
        row = access.check_read(row, group, who)
        cursors = sql.cursors(conn, topic_id)
        out = []
        for b in group:
            c = cursors.get((b.role, b.session_id))
            shown = who.star or b.owner == who.name
            out.append(
                {
                    "topic_id": topic_id,
                    "role": b.role,
                    "session_id": b.session_id if shown else None,
                    "runtime": b.runtime,
                    "state": b.state,
                    "generation": b.generation,
                    "created_at": b.created_at,
                    "updated_at": b.updated_at,
                    "reason": b.reason,
                    "bound_by_msg_id": b.bound_by_msg_id,
                    "bound_by_role": b.bound_by_role,
                    "last_processed_ts": c.ts if c else None,
                    "last_processed_msg_id": c.msg_id if c else None,
                    "last_check_at": c.last_check_at if c else None,
                }
            )
        result = {"topic_id": topic_id, "topic_state": row.state, "bindings": out}
        note = roster_note(sql.protocol_state(conn, topic_id), group, who)
        return result if note is None else Guided(result, note)

    result: dict[str, Any] = await call.runtime.read(lambda conn: checked(read, conn))
    return result
