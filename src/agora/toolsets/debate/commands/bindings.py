"""Topic creation and the roster: `InitTopic`, `AddRole`, `BindRole`, `RotateSession`.

Sessions named by a command were looked up by the handler (a session's owner never changes),
so each command carries the owner it found (None for an unknown session) and the topic
decides with no I/O. Every accepted change writes its history event in the same unit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from agora.mcp.results import Guided
from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import protocol, workers
from agora.toolsets.debate.commands.seats import (
    check_independent,
    check_override,
    check_sanction,
    gate_bind,
)
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import Binding
from agora.toolsets.debate.protocol import guide
from agora.toolsets.debate.protocol.state import holds_both_blind
from agora.toolsets.debate.rules import SENTINEL_PROJECT, reject

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.topic import Topic


class RosterChange(Protocol):
    """What every roster command carries (AddRole, BindRole, RotateSession)."""

    @property
    def caller(self) -> Caller: ...
    @property
    def role(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def bound_by_msg_id(self) -> str | None: ...
    @property
    def bound_by_role(self) -> str | None: ...


class AddRole(msgspec.Struct, frozen=True, tag=True):
    """Append a new role with its active binding (conductor or star)."""

    caller: Caller
    role: str
    session_id: str
    session_owner: str | None
    reason: str | None = None
    runtime: str | None = None
    override_msg_id: str | None = None
    bound_by_msg_id: str | None = None
    bound_by_role: str | None = None
    replace_active: bool = False


class BindRole(msgspec.Struct, frozen=True, tag=True):
    """Install, retire or diagnose one binding."""

    caller: Caller
    role: str
    session_id: str
    session_owner: str | None
    state: str = "active"
    reason: str | None = None
    runtime: str | None = None
    override_msg_id: str | None = None
    bound_by_msg_id: str | None = None
    bound_by_role: str | None = None
    replace_active: bool = False


def new_binding(
    topic: Topic,
    cmd: RosterChange,
    session_id: str,
    state: str,
    at: str,
    runtime: str | None,
) -> Binding:
    group = topic.data.bindings.setdefault(cmd.role, [])
    generation = group[-1].generation + 1 if group else 1
    b = Binding(
        topic.topic_id,
        cmd.role,
        generation,
        session_id,
        cmd.caller.name,
        runtime,
        state,
        cmd.reason,
        cmd.bound_by_msg_id,
        cmd.bound_by_role,
        at,
        at,
    )
    group.append(b)
    return b


def retire(b: Binding, at: str, writes: list[Write], by: str | None = None) -> None:
    b.state, b.updated_at, b.retired_by = "retired", at, by
    writes.append(sql.upsert_binding(b))


def bind_reply(b: Binding, retired: int, **extra: Any) -> dict[str, Any]:
    """The binding result shape."""
    return {
        "topic_id": b.topic_id,
        "role": b.role,
        "session_id": b.session_id,
        "runtime": b.runtime,
        "state": b.state,
        "generation": b.generation,
        "retired_sessions": retired,
        "retired_worker_claims": 0,
        **extra,
    }


@COMMANDS.on(AddRole)
def add_role(topic: Topic, cmd: AddRole, now: Now) -> Effects:
    row = topic.row
    if row is None or row.project == SENTINEL_PROJECT or not cmd.caller.privileged:
        raise access.denied()
    # Writes need the project grant a post needs (a conductor reads every project): a role
    # added where its holder could never post would be a binding that grants nothing.
    if not (cmd.caller.star or access.in_project(row, cmd.caller)):
        raise access.denied()
    if cmd.session_owner != cmd.caller.name:
        raise access.denied()
    if cmd.override_msg_id is not None:
        check_override(topic, cmd.caller, cmd.override_msg_id)
    check_sanction(topic, cmd)
    if cmd.role in row.roles:
        current = topic.active(cmd.role)
        if current and current.session_id == cmd.session_id and current.owner == cmd.caller.name:
            return Effects(reply=bind_reply(current, 0, added_role=False))
        bound = bind_role(
            topic, BindRole(**{**msgspec.structs.asdict(cmd), "state": "active"}), now
        )
        bound.reply = (
            bound.reply
            if isinstance(bound.reply, Exception)
            else {**bound.reply, "added_role": False}
        )
        return bound
    check_independent(topic, cmd.caller, cmd.role)
    at = topic.stamp_now(now)
    writes: list[Write] = []
    row.roles.append(cmd.role)
    b = new_binding(topic, cmd, cmd.session_id, "active", at, cmd.runtime)
    b.override_msg_id = cmd.override_msg_id
    writes.append(sql.upsert_binding(b))
    topic.touch(writes, at)
    topic.event(
        writes,
        at,
        "role_added",
        cmd.caller.name,
        role=cmd.role,
        generation=1,
        reason=cmd.reason or "flexible roster",
    )
    return Effects(reply=bind_reply(b, 0, added_role=True), writes=writes, changed=True)


def _bind_active(topic: Topic, cmd: BindRole, at: str, writes: list[Write]) -> tuple[Binding, int]:
    current = topic.active(cmd.role)
    if current is not None and current.session_id == cmd.session_id:
        return current, -1
    if current is not None and not cmd.replace_active:
        raise reject(
            "duplicate_active",
            f"{cmd.role} already has an active owner; pass replace_active to swap it onto "
            "the new session",
        )
    retired = 0
    if current is not None:
        retire(current, at, writes)
        retired = 1
    b = new_binding(topic, cmd, cmd.session_id, "active", at, cmd.runtime)
    b.override_msg_id = cmd.override_msg_id
    return b, retired


def _bind_retired(topic: Topic, cmd: BindRole, at: str, writes: list[Write]) -> Binding:
    live = [
        x
        for x in topic.role_bindings(cmd.role)
        if x.session_id == cmd.session_id and x.state != "retired"
    ]
    if not live:
        raise reject("binding_not_found", "that session holds no live binding of the role")
    b = live[-1]
    if b.state == "active" and b.owner != cmd.caller.name and cmd.override_msg_id is None:
        raise reject(
            "override_required",
            "retiring the active owner needs a conductor override (conductor_override_msg_id)",
        )
    retire(b, at, writes)
    return b


@COMMANDS.on(BindRole)
def bind_role(topic: Topic, cmd: BindRole, now: Now) -> Effects:
    gate_bind(topic, cmd)
    at = topic.stamp_now(now)
    writes: list[Write] = []
    retired = 0
    if cmd.state == "active":
        b, retired = _bind_active(topic, cmd, at, writes)
        if retired < 0:
            return Effects(reply=bind_reply(b, 0))
    elif cmd.state == "retired":
        b, retired = _bind_retired(topic, cmd, at, writes), 1
    else:
        existing = [
            x
            for x in topic.role_bindings(cmd.role)
            if x.session_id == cmd.session_id and x.state == "diagnostic"
        ]
        if existing:
            return Effects(reply=bind_reply(existing[-1], 0))
        b = new_binding(topic, cmd, cmd.session_id, "diagnostic", at, cmd.runtime)
    writes.append(sql.upsert_binding(b))
    topic.event(
        writes,
        at,
        "binding_changed",
        cmd.caller.name,
        role=cmd.role,
        generation=b.generation,
        state=cmd.state,
        override=cmd.override_msg_id,
    )
    claims = workers.retire_orphans(topic, cmd.role, at, writes, cmd.caller.name)
    reply = bind_reply(b, retired, retired_worker_claims=claims)
    if cmd.state == "active":
        reply = Guided(reply, _bound_step(topic, b, conductor=cmd.caller.conductor))
    elif cmd.state == "retired" and _blind(topic, cmd.role):
        reply = Guided(reply, guide.gave_back(cmd.role))
    return Effects(reply=reply, writes=writes, changed=True)


def _blind(topic: Topic, role: str) -> bool:
    """Whether ``role`` is a blind role of a debate/v1 topic."""
    state = topic.data.protocol
    return state is not None and role in state.blind_roles


def _bound_step(topic: Topic, b: Binding, *, conductor: bool = False) -> str:
    """What the new holder of ``b`` does next: how it receives, and how the topic moves on;
    first, if the binding left its principal holding both blind roles, that it did, or if a
    ``conductor``-scoped principal took a blind role, that it debates now (`hidden_ids`)."""
    step = (
        f"{b.role} is bound to session {b.session_id}: debate_signal_wait (topic_id, role,"
        " session_id) returns what is addressed to it, and debate_signal_advance records what"
        f" you handled.\n{protocol.topic_step(topic)}"
    )
    state = topic.data.protocol
    if state is None or b.role not in state.blind_roles:
        return step
    if holds_both_blind(state, topic.all_bindings(), b.owner):
        return f"{guide.not_blind(state.blind_roles)}\n{step}"
    if conductor:
        return f"{guide.conductor_debates([b.role])}\n{step}"
    return step
