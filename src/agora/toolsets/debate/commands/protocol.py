"""debate/v1 on the topic entity: the post gates and the phase moves they make.

`messages.post` calls `gate_post` after the part-1 checks and before anything is preserved
(a rejection changes nothing), then `record_post` after the message is appended: a blind
CLAIM commits behind the barrier and the second releases both and opens DEBATE; a VERIFY
closes a round (ADJUDICATE when verified with no open CHALLENGE, STALEMATE
``round_cap_unresolved`` at the cap, else the next round); an ESCALATE moves STALEMATE to
ESCALATED. What the barrier hides on delivery is `barrier`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agora.toolsets.debate import sql
from agora.toolsets.debate.commands import barrier
from agora.toolsets.debate.protocol import gates, guide
from agora.toolsets.debate.protocol.state import (
    HUMAN_ROLES,
    OVER_PHASES,
    ProtocolState,
)
from agora.toolsets.debate.rules import KINDS, PROTOCOL_V1, reject

if TYPE_CHECKING:
    from agora.runtime.entity import Write
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


def moved(
    topic: Topic, new: ProtocolState, writes: list[Write], at: str, actor: str, **fields: Any
) -> None:
    """`set_state` for a move to another phase, with its ``protocol_moved`` history event
    (from the phase before, to ``new``'s; ``fields``: what else the event says)."""
    old = topic.data.protocol
    assert old is not None
    set_state(topic, new, writes)
    topic.event(
        writes,
        at,
        "protocol_moved",
        actor,
        old_phase=old.phase,
        new_phase=new.phase,
        round_no=new.round_no,
        transition_version=new.transition_version,
        **fields,
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
    barrier.stale_read(topic, cmd.caller, cmd.role, binding, cmd.reply_to)
    return Semantic(payload, mode, state.round_no)


def post_note(topic: Topic, cmd: Post) -> str | None:
    """The note of a post's reply that the protocol owes it besides `record_post`'s: a
    debate_escalate in STALEMATE, whose PING the contract keeps apart from the ESCALATE kind
    that ends the stalemate; a STATE post that ended a live debate (`closed_note`)."""
    state = topic.data.protocol
    if state is None:
        return None
    if cmd.tool == "debate_escalate" and state.phase == "STALEMATE":
        return guide.escalation_ping(", ".join(cmd.cc), state.stalemate_reason)
    return closed_note(topic, cmd.msg_id) if cmd.kind == "STATE" else None


def closed_note(topic: Topic, msg_id: str) -> str | None:
    """The note of the move to RESOLVED (its STATE message ``msg_id``) that ended a live
    debate/v1 debate early (`guide.closed_early`); None for any other move."""
    state = topic.data.protocol
    early = state.closed_early if state is not None else None
    if state is None or early is None or early["msg_id"] != msg_id:
        return None
    held = state.blind_barrier_state == "waiting"
    return guide.closed_early(early["role"], early["round_no"], held=held)


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
    if new is not None and new.transition_version != version:
        reason = new.stalemate_reason
        moved(topic, new, writes, at, actor, msg_id=meta.msg_id, stalemate_reason=reason)
    elif new is not None:
        set_state(topic, new, writes)
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
