"""Posting: `Post` (broadcast, addressed, escalation, compaction, direct STATE/WATERMARK
posts) and `AdvanceWatermark`.

A post validates everything (ownership, lifecycle, reply target, kind rules, recipients)
before it changes anything, then preserves the message, its delivery markers and a history
event in one unit. Recipients are declared roles (``role:R``) or sessions actively bound in
the topic (``session:S``); a broadcast has none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agora.mcp.results import Guided
from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands import barrier, protocol, workers
from agora.toolsets.debate.commands.cursors import keys as inbox_keys
from agora.toolsets.debate.commands.lifecycle import transition
from agora.toolsets.debate.commands.seats import check_override
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.model import Cursor, MsgMeta
from agora.toolsets.debate.protocol.state import HUMAN_ROLES, check_close
from agora.toolsets.debate.rules import (
    DEFERRED_PREFIX,
    ROLE_RE,
    STATE_BODY_RE,
    UUID_RE,
    DebateError,
    check_ooda,
    check_transition,
    reject,
)

if TYPE_CHECKING:
    from collections.abc import Collection

    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.model import Binding, TopicRow
    from agora.toolsets.debate.topic import Topic


class Post(msgspec.Struct, frozen=True, tag=True, gc=False):
    """Append one message as ``role`` (untracked by the cyclic collector: nothing it holds
    leads back to it)."""

    caller: Caller
    msg_id: str
    role: str
    priority: str
    kind: str
    body: str
    vehicle: str = "analysis"
    reply_to: str | None = None
    standing: bool | None = None
    author_session_id: str | None = None
    #: Whether the handler found ``author_session_id`` owned by the caller.
    author_owned: bool = True
    addressed: bool = False
    recipients: tuple[str, ...] = ()
    diagnostic: tuple[str, ...] = ()
    #: Recipients added when they are declared roles (the escalation's target); any other
    #: than HUMAN or OPERATOR is refused (`_check_targets`).
    cc: tuple[str, ...] = ()
    override_msg_id: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    #: The tool that posts (debate_post, debate_escalate, ...), for the history event.
    tool: str = "debate_post"


class AdvanceWatermark(msgspec.Struct, frozen=True, tag=True):
    """Post the WATERMARK marker for ``target`` and reconcile the primary signal cursor."""

    caller: Caller
    msg_id: str
    role: str
    target: str


def post_reply(row: TopicRow, meta: MsgMeta, vehicle: str) -> dict[str, Any]:
    """The post result shape (``row``: the topic's, after the post)."""
    return {"msg_id": meta.msg_id, "ts": meta.ts, "topic_state": row.state, "vehicle": vehicle}


def _author(topic: Topic, row: TopicRow, cmd: Post) -> Binding | None:
    """The posting binding; a valid conductor override stands in for a missing one."""
    closed = row.state in ("RESOLVED", "ARCHIVED")
    try:
        # On a closed topic the bindings the lifecycle retired still identify the poster,
        # so a participant hears why (topic_resolved / topic_archived), not "unknown".
        return topic.write_gate(cmd.caller, cmd.role, closing=closed)
    except DebateError:
        if cmd.override_msg_id is None or cmd.role not in row.roles:
            raise
        check_override(topic, cmd.caller, cmd.override_msg_id)
        return None


def _check_worker_author(topic: Topic, cmd: Post, binding: Binding | None) -> None:
    """An ``author_session_id`` that is none of the caller's sessions may still be the worker
    session of an active claim of the posting binding (`debate_worker_claim`): the worker
    answers its trigger as itself.

    Raises:
        DebateError: ``session_not_yours``, the same words whether the session is someone
            else's or does not exist.
    """
    session = cmd.author_session_id or ""
    claim = None if binding is None else topic.worker_of(cmd.role, session, binding)
    if claim is not None and cmd.reply_to == claim.trigger_msg_id:
        return  # its reply to its own trigger, nothing else
    raise access.not_your_session(
        "author_session_id",
        session,
        f"name a session you own, or the worker_session_id of an active debate_worker_claim of"
        f" {cmd.role} in a reply to that claim's trigger (reply_to), or leave author_session_id"
        " empty to post unattributed",
    )


def _recipients(
    topic: Topic, row: TopicRow, tokens: tuple[str, ...], humans: bool = False
) -> list[str]:
    """The recipient keys of ``tokens``; ``humans``: HUMAN and OPERATOR need no declared role
    (an ESCALATE: humans read the whole topic, and an ESCALATE packet addressed to them is how
    a STALEMATE ends, as `debate_escalate` reaches them); any other post to an undeclared
    role would reach no inbox, so it is refused."""
    live: set[str] | None = None  # the bound sessions, gathered only if a token needs them
    keys: list[str] = []
    for token in tokens:
        if (token in row.roles and ROLE_RE.fullmatch(token)) or (humans and token in HUMAN_ROLES):
            key = f"role:{token}"
        elif UUID_RE.fullmatch(token) and token in (live := live or topic.live_sessions()):
            key = f"session:{token}"
        else:
            raise reject(
                "unknown_recipient",
                f"recipient {token!r} is neither a declared role nor a session bound in this"
                " topic; name a declared role or a bound session id (an ESCALATE may also name"
                " HUMAN or OPERATOR undeclared)",
            )
        if key not in keys:
            keys.append(key)
    return keys


def _check_targets(targets: tuple[str, ...], roles: Collection[str]) -> None:
    """Refuse an escalation's target that no inbox and no human would ever answer: a role
    the topic does not declare, other than HUMAN or OPERATOR (humans read the whole topic,
    so escalating to them needs no declared role)."""
    for target in targets:
        if target not in roles and target not in HUMAN_ROLES:
            declared = ", ".join(sorted(roles))
            raise reject(
                "unknown_recipient",
                f"target_role {target!r} is not a declared role of this topic (declared:"
                f" {declared}); name one of them, or HUMAN or OPERATOR",
            )


def _check_kind(topic: Topic, row: TopicRow, cmd: Post) -> None:
    if cmd.reply_to is not None:
        parent = barrier.seen(topic, cmd.caller, cmd.role, cmd.reply_to)
        if parent is None:
            raise reject("bad_reply_to", "reply_to names no message of this topic")
        if cmd.kind == "DECISION" and parent.kind != "Q":
            raise reject("bad_reply_to", "a DECISION may only reply to a Q")
    if cmd.kind == "STATE":
        found = STATE_BODY_RE.fullmatch(cmd.body)
        if found is None:
            raise reject(
                "invalid_state_body", "a STATE body is '<STATE>' or '<STATE> [reason: ...]'"
            )
        check_transition(row.state, found.group(1))
        check_close(
            topic.data.protocol,
            cmd.role,
            row.state,
            found.group(1),
            topic.all_bindings(),
            cmd.caller.name,
        )
    elif cmd.kind == "WATERMARK":
        target = barrier.seen(topic, cmd.caller, cmd.role, cmd.body.strip())
        if target is None:
            raise reject("unknown_msg_id", "a WATERMARK body must be a msg_id of this topic")
        _check_watermark(topic, cmd.caller, cmd.role, target)
    elif cmd.kind == "COMPACTION":
        check_ooda(cmd.body)


@COMMANDS.on(Post)
def post(topic: Topic, cmd: Post, now: Now) -> Effects:
    row = topic.require_row()
    binding = _author(topic, row, cmd)
    if cmd.author_session_id and not cmd.author_owned:
        _check_worker_author(topic, cmd, binding)
    if row.state == "ARCHIVED":
        raise reject("topic_archived", "the topic is ARCHIVED: it accepts no posts")
    if row.state == "RESOLVED" and cmd.kind != "STATE":
        raise reject("topic_resolved", "the topic is RESOLVED: it accepts only state moves")
    if row.state == "INIT" and cmd.kind != "STATE":
        raise reject(
            "topic_not_active",
            "the topic is INIT: it takes no posts until it is ACTIVE (a debate/v1 phase clock"
            " starts then too); bind the roles, then the conductor, or any holder of a role,"
            " moves it with debate_state new_state ACTIVE",
        )
    _check_kind(topic, row, cmd)
    tokens = cmd.recipients
    if cmd.diagnostic or cmd.cc:  # most posts name only recipients: no tuples to join
        row_roles = row.roles
        tokens += cmd.diagnostic + tuple(r for r in cmd.cc if r in row_roles)
        _check_targets(cmd.cc, row_roles)
    recipients = _recipients(topic, row, tokens, humans=cmd.kind == "ESCALATE")
    if cmd.addressed and not recipients:
        raise reject("empty_recipients", "addressed posts need at least one recipient")
    semantic = protocol.gate_post(topic, cmd, binding, recipients)
    extra = cmd.extra if semantic is None else semantic.extra(cmd.extra["payload"])
    override = cmd.override_msg_id if binding is None else binding.override_msg_id
    if override is not None:
        extra = {**extra, "override_msg_id": override}
    ts = topic.next_ts(now)
    meta = MsgMeta(
        cmd.msg_id,
        ts,
        cmd.role,
        cmd.kind,
        cmd.priority,
        cmd.reply_to,
        tuple(recipients),
        cmd.standing,
        cmd.body.startswith(DEFERRED_PREFIX),
    )
    writes: list[Write] = []
    topic.append(
        writes,
        meta,
        cmd.body,
        author_session_id=cmd.author_session_id or None,
        vehicle=cmd.vehicle,
        extra=extra,
    )
    topic.event(
        writes,
        ts,
        "message_posted",
        cmd.caller.name,
        msg_id=cmd.msg_id,
        kind=cmd.kind,
        role=cmd.role,
        tool=cmd.tool,
        recipients=recipients,
        override=cmd.override_msg_id if binding is None else None,
    )
    if cmd.kind == "STATE":
        transition(topic, meta, cmd.body, writes, cmd.caller.name)
    elif cmd.kind == "WATERMARK":
        _watermark(topic, cmd.role, cmd.body.strip(), writes)
    posted = len(writes)
    if meta.reply_to is not None:  # only a reply settles a claim
        _complete_claim(topic, meta, writes)
        workers.complete_on_reply(topic, meta, writes)
    reply = post_reply(row, meta, cmd.vehicle)
    announce = recipients
    note = protocol.post_note(topic, cmd)
    if semantic is not None:
        held = barrier.held_back(topic)
        fields, note = protocol.record_post(topic, meta, semantic, writes, cmd.caller.name)
        reply.update(fields)
        announce = barrier.announced(topic, meta, recipients, held)
    note = barrier.with_held(topic, cmd.caller, cmd.role, meta, note)
    # A plain message changes only its recipients' inboxes: the other roles' waits sleep
    # on. Anything more (a state move, a watermark, a claim or worker settled, a protocol
    # step that may reveal blind messages) wakes every wait.
    plain = len(writes) == posted and semantic is None and cmd.kind not in ("STATE", "WATERMARK")
    # No touch of the topic's row: a message is its own record of when it came (its ts), and
    # an UPDATE of the row per post was one statement in eight of the one writer's work
    # (each a GIL hand-off under load) for a column no tool shows.
    return Effects(
        reply=reply if note is None else Guided(reply, note),
        writes=writes,
        changed=True,
        updated=topic.inbox_uris(announce),
        wakes=topic.recipient_roles(recipients) if plain else None,
    )


def _complete_claim(topic: Topic, meta: MsgMeta, writes: list[Write]) -> None:
    """A terminal reply (A or STATUS) by the claim's role completes a DECISION claim, even
    after it was reclaimed."""
    claim = topic.data.claims.get(meta.reply_to or "")
    if claim is None or meta.kind not in ("A", "STATUS") or meta.role != claim.role:
        return
    if claim.state in ("active", "reclaimed"):
        claim.state, claim.updated_at = "done", meta.ts
        writes.append(sql.upsert_claim(topic.topic_id, claim))
        topic.event(writes, meta.ts, "claim_done", claim.owner, msg_id=claim.msg_id)


def _check_watermark(topic: Topic, caller: Caller, role: str, target: MsgMeta) -> None:
    """`barrier.check_watermark` for the cursor of ``role``'s active binding, if any."""
    active = topic.active(role)
    if active is not None:
        cursor = topic.data.cursors.get((role, active.session_id)) or Cursor()
        inbox = inbox_keys(role, active.session_id)
        barrier.check_watermark(topic, caller, role, inbox, cursor.position, target)


def _watermark(topic: Topic, role: str, target: str, writes: list[Write]) -> bool:
    """Move the role's watermark and its active cursor up to ``target``; whether either
    moved (neither does backwards)."""
    data = topic.data
    position = data.messages[target].cursor
    current = data.watermarks.get(role)
    moved = current is None or position > current
    if moved:
        data.watermarks[role] = position
        writes.append(sql.upsert_watermark(topic.topic_id, role, *position))
    active = topic.active(role)
    if active is not None:
        cursor = data.cursors.get((role, active.session_id)) or Cursor()
        if position > cursor.position:
            moved = True
            topic.set_cursor(
                writes,
                role,
                active.session_id,
                Cursor(position[0], position[1], cursor.last_check_at),
            )
    return moved


@COMMANDS.on(AdvanceWatermark)
def advance_watermark(topic: Topic, cmd: AdvanceWatermark, now: Now) -> Effects:
    row = topic.require_row()
    topic.write_gate(cmd.caller, cmd.role)
    target = barrier.seen(topic, cmd.caller, cmd.role, cmd.target)
    if target is None:
        raise reject("unknown_msg_id", "processed_up_to_msg_id names no message of this topic")
    if row.state == "ARCHIVED":
        raise reject("topic_archived", "the topic is ARCHIVED: it accepts no posts")
    _check_watermark(topic, cmd.caller, cmd.role, target)
    ts = topic.next_ts(now)
    meta = MsgMeta(cmd.msg_id, ts, cmd.role, "WATERMARK", "INFO", None, (), None, False)
    writes: list[Write] = []
    topic.append(writes, meta, cmd.target, author_session_id=None, vehicle="analysis")
    moved = _watermark(topic, cmd.role, cmd.target, writes)
    topic.event(
        writes,
        ts,
        "watermark_advanced",
        cmd.caller.name,
        role=cmd.role,
        target=cmd.target,
        msg_id=cmd.msg_id,
    )
    topic.touch(writes, ts)
    reply: dict[str, Any] = post_reply(row, meta, "analysis")
    if not moved:  # (the contract lists no refusal for it: the marker is posted all the same)
        reply = Guided(
            reply,
            f"The WATERMARK marker was posted, but nothing moved: {cmd.role}'s watermark and "
            f"cursor are already at or past {cmd.target}.",
        )
    return Effects(reply=reply, writes=writes, changed=True)
