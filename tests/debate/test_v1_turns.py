"""debate/v1 moves that are not posts to a participant still reach it: a phase timed out to
STALEMATE, or projections ready to judge, wake its parked debate_signal_wait at once, and
the reply's ``protocol_state`` says what happened (its check carries it too).

The waits run under Trio's MockClock: a wait the move did not wake would sleep to its own
55 s timeout, past the `trio.fail_after` deadline that guards it, so no test reads a clock.
"""

from __future__ import annotations

import json

import pytest
import trio
from debate_support import ALICE, BOB, CAROL, CONDUCTOR, v1_topic


@pytest.mark.parametrize("named", [True, False], ids=["on-the-topic", "on-every-topic"])
async def test_a_phase_timeout_wakes_a_parked_wait_and_says_stalemate(desk, autojump_clock, named):
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    await v1.post("PRO", "CLAIM", to="CON")

    async def time_out():
        await trio.sleep(1)
        desk.wall.advance(31)
        out = await desk.call(CONDUCTOR, "debate_protocol_maintain")
        assert out["timed_out"] == [{"topic_id": v1.topic, "reason": "phase_timeout:BLIND_CLAIM"}]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(time_out)
        with trio.fail_after(30):
            out = await desk.wait(
                BOB, v1.topic if named else None, "CON", v1.sessions["CON"], 55_000
            )
    assert (out["count"], out["topic_id"]) == (0, v1.topic)  # PRO's CLAIM stays held back
    state = out["protocol_state"]
    assert (state["phase"], state["stalemate_reason"]) == (
        "STALEMATE",
        "phase_timeout:BLIND_CLAIM",
    )
    check = await desk.check(BOB, v1.topic, "CON", v1.sessions["CON"])
    assert check["protocol_state"]["phase"] == "STALEMATE"


async def test_judge_prepare_wakes_the_parked_judge_with_the_projections(desk, autojump_clock):
    v1 = await v1_topic(desk)
    pro, con = await v1.to_adjudicate()
    outs = {}

    async def prepare():
        await trio.sleep(1)
        desk.wall.advance(1)
        await desk.call(
            CONDUCTOR, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=pro, right_msg_id=con
        )

    async def blind_waits():  # a blind role does not judge: the projections are not its turn
        outs["PRO"] = await desk.wait(ALICE, v1.topic, "PRO", v1.sessions["PRO"], 5_000)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(prepare)
        nursery.start_soon(blind_waits)
        with trio.fail_after(30):
            out = await desk.wait(CAROL, v1.topic, "JUDGE", v1.sessions["JUDGE"], 55_000)
    assert out["count"] == 0
    state = out["protocol_state"]
    assert state["phase"] == "ADJUDICATE"
    assert sorted(p["order_key"] for p in state["projections"]) == ["AB", "BA"]
    assert {pos["msg_id"] for pos in state["projections"][0]["positions"]} == {pro, con}
    assert "protocol_state" not in outs["PRO"]
    assert "protocol_state" not in await desk.check(ALICE, v1.topic, "PRO", v1.sessions["PRO"])


async def test_a_wait_in_a_running_debate_carries_no_protocol_state(desk):
    v1 = await v1_topic(desk)
    await v1.to_debate()
    inbox = await desk.check(BOB, v1.topic, "CON", v1.sessions["CON"])
    assert "protocol_state" not in inbox


async def _stop(desk, v1):
    """Judge the debate to STOPPED (PRO wins); return PRO's winning CLAIM."""
    pro, con = await v1.to_adjudicate()
    prepared = await desk.call(
        CONDUCTOR, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=pro, right_msg_id=con
    )
    verdict = json.dumps({"winner_msg_id": pro, "decision": "PRO wins"})
    for p in prepared["projections"]:
        await desk.call(
            CAROL,
            "debate_judge_verdict",
            projection_id=p["projection_id"],
            judge_role="JUDGE",
            verdict_json=verdict,
        )
    return pro


async def test_every_wait_on_a_stopped_debate_answers_at_once(desk, autojump_clock):
    v1 = await v1_topic(desk)
    pro = await _stop(desk, v1)
    for who, role in ((ALICE, "PRO"), (CAROL, "JUDGE"), (ALICE, "PRO")):
        start = trio.current_time()
        with trio.fail_after(30):  # a wait that slept would reach its 55 s timeout first
            out = await desk.wait(who, v1.topic, role, v1.sessions[role], 55_000)
        assert trio.current_time() == start
        state = out["protocol_state"]
        assert (state["phase"], state["outcome"]["winner_msg_id"]) == ("STOPPED", pro)


async def test_a_wait_on_every_topic_is_told_once_that_a_debate_stopped(desk, autojump_clock):
    # Every time would answer all its waits with this one topic while the session's others
    # may still be running.
    v1 = await v1_topic(desk)
    await _stop(desk, v1)
    session = v1.sessions["PRO"]
    start = trio.current_time()
    with trio.fail_after(30):
        told = await desk.wait(ALICE, None, "PRO", session, 55_000)
    assert trio.current_time() == start
    assert (told["topic_id"], told["protocol_state"]["phase"]) == (v1.topic, "STOPPED")
    again = await desk.wait(ALICE, None, "PRO", session, 5_000)
    assert trio.current_time() == start + 5
    assert again["count"] == 0


async def test_a_stalemate_answers_a_wait_at_once_until_the_session_has_seen_it(
    desk, autojump_clock
):
    v1 = await v1_topic(desk, phase_timeout_seconds=30)
    desk.wall.advance(31)
    await desk.call(CONDUCTOR, "debate_protocol_maintain")  # no wait was parked
    session = v1.sessions["CON"]
    start = trio.current_time()
    with trio.fail_after(30):
        told = await desk.wait(BOB, v1.topic, "CON", session, 55_000)
    assert trio.current_time() == start
    assert told["protocol_state"]["phase"] == "STALEMATE"
    # Told once: the stalemate still waits for DISSENTs and the ESCALATE that ends it.
    again = await desk.wait(BOB, v1.topic, "CON", session, 5_000)
    assert trio.current_time() == start + 5
    assert (again["count"], again["protocol_state"]["phase"]) == (0, "STALEMATE")
