"""The liveness sweeps on one topic: `Sweep` (phase timeout and missing-role recovery).

The handler reads candidates from committed rows and sends each topic one `Sweep` naming
what it saw: the timed phase and its transition_version, and the roles that lost their
owner (had one, have no active binding now). The topic re-checks under its own turn: a
phase that moved since (another run, a post, a verdict) is not timed out, a role someone
bound since is left alone, so concurrent runs report only what they really changed. A
recovery binds a fresh session of the runner at the next generation and carries the role's
newest cursor onto it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.debate import sql
from agora.toolsets.debate.commands.protocol import moved
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import Binding, Cursor
from agora.toolsets.debate.protocol.state import HUMAN_ROLES, TIMED_PHASES
from agora.toolsets.debate.rules import OPEN_STATES, START

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.topic import Topic

RECOVERY_REASON = "missing_active_binding"


class Sweep(msgspec.Struct, frozen=True, tag=True):
    """Time out the phase seen at ``expected_version`` if it is still due; recover
    ``roles`` (each with the fresh session to bind) if they still lack an owner."""

    actor: str
    expected_phase: str | None = None
    expected_version: int | None = None
    roles: tuple[tuple[str, str], ...] = ()


def lost_roles(roles: list[str], bindings: list[Binding]) -> list[str]:
    """The declared roles, other than HUMAN and OPERATOR, that had an owner and have no
    active binding now. A role declared unbound (``null`` at init) and never bound is not
    lost: it waits for the participant meant to bind it (`debate_bind_role`), so the
    recovery leaves it alone."""
    had = {b.role for b in bindings}
    active = {b.role for b in bindings if b.state == "active"}
    return [r for r in roles if r not in HUMAN_ROLES and r in had and r not in active]


def _timeout(topic: Topic, cmd: Sweep, at: str, writes: list[Write]) -> dict[str, Any] | None:
    state = topic.data.protocol
    if (
        state is None
        # An INIT topic's clock has not started; a closed debate's phase stays as it ended.
        or topic.require_row().state != "ACTIVE"
        or cmd.expected_phase is None
        or state.phase != cmd.expected_phase
        or state.transition_version != cmd.expected_version
        or state.phase not in TIMED_PHASES
        or state.phase_deadline_at is None
        or state.phase_deadline_at > at
    ):
        return None
    reason = f"phase_timeout:{state.phase}"
    new = state.move("STALEMATE", at, expected=state.transition_version, reason=reason)
    moved(topic, new, writes, at, cmd.actor, stalemate_reason=reason)
    return {"topic_id": topic.topic_id, "reason": reason}


def _newest_cursor(topic: Topic, role: str) -> Cursor | None:
    """The newest cursor of the role's primary sessions and completed workers (a worker
    still at work has not vouched for its progress)."""
    unfinished = {
        c.worker_session_id for c in topic.data.workers.values() if c.state != "completed"
    }
    best: Cursor | None = None
    for (r, session), c in topic.data.cursors.items():
        if r != role or session in unfinished or c.position == START:
            continue
        if best is None or c.position > best.position:
            best = c
    return best


def _recover(
    topic: Topic, role: str, session_id: str, actor: str, at: str, writes: list[Write]
) -> dict[str, Any] | None:
    row = topic.require_row()
    # Open as the work queue counts it (INIT or ACTIVE): a seat lost while the topic is still
    # being set up is recovered too.
    if row.state not in OPEN_STATES:
        return None
    if role not in lost_roles(row.roles, topic.role_bindings(role)):
        return None
    group = topic.data.bindings.setdefault(role, [])
    generation = group[-1].generation + 1 if group else 1
    b = Binding(
        topic.topic_id,
        role,
        generation,
        session_id,
        actor,
        None,
        "active",
        RECOVERY_REASON,
        None,
        None,
        at,
        at,
    )
    group.append(b)
    writes.append(sql.insert_session(session_id, actor, None, "recovery", at))
    writes.append(sql.upsert_binding(b))
    carried = _newest_cursor(topic, role)
    if carried is not None:
        topic.set_cursor(writes, role, session_id, Cursor(carried.ts, carried.msg_id))
    topic.event(
        writes,
        at,
        "role_recovered",
        actor,
        role=role,
        session_id=session_id,
        generation=generation,
        cursor_msg_id=carried.msg_id if carried else None,
    )
    return {
        "topic_id": topic.topic_id,
        "role": role,
        "session_id": session_id,
        "generation": generation,
        "reason": RECOVERY_REASON,
    }


@COMMANDS.on(Sweep)
def sweep(topic: Topic, cmd: Sweep, now: Now) -> Effects:
    topic.require_row()
    at = topic.stamp_now(now)
    writes: list[Write] = []
    timed_out = _timeout(topic, cmd, at, writes)
    recoveries = [
        found
        for role, session_id in cmd.roles
        if (found := _recover(topic, role, session_id, cmd.actor, at, writes)) is not None
    ]
    if writes:
        topic.touch(writes, at, row_changed=False)
    reply = {"timed_out": timed_out, "role_recoveries": recoveries}
    return Effects(reply=reply, writes=writes, changed=bool(writes))
