"""An urgent nudge to a blind role that has not claimed yet, behind the other side's CLAIM.

PRO's blind CLAIM, addressed to CON, holds CON's inbox at it until both CLAIMs are in; the
conductor's urgent PING to CON ("post your CLAIM") came after it, so no check or wait of
CON's returned it, and no cursor could pass it. CON's CLAIM was then refused stale_read for
that PING ("check your inbox and advance past it": impossible), and advancing to it was
refused with "wait for the barrier" (wrong for CON: its own CLAIM releases it). A message
the barrier holds back is not unread yet; the refusals and the inbox say what releases it,
and nothing of PRO's CLAIM shows.
"""

from __future__ import annotations

import pytest
import trio
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, v1_topic

NUDGES = pytest.mark.parametrize("nudge", ["debate_escalate", "addressed H post"])


async def _nudge(desk, v1, nudge, to="CON"):
    """The conductor's urgent message to ``to``; its msg_id."""
    if nudge == "debate_escalate":
        args = {"topic_id": v1.topic, "role": "CONDUCTOR", "target_role": to}
        out = await desk.call(CONDUCTOR, "debate_escalate", reason="post your CLAIM", **args)
    else:
        out = await desk.post(
            CONDUCTOR, v1.topic, "CONDUCTOR", "post your CLAIM", to=to, priority="H", kind="PING"
        )
    return out["msg_id"]


@NUDGES
async def test_a_nudged_blind_role_posts_its_claim_behind_the_barrier(desk, nudge):
    v1 = await v1_topic(desk)
    pro = await v1.post("PRO", "CLAIM", to="CON,CONDUCTOR", priority="H")
    ping = await _nudge(desk, v1, nudge)
    out = await v1.post("CON", "CLAIM", to="PRO,CONDUCTOR", priority="H")
    assert out["protocol_state"]["phase"] == "DEBATE"
    inbox = await desk.check(BOB, v1.topic, "CON", v1.sessions["CON"])
    assert [m["msg_id"] for m in inbox["pending"]] == [pro["msg_id"], ping]


@NUDGES
async def test_the_barrier_refusal_tells_a_blind_role_its_own_claim_releases_it(desk, nudge):
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", to="CON,JUDGE", body="secret pro")
    ping = await _nudge(desk, v1, nudge)
    body = await desk.advance(BOB, v1.topic, "CON", v1.sessions["CON"], ping, refused=True)
    assert body["error"] == "blind_barrier_pending"
    assert "post your own CLAIM" in body["message"]
    assert "secret" not in str(body)
    # A role outside the blind pair can only wait for the release.
    ping = await _nudge(desk, v1, nudge, to="JUDGE")
    body = await desk.advance(CAROL, v1.topic, "JUDGE", v1.sessions["JUDGE"], ping, refused=True)
    assert body["error"] == "blind_barrier_pending"
    assert "post your own CLAIM" not in body["message"]
    assert "both blind CLAIMs are in" in body["message"]


async def test_a_check_and_a_wait_say_what_the_barrier_may_hold_back(desk, autojump_clock):
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", to="CON", body="secret pro")
    check = (BOB, v1.topic, "CON", v1.sessions["CON"])
    await _nudge(desk, v1, "debate_escalate")
    await _nudge(desk, v1, "addressed H post")
    inbox = await desk.check(*check)
    with trio.fail_after(60):
        waited = await desk.wait(*check, timeout_ms=1000)
    assert waited["timed_out"] is True
    for out in (inbox, waited):
        assert out["count"] == 0
        assert "secret" not in str(out) + out.guidance
        assert "While the blind barrier waits (blind_barrier_state)" in out.guidance
        assert "post your own CLAIM" in out.guidance
        # It claimed nothing could show whether a CLAIM came, which a cursor refusal can.
        assert "would tell whether a CLAIM came" not in out.guidance
        assert "the same whether or not anything is held" in out.guidance


async def test_the_note_is_the_same_whether_or_not_the_other_claim_came(desk):
    # The tester's repro: the note appeared only once PRO's hidden CLAIM to CON was in, so
    # CON learnt that (and when) PRO had claimed.
    notes = []
    for claimed in (False, True):
        v1 = await v1_topic(desk)
        if claimed:
            await v1.post("PRO", "CLAIM", to="CON", body="secret pro")
        await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "claims due", to="CON", kind="INFO")
        out = await desk.check(BOB, v1.topic, "CON", v1.sessions["CON"])
        notes.append(out.guidance)
    assert notes[0] == notes[1]
    assert "held" in notes[0]


async def test_the_conductors_post_held_by_the_barrier_says_so(desk):
    v1 = await v1_topic(desk)
    out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "use format X", to="CON", kind="INFO")
    assert not hasattr(out, "guidance")
    await v1.post("PRO", "CLAIM", to="CON,JUDGE")
    out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "use format X", to="CON", kind="INFO")
    assert "CON will not receive this message until the blind barrier releases" in out.guidance
    assert "CON's own CLAIM releases it" in out.guidance
    # The judge, who may not see PRO's CLAIM, is told nothing of it.
    out = await desk.post(CAROL, v1.topic, "JUDGE", "hello", to="CON", kind="INFO")
    assert not hasattr(out, "guidance")


async def test_once_blind_claim_is_over_the_held_messages_stay_held_and_it_says_so(desk):
    # BLIND_CLAIM timed out with CON's CLAIM missing: no CLAIM releases the barrier now.
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    await v1.post("PRO", "CLAIM", to="CON", body="secret pro")
    await _nudge(desk, v1, "debate_escalate")
    desk.wall.advance(31)
    await desk.call(CONDUCTOR, "debate_protocol_maintain")
    out = await desk.check(BOB, v1.topic, "CON", v1.sessions["CON"])
    assert (out["count"], out["protocol_state"]["phase"]) == (0, "STALEMATE")
    assert "While the blind barrier waits" in out.guidance
    assert "left BLIND_CLAIM (STALEMATE) before both blind CLAIMs were in" in out.guidance
    assert "post your own CLAIM" not in out.guidance


async def test_the_cursor_refusal_names_no_hidden_claim(desk):
    # The tester's repro: debate_read showed the conductor's reminder to CON, and advancing to
    # it was refused "a blind CLAIM before this message is not released yet": the only blind
    # CLAIM CON may not see is PRO's, so CON learnt that PRO had claimed. The refusal now
    # states the barrier's rule (that something is held shows; what, whose or when does not).
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", to="CON,JUDGE", body="secret pro")
    due = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "claims due", to="CON", kind="INFO")
    body = await desk.advance(BOB, v1.topic, "CON", v1.sessions["CON"], due["msg_id"], refused=True)
    assert body["error"] == "blind_barrier_pending"
    assert "CLAIM before this message" not in body["message"]
    assert "a cursor passes only messages a check delivered" in body["message"]
    assert "(what it holds stays hidden)" in body["message"]
    # The words claim no more than is true: a refusal here can show that something is held.
    assert "not a sign" not in body["message"]
    assert "PRO" not in body["message"]
    assert "secret" not in str(body)


async def test_no_barrier_note_while_the_topic_is_init(desk):
    # The tester's repro: a blind role that bound early and checked in INIT was told to post
    # its own CLAIM, and that post was refused topic_not_active. INIT takes no posts, so
    # nothing can be held: the note comes with the move to ACTIVE.
    v1 = await v1_topic(desk, state="INIT")
    check = (ALICE, v1.topic, "PRO", v1.sessions["PRO"])
    out = await desk.check(*check)
    assert out["topic_state"] == "INIT"
    assert "blind barrier" not in (getattr(out, "guidance", None) or "")
    await desk.call(
        CONDUCTOR, "debate_state", topic_id=v1.topic, role="CONDUCTOR", new_state="ACTIVE"
    )
    out = await desk.check(*check)
    assert "post your own CLAIM" in out.guidance


async def test_the_conductors_post_held_from_the_judge_says_so(desk):
    # The tester's repro: the judge's inbox stops at PRO's hidden CLAIM just as CON's does,
    # yet the conductor's rubric to the JUDGE got no note, and its post to CON,JUDGE named
    # only CON.
    v1 = await v1_topic(desk)
    await v1.post("PRO", "CLAIM", to="CON,JUDGE,CONDUCTOR")
    out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "rubric X", to="JUDGE", kind="INFO")
    assert "JUDGE will not receive this message until the blind barrier releases" in out.guidance
    assert "it releases when CON's CLAIM is in" in out.guidance
    out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "deadline", to="CON,JUDGE", kind="INFO")
    assert "CON and JUDGE will not receive this message" in out.guidance
    assert "CON's own CLAIM releases it" in out.guidance
    # The conductor's own inbox is not held from it: a post to CONDUCTOR gets no note.
    out = await desk.post(CONDUCTOR, v1.topic, "CONDUCTOR", "memo", to="CONDUCTOR", kind="INFO")
    assert not hasattr(out, "guidance")
