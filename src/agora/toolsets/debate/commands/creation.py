"""Creating a topic: `InitTopic`, idempotent on an identical shape.

The roster is seeded in the same unit as the topic row and its history event; sessions the
handler minted for roster entries are inserted here too, owned by the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.mcp.results import Guided
from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import protocol
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import Binding, TopicData, TopicRow
from agora.toolsets.debate.protocol import guide
from agora.toolsets.debate.protocol.state import ProtocolState, may_judge
from agora.toolsets.debate.rules import reject

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.topic import Topic


#: The reason of a binding debate_init seeded (`init_reply` lists those only).
SEEDED: Final = "seeded by debate_init"


class InitTopic(msgspec.Struct, frozen=True, tag=True):
    """Create the topic (or answer an identical repeat)."""

    caller: Caller
    title: str
    created_by_role: str
    project: str | None
    resolve_by: str | None
    metadata: dict[str, Any]
    #: (role, session_id, minted) per roster entry; an empty session id leaves the role
    #: unbound.
    roster: tuple[tuple[str, str, bool], ...]
    protocol: dict[str, Any]
    shape: str
    repeat: bool


def init_reply(topic: Topic, caller: Caller, minted: set[str] | None = None) -> dict[str, Any]:
    """The debate_init result for the topic as it stands, as ``caller`` may see it: the
    bindings debate_init seeded, each session id shown only to its owner and to star
    callers (others see null), and ``minted`` only for a session minted for ``caller``."""
    row = topic.require_row()
    seeded = []
    for role in row.roles:
        for b in topic.role_bindings(role)[:1]:
            if b.reason != SEEDED:  # (bound later by a participant: not seeded here)
                continue
            shown = b.owner == caller.name or caller.star
            seeded.append(
                {
                    "role": b.role,
                    "session_id": b.session_id if shown else None,
                    "generation": b.generation,
                    "minted": b.owner == caller.name and b.session_id in (minted or set()),
                }
            )
    state = topic.data.protocol
    protocol = None if state is None else state.public()
    return {
        "topic_id": row.topic_id,
        "title": row.title,
        "state": row.state,
        "created_at": row.created_at,
        "created_by_role": row.created_by_role,
        "resolve_by": row.resolve_by,
        "archived_at": row.archived_at,
        "project": row.project,
        "roles": list(row.roles),
        "metadata": row.metadata,
        "seeded_bindings": seeded,
        "protocol_state": protocol,
    }


@COMMANDS.on(InitTopic)
def init_topic(topic: Topic, cmd: InitTopic, now: Now) -> Effects:
    if topic.row is not None:
        topic.read_gate(cmd.caller)
        if topic.row.shape != cmd.shape:
            raise reject(
                "init_conflict",
                "the topic exists with a different shape; "
                "repeat the original arguments or create a new topic",
            )
        # The same answer as the first call's: the roles it minted a session for are the
        # ones the caller left without one (the shape holds which), each's seeded binding.
        fresh = {role for role, _, is_new in cmd.roster if is_new}
        minted = {b.session_id for role in fresh for b in topic.role_bindings(role)[:1]}
        return Effects(reply=_guided(topic, init_reply(topic, cmd.caller, minted)))
    if cmd.repeat:
        raise access.denied()
    at = topic.stamp_now(now)
    roles = [role for role, _, _ in cmd.roster]
    topic.row = TopicRow(
        topic.topic_id,
        cmd.title,
        cmd.project,
        "INIT",
        at,
        cmd.created_by_role,
        cmd.resolve_by,
        None,
        cmd.metadata,
        roles,
        cmd.protocol,
        cmd.shape,
        at,
    )
    topic.data = TopicData()
    writes: list[Write] = [sql.insert_topic(topic.row)]
    minted = set()
    for role, session_id, is_new in cmd.roster:
        if not session_id:  # declared, left for a participant to bind
            continue
        if is_new:
            minted.add(session_id)
            writes.append(sql.insert_session(session_id, cmd.caller.name, None, None, at))
        b = Binding(
            topic.topic_id,
            role,
            1,
            session_id,
            cmd.caller.name,
            None,
            "active",
            SEEDED,
            None,
            cmd.created_by_role,
            at,
            at,
        )
        topic.data.bindings[role] = [b]
        writes.append(sql.upsert_binding(b))
    if cmd.protocol:
        topic.data.protocol = ProtocolState.start(topic.topic_id, cmd.protocol, at)
        writes.append(sql.insert_protocol(topic.data.protocol))
    topic.event(writes, at, "topic_created", cmd.caller.name, roles=roles, project=cmd.project)
    seeded = [role for role, session_id, _ in cmd.roster if session_id]
    note = _roster_note(topic.data.protocol, seeded)
    if cmd.caller.conductor:
        note = _conductor_note(topic.data.protocol, seeded, note)
    reply = _guided(topic, init_reply(topic, cmd.caller, minted), note)
    return Effects(reply=reply, writes=writes, changed=True)


def _guided(topic: Topic, reply: dict[str, Any], note: str | None = None) -> dict[str, Any]:
    """``reply`` with how the topic moves on from where it stands now
    (`protocol.topic_step`), after ``note``."""
    step = protocol.topic_step(topic)
    return Guided(reply, step if note is None else f"{note}\n{step}")


def _roster_note(state: ProtocolState | None, seeded: list[str]) -> str | None:
    """What a debate/v1 roster that seeds the caller (one principal) with ``seeded`` costs
    the debate: its judge (`unjudgeable`), and the blindness of its claims when the caller
    holds both blind roles (`guide.not_blind`); None when it costs nothing."""
    note = unjudgeable(state, seeded)
    if state is None or not set(state.blind_roles) <= set(seeded):
        return note
    both = guide.not_blind(state.blind_roles)
    return both if note is None else f"{note}\n{both}"


def _conductor_note(state: ProtocolState | None, seeded: list[str], note: str | None) -> str | None:
    """``note``, then, for a conductor-scoped caller seeded with one blind role, that it is
    a debater now (`guide.conductor_debates`): the other side's CLAIM is hidden from it."""
    blind = [role for role in seeded if state is not None and role in state.blind_roles]
    if state is None or not blind or set(state.blind_roles) <= set(blind):
        return note
    debates = guide.conductor_debates(blind)
    return debates if note is None else f"{note}\n{debates}"


def unjudgeable(state: ProtocolState | None, seeded: list[str]) -> str | None:
    """The note for a debate/v1 roster that seeds the caller (one principal) with a blind
    role and a role that may judge: a binding would be refused so (`ineligible_judge`), and
    no verdict of that principal will count; None for any other roster."""
    if state is None:
        return None
    blind = [role for role in seeded if role in state.blind_roles]
    judging = [role for role in seeded if may_judge(state, role)]
    if not blind or not judging:
        return None
    blind_roles = f"the blind role{'s' if len(blind) > 1 else ''} {_listed(blind)}"
    may = "roles that may judge" if len(judging) > 1 else "a role that may judge"
    return (
        f"Note: your principal now holds {blind_roles}, and also {_listed(judging)}, {may}:"
        " a judge must be independent of the blind pair by principal, so no verdict from it"
        " will count and it cannot bind another role that may judge. Leave the judge's role"
        " unbound (session_id null) for a principal with a bearer token of its own, and the"
        " blind roles for their debaters."
    )


def _listed(roles: list[str]) -> str:
    """``roles`` as a sentence lists them: "A", "A and B", "A, B and C"."""
    return roles[0] if len(roles) == 1 else f"{', '.join(roles[:-1])} and {roles[-1]}"
