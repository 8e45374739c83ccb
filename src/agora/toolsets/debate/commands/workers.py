"""Derived workers on the topic entity: `ClaimWorker`, `ReclaimWorkers` and completion.

A worker claim is the exactly-once take of one trigger by one parent binding: the first
claim allocates a UUID worker session; a repeat while active is a heartbeat; a completed
claim answers ``no_action``, and so does a trigger the parent's cursor (or the role's
watermark) already passed, whose claim is recorded completed at once; a retired claim is
requeued at most twice, then reports exhausted. Triggers on the implementation vehicle fail
closed and write nothing; a first claim on a DECISION the role already answered is born
completed with that answer (``no_action``). A terminal reply (A, STATUS or a debate/v1
semantic kind) by the claim's role to the trigger completes it, through posts and through
the parent's cursor receipt; a reclaim retires stale active claims without moving any cursor
(the trigger stays pending for the parent) or completes them when the terminal reply already
exists.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Final

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.protocol.gates import SEMANTIC_KINDS
from agora.toolsets.debate.protocol.state import hidden_ids
from agora.toolsets.debate.rules import parse_iso, reject
from agora.toolsets.debate.sql.workers import WorkerClaim

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.model import MsgMeta
    from agora.toolsets.debate.topic import Topic

MAX_REQUEUES: Final = 2
TERMINAL_KINDS: Final = frozenset({"A", "STATUS"}) | SEMANTIC_KINDS


class ClaimWorker(msgspec.Struct, frozen=True, tag=True):
    """Allocate (or heartbeat, or requeue) the worker of one trigger."""

    caller: Caller
    role: str
    parent_session_id: str
    trigger_msg_id: str
    #: The trigger's preserved vehicle, read by the handler (None: not in this topic).
    vehicle: str | None
    worker_session_id: str
    details: dict[str, Any]


class ReclaimWorkers(msgspec.Struct, frozen=True, tag=True):
    """Retire (or complete) the caller's stale active worker claims."""

    caller: Caller
    older_than: str
    minimum_age_seconds: int


def _answer(topic: Topic, role: str, trigger_msg_id: str) -> MsgMeta | None:
    """The role's first terminal reply to the trigger, if any."""
    replies = [
        m
        for m in topic.data.messages.values()
        if m.reply_to == trigger_msg_id and m.role == role and m.kind in TERMINAL_KINDS
    ]
    return min(replies, key=lambda m: m.cursor, default=None)


def _complete(topic: Topic, claim: WorkerClaim, ack: MsgMeta, at: str, writes: list[Write]) -> None:
    claim.state, claim.completed_at, claim.ack_msg_id, claim.heartbeat_at = (
        "completed",
        at,
        ack.msg_id,
        at,
    )
    writes.append(sql.upsert_worker(claim))
    topic.event(
        writes,
        at,
        "worker_completed",
        claim.owner,
        worker_session_id=claim.worker_session_id,
        trigger_msg_id=claim.trigger_msg_id,
        ack_msg_id=ack.msg_id,
    )


def complete_on_reply(topic: Topic, meta: MsgMeta, writes: list[Write]) -> None:
    """A post that is a terminal reply to a claimed trigger completes its claims, active or
    retired by a reclaim (a late reply still completes)."""
    if meta.reply_to is None or meta.kind not in TERMINAL_KINDS:
        return
    for claim in topic.data.workers.values():
        if (
            claim.state in ("active", "retired")
            and claim.trigger_msg_id == meta.reply_to
            and claim.role == meta.role
        ):
            _complete(topic, claim, meta, meta.ts, writes)


def complete_on_advance(
    topic: Topic, role: str, session_id: str, target: MsgMeta, at: str, writes: list[Write]
) -> dict[str, Any] | None:
    """The receipt of the parent or of the worker past a claimed trigger completes the claim
    when its terminal reply exists; returns the claim it completed."""
    for claim in topic.data.workers.values():
        if (
            claim.state == "active"
            and claim.role == role
            and session_id in (claim.parent_session_id, claim.worker_session_id)
            and topic.data.messages[claim.trigger_msg_id].cursor <= target.cursor
            and (ack := _answer(topic, claim.role, claim.trigger_msg_id)) is not None
        ):
            _complete(topic, claim, ack, at, writes)
            return claim.public()
    return None


def retire_orphans(topic: Topic, role: str | None, at: str, writes: list[Write], actor: str) -> int:
    """Retire the active claims (of ``role``, or of every role) whose parent session no
    longer holds the role actively; returns how many."""
    retired = 0
    for claim in topic.data.workers.values():
        if claim.state != "active" or role not in (None, claim.role):
            continue
        holder = topic.active(claim.role)
        if holder is not None and holder.session_id == claim.parent_session_id:
            continue
        claim.state, claim.heartbeat_at = "retired", at
        writes.append(sql.upsert_worker(claim))
        topic.event(
            writes,
            at,
            "worker_retired",
            actor,
            worker_session_id=claim.worker_session_id,
            trigger_msg_id=claim.trigger_msg_id,
            reason="parent_binding_retired",
        )
        retired += 1
    return retired


def active_claims(topic: Topic) -> int:
    """How many worker claims are active."""
    return sum(1 for c in topic.data.workers.values() if c.state == "active")


def _reply(claim: WorkerClaim, *, duplicate: bool, no_action: bool, **extra: Any) -> dict[str, Any]:
    return {**claim.public(), "duplicate": duplicate, "no_action": no_action, **extra}


@COMMANDS.on(ClaimWorker)
def claim_worker(topic: Topic, cmd: ClaimWorker, now: Now) -> Effects:
    owned = [
        b
        for b in topic.role_bindings(cmd.role)
        if b.session_id == cmd.parent_session_id and b.owner == cmd.caller.name
    ]
    binding = topic.write_gate(cmd.caller, cmd.role) if not owned else owned[-1]
    if binding.state != "active":
        raise reject("worker_parent_inactive", "the parent session no longer holds the role")
    if binding.session_id != cmd.parent_session_id:
        raise access.denied()
    trigger = topic.data.messages.get(cmd.trigger_msg_id)
    keys = {f"role:{cmd.role}", f"session:{cmd.parent_session_id}"}
    hidden = hidden_ids(topic.data.protocol, cmd.caller, cmd.role, topic.all_bindings())
    if (
        trigger is None
        or cmd.vehicle is None
        or not keys & set(trigger.recipients)
        or trigger.msg_id in hidden
    ):
        raise reject("unknown_trigger", "trigger_msg_id names no message addressed to you here")
    if cmd.vehicle == "implementation":
        raise reject(
            "implementation_requires_impl_vehicle",
            "implementation work is not for derived workers; the conductor routes it to an "
            "approved implementation vehicle",
        )
    key = (cmd.role, cmd.parent_session_id, cmd.trigger_msg_id)
    claim = topic.data.workers.get(key)
    at = topic.stamp_now(now)
    writes: list[Write] = []
    # A trigger the parent's receipts already passed needs no worker, nor does a DECISION
    # the role already answered (the answer was the work): its claim is born completed
    # (with the role's terminal reply, if any), as the parent's receipt or the answer would
    # have completed it, and answers no_action now and on every repeat.
    consumed = claim is None and (
        topic.processed(cmd.role, cmd.parent_session_id, trigger)
        or (trigger.kind == "DECISION" and _answer(topic, cmd.role, trigger.msg_id) is not None)
    )
    if claim is None:
        cursor = topic.data.cursors.get((cmd.role, cmd.parent_session_id))
        n = 1 + sum(1 for c in topic.data.workers.values() if c.key[:2] == key[:2])
        claim = WorkerClaim(
            topic.topic_id,
            cmd.role,
            cmd.parent_session_id,
            cmd.trigger_msg_id,
            cmd.worker_session_id,
            cmd.caller.name,
            "active",
            cursor.ts if cursor else None,
            cursor.msg_id if cursor else None,
            at,
            at,
            None,
            None,
            dict(cmd.details),
            0,
            n,
        )
        topic.data.workers[key] = claim
        if consumed:
            ack = _answer(topic, claim.role, claim.trigger_msg_id)
            claim.state, claim.completed_at = "completed", at
            claim.ack_msg_id = ack.msg_id if ack is not None else None
        event = "worker_consumed" if consumed else "worker_claimed"
        reply = _reply(claim, duplicate=False, no_action=consumed)
    elif claim.state == "active":
        claim.heartbeat_at = at
        event, reply = "worker_heartbeat", _reply(claim, duplicate=True, no_action=False)
    elif claim.state == "retired" and claim.requeue_count < MAX_REQUEUES:
        claim.state, claim.heartbeat_at = "active", at
        claim.requeue_count += 1
        event = "worker_requeued"
        reply = _reply(claim, duplicate=False, no_action=False, requeued=True)
    elif claim.state == "retired":
        claim.state, claim.heartbeat_at = "exhausted", at
        event = "worker_exhausted"
        reply = _reply(claim, duplicate=True, no_action=True, exhausted=True)
    else:  # completed or exhausted: nothing to do
        exhausted = claim.state == "exhausted"
        return Effects(reply=_reply(claim, duplicate=True, no_action=True, exhausted=exhausted))
    writes.append(sql.upsert_worker(claim))
    topic.event(
        writes,
        at,
        event,
        cmd.caller.name,
        role=cmd.role,
        worker_session_id=claim.worker_session_id,
        trigger_msg_id=cmd.trigger_msg_id,
        requeue_count=claim.requeue_count,
    )
    return Effects(reply=reply, writes=writes, changed=True)


@COMMANDS.on(ReclaimWorkers)
def reclaim_workers(topic: Topic, cmd: ReclaimWorkers, now: Now) -> Effects:
    row = topic.read_gate(cmd.caller)
    cutoff = parse_iso(cmd.older_than)
    floor = now.wall - dt.timedelta(seconds=cmd.minimum_age_seconds)
    at = topic.stamp_now(now)
    writes: list[Write] = []
    recovered = []
    for claim in sorted(topic.data.workers.values(), key=lambda c: (c.heartbeat_at, c.key)):
        if claim.state != "active" or claim.owner != cmd.caller.name:
            continue
        beat = parse_iso(claim.heartbeat_at)
        if beat >= cutoff or beat > floor:
            continue
        prior = claim.heartbeat_at
        ack = _answer(topic, claim.role, claim.trigger_msg_id)
        if ack is not None:
            _complete(topic, claim, ack, at, writes)
        else:
            claim.state, claim.heartbeat_at = "retired", at
            writes.append(sql.upsert_worker(claim))
            topic.event(
                writes,
                at,
                "worker_retired",
                cmd.caller.name,
                worker_session_id=claim.worker_session_id,
                trigger_msg_id=claim.trigger_msg_id,
                prior_heartbeat_at=prior,
            )
        recovered.append(
            {
                "worker_session_id": claim.worker_session_id,
                "role": claim.role,
                "trigger_msg_id": claim.trigger_msg_id,
                "state": claim.state,
                "recovered_at": at,
                "prior_heartbeat_at": prior,
                "ack_msg_id": claim.ack_msg_id,
                "parent_trigger_still_pending": ack is None,
            }
        )
    reply = {
        "topic_id": row.topic_id,
        "topic_state": row.state,
        "older_than_ts": cmd.older_than,
        "minimum_age_seconds": cmd.minimum_age_seconds,
        "recovered": recovered,
        "recovered_count": len(recovered),
        "completed_count": sum(1 for r in recovered if r["state"] == "completed"),
        "retired_count": sum(1 for r in recovered if r["state"] == "retired"),
    }
    return Effects(reply=reply, writes=writes, changed=bool(writes))
