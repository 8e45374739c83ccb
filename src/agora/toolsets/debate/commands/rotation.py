"""Handing a role over between two of the caller's sessions: `RotateSession`.

Both sessions must be the caller's and the old one must hold the role actively; any other
combination is the uniform denial. The cursor follows the mode: head (the tip), copy (the
predecessor's cursor, or superseded with a warning when it had none) or replay (the start,
older cursors of the role superseded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import workers
from agora.toolsets.debate.commands.bindings import bind_reply, new_binding, retire
from agora.toolsets.debate.commands.seats import check_sanction
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import Cursor
from agora.toolsets.debate.rules import SENTINEL_PROJECT, reject

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.topic import Topic


class RotateSession(msgspec.Struct, frozen=True, tag=True):
    """Swap a role's owner between two caller-owned sessions, carrying the cursor."""

    caller: Caller
    role: str
    old_session_id: str
    new_session_id: str
    owners: dict[str, str]
    cursor_mode: str
    reason: str | None = None
    runtime: str | None = None
    bound_by_msg_id: str | None = None
    bound_by_role: str | None = None


@COMMANDS.on(RotateSession)
def rotate_session(topic: Topic, cmd: RotateSession, now: Now) -> Effects:
    row = topic.require_row()
    if row.project == SENTINEL_PROJECT or cmd.role not in row.roles:
        raise access.denied()
    if not (cmd.caller.star or access.in_project(row, cmd.caller)):
        raise access.denied()
    owners = cmd.owners
    if any(owners.get(s) != cmd.caller.name for s in (cmd.old_session_id, cmd.new_session_id)):
        raise access.denied()
    current = topic.active(cmd.role)
    if current is None or current.owner != cmd.caller.name:
        raise access.denied()
    if current.session_id != cmd.old_session_id:
        raise reject("inactive_predecessor", "old_session_id does not hold the role actively")
    if cmd.old_session_id == cmd.new_session_id:
        raise reject("same_session", "old and new sessions are the same")
    check_sanction(topic, cmd)
    at = topic.stamp_now(now)
    writes: list[Write] = []
    retire(current, at, writes)
    b = new_binding(topic, cmd, cmd.new_session_id, "active", at, cmd.runtime or current.runtime)
    b.override_msg_id = current.override_msg_id  # the same holder: still the conductor's
    writes.append(sql.upsert_binding(b))
    source, warning, cursor = None, None, Cursor()
    old = topic.data.cursors.get((cmd.role, cmd.old_session_id))
    if cmd.cursor_mode == "head":
        tip = topic.tip()
        cursor = Cursor(tip[0] or None, tip[1] or None)
    elif cmd.cursor_mode == "copy":
        if old is not None and old.position != ("", ""):
            cursor, source = Cursor(old.ts, old.msg_id), "primary"
        else:
            cursor, warning = Cursor(superseded=True), "copy_source_cursor_missing"
    else:
        for (role, session_id), c in list(topic.data.cursors.items()):
            if role == cmd.role and not c.superseded:
                c.superseded = True
                topic.set_cursor(writes, role, session_id, c)
    topic.set_cursor(writes, cmd.role, cmd.new_session_id, cursor)
    topic.event(
        writes,
        at,
        "session_rotated",
        cmd.caller.name,
        role=cmd.role,
        generation=b.generation,
        cursor_mode=cmd.cursor_mode,
        cursor_source=source,
    )
    reply = bind_reply(
        b,
        1,
        old_session_id=cmd.old_session_id,
        new_session_id=cmd.new_session_id,
        cursor_mode=cmd.cursor_mode,
        cursor_source=source,
        warning=warning,
        retired_worker_claims=workers.retire_orphans(topic, cmd.role, at, writes, cmd.caller.name),
    )
    return Effects(reply=reply, writes=writes, changed=True)
