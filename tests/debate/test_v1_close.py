"""Who may close a live debate/v1 debate, and what closing it early does to the protocol.

A debater (blind role) moved its own debate to RESOLVED in the middle of DEBATE: the topic
closed, every binding (the conductor's too) was retired, and debate_protocol_state still
showed DEBATE with a deadline and no outcome. Until the protocol has ended (STOPPED,
STALEMATE or ESCALATED) only a role outside the blind pair closes the topic, and that ends
the protocol as STOPPED, with an outcome that says who closed it and why. The debater is
the principal: one holding PRO and CONDUCTOR closed its live debate as CONDUCTOR.
"""

from __future__ import annotations

import pytest
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, SEATS, V1, payload, v1_topic


@pytest.mark.parametrize("tool", ["debate_state", "debate_close_topic", "STATE post"])
async def test_a_debater_may_not_close_a_live_debate(desk, tool):
    v1 = await v1_topic(desk)
    await v1.to_debate()
    before = await v1.state()
    if tool == "STATE post":
        body = "RESOLVED [reason: I win]"
        refusal = await desk.post(ALICE, v1.topic, "PRO", body, kind="STATE", refused=True)
    else:
        args = {"topic_id": v1.topic, "role": "PRO", "new_state": "RESOLVED", "reason": "I win"}
        refusal = await desk.refused(ALICE, tool, **args)
    assert (refusal["error"], refusal["phase"]) == ("illegal_transition", "DEBATE")
    assert "outside the blind pair (the conductor, say)" in refusal["message"]
    assert "once the protocol has ended" in refusal["message"]
    assert await v1.state() == before
    listed = await desk.call(CONDUCTOR, "debate_list_bindings", topic_id=v1.topic)
    assert listed["topic_state"] == "ACTIVE"
    assert {b["state"] for b in listed["bindings"]} == {"active"}


async def test_the_conductor_closing_early_stops_the_protocol_and_says_so(desk):
    v1 = await v1_topic(desk)
    await v1.to_debate()
    out = await desk.call(
        CONDUCTOR,
        "debate_state",
        topic_id=v1.topic,
        role="CONDUCTOR",
        new_state="RESOLVED",
        reason="out of time",
    )
    assert out["new_state"] == "RESOLVED"
    state = await v1.state(ALICE)
    assert (state["phase"], state["phase_deadline_at"]) == ("STOPPED", None)
    assert state["outcome"] == {
        "round_no": 1,
        "winner_msg_id": out["transition_msg_id"],
        "winner_role": None,
        "decision": "closed early by CONDUCTOR, before the judges agreed: out of time",
        "judge_role": "CONDUCTOR",
        "decided_at": out["ts"],
        "closed_early": True,
    }


async def test_a_debater_may_close_once_the_protocol_has_ended(desk):
    v1 = await v1_topic(desk, max_rounds=1)
    pro, _ = await v1.to_debate()
    verify = payload("not settled", result="contested")
    await v1.post("JUDGE", "VERIFY", reply_to=pro, payload_json=verify)
    assert (await v1.state())["phase"] == "STALEMATE"
    out = await desk.call(
        SEATS["PRO"], "debate_state", topic_id=v1.topic, role="PRO", new_state="RESOLVED"
    )
    assert out["new_state"] == "RESOLVED"
    state = await v1.state()
    assert (state["phase"], state["outcome"]) == ("STALEMATE", None)


@pytest.mark.parametrize("tool", ["debate_state", "debate_close_topic", "STATE post"])
async def test_a_debater_may_not_close_a_live_debate_as_another_role(desk, tool):
    # alice opens the debate holding CONDUCTOR and PRO: the rule goes by principal, so she
    # may not close it as CONDUCTOR while PRO is hers.
    conducting, arguing = await desk.session(ALICE), await desk.session(ALICE)
    con, judge = await desk.session(BOB), await desk.session(CAROL)
    roles = {"CONDUCTOR": conducting, "PRO": arguing, "CON": (BOB, con), "JUDGE": (CAROL, judge)}
    topic = await desk.topic(ALICE, roles, protocol_version="debate/v1", blind_roles_csv="PRO,CON")
    v1 = V1(desk, topic, {"CONDUCTOR": conducting, "PRO": arguing, "CON": con, "JUDGE": judge})
    await v1.to_debate()
    before = await v1.state()
    if tool == "STATE post":
        body = "RESOLVED [reason: I, PRO, stop it]"
        refusal = await desk.post(ALICE, topic, "CONDUCTOR", body, kind="STATE", refused=True)
    else:
        args = {"topic_id": topic, "role": "CONDUCTOR", "new_state": "RESOLVED"}
        refusal = await desk.refused(ALICE, tool, **args, reason="I, PRO, stop it")
    assert (refusal["error"], refusal["held_role"]) == ("illegal_transition", "PRO")
    assert "your principal holds PRO" in refusal["message"]
    assert "may not close it as CONDUCTOR either" in refusal["message"]
    assert await v1.state() == before


async def _close(desk, topic, tool):
    """The conductor's move of ``topic`` to RESOLVED with ``tool`` (or a STATE post)."""
    if tool == "STATE post":
        body = "RESOLVED [reason: out of time]"
        return await desk.post(CONDUCTOR, topic, "CONDUCTOR", body, kind="STATE")
    args = {"topic_id": topic, "role": "CONDUCTOR", "new_state": "RESOLVED"}
    return await desk.call(CONDUCTOR, tool, **args, reason="out of time")


@pytest.mark.parametrize("tool", ["debate_state", "debate_close_topic", "STATE post"])
async def test_closing_early_says_the_protocol_stopped_and_where_its_outcome_is(desk, tool):
    # A tester's note: the reply said RESOLVED only; the protocol's end was not told.
    v1 = await v1_topic(desk)
    await v1.to_debate()
    out = await _close(desk, v1.topic, tool)
    assert out.guidance == (
        "The debate/v1 protocol is now STOPPED: CONDUCTOR closed it early, in round 1, before"
        " the judges agreed. Its outcome (closed_early true, a decision that gives the reason)"
        " is in debate_protocol_state."
    )
    # A parked wait, or a check, of a retired binding is pointed there too.
    check = (BOB, v1.topic, "CON", v1.sessions["CON"])
    refusal = await desk.check(*check, refused=True)
    assert refusal["error"] == "topic_resolved"
    assert "debate_protocol_state its outcome" in refusal["message"]


async def test_closing_in_blind_claim_says_the_held_claim_stays_hidden(desk):
    # The barrier never releases on a debate that ended in BLIND_CLAIM: blind_barrier_state
    # stays waiting (the contract's two values: the CLAIM stays hidden), and the reply says so.
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM", to="CON")
    out = await _close(desk, v1.topic, "debate_state")
    assert "the barrier never releases" in out.guidance
    assert "blind_barrier_state stays waiting" in out.guidance
    state = await v1.state(BOB)
    assert (state["phase"], state["blind_barrier_state"]) == ("STOPPED", "waiting")
    read = await desk.call(BOB, "debate_read", topic_id=v1.topic, role="CON")
    assert pro["msg_id"] not in [m["msg_id"] for m in read["messages"]]
    # A debate closed once both CLAIMs were in says nothing of the barrier.
    other = await v1_topic(desk)
    await other.to_debate()
    assert "barrier" not in (await _close(desk, other.topic, "debate_state")).guidance
