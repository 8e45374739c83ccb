"""What a participant does next, in words: the text block that follows a post's or a wait's
JSON.

A broadcast (debate_post) reaches no inbox, which its reply alone did not say. On debate/v1, a
reply's ``protocol_state`` says where the debate stands (``BLIND_CLAIM`` ``waiting``,
``STALEMATE`` ``phase_timeout:BLIND_CLAIM``) but not whose move it is nor what is still
accepted; agents that read only the JSON waited for a turn that was theirs, or posted what
the phase refuses. Pure: it reads the public state (`ProtocolState.public`) and decides
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora.toolsets.debate.protocol.gates import JUDGING_STEPS, SAME_DECISION, VERIFY_RESULTS

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

#: The note of a debate_post reply: agents that broadcast waited for answers that never came.
BROADCAST: str = (
    "This message was broadcast: it is in the topic (debate_read, debate_search) but in no"
    " inbox, so no debate_signal_check or debate_signal_wait returns it. For a message that"
    " roles must receive, post with debate_post_with_recipients, naming them in"
    " addressed_to_csv."
)
#: How the note of a blind CLAIM posted with debate_post begins (`blind_broadcast`).
BROADCAST_CLAIM: str = "This CLAIM was broadcast: it is in no inbox"


def blind_broadcast(role: str, *, released: bool) -> str:
    """The note of ``role``'s blind CLAIM posted with debate_post, in place of `BROADCAST`:
    the CLAIM is committed (BLIND_CLAIM takes one per blind role), so the advice to post it
    again, addressed, would be refused ``blind_claim_duplicate``. ``released``: this CLAIM
    was the second, and released the barrier."""
    when = (
        "now that both blind CLAIMs are in"
        if released
        else "once both blind CLAIMs are in and the barrier releases"
    )
    return (
        f"{BROADCAST_CLAIM}, but it is committed as {role}'s blind CLAIM and cannot be posted"
        f" again (BLIND_CLAIM takes one CLAIM per blind role). The other roles see it with"
        f" debate_read {when}; from then on, address every post with"
        " debate_post_with_recipients."
    )


def escalation_ping(target: str, stalemate_reason: str | None) -> str:
    """The note of a debate_escalate reply in STALEMATE: its PING moves no phase, which an
    agent that escalated to end the stalemate believed it did."""
    return (
        f"This wrote an urgent (H) PING addressed to {target}, not a debate/v1 ESCALATE: the"
        f" debate stays in STALEMATE ({stalemate_reason}). To end the stalemate (ESCALATED),"
        " post kind ESCALATE addressed to HUMAN or OPERATOR with debate_post_with_recipients"
        " (payload_json {summary, assumptions, evidence_refs})."
    )


def closed_early(role: str, round_no: int, *, held: bool) -> str:
    """The note of the move to RESOLVED that ended a live debate/v1 debate: the topic's
    reply says RESOLVED only, and the protocol's end is read elsewhere. ``held``: the blind
    barrier had not released (the debate ended in BLIND_CLAIM)."""
    note = (
        f"The debate/v1 protocol is now STOPPED: {role} closed it early, in round {round_no},"
        " before the judges agreed. Its outcome (closed_early true, a decision that gives the"
        " reason) is in debate_protocol_state."
    )
    if not held:
        return note
    return (
        f"{note} It ended before both blind CLAIMs were in, so the barrier never releases: a"
        " blind CLAIM committed before the close stays hidden from all but its author and"
        " conductors (blind_barrier_state stays waiting)."
    )


def not_blind(blind_roles: Sequence[str]) -> str:
    """The note of a reply that left one principal holding both blind roles: allowed (one
    user may play both sides to try a server), but neither CLAIM is hidden from it."""
    return (
        f"Note: your principal now holds both blind roles, {' and '.join(blind_roles)}, so"
        " their claims are not blind: each blind CLAIM is hidden from the other side only"
        " when another principal (a bearer token of its own) holds it. That is fine for"
        " trying the server alone; for a real debate, leave one blind role to a debater with"
        " a token of its own (every caller without a token is one principal)."
    )


def conductor_debates(roles: Sequence[str]) -> str:
    """The note of a reply that gave a conductor-scoped principal a blind role: it is a
    debater now, and the barrier hides the other side's CLAIM from it too."""
    held = " and ".join(roles)
    return (
        f"Note: your principal has the conductor scope and now holds the blind role {held}:"
        " it debates, so the other blind role's CLAIM is hidden from it until both CLAIMs are"
        " in, as from any debater (the conductor scope shows a held CLAIM only to a principal"
        " that holds no blind role of the topic)."
    )


def shared_blind(blind_roles: Sequence[str]) -> str:
    """The note of a reply that shows a roster whose blind roles one principal holds (the
    bindings list, the move to ACTIVE): said to everyone who sees the roster, the conductor
    first, with how the seats are given back."""
    pair = " and ".join(blind_roles)
    return (
        f"Note: both blind roles, {pair}, are held by one principal (one bearer token), so"
        " their claims are not blind: each side can read the other's CLAIM. If that is not"
        " meant (a debater took its opponent's free seat), that principal gives the seat"
        ' back with debate_bind_role (state "retired", on its session), and then the real'
        " debater binds it; a debate/v1 topic takes no conductor override, so nobody else"
        " can retire it: if the holder does not, open a new topic and hand its topic_id"
        f" to each debater. {NO_LONGER_JUDGES}"
    )


#: What taking a blind seat costs a principal (`not_independent`), said with the seats.
NO_LONGER_JUDGES: str = (
    "A principal that holds or held a blind role can no longer judge this debate: a role"
    " that may judge (CONDUCTOR included) is refused to it (ineligible_judge), even once it"
    " gives the seat back."
)


def gave_back(role: str) -> str:
    """The note of the reply that retired a debate/v1 blind ``role`` of its holder: its
    principal can no longer judge the debate (`not_independent`), which it may have been
    meant to do (a judge's agent that took the seat by mistake)."""
    return (
        f"Note: your principal gave back the blind role {role}, and it can no longer judge"
        " this debate: it held a blind role, so a role that may judge (CONDUCTOR included) is"
        " refused to it (ineligible_judge). If it was to judge, tell the conductor: the"
        " judge must bind with the bearer token of a principal that never held a blind role"
        " (the conductor's debate_list_bindings names the principals barred from judging)."
    )


def blind_seats(holders: Sequence[tuple[str, str | None]], barred: Sequence[str] = ()) -> str:
    """The note that shows a conductor (or star) caller the roster of a debate/v1 topic (the
    bindings list, the move to ACTIVE): which principal holds each blind role (``holders``:
    role and owner, None when free), since a seat taken by the wrong principal (the
    opponent, or one that was to judge) looks like any other held seat, and only the
    conductor can tell; how such a seat is given back; what it costs its holder; and which
    principals hold or held a blind role (``barred``), so can no longer judge: one that gave
    its seat back no longer shows among the holders."""
    seats = "; ".join(
        f"{role} by {owner}" if owner is not None else f"{role} is free" for role, owner in holders
    )
    owners = [owner for _, owner in holders]
    shared = None not in owners and len(set(owners)) == 1 and len(owners) > 1
    pair = " and ".join(role for role, _ in holders)
    blind = (
        f" (both blind roles, {pair}, are held by one principal, so their claims are not"
        " blind: each side can read the other's CLAIM)"
        if shared
        else ""
    )
    return (
        f"Note: the blind roles are held by principal (bearer token): {seats}{blind}. If a"
        " seat was taken by mistake (by the opponent, or by a principal that was to judge), its"
        " holder gives it"
        ' back with debate_bind_role (state "retired", on its session), and then the real'
        " debater binds it; a debate/v1 topic takes no conductor override, so nobody else"
        " can retire it: if the holder does not, open a new topic and hand its topic_id to"
        f" each debater. {NO_LONGER_JUDGES}{_barred(barred)}"
    )


def _barred(owners: Sequence[str]) -> str:
    """The sentence naming the principals that hold or held a blind role (none: empty)."""
    if not owners:
        return ""
    names = ", ".join(owners[:-1]) + " and " + owners[-1] if len(owners) > 1 else owners[0]
    return (
        f" Barred from judging this debate, as holding or having held a blind role: {names}"
        " (bind a role that may judge with another principal's bearer token)."
    )


#: How a post reaches the roles that must act on it (the DEBATE advice ends with it).
ADDRESS: str = (
    "Address each post with debate_post_with_recipients (addressed_to_csv) so that its"
    " recipients' waits receive it."
)


#: The VERIFY results, as a sentence lists them.
_RESULTS: str = f"{', '.join(VERIFY_RESULTS[:-1])} or {VERIFY_RESULTS[-1]}"


def judging(state: Mapping[str, Any]) -> str:
    """Who moves an ADJUDICATE debate on: the conductor while this round has no projections,
    then the judge, told the ids still to judge (a judge's wait is told once they exist)."""
    mine = [p for p in state["projections"] if p["round_no"] == state["round_no"]]
    if not mine:
        return JUDGING_STEPS
    todo = [f"{p['order_key']} {p['projection_id']}" for p in mine if not p["judged"]]
    return (
        f"The projections of round {state['round_no']} are ready (debate_protocol_state shows"
        f" their positions); still to judge: {' and '.join(todo)}. One judge role, outside the"
        " blind pair and not human, gives debate_judge_verdict on each, with verdict_json"
        f" {{winner_msg_id, decision}}. {SAME_DECISION}"
    )


def next_move(
    state: Mapping[str, Any], blind_commits: Sequence[str] = (), open_challenges: Sequence[str] = ()
) -> str:
    """Whose move it is in ``state``'s phase, and what that phase accepts.

    Args:
        state: The public protocol state (``protocol_state`` of a reply).
        blind_commits: The blind roles whose CLAIM is in (BLIND_CLAIM: the others are awaited).
        open_challenges: The msg_ids of the CHALLENGEs no REBUT or CONCEDE answered (DEBATE).

    Returns:
        One or two sentences, starting with the phase.
    """
    phase, blind = state["phase"], list(state["blind_roles"])
    pair = " and ".join(blind)
    if phase == "BLIND_CLAIM":
        awaited = [r for r in blind if r not in blind_commits] or blind
        return (
            f"Next: BLIND_CLAIM waits for the CLAIM of {' and '.join(awaited)} (one CLAIM per"
            " blind role, each hidden from the other side until both are in); the second"
            " CLAIM opens DEBATE. Post the CLAIM with debate_post_with_recipients: it is"
            " delivered to its recipients when the barrier releases, and a CLAIM posted with"
            " debate_post counts as the role's one CLAIM but reaches no inbox."
        )
    if phase == "DEBATE":
        still = f" Open CHALLENGEs: {', '.join(open_challenges)}." if open_challenges else ""
        return (
            f"Next: DEBATE, round {state['round_no']} of {state['max_rounds']}: {pair} answer"
            " each other with CHALLENGE, EVIDENCE, REBUT or CONCEDE (a CHALLENGE stays open"
            " until a REBUT or CONCEDE replies to it), and a role outside the blind pair"
            " closes the round with a VERIFY: reply_to a CLAIM, CONCEDE, EVIDENCE or REBUT"
            f" message, and payload.result {_RESULTS} (verified with no CHALLENGE"
            " open: ADJUDICATE; otherwise the next round, or STALEMATE at the last)."
            f"{still} " + ADDRESS
        )
    if phase == "ADJUDICATE":
        return f"Next: ADJUDICATE takes no semantic posts. {judging(state)}"
    if phase == "STALEMATE":
        return (
            f"The protocol is in STALEMATE ({state['stalemate_reason']}): only DISSENT and"
            " ESCALATE are accepted. Each role may post one DISSENT while it lasts; the first"
            " ESCALATE addressed to HUMAN or OPERATOR (debate_post_with_recipients), from any"
            " role, ends the debate as ESCALATED for everyone, and no DISSENT is accepted after"
            " it: post a DISSENT you mean to post before it, and escalate only after your own."
            " The protocol has ended, so any role's holder, a blind role's too, may close the"
            " topic (debate_state RESOLVED); closing it ends the DISSENTs and the ESCALATE the"
            " other roles have not posted yet (a RESOLVED topic takes no posts)."
        )
    if phase == "STOPPED":
        return (
            "The debate is STOPPED: the judges agreed (outcome, in debate_protocol_state) and"
            " no semantic post is accepted any more; the topic can be closed with debate_state"
            " (RESOLVED)."
        )
    return (
        f"The debate is {phase}: it waits for a human, and no semantic post is accepted any"
        " more; debate_read shows the whole topic."
    )


def clock_started(state: Mapping[str, Any]) -> str:
    """What the move of a debate/v1 topic to ACTIVE started: the phase clock, which no other
    reply mentions although it ends the debate when it runs out."""
    phase = state["phase"]
    return (
        f"The topic is ACTIVE and the debate/v1 phase clock runs: {phase} must be done by"
        f" {state['phase_deadline_at']} (each phase gets phase_timeout_seconds,"
        f" {state['phase_timeout_seconds']} s, from its start). A phase still open at its"
        f" deadline moves the debate to STALEMATE (phase_timeout:{phase}), where only DISSENT"
        " and ESCALATE are accepted."
    )


def topic_step(
    topic_state: str,
    state: Mapping[str, Any] | None,
    blind_commits: Sequence[str] = (),
    open_challenges: Sequence[str] = (),
) -> str:
    """What moves a topic on from ``topic_state`` (INIT, ACTIVE, ...): said by the replies
    of debate_init and debate_bind_role, which carry no phase advice of their own.

    Args:
        topic_state: The topic's lifecycle state.
        state: The public protocol state, or None on a topic without debate/v1.
        blind_commits: As `next_move` takes them.
        open_challenges: As `next_move` takes them.

    Returns:
        One or two sentences.
    """
    if topic_state == "INIT":
        return (
            "Next: the topic is INIT and takes no posts (a STATE post excepted): once its"
            " roles are bound, a holder of one of them moves it to ACTIVE with debate_state"
            " (new_state ACTIVE)."
        )
    if topic_state != "ACTIVE":
        return f"The topic is {topic_state}: it takes no posts; debate_read shows it."
    if state is None:
        return "Next: the topic is ACTIVE. " + ADDRESS
    return next_move(state, blind_commits, open_challenges)
