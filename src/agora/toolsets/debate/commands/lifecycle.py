"""Lifecycle and triage: `ChangeState`, `SetLane`, `ReconcileProject`, `ReclaimClaims`.

`transition` is the one authoritative move INIT -> ACTIVE -> RESOLVED -> ARCHIVED, shared by
debate_state, debate_close_topic and direct STATE posts: RESOLVED retires active bindings,
ARCHIVED also diagnostic ones, and nothing is ever removed.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import msgspec

from agora.mcp.results import Guided
from agora.runtime.entity import Effects
from agora.toolsets.debate import sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import protocol, workers
from agora.toolsets.debate.commands.protocol import moved, set_state
from agora.toolsets.debate.commands.seats import roster_note
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import MsgMeta
from agora.toolsets.debate.protocol import guide
from agora.toolsets.debate.protocol.state import TIMED_PHASES, check_close
from agora.toolsets.debate.rules import (
    PROJECT_RE,
    SENTINEL_PROJECT,
    STATE_BODY_RE,
    DebateError,
    check_transition,
    parse_iso,
    reject,
    state_body,
)

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.protocol.state import ProtocolState
    from agora.toolsets.debate.topic import Topic


class ChangeState(msgspec.Struct, frozen=True, tag=True):
    """Move the topic to ``new_state`` (debate_state / debate_close_topic)."""

    caller: Caller
    msg_id: str
    role: str
    new_state: str
    reason: str | None = None


class SetLane(msgspec.Struct, frozen=True, tag=True):
    """Set the conductor's P0..P7 lane."""

    caller: Caller
    role: str
    lane: str
    rank: int
    reason: str
    next_action: str | None = None
    blocked_by: str | None = None


class ReconcileProject(msgspec.Struct, frozen=True, tag=True):
    """Set a sentinel topic's project, once."""

    caller: Caller
    project: str


class ReclaimClaims(msgspec.Struct, frozen=True, tag=True):
    """Sweep the caller's stale one-shot DECISION claims."""

    caller: Caller
    older_than: str
    minimum_age_seconds: int


def transition(topic: Topic, by: MsgMeta, body: str, writes: list[Write], actor: str) -> int:
    """Apply a (validated) lifecycle move, which the STATE message ``by`` (body ``body``)
    records; return how many bindings it retired."""
    row = topic.require_row()
    at, new_state = by.ts, body.split(" ", 1)[0]
    old, row.state = row.state, new_state
    if new_state == "ARCHIVED":
        row.archived_at = at
    state = topic.data.protocol
    if new_state == "ACTIVE" and state is not None:  # the debate/v1 phase clock starts now
        set_state(topic, state.clocked(at), writes)
    if new_state == "RESOLVED" and state is not None and state.phase in TIMED_PHASES:
        _close_early(topic, state, by, body, writes, actor)
    retire = {"RESOLVED": ("active",), "ARCHIVED": ("active", "diagnostic")}.get(new_state, ())
    retired = 0
    for b in topic.all_bindings():
        if b.state in retire:
            b.state, b.updated_at, b.retired_by = "retired", at, "lifecycle"
            writes.append(sql.upsert_binding(b))
            retired += 1
    workers.retire_orphans(topic, None, at, writes, actor)
    topic.touch(writes, at)
    topic.event(
        writes,
        at,
        "state_changed",
        actor,
        old_state=old,
        new_state=new_state,
        retired_bindings=retired,
    )
    return retired


def _close_early(
    topic: Topic, state: ProtocolState, by: MsgMeta, body: str, writes: list[Write], actor: str
) -> None:
    """End a live debate/v1 protocol that a role outside the blind pair (`check_close`
    let only such a role through) closed: STOPPED, with the closing as its outcome."""
    found = STATE_BODY_RE.fullmatch(body)
    reason = found.group(2)[len(" [reason: ") : -1] if found and found.group(2) else None
    new = state.close_early(by.role, reason, by.msg_id, by.ts)
    moved(topic, new, writes, by.ts, actor, msg_id=by.msg_id, closed_early=True)


def blocking_questions(topic: Topic) -> list[dict[str, Any]]:
    """The Qs that have no A reply (nor a [DEFERRED: reply), oldest first."""
    return [
        {"msg_id": q.msg_id, "role": q.role, "ts": q.ts} for q in topic.data.open_questions.values()
    ]


@COMMANDS.on(ChangeState)
def change_state(topic: Topic, cmd: ChangeState, now: Now) -> Effects:
    row = topic.require_row()
    topic.write_gate(cmd.caller, cmd.role, closing=True)
    old = row.state
    check_transition(old, cmd.new_state)
    state = topic.data.protocol
    check_close(state, cmd.role, old, cmd.new_state, topic.all_bindings(), cmd.caller.name)
    at = topic.next_ts(now)
    if cmd.new_state == "RESOLVED" and topic.data.open_questions:
        # The contract's shape: old_state and new_state both name the state the topic stays
        # in; requested_state is the move that was asked for.
        open_qs = len(topic.data.open_questions)
        raise DebateError(
            "open_questions",
            f"{old} -> RESOLVED is blocked: {open_qs} Q(s) in blocking_questions have no A"
            " reply (nor a reply starting [DEFERRED:); answer them, then move again. The topic"
            f" stays {old}: old_state and new_state name it, requested_state the move refused",
            old_state=old,
            new_state=old,
            requested_state=cmd.new_state,
            ts=at,
            blocking_questions=blocking_questions(topic),
            transition_msg_id=None,
            body=None,
            retired_bindings=0,
            retired_worker_claims=0,
        )
    body = state_body(cmd.new_state, cmd.reason)
    meta = MsgMeta(cmd.msg_id, at, cmd.role, "STATE", "INFO", None, (), None, False)
    writes: list[Write] = []
    topic.append(writes, meta, body, author_session_id=None, vehicle="analysis")
    claims = workers.active_claims(topic)
    retired = transition(topic, meta, body, writes, cmd.caller.name)
    claims -= workers.active_claims(topic)
    reply = {
        "old_state": old,
        "new_state": cmd.new_state,
        "ts": at,
        "blocking_questions": [],
        "transition_msg_id": cmd.msg_id,
        "body": body,
        "retired_bindings": retired,
        "retired_worker_claims": claims,
    }
    if cmd.new_state == "ACTIVE":  # (the other moves end the topic's posts: nothing follows)
        step = protocol.topic_step(topic)
        state = topic.data.protocol
        if state is not None:
            step = f"{guide.clock_started(state.public())}\n{step}"
            seats = roster_note(state, topic.all_bindings(), cmd.caller)
            if seats is not None:
                step = f"{seats}\n{step}"
        return Effects(reply=Guided(reply, step), writes=writes, changed=True)
    note = protocol.closed_note(topic, cmd.msg_id)
    return Effects(
        reply=reply if note is None else Guided(reply, note), writes=writes, changed=True
    )


@COMMANDS.on(SetLane)
def set_lane(topic: Topic, cmd: SetLane, now: Now) -> Effects:
    # The role argument is the first gate, before the topic is looked at: checked after,
    # it told a stranger that the topic exists (no such topic answers unknown_topic).
    if cmd.role != "CONDUCTOR":
        raise reject("conductor_role_required", "role must read CONDUCTOR")
    row = topic.require_row()
    topic.write_gate(cmd.caller, cmd.role)
    at = topic.stamp_now(now)
    lane = {
        "lane": cmd.lane,
        "rank": cmd.rank,
        "reason": cmd.reason,
        "next_action": cmd.next_action,
        "blocked_by": cmd.blocked_by,
        "updated_at": at,
    }
    row.metadata = {**row.metadata, "conductor_priority": lane}
    writes: list[Write] = []
    topic.touch(writes, at)
    topic.event(writes, at, "lane_set", cmd.caller.name, lane=cmd.lane, reason=cmd.reason)
    return Effects(reply={"topic_id": row.topic_id, **lane}, writes=writes, changed=True)


@COMMANDS.on(ReconcileProject)
def reconcile_project(topic: Topic, cmd: ReconcileProject, now: Now) -> Effects:
    row = topic.row
    if (
        row is None
        or not cmd.caller.conductor
        or row.project != SENTINEL_PROJECT
        or not PROJECT_RE.fullmatch(cmd.project)
    ):
        raise reject(
            "reconcile_rejected",
            "unknown topic, topic project already set, or "
            "invalid project value (conductor callers only)",
        )
    at = topic.stamp_now(now)
    row.project = cmd.project
    writes: list[Write] = []
    topic.touch(writes, at)
    topic.event(writes, at, "project_reconciled", cmd.caller.name, project=cmd.project)
    return Effects(
        reply={"topic_id": row.topic_id, "project": cmd.project, "matched": 1},
        writes=writes,
        changed=True,
    )


@COMMANDS.on(ReclaimClaims)
def reclaim_claims(topic: Topic, cmd: ReclaimClaims, now: Now) -> Effects:
    row = topic.read_gate(cmd.caller)
    cutoff = parse_iso(cmd.older_than)
    floor = now.wall - dt.timedelta(seconds=cmd.minimum_age_seconds)
    at = topic.stamp_now(now)
    writes: list[Write] = []
    out = []
    for claim in sorted(topic.data.claims.values(), key=lambda c: (c.claimed_at, c.msg_id)):
        if claim.state != "active" or claim.owner != cmd.caller.name:
            continue
        claimed = parse_iso(claim.claimed_at)
        if claimed >= cutoff or claimed > floor:
            continue
        answered = any(
            m.reply_to == claim.msg_id and m.kind in ("A", "STATUS") and m.role == claim.role
            for m in topic.data.messages.values()
        )
        if answered:
            claim.state = "done"
        else:
            claim.state = "reclaimed" if row.state in ("INIT", "ACTIVE") else "expired"
        claim.updated_at = at
        writes.append(sql.upsert_claim(topic.topic_id, claim))
        topic.event(writes, at, f"claim_{claim.state}", cmd.caller.name, msg_id=claim.msg_id)
        out.append(
            {
                "msg_id": claim.msg_id,
                "role": claim.role,
                "state": claim.state,
                "claimed_at": claim.claimed_at,
            }
        )
    reply = {
        "topic_id": row.topic_id,
        "topic_state": row.state,
        "reclaimed": out,
        "reclaimed_count": len(out),
    }
    return Effects(reply=reply, writes=writes, changed=bool(writes))
