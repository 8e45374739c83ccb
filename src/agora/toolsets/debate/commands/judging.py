"""Order-swap judging on the topic entity: `PrepareJudging` and `GiveVerdict`.

Prepare (conductor callers only, in ADJUDICATE) fixes the AB and BA projections of two
opposing blind positions; a repeat naming the same pair answers the same projections, a
different pair is a conflict. A verdict comes from the caller's owned binding of an active,
declared judge role outside the blind pair and the human roles; the pair admits one judge
role. The second verdict decides: agreement moves ADJUDICATE -> STOPPED, a split ->
STALEMATE ``judge_order_swap_disagreement``, both with the transition_version CAS, so two
racing verdicts can never both apply.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec

from agora.mcp.results import Guided
from agora.runtime.entity import Effects
from agora.toolsets.debate import access, sql
from agora.toolsets.debate.access import Caller
from agora.toolsets.debate.commands.protocol import moved
from agora.toolsets.debate.commands.table import COMMANDS
from agora.toolsets.debate.protocol import guide
from agora.toolsets.debate.protocol.gates import not_adjudicating
from agora.toolsets.debate.protocol.judging import (
    ORDERS,
    POSITION_KINDS,
    SPLIT_REASON,
    Projection,
    agree,
    position,
    projection_id,
)
from agora.toolsets.debate.protocol.state import (
    HUMAN_ROLES,
    ProtocolState,
    judging_own_debate,
    not_configured,
    not_independent,
)
from agora.toolsets.debate.rules import DebateError, reject

if TYPE_CHECKING:
    from agora.runtime.clock import Now
    from agora.runtime.entity import Write
    from agora.toolsets.debate.topic import Topic


class PrepareJudging(msgspec.Struct, frozen=True, tag=True):
    """Create (or answer again) the AB and BA projections of two positions."""

    caller: Caller
    left_msg_id: str
    right_msg_id: str
    #: msg_id -> stored payload, read by the handler from the (immutable) committed rows.
    payloads: dict[str, Any]


class GiveVerdict(msgspec.Struct, frozen=True, tag=True):
    """Record one judge's verdict on one projection."""

    caller: Caller
    projection_id: str
    judge_role: str
    verdict: dict[str, str]


def _adjudicating(topic: Topic) -> ProtocolState:
    state = topic.data.protocol
    if state is None:
        raise not_configured()
    if state.phase != "ADJUDICATE":
        raise not_adjudicating(state.phase)
    return state


@COMMANDS.on(PrepareJudging)
def prepare_judging(topic: Topic, cmd: PrepareJudging, now: Now) -> Effects:
    topic.read_gate(cmd.caller)
    if not cmd.caller.conductor:
        raise access.denied()
    state = _adjudicating(topic)
    messages = topic.data.messages
    left, right = messages.get(cmd.left_msg_id), messages.get(cmd.right_msg_id)
    if left is None or right is None:
        raise reject("unknown_msg_id", "left_msg_id and right_msg_id name messages of this topic")
    if left.kind not in POSITION_KINDS or right.kind not in POSITION_KINDS:
        raise reject("invalid_position_kind", "positions are CLAIM or REBUT messages")
    if left.msg_id == right.msg_id or {left.role, right.role} != set(state.blind_roles):
        raise reject(
            "positions_not_opposing",
            "the two positions come from the two opposing blind roles",
            blind_roles=state.blind_roles,
        )
    at = topic.stamp_now(now)
    views = {
        m.msg_id: position(m.msg_id, m.role, m.kind, cmd.payloads.get(m.msg_id))
        for m in (left, right)
    }
    wanted: list[Projection] = []
    for order, (a, b) in zip(ORDERS, ((left, right), (right, left)), strict=True):
        pid = projection_id(topic.topic_id, state.round_no, order)
        wanted.append(
            Projection(
                pid,
                topic.topic_id,
                state.round_no,
                order,
                a.msg_id,
                b.msg_id,
                [views[a.msg_id], views[b.msg_id]],
                at,
            )
        )
    found = [state.projections.get(p.projection_id) for p in wanted]
    known = [e for e in found if e is not None]
    if known:
        same = len(known) == len(wanted) and all(
            (e.left_msg_id, e.right_msg_id) == (w.left_msg_id, w.right_msg_id)
            for e, w in zip(known, wanted, strict=True)
        )
        if not same:
            stored = known[0]
            if {stored.left_msg_id, stored.right_msg_id} == {left.msg_id, right.msg_id}:
                why = (
                    "this round's projections already exist for these two positions in the "
                    f"other order (AB: {stored.left_msg_id} first); they are immutable: repeat "
                    "the first call's order to have them answered again"
                )
            else:
                why = "this round's projections already exist for another pair; they are immutable"
            raise reject("projection_conflict", why)
        return Effects(reply=_prepared(topic, state, known))
    writes: list[Write] = []
    for p in wanted:
        state.projections[p.projection_id] = p
        writes.append(sql.insert_projection(p))
    topic.event(
        writes,
        at,
        "judge_prepared",
        cmd.caller.name,
        round_no=state.round_no,
        left_msg_id=left.msg_id,
        right_msg_id=right.msg_id,
        projection_ids=[p.projection_id for p in wanted],
    )
    return Effects(reply=_prepared(topic, state, wanted), writes=writes, changed=True)


def _prepared(topic: Topic, state: ProtocolState, made: list[Projection]) -> dict[str, Any]:
    """The reply of debate_judge_prepare, with who judges them next (`guide.next_move`)."""
    reply = {"topic_id": topic.topic_id, "projections": [p.public() for p in made]}
    return Guided(reply, guide.next_move(state.public()))


def _verdict_reply(topic: Topic, p: Projection, state: ProtocolState) -> dict[str, Any]:
    pair = [q for q in state.projections.values() if q.round_no == p.round_no]
    complete = len(pair) == len(ORDERS) and all(q.verdict is not None for q in pair)
    verdicts = [q.verdict for q in pair if q.verdict is not None]
    stable = agree(verdicts[0], verdicts[1]) if complete else None
    current = topic.data.protocol
    assert current is not None
    reply = {
        "projection_id": p.projection_id,
        "topic_id": topic.topic_id,
        "complete": complete,
        "stable": stable,
        "protocol_state": (state_now := current.public()),
        "outcome": state_now["outcome"],
    }
    if not complete:
        return Guided(reply, _still_to_judge(p, pair))
    step = guide.next_move(state_now)
    if stable is False:
        return Guided(reply, f"{split_words(verdicts[0], verdicts[1])}\n{step}")
    return Guided(reply, step)


def _still_to_judge(p: Projection, pair: list[Projection]) -> str:
    """After the first verdict of a pair: the other projection, and the decision its verdict
    must repeat (reasons worded anew split the pair for good)."""
    assert p.verdict is not None
    other = [q for q in pair if q.verdict is None]
    names = " and ".join(f"the {q.order_key} projection {q.projection_id}" for q in other)
    decision = json.dumps(p.verdict["decision"], ensure_ascii=False)  # quoted as JSON writes it
    return (
        f"Verdict recorded on the {p.order_key} projection. Still to judge: {names}, with"
        f" debate_judge_verdict as {p.judge_role}, repeating this decision word for word:"
        f" {decision}. The verdicts agree only when winner_msg_id and decision are both"
        f" equal, and a split ends the debate in STALEMATE ({SPLIT_REASON}) for good."
    )


def split_words(first: dict[str, Any], second: dict[str, Any]) -> str:
    """Why two verdicts of a pair split (the reply's fields say only that they did): a
    judge writing the same winner in other words learns that the decision counts too."""
    if first["winner_msg_id"] != second["winner_msg_id"]:
        why = "name different winners"
    else:
        why = (
            f"name the same winner but different decisions ({first['decision']!r} and"
            f" {second['decision']!r})"
        )
    return (
        f"The two verdicts {why}: verdicts agree only when winner_msg_id and decision are"
        f" both equal, so this pair moved the debate to STALEMATE ({SPLIT_REASON})."
    )


def _conflict(p: Projection, peer: Projection) -> DebateError:
    """The refusal of a second, different verdict on ``p`` (verdicts are immutable), with
    what is left to judge: ``peer``, the pair's other order, or nothing."""
    if peer.verdict is None:
        then = f"the pair's other order, {peer.order_key} {peer.projection_id}, is still to judge"
    else:
        then = (
            f"both orders of round {p.round_no} are judged: debate_protocol_state shows the"
            " verdicts and the outcome"
        )
    return reject(
        "verdict_conflict",
        f"projection {p.order_key} {p.projection_id} already holds a different verdict, and"
        f" a verdict is never changed; {then}",
    )


def _race_lost(state: ProtocolState, p: Projection) -> DebateError:
    """The refusal of a verdict on ``p`` after the protocol left its round's ADJUDICATE
    (a phase timeout, say): where the debate is now, and what that phase still takes."""
    now = f"{state.phase}, round {state.round_no}"
    if state.phase == "STALEMATE":
        now = (
            f"STALEMATE ({state.stalemate_reason}), where only DISSENT and ESCALATE are"
            " accepted any more"
        )
    return reject(
        "phase_race_lost",
        f"the protocol left ADJUDICATE for round {p.round_no} before this verdict, and is now"
        f" {now}: the verdict counts no more; debate_protocol_state has the state",
        phase=state.phase,
    )


def wrong_winner(p: Projection, given: str) -> DebateError:
    """The refusal of a verdict whose winner_msg_id is neither of ``p``'s two positions:
    it names both (with their roles), and that a role name is no msg_id."""
    named = " or ".join(f"{x['msg_id']} ({x['role']}'s {x['kind']})" for x in p.positions)
    return reject(
        "invalid_verdict",
        f"verdict.winner_msg_id must be the msg_id of one of this projection's two positions:"
        f" {named}; {given!r} is neither (a role name is not accepted: name the msg_id of the"
        " winning role's position)",
        allowed=[x["msg_id"] for x in p.positions],
    )


@COMMANDS.on(GiveVerdict)
def give_verdict(topic: Topic, cmd: GiveVerdict, now: Now) -> Effects:
    judge = topic.write_gate(cmd.caller, cmd.judge_role)
    state = topic.data.protocol
    p = None if state is None else state.projections.get(cmd.projection_id)
    if state is None or p is None:
        raise access.denied()
    if cmd.judge_role in state.blind_roles or cmd.judge_role in HUMAN_ROLES:
        raise reject(
            "ineligible_judge",
            "the judge role must be an active declared role outside the blind pair, not human",
        )
    held = judging_own_debate(state, topic.all_bindings(), judge.owner, cmd.judge_role)
    if held is not None:
        raise not_independent(state, cmd.judge_role, held, verdict=True)
    if cmd.verdict["winner_msg_id"] not in (p.left_msg_id, p.right_msg_id):
        raise wrong_winner(p, cmd.verdict["winner_msg_id"])
    peer = next(
        q
        for q in state.projections.values()
        if q.round_no == p.round_no and q.projection_id != p.projection_id
    )
    if p.verdict is not None:
        if p.judge_role != cmd.judge_role:  # whatever it says: the pair has its judge role
            raise reject(
                "judge_role_mismatch",
                f"this projection was judged by {p.judge_role}: one judge role judges both"
                " orders of a pair",
            )
        if p.verdict == cmd.verdict:
            return Effects(reply=_verdict_reply(topic, p, state))
        raise _conflict(p, peer)
    if state.phase != "ADJUDICATE" or p.round_no != state.round_no:
        raise _race_lost(state, p)
    if peer.judge_role is not None and peer.judge_role != cmd.judge_role:
        raise reject("judge_role_mismatch", "both orders of a pair are judged by one judge role")
    at = topic.stamp_now(now)
    writes: list[Write] = []
    p.verdict, p.judge_role, p.decided_at = dict(cmd.verdict), cmd.judge_role, at
    writes.append(sql.set_verdict(p))
    topic.event(
        writes,
        at,
        "judge_verdict",
        cmd.caller.name,
        projection_id=p.projection_id,
        judge_role=cmd.judge_role,
        verdict=cmd.verdict,
    )
    if peer.verdict is not None:
        stable = agree(peer.verdict, p.verdict)
        version = state.transition_version
        new = (
            state.move("STOPPED", at, expected=version)
            if stable
            else state.move("STALEMATE", at, expected=version, reason=SPLIT_REASON)
        )
        moved(topic, new, writes, at, cmd.caller.name, stalemate_reason=new.stalemate_reason)
    topic.touch(writes, at, row_changed=False)
    return Effects(reply=_verdict_reply(topic, p, state), writes=writes, changed=True)
