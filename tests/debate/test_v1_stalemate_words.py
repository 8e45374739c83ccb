"""What the replies say around a debate/v1 STALEMATE: which post ends it, and who closes it.

Agents read the JSON of a reply and acted on it: in STALEMATE a debate_escalate wrote its
PING and the phase stayed STALEMATE, with no word, so the agent believed it had escalated.
"""

from __future__ import annotations

import json

from debate_support import ALICE, CAROL, CONDUCTOR, payload, v1_topic


async def _stalemate(desk):
    """A v1 topic at its round cap, unresolved: STALEMATE round_cap_unresolved."""
    v1 = await v1_topic(desk, max_rounds=1)
    pro, _ = await v1.to_debate()
    await v1.post("JUDGE", "VERIFY", reply_to=pro, payload_json=payload("?", result="unknown"))
    return v1


async def test_debate_escalate_in_stalemate_says_it_wrote_a_ping(desk):
    # The contract keeps debate_escalate's PING apart from the ESCALATE kind: the reply says
    # which one ends the stalemate.
    v1 = await _stalemate(desk)
    args = {"topic_id": v1.topic, "role": "PRO", "reason": "needs a human"}
    out = await desk.call(ALICE, "debate_escalate", **args, target_role="HUMAN")
    assert out.guidance.startswith(
        "This wrote an urgent (H) PING addressed to HUMAN, not a debate/v1 ESCALATE: the debate"
        " stays in STALEMATE (round_cap_unresolved)."
    )
    assert "post kind ESCALATE addressed to HUMAN or OPERATOR" in out.guidance
    assert (await v1.state())["phase"] == "STALEMATE"


async def test_the_stalemate_step_says_who_closes_and_what_closing_ends(desk):
    v1 = await v1_topic(desk, max_rounds=1)
    pro, _ = await v1.to_debate()
    verify = payload("?", result="unknown")
    out = await v1.post("JUDGE", "VERIFY", reply_to=pro, payload_json=verify)
    assert out["protocol_state"]["phase"] == "STALEMATE"
    assert (
        "any role's holder, a blind role's too, may close the topic (debate_state RESOLVED);"
        " closing it ends the DISSENTs and the ESCALATE the other roles have not posted yet"
    ) in out.guidance


async def test_a_verdict_too_late_says_where_the_debate_is_now(desk):
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    pro, con = await v1.to_adjudicate()
    args = {"topic_id": v1.topic, "left_msg_id": pro, "right_msg_id": con}
    ab, _ = (await desk.call(CONDUCTOR, "debate_judge_prepare", **args))["projections"]
    desk.wall.advance(31)
    await desk.call(CONDUCTOR, "debate_protocol_maintain")
    body = await desk.refused(
        CAROL,
        "debate_judge_verdict",
        projection_id=ab["projection_id"],
        judge_role="JUDGE",
        verdict_json=json.dumps({"winner_msg_id": pro, "decision": "PRO wins"}),
    )
    assert (body["error"], body["phase"]) == ("phase_race_lost", "STALEMATE")
    assert (
        "is now STALEMATE (phase_timeout:ADJUDICATE), where only DISSENT and ESCALATE are"
        " accepted any more"
    ) in body["message"]


async def test_the_stalemate_step_says_the_first_escalate_ends_it_for_everyone(desk):
    # The note said "Each role may post one DISSENT", and CON's DISSENT after PRO's ESCALATE
    # was refused protocol_terminal: nothing had said that the ESCALATE cut it off.
    v1 = await _stalemate(desk)
    out = await v1.post("PRO", "ESCALATE", to="HUMAN")
    assert out["protocol_state"]["phase"] == "ESCALATED"
    body = await v1.refused("CON", "DISSENT")
    assert body["error"] == "protocol_terminal"
    v1 = await v1_topic(desk, max_rounds=1)
    pro, _ = await v1.to_debate()
    verify = payload("?", result="unknown")
    out = await v1.post("JUDGE", "VERIFY", reply_to=pro, payload_json=verify)
    assert (
        "the first ESCALATE addressed to HUMAN or OPERATOR (debate_post_with_recipients), from"
        " any role, ends the debate as ESCALATED for everyone, and no DISSENT is accepted after"
        " it"
    ) in out.guidance


async def test_a_check_in_stalemate_carries_the_note_of_a_wait(desk):
    # The tester's repro: a debater polling with debate_signal_check in STALEMATE got only
    # the protocol_state JSON; the words that the first ESCALATE ends the debate for
    # everyone came with debate_signal_wait alone.
    v1 = await _stalemate(desk)
    session = v1.sessions["PRO"]
    check = await desk.check(ALICE, v1.topic, "PRO", session)
    waited = await desk.wait(ALICE, v1.topic, "PRO", session, timeout_ms=1000)
    assert check["protocol_state"]["phase"] == "STALEMATE"
    step = waited.guidance.split("\n")[-1]
    assert "no DISSENT is accepted after it" in step
    assert check.guidance.split("\n")[-1] == step
