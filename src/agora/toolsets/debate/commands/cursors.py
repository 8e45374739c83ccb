"""Addressed delivery: `CheckInbox` (debate_signal_check / _wait) and `AdvanceCursor`.

The inbox of (session, role) is every message addressed to the role or to the session, past
the compound (ts, msg_id) cursor. Cursor precedence for a check: an explicit since_msg_id,
then since_ts, then the persisted cursor healed forward by the role's watermark, then the
start of the topic. A check never moves the cursor: it records when it looked, marks what it
returned as delivered and takes one-shot DECISION claims. Only `AdvanceCursor` moves it,
monotonically, to a message addressed to the caller, completing the deliveries up to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agora.runtime.entity import Effects
from agora.toolsets.debate import sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import barrier, protocol, workers
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import Claim, Cursor, MsgMeta
from agora.toolsets.debate.rules import (
    AFTER_ALL_IDS,
    PRIORITY_RANK,
    START,
    inbox_uri,
    normalise_ts,
    reject,
    stamp,
)

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.model import Binding
    from agora.toolsets.debate.topic import Topic


# ``gc=False`` on the commands of the post cycle: they hold strings, numbers and a `Caller`,
# never a container that could lead back to them, so the cyclic collector need not track
# them (a parked wait holds its look for as long as it sleeps).
class CheckInbox(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Return the caller's inbox page; with ``persist`` record the check."""

    caller: Caller
    session_id: str
    role: str
    limit: int
    since_msg_id: str | None = None
    since_ts: str | None = None
    persist: bool = True
    #: Record the check only when the page holds something (a wait's first look).
    only_if_found: bool = False
    #: A wait's start (stored stamp): a debate/v1 move after it that changed the role's next
    #: move (`ProtocolState.turned_at`) makes the look ready though no message came.
    turned_since: str | None = None
    #: The wait names its topic: an ended debate then answers it every time, where a wait
    #: over every topic is told once (else one ended topic would answer all its waits).
    named: bool = True


class AdvanceCursor(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Move the (role, session) cursor to ``target``, a message addressed to the caller."""

    caller: Caller
    session_id: str
    role: str
    target: str


class Inbox(msgspec.Struct, gc=False):
    """A check's outcome: the messages (as index entries) and the page facts (never
    changed once made).

    A Struct made positionally in C, untracked by the cyclic collector (``gc=False``: its
    messages and bodies never lead back to it), with ``count`` a field, not a property: a
    wait asks it on every look, a parked wait keeps its last one.
    """

    pending: tuple[MsgMeta, ...]
    #: How many messages the page holds: ``len(pending)``.
    count: int
    truncated: bool
    topic_state: str
    limit: int
    #: Rendered messages of the page the topic still held (the rest are read back).
    bodies: dict[str, dict[str, Any]]
    #: debate/v1: the protocol state while a move stands that changed the viewer's next move
    #: without a message to it (a stalemate or terminal phase, projections to judge).
    protocol_state: dict[str, Any] | None = None
    #: That move came after the wait began (`CheckInbox.turned_since`): the wait answers.
    turned: bool = False
    #: msg_id -> the caller's own claim on a one-shot DECISION of the page (`own_claims`).
    claims: dict[str, dict[str, Any]] | None = None
    #: debate/v1: what the blind barrier may hold back behind a CLAIM the caller may not see
    #: yet, and what releases it (`barrier.held_note`); the reply's second text block.
    held_note: str | None = None

    def result(self, messages: list[dict[str, Any]], topic_id: str | None) -> dict[str, Any]:
        """The result shape of a check or wait: ``messages`` (the page's, rendered), the page
        facts and, for a wait, its ``topic_id`` (last). One dict, made once."""
        pending = self.pending
        if not pending:
            next_cursor = top = None
        else:
            last = pending[-1]
            next_cursor = {"ts": last.ts, "msg_id": last.msg_id}
            # The first of the most urgent (what max() by rank gives), without a key call
            # per message.
            top, rank = None, -1
            for meta in pending:
                if PRIORITY_RANK[meta.priority] > rank:
                    top, rank = meta.priority, PRIORITY_RANK[meta.priority]
        claims = self.claims
        if claims:  # the claimant's copy of a one-shot DECISION says it holds the claim
            messages = [
                {**m, "claim": claims[m["msg_id"]]} if m["msg_id"] in claims else m
                for m in messages
            ]
        out = {
            "pending": messages,
            "count": self.count,
            "truncated": self.truncated,
            "next_cursor": next_cursor,
            "max_priority": top,
            "topic_state": self.topic_state,
            "limit": self.limit,
        }
        if topic_id is not None:
            out["topic_id"] = topic_id
        if self.protocol_state is not None:
            out["protocol_state"] = self.protocol_state
        return out


def keys(role: str, session_id: str) -> tuple[str, str]:
    """The two recipient keys a (role, session) inbox matches."""
    return (f"role:{role}", f"session:{session_id}")


def start_cursor(topic: Topic, role: str, session_id: str, parent: Binding) -> Cursor:
    """The (role, session) cursor; a worker session without one starts where its parent's
    cursor stood when the claim was taken."""
    cursor = topic.data.cursors.get((role, session_id))
    if cursor is not None or session_id == parent.session_id:
        return cursor or Cursor()
    claim = topic.worker_of(role, session_id, parent)
    if claim is None:
        return Cursor()
    return Cursor(claim.parent_cursor_ts, claim.parent_cursor_msg_id)


def _start(topic: Topic, cmd: CheckInbox, cursor: Cursor) -> tuple[str, str]:
    """Where the page starts (``cursor``: the caller's own signal cursor)."""
    data = topic.data
    if cmd.since_msg_id is not None:
        meta = barrier.seen(topic, cmd.caller, cmd.role, cmd.since_msg_id)
        if meta is None:
            raise reject("unknown_cursor", "since_msg_id names no message of this topic")
        return meta.cursor
    if cmd.since_ts is not None:
        return (normalise_ts(cmd.since_ts), AFTER_ALL_IDS)
    return max(cursor.position, data.watermarks.get(cmd.role, START))


def _addressed(topic: Topic, mine: tuple[str, str], after: tuple[str, str]) -> list[MsgMeta]:
    """The messages for the keys ``mine`` past ``after``, in (ts, msg_id) order."""
    inbox = topic.data.inbox
    found: list[MsgMeta] = []
    sources = 0
    for key in mine:
        start = len(found)
        for meta in reversed(inbox.get(key, ())):
            if (meta.ts, meta.msg_id) <= after:  # its cursor, without the property's call
                break
            found.append(meta)
        sources += len(found) > start
    if sources < 2:  # one key's list, newest first: no repeats to merge
        found.reverse()
        return found
    unique = {meta.msg_id: meta for meta in found}
    return sorted(unique.values(), key=lambda m: m.cursor)


@COMMANDS.on(CheckInbox)
def check_inbox(topic: Topic, cmd: CheckInbox, now: Now) -> Effects:
    row = topic.require_row()
    # A worker session reads its parent's inbox through a cursor of its own.
    parent = topic.session_gate(cmd.caller, cmd.role, cmd.session_id)
    mine = keys(cmd.role, parent.session_id)
    cursor = start_cursor(topic, cmd.role, cmd.session_id, parent)
    items = _addressed(topic, mine, _start(topic, cmd, cursor))
    state, turned, note = None, False, None
    v1 = topic.data.protocol
    if v1 is not None:  # only debate/v1 has a blind barrier and phases
        items = barrier.visible_inbox(topic, cmd.caller, cmd.role, items)
        note = barrier.held_note(v1, cmd.role) if barrier.may_hold(topic, cmd.caller) else None
        state, turned = protocol.turn(
            topic, cmd.role, cmd.turned_since, cursor.last_check_at, named=cmd.named
        )
    page = tuple(items) if len(items) <= cmd.limit else tuple(items[: cmd.limit])
    held = topic.data.bodies
    bodies: dict[str, dict[str, Any]] = {}
    for m in page:  # a loop, not a comprehension: a page mostly holds one message
        body = held.get(m.msg_id)
        if body is not None:
            bodies[m.msg_id] = body
    facts = (len(items) > cmd.limit, row.state, cmd.limit, bodies, state, turned)
    if not cmd.persist or (cmd.only_if_found and not page):
        claims = own_claims(topic, cmd, parent, page)
        return Effects(reply=Inbox(page, len(page), *facts, claims, held_note=note))
    at = stamp(now.wall)
    writes: list[Write] = []
    data = topic.data
    cursor.last_check_at = at
    topic.set_cursor(writes, cmd.role, cmd.session_id, cursor)
    for meta in page:
        for key in mine:
            marks = data.deliveries.get(key)
            if marks is not None and marks.get(meta.msg_id) == "pending":
                marks[meta.msg_id] = "delivered"
                writes.append(sql.mark_delivery(meta.msg_id, key, "delivered", at))
        if meta.kind == "DECISION" and meta.standing is False and meta.msg_id not in data.claims:
            claim = Claim(meta.msg_id, cmd.role, cmd.session_id, cmd.caller.name, "active", at, at)
            data.claims[meta.msg_id] = claim
            writes.append(sql.upsert_claim(topic.topic_id, claim))
            topic.event(
                writes, at, "claim_taken", cmd.caller.name, msg_id=meta.msg_id, role=cmd.role
            )
    claims = own_claims(topic, cmd, parent, page)
    inbox = Inbox(page, len(page), *facts, claims, held_note=note)
    return Effects(reply=inbox, writes=writes)


def own_claims(
    topic: Topic, cmd: CheckInbox, parent: Binding, page: tuple[MsgMeta, ...]
) -> dict[str, dict[str, Any]] | None:
    """The caller's own claims on the one-shot DECISIONs of ``page``, by msg_id (None when it
    holds none): the first check that returns one claims it "for that recipient to act on",
    so the claimant's copy says so. The other recipients still get the message as it is: the
    contract shows no one another's claim state. A claim stays with the role as the caller
    hands it on: a session the role was rotated (or rebound) to from the claimant's, both
    the caller's, shows the marks its predecessor saw."""
    found: dict[str, dict[str, Any]] | None = None
    claims = topic.data.claims
    for meta in page:
        if meta.kind != "DECISION" or meta.standing is not False:
            continue
        claim = claims.get(meta.msg_id)
        if (
            claim is not None
            and claim.role == cmd.role
            and claim.owner == cmd.caller.name
            and (
                claim.session_id in (cmd.session_id, parent.session_id)
                or _held(topic, cmd.role, claim.session_id, cmd.caller.name)
            )
        ):
            found = found or {}
            found[meta.msg_id] = {
                "role": claim.role,
                "state": claim.state,
                "claimed_at": claim.claimed_at,
            }
    return found


def _held(topic: Topic, role: str, session_id: str, owner: str) -> bool:
    """Whether ``session_id`` held ``role`` for ``owner`` (any generation, retired ones
    included: a rotation retires the predecessor)."""
    return any(b.session_id == session_id and b.owner == owner for b in topic.role_bindings(role))


@COMMANDS.on(AdvanceCursor)
def advance_cursor(topic: Topic, cmd: AdvanceCursor, now: Now) -> Effects:
    parent = topic.session_gate(cmd.caller, cmd.role, cmd.session_id)
    data = topic.data
    target = barrier.seen(topic, cmd.caller, cmd.role, cmd.target)
    if target is None:
        raise reject("unknown_msg_id", "last_processed_msg_id names no message of this topic")
    mine = keys(cmd.role, parent.session_id)
    if data.protocol is not None:  # the barrier and delivery rules of debate/v1 only
        barrier.check_advance(topic, cmd.caller, cmd.role, mine, target)
    if mine[0] not in target.recipients and mine[1] not in target.recipients:
        raise reject(
            "target_not_addressed",
            "the message is not addressed to this role or "
            "session; only addressed messages can be consumed",
        )
    cursor = start_cursor(topic, cmd.role, cmd.session_id, parent)
    if (target.ts, target.msg_id) <= cursor.position:
        ts, msg_id = cursor.position
        raise reject(
            "regressive_cursor",
            f"the cursor is already at {msg_id} ({ts}), at or past that message, which needs"
            f" no receipt: to move it on, send a last_processed_msg_id after {msg_id}",
            last_processed_msg_id=msg_id,
            last_processed_ts=ts,
        )
    at = stamp(now.wall)
    writes: list[Write] = []
    topic.set_cursor(
        writes, cmd.role, cmd.session_id, Cursor(target.ts, target.msg_id, cursor.last_check_at)
    )
    done = 0
    # A worker's receipt moves its own cursor only: the parent's deliveries stay open.
    for key in mine if parent.session_id == cmd.session_id else ():
        marks = data.deliveries.get(key)
        if not marks:
            continue
        # Open markers are kept in (ts, msg_id) order: stop at the first past the target.
        upto = []
        for msg_id in marks:
            meta = data.messages[msg_id]
            if meta.ts > target.ts or (meta.ts == target.ts and meta.msg_id > target.msg_id):
                break
            upto.append(msg_id)
        for msg_id in upto:
            del marks[msg_id]
            topic.consumed(msg_id)
            writes.append(sql.mark_delivery(msg_id, key, "done", at))
        done += len(upto)
    topic.event(
        writes,
        at,
        "cursor_advanced",
        cmd.caller.name,
        role=cmd.role,
        session_id=cmd.session_id,
        msg_id=target.msg_id,
        deliveries_done=done,
    )
    reply = {
        "session_id": cmd.session_id,
        "role": cmd.role,
        "topic_id": topic.topic_id,
        "last_processed_msg_id": target.msg_id,
        "last_processed_ts": target.ts,
        "last_check_at": cursor.last_check_at,
        "worker_claim": workers.complete_on_advance(
            topic, cmd.role, cmd.session_id, target, at, writes
        ),
    }
    return Effects(reply=reply, writes=writes, updated=[inbox_uri(cmd.session_id)])
