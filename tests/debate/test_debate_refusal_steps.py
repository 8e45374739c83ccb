"""Refusals that say what to do next, and what they advise works.

``protocol_terminal`` said only that the protocol took no more semantic posts,
``verdict_conflict`` not which projection was left to judge, and ``regressive_cursor`` not
where the cursor stood.
"""

from __future__ import annotations

import json

from debate_support import ALICE, BOB, CAROL, CONDUCTOR, crew, trigger, v1_topic


async def _verdict(desk, projection_id, winner, *, refused=False):
    use = desk.refused if refused else desk.call
    verdict = json.dumps({"winner_msg_id": winner, "decision": "adopt"})
    return await use(
        CAROL,
        "debate_judge_verdict",
        projection_id=projection_id,
        judge_role="JUDGE",
        verdict_json=verdict,
    )


async def test_verdict_conflict_and_protocol_terminal_say_what_is_left(desk):
    v1 = await v1_topic(desk)
    pro, con = await v1.to_adjudicate()
    prepared = await desk.call(
        CONDUCTOR, "debate_judge_prepare", topic_id=v1.topic, left_msg_id=pro, right_msg_id=con
    )
    ab, ba = (p["projection_id"] for p in prepared["projections"])
    await _verdict(desk, ab, pro)
    body = await _verdict(desk, ab, con, refused=True)
    assert body["error"] == "verdict_conflict"
    assert f"the pair's other order, BA {ba}, is still to judge" in body["message"]
    await _verdict(desk, ba, pro)
    body = await _verdict(desk, ab, con, refused=True)
    assert "both orders of round 1 are judged" in body["message"]
    body = await v1.refused("PRO", "CLAIM")
    assert (body["error"], body["phase"]) == ("protocol_terminal", "STOPPED")
    assert "close the topic with debate_state new_state RESOLVED" in body["message"]
    closed = await desk.call(
        ALICE, "debate_state", topic_id=v1.topic, role="PRO", new_state="RESOLVED"
    )
    assert closed["new_state"] == "RESOLVED"


async def test_regressive_cursor_says_where_the_cursor_is(desk):
    room = await crew(desk)
    first = await trigger(desk, room)
    args = {"topic_id": room["topic"], "role": "EXECUTOR_1", "session_id": room["exec"]}
    await desk.call(BOB, "debate_signal_advance", last_processed_msg_id=first, **args)
    body = await desk.refused(BOB, "debate_signal_advance", last_processed_msg_id=first, **args)
    assert (body["error"], body["last_processed_msg_id"]) == ("regressive_cursor", first)
    assert f"the cursor is already at {first} (" in body["message"]
    assert f"send a last_processed_msg_id after {first}" in body["message"]
