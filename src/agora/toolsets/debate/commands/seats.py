"""Who may take a role of a topic: the gates of `BindRole` (and `AddRole` onto a declared
role), and the checks they share with posts and rotations (`check_override`,
`check_sanction`). Pure functions over the topic's records; each raises the refusal that
tells the caller what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agora.toolsets.debate import access
from agora.toolsets.debate.commands import barrier
from agora.toolsets.debate.protocol import guide
from agora.toolsets.debate.protocol.state import (
    debates,
    judging_own_debate,
    not_independent,
    shared_blind,
)
from agora.toolsets.debate.rules import OPEN_STATES, SENTINEL_PROJECT, DebateError, reject

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.model import Binding
    from agora.toolsets.debate.protocol.state import ProtocolState
    from agora.toolsets.debate.topic import Topic


class Sanctioned(Protocol):
    """What every roster change carries that `check_sanction` reads."""

    @property
    def caller(self) -> Caller: ...
    @property
    def role(self) -> str: ...
    @property
    def bound_by_msg_id(self) -> str | None: ...


class Acquiring(Sanctioned, Protocol):
    """What a bind carries that its gate reads (`BindRole`)."""

    @property
    def session_id(self) -> str: ...
    @property
    def session_owner(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def override_msg_id(self) -> str | None: ...


def check_override(topic: Topic, caller: Caller, msg_id: str | None) -> None:
    """A conductor override must cite a CONDUCTOR DECISION of this topic, from a conductor
    or star caller.

    Raises:
        DebateError: ``invalid_override``.
    """
    if topic.data.protocol is not None:  # debate/v1 takes no DECISION to cite
        raise reject(
            "invalid_override",
            "a conductor override cites a CONDUCTOR DECISION, a legacy kind a debate/v1 topic"
            " does not take, so this topic has no override: a role that lost its owner is"
            " rebound by debate_protocol_maintain, and a free role by its participant",
        )
    meta = topic.data.messages.get(msg_id or "")
    if (
        not caller.privileged
        or meta is None
        or meta.kind != "DECISION"
        or (meta.role != "CONDUCTOR")
    ):
        raise reject(
            "invalid_override",
            "conductor_override_msg_id must name a CONDUCTOR "
            "DECISION in this topic, and only conductor or star callers may cite it",
        )


def check_sanction(topic: Topic, cmd: Sanctioned) -> None:
    """The cited ``bound_by_msg_id`` names a message of this topic (a blind CLAIM the barrier
    hides from the caller, acting as the role, is no message to it), and the roster is open.

    Raises:
        DebateError: ``unknown_msg_id`` or ``topic_closed``.
    """
    cited = cmd.bound_by_msg_id
    if cited is not None and barrier.seen(topic, cmd.caller, cmd.role, cited) is None:
        raise reject("unknown_msg_id", "bound_by_msg_id names no message of this topic")
    row = topic.require_row()
    if row.state not in OPEN_STATES:
        raise reject("topic_closed", f"the topic is {row.state}: its roster is final")


def holds(topic: Topic, role: str, caller: Caller) -> bool:
    """Whether binding ``role`` is no takeover: the caller holds it, or nobody does."""
    current = topic.active(role)
    return current is None or current.owner == caller.name


def check_independent(topic: Topic, caller: Caller, role: str) -> None:
    """Binding ``role`` leaves the caller's principal independent of the blind pair as a
    judge (debate/v1): it may not hold a blind role and a role that may judge at once.

    Raises:
        DebateError: ``ineligible_judge``.
    """
    state = topic.data.protocol
    held = judging_own_debate(state, topic.all_bindings(), caller.name, role)
    if state is not None and held is not None:
        raise not_independent(state, role, held)


def gate_bind(topic: Topic, cmd: Acquiring) -> None:
    """Who may bind. A caller that may not learn that the topic exists (no project grant,
    or holding no role of it and no conductor scope) gets one answer for every mistake,
    `access.bind_denied`, whose words cover them all (and whom to ask about a seat already
    taken); one that may read the topic is told what went wrong: an undeclared role, a
    session not its own, a role another principal holds."""
    row = topic.row
    if row is None or row.project == SENTINEL_PROJECT:
        raise access.bind_denied()
    if not (cmd.caller.star or access.in_project(row, cmd.caller)):
        raise access.bind_denied()
    stranger = not access.can_read(row, topic.all_bindings(), cmd.caller)
    if cmd.role not in row.roles:
        if stranger:
            raise access.bind_denied()
        raise reject(
            "invalid_role",
            f"{cmd.role} is not a role of this topic; its declared roles are"
            f" {', '.join(row.roles)} (a new role is added by a conductor, with debate_add_role)",
            role=cmd.role,
        )
    if cmd.session_owner != cmd.caller.name:
        if stranger:
            raise access.bind_denied()
        raise access.not_your_session(
            "session_id",
            cmd.session_id,
            "bind a session of your own: debate_session_open mints one for your bearer token",
        )
    if cmd.override_msg_id is not None:
        check_override(topic, cmd.caller, cmd.override_msg_id)
    elif not holds(topic, cmd.role, cmd.caller):
        if stranger:
            raise access.bind_denied()
        raise held_elsewhere(topic, cmd.role, cmd.caller, retiring=cmd.state == "retired")
    check_sanction(topic, cmd)
    if cmd.state == "active":
        # The barrier first: its refusal stands whatever else the caller gives up, so
        # ineligible_judge's "retire ... first" is said only where that step can work.
        check_unread(topic, cmd.caller, cmd.role)
        check_independent(topic, cmd.caller, cmd.role)


def check_unread(topic: Topic, caller: Caller, role: str) -> None:
    """A conductor-scoped principal that does not debate yet reads every held blind CLAIM
    (`hidden_ids`): it may not take a blind role once another blind role's CLAIM is in,
    since its own CLAIM would be written having read that one.

    Raises:
        DebateError: ``blind_barrier_pending``.
    """
    state = topic.data.protocol
    if state is None or not caller.conductor or role not in state.blind_roles:
        return
    if debates(state, topic.all_bindings(), caller.name):
        return  # it held a blind role before that CLAIM came: the barrier hid it
    other = next((r for m, r in state.pending_blind().items() if r != role), None)
    if other is not None:
        raise reject(
            "blind_barrier_pending",
            f"{role} is a blind role, and {other}'s blind CLAIM is already in: your principal"
            " has the conductor scope, which shows a held CLAIM to a principal that holds no"
            f" blind role, so a {role} CLAIM of yours would not be blind. Let a debater bind"
            f" {role} with a bearer token without the conductor scope (a conductor that binds"
            " a blind role before any CLAIM is in is a debater, and held CLAIMs are hidden"
            " from it as from any debater)",
            role=role,
        )


def held_elsewhere(topic: Topic, role: str, caller: Caller, *, retiring: bool) -> DebateError:
    """The refusal of a bind onto ``role`` while another principal's session holds it: whom
    to ask (the conductor, whose bindings list names the holder of a blind role; a conductor
    itself, the holder, by principal), and how the seat is freed. A caller that asked to
    retire the seat (``retiring``) is offered no other role to bind."""
    v1 = topic.data.protocol is not None
    fix = (
        "a debate/v1 topic takes no override, so only its holder can give it up"
        ' (debate_bind_role with state "retired" on its session)'
        if v1
        else "a conductor can swap it onto your session with an override (replace_active and"
        " conductor_override_msg_id citing a CONDUCTOR DECISION)"
    )
    if caller.privileged:
        current = topic.active(role)
        holder = f" (principal {current.owner})" if current is not None else ""
        ask = f"If {role} was taken by mistake, ask its holder{holder} to give it back"
    else:
        seen = " (its debate_list_bindings names who holds each blind role)" if v1 else ""
        ask = (
            f"If {role} is yours to play, ask the conductor who opened the topic (or handed"
            f" you its topic_id) to sort out who holds it{seen}"
        )
    other = "" if retiring else "; or bind another of the topic's free roles"
    return reject(
        "duplicate_active",
        f"{role} is already held by another session, of another principal: a role has one"
        f" active owner at a time. {ask}: {fix}{other}",
        role=role,
    )


def roster_note(
    state: ProtocolState | None, bindings: Iterable[Binding], caller: Caller
) -> str | None:
    """The note of a reply that shows a debate/v1 roster (the bindings list, the move to
    ACTIVE). A conductor or star caller is told which principal holds each blind role
    (`guide.blind_seats`): a seat taken by the wrong principal looks like any other, and a
    debater refused a taken seat is sent to the conductor; and which principals hold or held
    one, so may not judge (one that gave its seat back is no holder any more). Anyone else is
    told only when one principal holds both blind roles (`guide.shared_blind`). None when
    there is nothing to say."""
    if state is None:
        return None
    bindings = list(bindings)
    if caller.privileged:
        active = {b.role: b.owner for b in bindings if b.state == "active"}
        holders = [(role, active.get(role)) for role in state.blind_roles]
        # Any binding of a blind role bars its principal from judging (`judging_own_debate`).
        held = [b.owner for role in state.blind_roles for b in bindings if b.role == role]
        barred = list(dict.fromkeys(held))
        if not barred:
            return None
        return guide.blind_seats(holders, barred)
    if shared_blind(state, bindings):
        return guide.shared_blind(state.blind_roles)
    return None
