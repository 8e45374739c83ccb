"""debate/v1 on the topic entity: the post gates and moves, and the blind barrier on delivery.

`messages.post` calls `gate_post` after the part-1 checks and before anything is preserved
(a rejection changes nothing), then `record_post` after the message is appended: a blind
CLAIM commits behind the barrier and the second releases both and opens DEBATE; a VERIFY
closes a round (ADJUDICATE when verified with no open CHALLENGE, STALEMATE
``round_cap_unresolved`` at the cap, else the next round); an ESCALATE moves STALEMATE to
ESCALATED. The inbox paths ask `visible_inbox` / `check_advance` so a blind CLAIM never
reaches the other side early and no cursor passes one it has not seen.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import sql
from agora.toolsets.debate.protocol import gates, guide
from agora.toolsets.debate.protocol.state import (
    HUMAN_ROLES,
    OVER_PHASES,
    ProtocolState,
    hidden_ids,
)
from agora.toolsets.debate.rules import KINDS, PROTOCOL_V1, START, reject

if TYPE_CHECKING:
    from agora.runtime.entity import Write
    from agora.toolsets.debate.access import Caller
    from agora.toolsets.debate.commands.messages import Post
    from agora.toolsets.debate.model import Binding, MsgMeta
    from agora.toolsets.debate.topic import Topic

#: What a topic without the debate/v1 protocol takes: every kind but the semantic ones.
_LEGACY_TOPIC_KINDS = tuple(kind for kind in KINDS if kind not in gates.SEMANTIC_KINDS)


@dataclass(frozen=True, slots=True)
class Semantic:
    """A semantic post that passed the gates: what `record_post` needs."""

    payload: dict[str, Any]
    body_mode: str
    round_no: int

    def extra(self, text: str) -> dict[str, Any]:
        """The stored message columns of the post."""
        return {"payload": text, "body_mode": self.body_mode, "protocol_version": PROTOCOL_V1}


def set_state(topic: Topic, new: ProtocolState, writes: list[Write]) -> None:
    """Store ``new`` (a state derived from the current one) with its CAS update."""
    prior = topic.data.protocol
    assert prior is not None
    writes.append(sql.update_protocol(new, prior.transition_version))
    topic.data.protocol = new


def _stale_read(topic: Topic, role: str, binding: Binding | None, reply_to: str | None) -> None:
    """Refuse while an H message addressed to the poster lies past its cursor (the message
    the post answers counts as read: a reply shows its author read it)."""
    data = topic.data
    session = binding.session_id if binding is not None else None
    cursor = data.cursors.get((role, session)) if session else None
    after = max(cursor.position if cursor else START, data.watermarks.get(role, START))
    keys = [f"role:{role}"] + ([f"session:{session}"] if session else [])
    hidden = set(data.protocol.pending_blind()) if data.protocol else set()
    for key in keys:
        for meta in reversed(data.inbox.get(key, ())):
            if meta.cursor <= after:
                break
            if meta.msg_id in hidden or meta.msg_id == reply_to:
                continue
            if meta.priority == "H" and meta.role != role:
                raise reject(
                    "stale_read",
                    f"an urgent (H) message addressed to you is unread ({meta.msg_id}): check"
                    " your inbox and debate_signal_advance past it before posting, or post"
                    " your answer to it (reply_to that message), which is accepted",
                    unread_msg_id=meta.msg_id,
                )


def _target(topic: Topic, kind: str, reply_to: str | None, role: str) -> None:
    """Refuse a reply_to the kind may not answer: one of another kind, or, for the kinds
    that answer the other side (a CHALLENGE, a REBUT), a message of the poster's own role,
    which would hold ADJUDICATE back (or close a CHALLENGE) with no opponent involved."""
    allowed = gates.TARGET_KINDS.get(kind)
    if allowed is None:
        return
    parent = topic.data.messages.get(reply_to or "")
    if parent is None or parent.kind not in allowed:
        raise reject(
            "invalid_target",
            f"{kind} replies (reply_to) to one of {sorted(allowed)} in this topic",
        )
    if kind in gates.OPPOSING_KINDS and parent.role == role:
        raise reject(
            "invalid_target",
            f"{kind} answers another role's message, and {reply_to} is {role}'s own"
            f" {parent.kind}: reply_to one of {sorted(allowed)} that another role posted",
        )


def gate_post(
    topic: Topic, cmd: Post, binding: Binding | None, recipients: list[str]
) -> Semantic | None:
    """Every debate/v1 rule a post must pass; None for posts the protocol leaves alone.

    Raises:
        DebateError: the rule that refused the post.
    """
    state = topic.data.protocol
    kind = cmd.kind
    if state is None:
        if kind in gates.SEMANTIC_KINDS or cmd.extra.get("protocol_version"):
            raise reject(
                "protocol_not_configured",
                "semantic kinds need a debate/v1 topic; this topic is not one and takes the "
                f"legacy and control kinds ({' '.join(_LEGACY_TOPIC_KINDS)})",
            )
        return None
    if kind in gates.LEGACY_KINDS:
        raise reject(
            "legacy_kind_on_v1",
            f"{kind} is a legacy conversational kind; debate/v1 topics take the semantic "
            "kinds (CLAIM CHALLENGE EVIDENCE REBUT CONCEDE VERIFY DISSENT ESCALATE)",
        )
    if kind not in gates.SEMANTIC_KINDS:
        return None
    payload, mode = gates.payload(kind, cmd.extra.get("payload"), cmd.extra.get("body_mode"))
    gates.phase_kind(state, kind, cmd.role)
    if state.phase == "BLIND_CLAIM" and cmd.role in state.blind_commits:
        raise reject(
            "blind_claim_duplicate",
            f"{cmd.role} already committed its blind CLAIM ({state.blind_commits[cmd.role]}),"
            " and BLIND_CLAIM takes one per blind role: it cannot be posted again, nor"
            " re-addressed. Wait (debate_signal_wait) for the other blind CLAIM: it releases"
            " yours to its recipients (one posted with debate_post has none: the other roles"
            " read it with debate_read), and DEBATE then takes your next posts.",
        )
    if kind == "DISSENT" and any(
        m.kind == "DISSENT" and m.role == cmd.role for m in topic.data.messages.values()
    ):
        raise reject("dissent_duplicate", "one DISSENT per role")
    if kind == "ESCALATE" and not any(k.split(":", 1)[1] in HUMAN_ROLES for k in recipients):
        raise reject(
            "human_recipient_required",
            "an ESCALATE packet is addressed (debate_post_with_recipients) to HUMAN or OPERATOR",
        )
    _target(topic, kind, cmd.reply_to, cmd.role)
    _stale_read(topic, cmd.role, binding, cmd.reply_to)
    return Semantic(payload, mode, state.round_no)


def _open_challenges(topic: Topic) -> list[str]:
    """The msg_ids of the CHALLENGEs no REBUT or CONCEDE answers yet (an EVIDENCE reply
    supports one but does not close it)."""
    answered = {m.reply_to for m in topic.data.messages.values() if m.kind in ("REBUT", "CONCEDE")}
    return [
        m.msg_id
        for m in topic.data.messages.values()
        if m.kind == "CHALLENGE" and m.msg_id not in answered
    ]


def open_challenges_note(state: ProtocolState, open_ids: list[str]) -> str:
    """Why a ``verified`` VERIFY did not close the debate (its reply's second text block)."""
    where = (
        f"so the debate is at its round cap: {state.phase} ({state.stalemate_reason})"
        if state.phase == "STALEMATE"
        else f"so round {state.round_no} begins"
    )
    return (
        f"The VERIFY is verified, but {len(open_ids)} CHALLENGE(s) are still open, {where}."
        f" A CHALLENGE closes with a REBUT or CONCEDE replying to it (an EVIDENCE supports it"
        f" without closing it); open: {', '.join(open_ids)}."
    )


def topic_step(topic: Topic) -> str:
    """What moves ``topic`` on from where it stands now (`guide.topic_step`): in a debate/v1
    phase, from its blind CLAIMs committed and CHALLENGEs open so far, as a post's reply
    says it (a repeated debate_init answers with this, not with the step at creation)."""
    row, state = topic.require_row(), topic.data.protocol
    if state is None:
        return guide.topic_step(row.state, None)
    open_ids = _open_challenges(topic) if state.phase == "DEBATE" else []
    return guide.topic_step(row.state, state.public(), list(state.blind_commits), open_ids)


def record_post(
    topic: Topic, meta: MsgMeta, semantic: Semantic, writes: list[Write], actor: str
) -> tuple[dict[str, Any], str]:
    """Apply the micro-state move of an accepted semantic post; return the reply fields and
    the note for its second text block: why a verified VERIFY did not close the round, if so,
    then whose move it is now (`guide.next_move`)."""
    state = topic.data.protocol
    assert state is not None
    at, kind, version = meta.ts, meta.kind, state.transition_version
    new: ProtocolState | None = None
    still_open: list[str] = []
    if kind == "CLAIM" and state.phase == "BLIND_CLAIM":
        commits = {**state.blind_commits, meta.role: meta.msg_id}
        new = replace(state, blind_commits=commits, updated_at=at)
        if len(commits) == len(state.blind_roles):
            new = new.move("DEBATE", at, expected=version)
            new.blind_barrier_state = "released"
    elif kind == "VERIFY":
        verified = semantic.payload.get("result") == "verified"
        still_open = _open_challenges(topic) if verified else []
        if verified and not still_open:
            new = state.move("ADJUDICATE", at, expected=version)
        elif state.round_no >= state.max_rounds:
            new = state.move("STALEMATE", at, expected=version, reason="round_cap_unresolved")
        else:
            new = state.move("DEBATE", at, expected=version)
            new.round_no += 1
    elif kind == "ESCALATE":
        new = state.move("ESCALATED", at, expected=version)
    if new is not None:
        set_state(topic, new, writes)
        if new.transition_version != version:
            topic.event(
                writes,
                at,
                "protocol_moved",
                actor,
                msg_id=meta.msg_id,
                old_phase=state.phase,
                new_phase=new.phase,
                round_no=new.round_no,
                transition_version=new.transition_version,
                stalemate_reason=new.stalemate_reason,
            )
    current = topic.data.protocol
    assert current is not None
    public = current.public()
    fields = {
        "protocol_version": PROTOCOL_V1,
        "round_no": semantic.round_no,
        "body_mode": semantic.body_mode,
        "protocol_state": public,
    }
    # (no field says why a verified VERIFY went on, nor whose move it is: a note does)
    notes = [open_challenges_note(current, still_open)] if still_open else []
    open_ids = _open_challenges(topic) if current.phase == "DEBATE" and not still_open else []
    if kind == "CLAIM" and state.phase == "BLIND_CLAIM" and not meta.recipients:
        # (a broadcast blind CLAIM: the usual advice to post it addressed would be refused)
        notes.insert(0, guide.blind_broadcast(meta.role, released=current.phase != "BLIND_CLAIM"))
    notes.append(guide.next_move(public, list(current.blind_commits), open_ids))
    return fields, "\n".join(notes)


def turn(
    topic: Topic, role: str, since: str | None, told: str | None, *, named: bool = True
) -> tuple[dict[str, Any] | None, bool]:
    """The protocol state to show ``role`` in its inbox, and whether a wait begun at ``since``
    answers with it at once (``since`` None: a check, which only shows it).

    A stalemate, a terminal phase or projections to judge change what a participant does
    next without any message to it; its check or wait then carries ``protocol_state`` (as
    debate_protocol_state and every v1 post reply give it). A wait answers with it rather
    than sleeping on when the move came after the wait began (the move's own command wakes
    every wait) or after the session's last check (``told``: it was not shown yet), and
    always, to a wait that ``named`` the topic, once the debate is over (STOPPED or
    ESCALATED: nothing is left to wait for, as a RESOLVED topic answers every wait at once).
    A STALEMATE still waits for its DISSENTs and the ESCALATE that ends it, and a wait over
    every topic waits for the others, so these are told once per session.
    """
    state = topic.data.protocol
    turned = None if state is None else state.turned_at(role)
    if state is None or turned is None:
        return None, False
    if since is None:
        return state.public(), False
    news = turned > since or told is None or turned > told
    return state.public(), news or (named and state.phase in OVER_PHASES)


def held_back(topic: Topic) -> frozenset[str]:
    """The blind CLAIMs the barrier holds back right now (none outside debate/v1)."""
    state = topic.data.protocol
    return frozenset(state.pending_blind()) if state is not None else frozenset()


def announced(
    topic: Topic, meta: MsgMeta, recipients: list[str], held: frozenset[str]
) -> list[str]:
    """The recipient keys whose inboxes a v1 post visibly changed (``held``: what the barrier
    held back before it): none for a CLAIM the barrier now holds, whose recipients must not
    hear even that something came; with a post that released the barrier, the recipients of
    every CLAIM it released as well, since for them the release is the delivery."""
    now_held = held_back(topic)
    keys = [] if meta.msg_id in now_held else list(recipients)
    for msg_id in sorted(held - now_held):
        keys.extend(k for k in topic.data.messages[msg_id].recipients if k not in keys)
    return keys


def seen(topic: Topic, caller: Caller, role: str, msg_id: str | None) -> MsgMeta | None:
    """Message ``msg_id`` as this viewer (viewing as ``role``) may name it, or None: none
    such, or a held blind CLAIM the barrier hides from it. Every path that takes a msg_id
    looks it up here, so naming a held CLAIM's id answers as an id that does not exist."""
    meta = topic.data.messages.get(msg_id or "")
    state = topic.data.protocol
    if meta is None or state is None or msg_id not in state.pending_blind():
        return meta
    return None if msg_id in hidden_ids(state, caller, role, topic.all_bindings()) else meta


def visible_inbox(topic: Topic, caller: Caller, role: str, items: list[MsgMeta]) -> list[MsgMeta]:
    """The inbox up to (not including) the first message the blind barrier hides from this
    viewer, so no cursor can pass a CLAIM before its release."""
    if topic.data.protocol is None:  # no blind barrier outside debate/v1
        return items
    hidden = hidden_ids(topic.data.protocol, caller, role, topic.all_bindings())
    if not hidden:
        return items
    for i, meta in enumerate(items):
        if meta.msg_id in hidden:
            return items[:i]
    return items


def check_advance(
    topic: Topic, caller: Caller, role: str, keys: tuple[str, ...], target: MsgMeta
) -> None:
    """On debate/v1 topics: refuse a cursor move to a message no check delivered yet, or
    past a blind CLAIM this viewer may not see yet.

    Raises:
        DebateError: ``advance_before_delivery`` or ``blind_barrier_pending``.
    """
    if topic.data.protocol is None:
        return
    _check_barrier(topic, caller, role, keys, target)
    marks = [topic.data.deliveries.get(key, {}).get(target.msg_id) for key in keys]
    if "pending" in marks and "delivered" not in marks:
        raise reject(
            "advance_before_delivery",
            "on debate/v1 topics a cursor moves only to a message a signal check delivered; "
            "call debate_signal_check first",
        )


def check_watermark(
    topic: Topic,
    caller: Caller,
    role: str,
    keys: tuple[str, ...],
    since: tuple[str, str],
    target: MsgMeta,
) -> None:
    """On debate/v1 topics: refuse a watermark at ``target`` that would move the active
    binding's cursor (at ``since``; its inbox is ``keys``) past a message addressed to that
    inbox that no check delivered yet, or past a blind CLAIM this viewer may not see yet:
    the cursor rules of `check_advance`, for a target that may be any message.

    Raises:
        DebateError: ``advance_before_delivery`` or ``blind_barrier_pending``.
    """
    if topic.data.protocol is None:
        return
    _check_barrier(topic, caller, role, keys, target)
    messages = topic.data.messages
    for key in keys:
        for msg_id, mark in topic.data.deliveries.get(key, {}).items():
            at = messages[msg_id].cursor
            if at > target.cursor:
                break  # (open markers are kept in (ts, msg_id) order)
            if mark == "pending" and at > since:
                raise reject(
                    "advance_before_delivery",
                    "on debate/v1 topics a watermark moves the cursor only past messages a "
                    f"signal check delivered; {msg_id} is not delivered yet: call "
                    "debate_signal_check first",
                )


def _check_barrier(
    topic: Topic, caller: Caller, role: str, keys: tuple[str, ...], target: MsgMeta
) -> None:
    """Refuse a cursor move to or past a blind CLAIM addressed to ``keys`` that this viewer
    may not see yet (``blind_barrier_pending``)."""
    hidden = hidden_ids(topic.data.protocol, caller, role, topic.all_bindings())
    for msg_id in hidden:
        meta = topic.data.messages[msg_id]
        if meta.cursor <= target.cursor and set(meta.recipients) & set(keys):
            raise reject(
                "blind_barrier_pending",
                "a blind CLAIM before this message is not released yet; wait for the barrier",
            )
